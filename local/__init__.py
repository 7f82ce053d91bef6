"""The local runner, its demo seed and the integrator's signing client.

The shared layer is put on the import path here, as Lambda does with /opt/python.
"""

import sys
from pathlib import Path

_LAYER = str(Path(__file__).resolve().parent.parent / "layers" / "shared" / "python")
if _LAYER not in sys.path:
    sys.path.insert(0, _LAYER)
