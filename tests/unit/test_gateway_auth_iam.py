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


def _registry_writes(function: str) -> list[dict]:
    resources = load_template()["Resources"]
    out = []
    for policy in resources[function]["Properties"]["Policies"]:
        for statement in policy.get("Statement", []) if isinstance(policy, dict) else []:
            writes = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"} & set(statement["Action"])
            if statement.get("Resource") == {"Fn::GetAtt": ["RegistryTable", "Arn"]} and writes:
                out.append(statement)
    return out


def test_the_v4_functions_write_only_their_own_registry_items():
    """Review of issue 31 (PCI DSS 7.2): the v4 functions that store merchants' data in the Registry may write
    their own item families there, not the accounts' records, partners or other families (the webhooks' function
    already did; the descriptors', the payments' and the API keys' could write any Registry item). The API keys'
    list copies live in the owner's ``ACCOUNT#`` partition, so that one function keeps it."""
    from vaultcore.apikeys import store as key_store
    from vaultcore.descriptors import records as descriptors
    from vaultcore.payments import init_ids

    own = {"DynamicDescriptorsFunction": {descriptors._pk("x")[:-1] + "*"},
           "PaymentsV4Function": {init_ids.meta_pk("x", "y").split("#")[0] + "#*"},
           "WebhooksFunction": {"WEBHOOK#*"},
           "ApiKeysFunction": {"APIKEY#*", "ACCOUNT#*"}}
    assert key_store.KEY_PREFIX  # the key item's partition is "APIKEY#<id>" (vaultcore.apikeys.store)
    for function, prefixes in own.items():
        statements = _registry_writes(function)
        assert statements, function
        for statement in statements:
            leading = statement.get("Condition", {}).get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys")
            assert leading is not None and set(leading) == prefixes, (function, statement)
