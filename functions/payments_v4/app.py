"""The original's v4 payments on the gateway API: payments/init, a transaction's details, its level 3 and meta.

Wiring only; the logic is vaultcore.payments (routes: vaultcore.payments.routes). The answers' errors are the
original's ``ApiViolation`` (vaultcore.iframe.violations.v4_errors).
"""

from vaultcore.api.handler import api_handler
from vaultcore.iframe.violations import v4_errors
from vaultcore.payments.routes import route

# kms: the account's wrapped access key (Basic authentication)
lambda_handler = v4_errors(api_handler("admin", route, aws=("dynamodb", "kms")))
