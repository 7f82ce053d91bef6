"""The management API imports a route module when a request first needs it (vaultcore.admin.routes): these tests
hold that to the complete route table, so an answer never depends on which modules a container has loaded.

* every registered route is reached through the module that registers it, whatever its path parameters are
  (filled with each literal segment the patterns test, so a parameter cannot steer a path to another module);
* no path can match routes of two modules (a 405's ``Allow`` header lists the methods of one module's routes);
* a path no pattern names loads every module (its 404 or 405 comes from the complete table).

No timings: bench/bench_cold_start.py measures the cold start; tests/unit/test_import_cost.py checks what init
imports.
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vaultcore.admin import router, routes

ROOT = Path(__file__).resolve().parents[2]
PARAM = re.compile(r"\(\?P<(\w+)>\[\^/\]\+\)")


def _table() -> list[tuple[str, str, str]]:
    """(method, path template, module) of every registered route."""
    routes.register_all()
    return [(method, PARAM.sub(r"{\1}", pattern.pattern).removeprefix("^").removesuffix("/?$"),
             fn.__module__.removeprefix("vaultcore.admin."))
            for method, pattern, fn in router._ROUTES]


def _literals() -> set[str]:
    words = {w for pattern, _ in routes.MODULES for w in re.findall(r"[a-z][a-z0-9-]*", pattern.pattern)}
    return words | {segment for _, template, _ in _table() for segment in template.split("/")
                    if segment and not segment.startswith("{")}


def test_every_route_module_is_known():
    assert {module for _, _, module in _table()} == set(routes.ALL_MODULES)
    assert {module for _, module in routes.MODULES} == set(routes.ALL_MODULES)


def test_every_route_is_reached_through_its_own_module_whatever_its_parameters():
    values = sorted(_literals() | {"x1", "0"})
    for method, template, module in _table():
        params = re.findall(r"\{(\w+)\}", template)
        for combination in itertools.product(values, repeat=len(params)):
            path = template
            for name, value in zip(params, combination, strict=True):
                path = path.replace("{" + name + "}", value)
            for variant in (path, path + "/"):  # the router accepts a trailing slash
                assert routes.module_for(variant) == module, (method, template, variant)


def _could_overlap(a: str, b: str) -> bool:
    """Whether one path can match both templates (segment by segment: a parameter matches any one segment)."""
    sa, sb = a.split("/"), b.split("/")
    return len(sa) == len(sb) and all(x == y or x.startswith("{") or y.startswith("{") for x, y in zip(sa, sb,
                                                                                                      strict=True))


def test_no_path_is_served_by_two_modules():
    table = _table()
    for (_, a, module_a), (_, b, module_b) in itertools.combinations(table, 2):
        if module_a != module_b:
            assert not _could_overlap(a, b), (a, module_a, b, module_b)


def test_a_path_no_pattern_names_loads_every_module():
    code = """
import sys
from vaultcore.admin import routes
from vaultcore.api.http import Request
from vaultcore.errors import NotFound
loaded = lambda: sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("vaultcore.admin.")
                        and m.rsplit(".", 1)[1] in routes.ALL_MODULES)
assert loaded() == [], loaded()
def request(path):
    return Request(method="GET", path=path, resource="/admin/v1/{proxy+}", headers={}, query={}, path_params={},
                   body=b"", request_id="r1")
try:
    routes.dispatch(request("/admin/v1/partners/demo"))
except Exception:
    pass  # no AWS here: the route itself fails; only what was imported matters
assert loaded() == ["foundation"], loaded()
try:
    routes.dispatch(request("/admin/v1/nothing"))
    raise AssertionError("answered")
except NotFound:
    pass
assert loaded() == sorted(routes.ALL_MODULES), loaded()
"""
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={"PYTHONPATH": str(ROOT / "layers" / "shared" / "python"), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize(("path", "module"), [
    ("/admin/v1/partners/demo", "foundation"),
    ("/admin/v1/partners/demo/proxy-configurations/ref/dry-run", "proxy"),
    ("/admin/v1/accounts/123456789012/deliveries", "postbacks"),
    ("/admin/v1/accounts/123456789012/wallet", "wallet"),
    ("/admin/v1/accounts/123456789012", "accounts"),
    ("/admin/v1/partners/demo/token-keys/rotate", "tokens"),
    ("/admin/v1/unknown", None),
])
def test_module_for(path, module):
    assert routes.module_for(path) == module
