"""template.yaml is the one source of truth: conditions, routes, and what the runner builds from it."""

from __future__ import annotations

from local.template import function_directories, load_template, parameters_with_defaults, render


def test_authdebug_exists_only_in_cert():
    template = load_template()
    cert = render(template, parameters_with_defaults(template, {"Environment": "cert"}))
    prod = render(template, parameters_with_defaults(template, {"Environment": "prod"}))
    assert "AuthDebugFunction" in cert
    assert "AuthDebugFunction" not in prod
    paths = {e["Properties"]["Path"] for r in prod.values() if r["Type"] == "AWS::Serverless::Function"
             for e in (r["Properties"].get("Events") or {}).values() if e["Type"] == "Api"}
    assert not any("authdebug" in p for p in paths)


def test_every_function_has_a_folder_and_a_build_target():
    template = load_template()
    dirs = function_directories()
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for name, res in template["Resources"].items():
        if res["Type"] == "AWS::Serverless::Function":
            assert name in dirs, name
            assert (root / "functions" / dirs[name] / "app.py").exists(), name


def test_tables_have_pitr_kms_and_ttl_where_designed():
    resources = load_template()["Resources"]
    for name, res in resources.items():
        if res["Type"] == "AWS::DynamoDB::Table":
            props = res["Properties"]
            assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True, name
            assert props["SSESpecification"]["SSEType"] == "KMS", name
    for name in ("NoncesTable", "TokensTable"):
        assert resources[name]["Properties"]["TimeToLiveSpecification"]["Enabled"] is True


def test_management_api_is_iam_authorized():
    api = load_template()["Resources"]["ManagementApi"]["Properties"]
    assert api["Auth"]["DefaultAuthorizer"] == "AWS_IAM"
