"""Every event of events/ through `python -m local.invoke` (a fresh process per event, as `sam local invoke`
would run it) against the session's runner, and the runner's env.json (sam --env-vars format)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from local.template import load_template, parameters_with_defaults, render

ROOT = Path(__file__).resolve().parents[2]
EVENTS = sorted((ROOT / "events").glob("*.json"))
# The answer each event gets against the demo data (events/README.md); any other event: not a 5xx.
EXPECTED_STATUS = {"wallet_session.json": 400, "wallet_domain_association.json": 404,
                   # events/README.md: the answers against the demo data (sample bfid, configuration id, bearer token)
                   "iframe_create_configuration.json": 201, "iframe_get_configuration.json": 404,
                   "iframe_update_configuration.json": 404, "iframe_delete_configuration.json": 404,
                   "iframe_instance_init.json": 404, "iframe_instance_read.json": 404,
                   "iframe_v4_unknown_route.json": 404, "iframe_submit.json": 401, "token_read.json": 409,
                   "token_delete.json": 409, "token_detokenize.json": 403, "token_batch_detokenize.json": 403,
                   # issue 31: API keys (the sample key id is nobody's)
                   "api_keys_create.json": 201, "api_keys_list.json": 200, "api_keys_get.json": 404,
                   "api_keys_update.json": 404, "api_keys_delete.json": 404, "api_key_scopes.json": 200,
                   # issue 31: the v4 payments and dynamic descriptors (sample ids: not found)
                   "payments_v4_init.json": 201, "payments_v4_get.json": 404, "payments_v4_patch.json": 404,
                   "dynamic_descriptors_create.json": 201, "dynamic_descriptors_list.json": 200,
                   "dynamic_descriptors_get.json": 404, "dynamic_descriptors_update.json": 404,
                   "dynamic_descriptors_delete.json": 404,
                   # issue 31 (webhooks): the sample endpoint id names none
                   "webhooks_create.json": 201, "webhooks_get.json": 404, "webhooks_update.json": 404,
                   "webhooks_delete.json": 404, "webhooks_rotate_secret.json": 404, "webhooks_test.json": 404,
                   "webhooks_deliveries.json": 404, "webhooks_redeliver.json": 404}


def _state_dir(runner) -> Path:
    return runner.stdout.parent  # the runner was started with --state-dir <this folder>


def _functions() -> dict[str, dict]:
    template = load_template()
    resources = render(template, parameters_with_defaults(template, {"Environment": "cert"}))
    return {n: r for n, r in resources.items() if r["Type"] == "AWS::Serverless::Function"}


def test_env_json_has_every_function_with_all_its_variables(runner):
    env = json.loads((_state_dir(runner) / "env.json").read_text())
    functions = _functions()
    assert set(env) == set(functions)
    template = load_template()
    globals_vars = template["Globals"]["Function"]["Environment"]["Variables"]
    globals_names = set(globals_vars)
    # optional settings: a parameter whose default is empty (off unless the operator sets it) stays empty here
    params = template.get("Parameters") or {}
    optional = {n for n, v in globals_vars.items() if isinstance(v, dict) and set(v) == {"Ref"}
                and params.get(v["Ref"], {}).get("Default") == ""}
    for name, resource in functions.items():
        own = (resource["Properties"].get("Environment") or {}).get("Variables") or {}
        missing = (globals_names | set(own)) - set(env[name])
        assert not missing, f"{name} lacks {missing}"
        values = env[name]
        assert values["AWS_ENDPOINT_URL"] == runner.demo["awsEndpoint"]
        assert values["VAULT_ALLOW_LOCAL_EGRESS"] == "1" and values["ENVIRONMENT"] == "cert"
        assert values["POSTBACK_QUEUE_URL"].startswith(runner.demo["awsEndpoint"])
        assert all(isinstance(v, str) and (v != "" or n in optional) for n, v in values.items()), name
    sam_template = json.loads((_state_dir(runner) / "template.sam-local.json").read_text())
    declared = sam_template["Globals"]["Function"]["Environment"]["Variables"]
    assert {n for values in env.values() for n in values} <= set(declared)


def _invoke(runner, event: Path, *options: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "local.invoke", "--state-dir", str(_state_dir(runner)), *options,
                           str(event)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("event", EVENTS, ids=lambda p: p.name)
def test_every_event_runs_through_local_invoke(runner, event):
    code, out, err = _invoke(runner, event)
    assert code == 0, f"{event.name}: exit {code}\n{err[-2000:]}"
    result = json.loads(out)
    if "statusCode" in result:  # an API Gateway proxy result
        status = result["statusCode"]
        assert status == EXPECTED_STATUS.get(event.name, status) and status < 500, (event.name, result)
        if event.name not in EXPECTED_STATUS:
            assert status == 200, (event.name, result)
            body = result["body"]
            if result["headers"].get("Content-Type", "").startswith("application/json"):
                payload = json.loads(body)
                if isinstance(payload, list):  # a listing that answers a bare array (the payment iFrame's)
                    payload = {}
                assert payload.get("success", True) is True and payload.get("error", False) is False, payload
    elif event.name in ("postback_batch.json", "postback_outbox_stream.json"):  # the outbox relay: queued
        assert result == {"batchItemFailures": []}
    elif event.name == "proxy_log_shipper.json":
        assert result == {"stored": 1}
    elif event.name == "wallet_certificate_check_schedule.json":
        assert set(result) == {"certificates", "fewestDaysLeft", "warningDays", "expiring"}
        assert result["warningDays"] == 30 and isinstance(result["certificates"], int)
    else:
        raise AssertionError(f"{event.name}: no expectation for {result}")


def test_a_5xx_answer_makes_local_invoke_exit_1(runner, tmp_path):
    env = json.loads((_state_dir(runner) / "env.json").read_text())
    env["PartnerValidateFunction"]["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"  # nothing listens: DynamoDB is down
    env_file = tmp_path / "env.json"
    env_file.write_text(json.dumps(env))
    code, out, _ = _invoke(runner, ROOT / "events" / "partner_validate.json", "--env-vars", str(env_file))
    assert code == 1 and json.loads(out)["statusCode"] >= 500


def test_an_event_no_function_takes_is_a_usage_error(runner, tmp_path):
    event = json.loads((ROOT / "events" / "partner_validate.json").read_text())
    event["resource"] = "/nowhere"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(event))
    code, _, err = _invoke(runner, path)
    assert code == 2 and "name the function" in err


def test_print_event_fills_placeholders_and_signs(runner):
    proc = subprocess.run([sys.executable, "-m", "local.invoke", "--state-dir", str(_state_dir(runner)),
                           "--print-event", "ProxyFunction", str(ROOT / "events" / "proxy_tokenize.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    event = json.loads(proc.stdout)
    ref = runner.demo["proxyTokenizeConfig"]["configReferenceID"]
    assert event["pathParameters"]["configReferenceID"] == ref and ref in event["path"]
    assert event["headers"]["Authorization"].startswith('Hmac username="demo"')
    assert "{{" not in proc.stdout
