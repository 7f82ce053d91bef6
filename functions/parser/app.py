"""POST /api/decrypt/parser: wiring only; the logic is vaultcore.devices.parser."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("secure", "vaultcore.devices.parser:decrypt_parser",
                             aws=("dynamodb", "kms", "payment-cryptography-data@prod"))
