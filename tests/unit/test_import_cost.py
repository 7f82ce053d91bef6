"""Import cost is a tested property (STYLE.md): every function's app.py imports without touching AWS SDKs,
cryptography or parsers, within a generous ceiling. The figures themselves are measured in bench/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = sorted((ROOT / "functions").glob("*/app.py"))
HEAVY = ("boto3", "botocore", "cryptography", "lxml", "urllib3", "jsonpath_ng", "regex", "aws_lambda_powertools")
PROBE = """
import importlib.util, json, sys, time
t = time.perf_counter()
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
print(json.dumps({"ms": (time.perf_counter() - t) * 1000, "modules": sorted(sys.modules)}))
"""


@pytest.mark.parametrize("app", APPS, ids=lambda p: p.parent.name)
def test_app_import_is_light(app):
    out = subprocess.run([sys.executable, "-c", PROBE, str(app)], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "layers" / "shared" / "python"), "PATH": "/usr/bin:/bin"})
    result = json.loads(out.stdout)
    loaded = {m.split(".")[0] for m in result["modules"]}
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
    assert callable(mod_handler(app))
    assert result["ms"] < 600, result["ms"]  # generous ceiling on a shared CI core; the target (150 ms) is in bench/


def mod_handler(app):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"probe_{app.parent.name}", app)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lambda_handler
