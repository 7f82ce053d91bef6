"""The payment iFrame on the gateway API: configurations, instances, the page, its scripts and submissions.

Wiring only; the logic is vaultcore.iframe (routes: vaultcore.iframe.routes).
"""

from vaultcore.api.handler import api_handler
from vaultcore.iframe.routes import route

lambda_handler = api_handler("admin", route, aws=("dynamodb", "kms"))
