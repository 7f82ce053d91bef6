"""POST /api/partner/validate: wiring only; the logic is vaultcore.partners.validate."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("secure", "vaultcore.partners.validate:partner_validate", aws=("dynamodb", "kms"))
