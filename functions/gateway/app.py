"""POST /api/qsapi/3.8 (and with a trailing slash): wiring only; the logic is vaultcore.gateway.service."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("gateway", "vaultcore.gateway.service:qsapi", aws=("dynamodb", "kms", "sqs"),
                             # imported by the route on its usual path: during init instead
                             modules=("vaultcore.tokens.service",))
