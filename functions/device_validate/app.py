"""POST /api/device/validate: wiring only; the logic is vaultcore.devices.validate."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("secure", "vaultcore.devices.validate:device_validate", aws=("dynamodb", "kms"))
