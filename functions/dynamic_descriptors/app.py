"""The original's v4 dynamic descriptors on the gateway API: create, list (search, pages), read, change, delete.

Wiring only; the logic is vaultcore.descriptors (routes: vaultcore.descriptors.routes). The answers' errors are
the original's ``ApiViolation`` (vaultcore.iframe.violations.v4_errors).
"""

from vaultcore.api.handler import api_handler
from vaultcore.descriptors.routes import route
from vaultcore.iframe.violations import v4_errors

# kms: the account's wrapped access key (Basic authentication)
lambda_handler = v4_errors(api_handler("admin", route, aws=("dynamodb", "kms")))
