"""POST /api/v1/partners/{partnerID}/configurations/{configReferenceID}: wiring only; the logic is
vaultcore.proxy.service."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler(
    "proxy", "vaultcore.proxy.service:handle_proxy", aws=("dynamodb", "kms", "payment-cryptography-data@prod"),
    # imported by the route on its usual path (HMAC check, token actions, JSON paths, regex masks, egress):
    # during init instead. lxml (XML bodies only) stays lazy.
    modules=("vaultcore.auth.authenticator", "vaultcore.tokens.service", "vaultcore.net.http", "jsonpath_ng",
             "jsonpath_ng.jsonpath", "regex", "vaultcore.proxy.log_shipping"))
