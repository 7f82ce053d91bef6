"""POST /api/rsapi/v1/transactions (the reporting interface): wiring only; the logic is vaultcore.gateway.reporting."""

from vaultcore.api.handler import api_handler
from vaultcore.gateway.reporting import rsapi

lambda_handler = api_handler("gateway", rsapi, aws=("dynamodb", "kms"))
