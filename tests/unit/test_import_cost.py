"""What Lambda's init does is a tested property (issue 13; STYLE.md): importing a function's ``app.py`` imports its
route and creates its AWS clients (no network call), so the first request pays for neither. With credentials
and a region in the environment (as in Lambda) the clients are vaultcore's JSON-protocol clients and botocore is not
imported at all; with ``VAULT_AWS_SDK=botocore`` they share one botocore session. boto3, Powertools and pydantic are
never imported, and the modules only some requests need stay lazy in every function, the proxy included: lxml
(XML bodies), jsonpath_ng (a JSONPath place), regex (a partner's regex: vaultcore.net.safe_regex). The management
function imports a route module on the first request that needs it (vaultcore.admin.routes), not all six at init.
No timings here: bench/bench_cold_start.py measures init + first request against a naive handler."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = sorted((ROOT / "functions").glob("*/app.py"))
NEVER = {"boto3", "s3transfer", "aws_lambda_powertools", "pydantic", "lxml", "urllib3", "jsonpath_ng", "regex"}
PROBE = """
import gc, importlib.util, json, sys
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
modules = sorted(sys.modules)
from vaultcore.store.aws import created_clients
sessions = 0
if "botocore.session" in sys.modules:
    sessions = sum(isinstance(o, sys.modules["botocore.session"].Session) for o in gc.get_objects())
print(json.dumps({"modules": modules, "clients": sorted(created_clients()), "sessions": sessions,
                  "kinds": sorted({type(c).__name__ for c in created_clients().values()}),
                  "handler": callable(mod.lambda_handler)}))
"""
# No network call happens while clients are created; fake credentials keep botocore from looking further.
ENV = {"PYTHONPATH": str(ROOT / "layers" / "shared" / "python"), "PATH": "/usr/bin:/bin",
       "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
       "AWS_EC2_METADATA_DISABLED": "true"}


def _init(app: Path, **extra_env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(app)], capture_output=True, text=True, check=True,
                         env={**ENV, **extra_env})
    return json.loads(out.stdout.strip().splitlines()[-1])


def _declared(app: Path) -> tuple[str | None, set[str], set[str]]:
    """The route's module (where the function handed to ``api_handler`` is imported from), the AWS services, and
    the modules app.py imports explicitly for cold start (its plain ``import`` statements)."""
    tree = ast.parse(app.read_text())
    imported_from = {alias.asname or alias.name: node.module for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    route, services = None, set()
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            continue
        if call.func.id == "api_handler" and len(call.args) == 2 and isinstance(call.args[1], ast.Name):
            route = imported_from.get(call.args[1].id)
        for keyword in call.keywords:
            if call.func.id in ("api_handler", "init") and keyword.arg == "aws":
                services = {ast.literal_eval(e) for e in keyword.value.elts} if isinstance(keyword.value, ast.Tuple) \
                    else set()
    return route, services, modules


@pytest.mark.parametrize("app", APPS, ids=lambda p: p.parent.name)
def test_init_imports_the_route_and_creates_the_clients(app):
    result = _init(app)
    loaded = set(result["modules"])
    roots = {m.split(".")[0] for m in loaded}
    route, services, modules = _declared(app)
    assert result["handler"]
    assert services, "app.py names the AWS clients its function uses (aws=...)"
    assert set(result["clients"]) == {s for s in services if not s.endswith("@prod")}  # ENVIRONMENT: cert
    assert result["kinds"] == ["JsonServiceClient"]  # every service these functions call at cert
    assert result["sessions"] == 0 and "botocore" not in roots, "botocore is not imported at init"
    if route:
        assert route in loaded
    assert modules <= loaded
    assert not roots & NEVER, roots & NEVER


def test_management_init_imports_no_route_module():
    from vaultcore.admin.routes import ALL_MODULES

    loaded = set(_init(ROOT / "functions" / "management" / "app.py")["modules"])
    assert {"vaultcore.admin.routes", "vaultcore.admin.router"} <= loaded
    assert not {f"vaultcore.admin.{m}" for m in ALL_MODULES} & loaded
    # the domains behind them: each is imported by the request that needs it
    assert not {"vaultcore.gateway.accounts", "vaultcore.proxy.config", "vaultcore.tokens.keys",
                "vaultcore.wallet.settings", "vaultcore.postback.relay", "vaultcore.partners.service"} & loaded


@pytest.mark.parametrize("function", ["parser", "postback"])
def test_with_botocore_chosen_the_clients_share_one_session(function):
    result = _init(ROOT / "functions" / function / "app.py", VAULT_AWS_SDK="botocore")
    assert result["clients"] and result["kinds"] != ["JsonServiceClient"]
    assert result["sessions"] == 1  # one botocore session per container
    assert not {m.split(".")[0] for m in result["modules"]} & (NEVER - {"urllib3"})  # botocore brings urllib3


def test_every_function_has_a_representative_request_in_the_cold_start_bench():
    """bench/bench_cold_start.py measures a function only if it has a request to make (else: "skipped"): a new
    function must come with one, and with its description in the printout."""
    from bench.bench_cold_start import DESCRIPTIONS, Requests

    functions = sorted(p.parent.name for p in (Path(__file__).resolve().parents[2] / "functions").glob("*/app.py"))
    missing = [f for f in functions if not callable(getattr(Requests, f, None)) or f not in DESCRIPTIONS]
    assert not missing, missing
