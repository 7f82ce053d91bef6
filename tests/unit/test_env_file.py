"""local.env_file: env.json per function (sam --env-vars format) and the sam-local copy of the template."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from local.env_file import function_variables, sam_local_template
from local.template import evaluate_conditions, load_template, parameters_with_defaults, render

ROOT = Path(__file__).resolve().parents[2]


def _platform(monkeypatch, overrides=None):
    template = load_template()
    params = parameters_with_defaults(template, {"Environment": "cert"})
    resources = render(template, params)
    refs = {n: f"local-{n}" for n in resources}
    attrs = {(n, "Arn"): f"arn:local:{n}" for n in resources}
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.setenv(name, "http://127.0.0.1:5999" if name == "AWS_ENDPOINT_URL" else "testing")
    return SimpleNamespace(template=template, params=params, conditions=evaluate_conditions(template, params),
                           resources=resources, refs=refs, attrs=attrs, env_overrides=overrides or {})


def test_each_function_gets_the_globals_its_own_variables_and_the_runner_endpoint(monkeypatch):
    platform = _platform(monkeypatch, {"POSTBACK_RETRY_SCHEDULE": "1,1"})
    variables = function_variables(platform)
    functions = {n for n, r in platform.resources.items() if r["Type"] == "AWS::Serverless::Function"}
    assert set(variables) == functions
    globals_names = set(platform.template["Globals"]["Function"]["Environment"]["Variables"])
    for name, values in variables.items():
        own = (platform.resources[name]["Properties"].get("Environment") or {}).get("Variables") or {}
        assert globals_names | set(own) <= set(values), name
        assert values["AWS_ENDPOINT_URL"] == "http://127.0.0.1:5999"
        assert values["VAULT_ALLOW_LOCAL_EGRESS"] == "1"
        assert values["REGISTRY_TABLE"] == "local-RegistryTable"
        assert values["POSTBACK_RETRY_SCHEDULE"] == "1,1"  # a runner --env override, as in-process
        assert all(isinstance(v, str) for v in values.values())
    assert variables["ProxyFunction"]["PROXY_LOG_RETENTION_DAYS"] == "30"
    assert "PROXY_LOG_RETENTION_DAYS" not in variables["GatewayFunction"]  # one function's own stay its own
    assert variables["WalletSessionFunction"]["WALLET_MERCHANT_VALIDATION_URL"].startswith("https://")


def test_the_sam_local_template_declares_the_runner_variables_and_has_absolute_code_paths(monkeypatch):
    platform = _platform(monkeypatch)
    variables = function_variables(platform)
    out = sam_local_template(platform.template, variables)
    declared = out["Globals"]["Function"]["Environment"]["Variables"]
    assert {"AWS_ENDPOINT_URL", "VAULT_ALLOW_LOCAL_EGRESS", "AWS_ACCESS_KEY_ID"} <= set(declared)
    assert declared["AWS_ENDPOINT_URL"] == "" and "never deploy" in out["Description"]
    assert Path(out["Globals"]["Function"]["CodeUri"]).is_absolute()
    assert Path(out["Resources"]["SharedLayer"]["Properties"]["ContentUri"]) == ROOT / "layers" / "shared"
    # template.yaml itself is untouched (a deployed stack never declares them)
    assert "AWS_ENDPOINT_URL" not in load_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert "AWS_ENDPOINT_URL" not in platform.template["Globals"]["Function"]["Environment"]["Variables"]
