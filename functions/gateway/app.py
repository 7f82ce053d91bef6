"""POST /api/qsapi/3.8 (and with a trailing slash): wiring only; the logic is vaultcore.gateway.service."""

from vaultcore.api.handler import api_handler
from vaultcore.gateway.service import qsapi

lambda_handler = api_handler("gateway", qsapi)
