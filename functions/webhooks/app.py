"""Merchants' webhook endpoints on the gateway API (``/api/v4/accounts/{account_id}/webhooks...``).

Wiring only; the logic is vaultcore.webhooks (routes: vaultcore.webhooks.routes). The v4 paths answer the
original's ``ApiViolation`` error body (vaultcore.iframe.violations).
"""

from vaultcore.api.handler import api_handler
from vaultcore.iframe.violations import v4_errors
from vaultcore.webhooks.routes import route

# kms: secrets wrapped at creation and rotation; sqs: a redelivery is queued directly
lambda_handler = v4_errors(api_handler("admin", route, aws=("dynamodb", "kms", "sqs")))
