"""The management API over loopback, called as an operator's script would: the demo seed's one door into it.

Below :mod:`local.seed` and each ``local.seed_*`` part it calls, so that the parts need nothing from the module
that runs them.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

__all__ = ["admin"]


def admin(base_url: str, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base_url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 - loopback management API
        answer: dict[str, Any] = json.loads(resp.read() or b"{}")
        return answer
