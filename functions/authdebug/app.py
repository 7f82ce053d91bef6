"""POST /api/v1/authdebug and /api/authdebug (cert only): wiring only; the logic is vaultcore.auth.authdebug."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("secure", "vaultcore.auth.authdebug:authdebug", aws=("dynamodb",),
                             modules=("vaultcore.store.nonces",))  # imported lazily by the route
