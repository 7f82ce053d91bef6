"""Issue 27: every function that authenticates gateway accounts (QSAPI, RSAPI, the iFrame API, the wallet
checkout and session) may write the two kinds of Nonces items that authentication uses — hashes used once and
failure counts — and, by the leading-key condition, no other item of that table (the partners' HMAC nonces)."""

from __future__ import annotations

from local.template import load_template
from vaultcore.gateway import accounts
from vaultcore.store import auth_failures

GATEWAY_AUTH_FUNCTIONS = ("GatewayFunction", "ReportingFunction", "IframeFunction", "CheckoutFunction",
                          "WalletSessionFunction", "ApiKeysFunction")


def _nonce_statements(function: str) -> list[dict]:
    resources = load_template()["Resources"]
    out = []
    for policy in resources[function]["Properties"]["Policies"]:
        for statement in policy.get("Statement", []) if isinstance(policy, dict) else []:
            if statement.get("Resource") == {"Fn::GetAtt": ["NoncesTable", "Arn"]}:
                out.append(statement)
    return out


def test_gateway_authentication_may_use_its_own_nonces_items_only():
    prefixes = {accounts._HASH_NONCE_PREFIX + "*", auth_failures._key("x", 0)["partnerId"][:-1] + "*"}
    for function in GATEWAY_AUTH_FUNCTIONS:
        (statement,) = _nonce_statements(function)
        assert set(statement["Action"]) == {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, function
        leading = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
        assert set(leading) == prefixes, function
