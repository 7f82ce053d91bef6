"""POST /api/rsapi/v1/transactions (the reporting interface): wiring only; the logic is vaultcore.gateway.reporting."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("gateway", "vaultcore.gateway.reporting:rsapi", aws=("dynamodb", "kms"))
