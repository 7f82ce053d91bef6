"""POST /api/decrypt/parser: wiring only; the logic is vaultcore.devices.parser."""

from vaultcore.api.handler import api_handler
from vaultcore.devices.parser import decrypt_parser

lambda_handler = api_handler("secure", decrypt_parser, aws=("dynamodb", "kms", "payment-cryptography-data@prod"))
