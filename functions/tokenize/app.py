"""POST /api/tokenization/tokenize: wiring only; the logic is vaultcore.tokens.api."""

from vaultcore.api.handler import api_handler
from vaultcore.tokens.api import tokenize_endpoint

lambda_handler = api_handler("secure", tokenize_endpoint)
