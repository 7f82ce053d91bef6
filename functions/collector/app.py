"""GET /cdn/cs/{client_id}.js and POST /cdn/cs/{client_id}/collect: wiring only (vaultcore.fraud.collector)."""

from vaultcore.api.handler import api_handler
from vaultcore.fraud.collector import collector_route

lambda_handler = api_handler("collector", collector_route, aws=("dynamodb", "kms"))
