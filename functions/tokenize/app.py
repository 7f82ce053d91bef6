"""The tokenization API of the secure API: POST /api/tokenization/tokenize, /detokenize, /read, /delete,
/batch/tokenize, /batch/detokenize, /batch/read, /batch/delete, POST /api/template/validate, GET
/api/healthcheck/tokenize and /detokenize.
Errors in the original's ErrorResponse (family ``tokenization`` of vaultcore.api.responses). Wiring only; the logic is vaultcore.tokens.api (tokenize, the dispatch by resource) and vaultcore.tokens.endpoints.
"""

from vaultcore.api.handler import api_handler
from vaultcore.tokens.api import tokenization_route

lambda_handler = api_handler("tokenization", tokenization_route, aws=("dynamodb", "kms", "payment-cryptography-data@prod"))
