"""Issue 27: HSTS on every response of every API — the functions' (vaultcore.api.handler) and API Gateway's own
(the APIs' gateway responses in template.yaml) carry the same value."""

from __future__ import annotations

from local.template import load_template
from vaultcore.api.handler import SECURITY_HEADERS


def test_api_gateway_own_responses_carry_the_functions_hsts_header():
    template = load_template()
    responses = template["Globals"]["Api"]["GatewayResponses"]
    assert set(responses) == {"DEFAULT_4XX", "DEFAULT_5XX"}
    for name, response in responses.items():
        headers = response["ResponseParameters"]["Headers"]
        assert headers == {k: f"'{v}'" for k, v in SECURITY_HEADERS.items()}, name
    apis = [r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::Api"]
    assert apis
    # An API's own GatewayResponses (the secure and parser APIs' documented 404 body) are merged by SAM with the
    # Globals' map (maps merge, the resource's keys win): each of them carries the header too, and none replaces
    # DEFAULT_4XX or DEFAULT_5XX.
    for api in apis:
        own = api["Properties"].get("GatewayResponses") or {}
        assert not set(own) & {"DEFAULT_4XX", "DEFAULT_5XX"}
        for name, response in own.items():
            headers = response["ResponseParameters"]["Headers"]
            assert headers["Strict-Transport-Security"] == f"'{SECURITY_HEADERS['Strict-Transport-Security']}'", name
    assert SECURITY_HEADERS["Strict-Transport-Security"] == "max-age=63072000; includeSubDomains"
