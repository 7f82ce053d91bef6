"""The payment iFrame on the gateway API: configurations, instances, the page, its scripts and submissions.

Wiring only; the logic is vaultcore.iframe (routes: vaultcore.iframe.routes). The v4 paths answer the original's
``ApiViolation`` error body (vaultcore.iframe.violations), the browser paths ours.
"""

from vaultcore.api.handler import api_handler
from vaultcore.iframe.routes import route
from vaultcore.iframe.violations import v4_errors

# sqs: the postback of a gateway STORE when a configuration's savePaymentOption saves a capture
lambda_handler = v4_errors(api_handler("admin", route, aws=("dynamodb", "kms", "sqs")))
