"""POST /api/v1/partners/{partnerID}/configurations/{configReferenceID}: wiring only; the logic is
vaultcore.proxy.service."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("proxy", "vaultcore.proxy.service:handle_proxy")
