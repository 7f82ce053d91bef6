"""The parser API: POST /api/decrypt/parser (vaultcore.devices.parser), and Decryptx's POST /api/decrypt,
/api/decrypt-ext and GET /api/healthcheck as the original's clients call them (vaultcore.devices.decryptx). Wiring only: the route
by the template's resource."""

from vaultcore.api.handler import api_handler
from vaultcore.api.http import Request, Response
from vaultcore.devices import decryptx
from vaultcore.devices.parser import decrypt_parser

ROUTES = {"/api/decrypt": decryptx.decrypt_endpoint, "/api/decrypt-ext": decryptx.decrypt_external_endpoint,
          "/api/healthcheck": decryptx.healthcheck_endpoint}


def parser_route(request: Request) -> Response:
    return ROUTES.get(request.resource, decrypt_parser)(request)


lambda_handler = api_handler("secure", parser_route, aws=("dynamodb", "kms", "payment-cryptography-data@prod"))
