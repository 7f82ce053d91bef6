"""POST /api/tokenization/tokenize: wiring only; the logic is vaultcore.tokens.api."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("secure", "vaultcore.tokens.api:tokenize_endpoint",
                             aws=("dynamodb", "kms", "payment-cryptography-data@prod"))
