"""POST /api/qsapi/3.8 (and with a trailing slash): wiring only; the logic is vaultcore.gateway.service."""

# Cold start: the token service is imported during init (free in Lambda's init phase, not on the first request).
# The gateway imports it where it tokenizes, because the reporting function imports vaultcore.gateway.service too
# and never tokenizes.
import vaultcore.tokens.service  # noqa: F401
from vaultcore.api.handler import api_handler
from vaultcore.gateway.service import qsapi

lambda_handler = api_handler("gateway", qsapi, aws=("dynamodb", "kms", "sqs"))
