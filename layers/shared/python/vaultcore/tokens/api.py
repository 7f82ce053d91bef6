"""POST /api/tokenization/tokenize (secure API): clear values in, tokens and their bfid out.

Request: ``Authorization`` (HMAC; Basic for key-security partners), JSON body
``{reference?, templateRef, values: [{name, value}], omit?}``.

Optional device headers (spec: tokenization request): ``dev-device-serial``, ``dev-device-type``,
``dev-payload``, plus ``dev-ksn`` (the DUKPT key sequence number; required for the terminal device type, whose
KSN travels beside the payload, absent for the audio reader, whose KSN is inside it) and ``dev-client-id``
(optional, as ``clientId`` of the parser). When any of them is sent, the payload is decrypted exactly like
``POST /api/decrypt/parser`` (same checks and 1201/1202/1203/2xxx codes) and the decrypted card fills the
template's ``vault_token_card_number`` (the PAN), ``vault_token_card_expiration`` (expiry as ``MMYY``),
``vault_token_first_name`` and ``vault_token_last_name`` (track 1 name) when the template has those fields,
the card carries the data and the body did not give a value for them (a value in the body wins). A template
without ``vault_token_card_number`` cannot take a device payload (3030).

Response: ``{success: true, reference?, messageId, bfid, values: [{name, value}]}`` (tokens, matched by name;
order not guaranteed). The query parameter ``omit`` (issue 21): ``?omit=1`` leaves ``values`` out of the answer
and keeps the tokens for one ``POST /api/tokenization/read`` (within the one-hour read window); ``?omit=2``
answers them and keeps them readable too; ``?omit=0`` (or none) keeps them for the gateway's read step only.
The body's ``"omit": true`` means ``?omit=1`` (the query parameter wins when both are sent). The signature's
canonical resource is the path: the query string is not signed.

The other routes of the function (detokenize, read, delete, batches, template validation, health checks) are
in :mod:`vaultcore.tokens.endpoints`; :func:`tokenization_route` dispatches by the template's resource.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vaultcore.api.http import Request, Response
from vaultcore.api.secure import json_object_body, reference_of, success
from vaultcore.auth.authenticator import authenticate_header
from vaultcore.tokens import endpoints
from vaultcore.tokens.errors import NO_CARD_FIELD, TokenServiceError
from vaultcore.tokens.service import template_for, tokenize_values
from vaultcore.tokens.values import MAX_VALUES, body_values, omit_mode

__all__ = ["tokenize_endpoint", "tokenization_route", "DEVICE_HEADERS", "CARD_NUMBER_FIELD",
           "CARD_EXPIRATION_FIELD", "MAX_VALUES"]

DEVICE_HEADERS = ("dev-device-serial", "dev-device-type", "dev-payload", "dev-ksn", "dev-client-id")
CARD_NUMBER_FIELD = "vault_token_card_number"
CARD_EXPIRATION_FIELD = "vault_token_card_expiration"
FIRST_NAME_FIELD = "vault_token_first_name"
LAST_NAME_FIELD = "vault_token_last_name"

def _device_values(partner_id: str, request: Request, template_ref: Any, given: set[str]) -> list[tuple[str, str]]:
    """Values decrypted from the device headers for the template's card fields the body did not give."""
    template = template_for(partner_id, template_ref)
    if CARD_NUMBER_FIELD not in template:
        raise TokenServiceError(f"templateRef {template.template_ref} has no {CARD_NUMBER_FIELD} field to fill "
                                f"from the device payload.", code=NO_CARD_FIELD)
    # Imported here: the decryption stack (DUKPT, track parsing) is only needed by calls that carry a payload.
    from vaultcore.devices.parser import ParserError, decrypt_for_partner

    card = decrypt_for_partner(partner_id, request.header("dev-device-type"), request.header("dev-device-serial"),
                               request.header("dev-payload"), request.header("dev-ksn"),
                               request.header("dev-client-id"))
    if card.pan is None:
        raise ParserError("No card number was found in the decrypted data.", code=2800)
    sources = [s for s in (card.track2, card.track1, card.keyed) if s is not None]
    expiry = next((s.expiry_mmyy for s in sources if s.expiry_mmyy), None)
    found = {CARD_NUMBER_FIELD: card.pan, CARD_EXPIRATION_FIELD: expiry}
    if card.track1 is not None:
        found[FIRST_NAME_FIELD] = card.track1.first_name
        found[LAST_NAME_FIELD] = card.track1.surname
    return [(name, value) for name, value in found.items() if value and name in template and name not in given]


def tokenize_endpoint(request: Request) -> Response:
    # Authenticate first: an unauthenticated caller learns nothing about its body's validity.
    caller = authenticate_header(request)
    body = json_object_body(request)
    reference = reference_of(body)
    omit = omit_mode(request, body)
    with_device = any(request.header(h) is not None for h in DEVICE_HEADERS)
    pairs = body_values(body.get("values"), required=not with_device)
    if with_device:
        pairs += _device_values(caller.partner_id, request, body.get("templateRef"), {n for n, _ in pairs})
    result = tokenize_values(caller.partner_id, body.get("templateRef"), pairs,  # type: ignore[arg-type]
                             readable=omit != 0)
    payload: dict[str, Any] = {"bfid": result.bfid}
    if omit != 1:
        payload["values"] = [{"name": name, "value": token} for name, token in result.values.items()]
    return success(payload, reference)


#: The TokenizeFunction's routes: template resource -> the function that answers it.
ROUTES: dict[str, Callable[[Request], Response]] = {
    "/api/tokenization/tokenize": tokenize_endpoint,
    "/api/tokenization/detokenize": endpoints.detokenize_endpoint,
    "/api/tokenization/read": endpoints.read_endpoint,
    "/api/tokenization/delete": endpoints.delete_endpoint,
    "/api/tokenization/batch/tokenize": endpoints.batch_tokenize_endpoint,
    "/api/tokenization/batch/detokenize": endpoints.batch_detokenize_endpoint,
    "/api/tokenization/batch/read": endpoints.batch_read_endpoint,
    "/api/tokenization/batch/delete": endpoints.batch_delete_endpoint,
    "/api/template/validate": endpoints.template_validate_endpoint,
    "/api/healthcheck/tokenize": endpoints.healthcheck_endpoint,
    "/api/healthcheck/detokenize": endpoints.healthcheck_endpoint,
}


def tokenization_route(request: Request) -> Response:
    """The TokenizeFunction's one route: the tokenization API of the secure API, by the template's resource."""
    return ROUTES.get(request.resource, tokenize_endpoint)(request)
