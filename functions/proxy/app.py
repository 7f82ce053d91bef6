"""POST /api/v1/partners/{partnerID}/configurations/{configReferenceID}: wiring only; the logic is
vaultcore.proxy.service."""

from vaultcore.api.handler import api_handler
from vaultcore.proxy.service import handle_proxy

lambda_handler = api_handler("proxy", handle_proxy)
