"""POST /api/v1/authdebug and /api/authdebug (cert only): wiring only; the logic is vaultcore.auth.authdebug."""

from vaultcore.api.handler import api_handler
from vaultcore.auth.authdebug import authdebug

lambda_handler = api_handler("secure", authdebug, aws=("dynamodb",))
