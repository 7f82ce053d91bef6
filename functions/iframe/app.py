"""The payment iFrame on the gateway API: configurations, instances, the page, its scripts and submissions.

Wiring only; the logic is vaultcore.iframe (routes: vaultcore.iframe.routes).
"""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("admin", "vaultcore.iframe.routes:route", aws=("dynamodb", "kms"),
                             # imported by the routes on their usual paths: during init instead
                             modules=("vaultcore.tokens.service", "vaultcore.gateway.accounts",
                                      "vaultcore.iframe.capture", "vaultcore.iframe.page"))
