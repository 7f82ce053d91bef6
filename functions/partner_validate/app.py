"""POST /api/partner/validate: wiring only; the logic is vaultcore.partners.validate."""

from vaultcore.api.handler import api_handler
from vaultcore.partners.validate import partner_validate

lambda_handler = api_handler("secure", partner_validate, aws=("dynamodb", "kms"))
