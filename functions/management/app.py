"""The management API (/admin/v1/...): wiring only; routes live in vaultcore.admin."""

from vaultcore.admin.routes import dispatch
from vaultcore.api.handler import api_handler

# SQS (postback redrive and redelivery only) is created on first use.
lambda_handler = api_handler("admin", dispatch, aws=("dynamodb", "kms"))
