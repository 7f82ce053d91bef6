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
    assert apis and not any("GatewayResponses" in api["Properties"] for api in apis)  # none overrides the Globals
    assert SECURITY_HEADERS["Strict-Transport-Security"] == "max-age=63072000; includeSubDomains"
