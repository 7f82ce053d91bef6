"""Merchants' API keys on the gateway API: create, list, read, change, delete, and the scope catalog.

Wiring only; the logic is vaultcore.apikeys (routes: vaultcore.apikeys.routes). The answers' errors are the
original's ``ApiViolation`` (vaultcore.iframe.violations).
"""

from vaultcore.api.handler import api_handler
from vaultcore.apikeys.routes import route
from vaultcore.iframe.violations import v4_errors

lambda_handler = v4_errors(api_handler("admin", route, aws=("dynamodb", "kms")))
