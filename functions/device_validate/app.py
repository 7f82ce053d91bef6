"""POST /api/device/validate: wiring only; the logic is vaultcore.devices.validate."""

from vaultcore.api.handler import api_handler
from vaultcore.devices.validate import device_validate

lambda_handler = api_handler("secure", device_validate, aws=("dynamodb", "kms"))
