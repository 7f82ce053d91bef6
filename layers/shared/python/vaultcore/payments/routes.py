"""HTTP routes of the v4 payments on the gateway API (wiring: ``functions/payments_v4/app.py``).

HTTP Basic (:func:`vaultcore.v4.auth.authenticate`), each operation's scope first, as the original's document
names it:

* ``POST /api/v4/accounts/{account_id}/payments/init`` (``pcx:payments:create``): 201 ``InitResponse``;
* ``GET /api/v4/accounts/{account_id}/payments/{transaction_id}`` (``pcx:payments:read``): 200
  ``TransactionDetails``;
* ``PATCH /api/v4/accounts/{account_id}/payments/{transaction_id}`` (``pcx:payments:update``): 200
  ``TransactionDetails``; 422 / errCode 930 once the transaction's batch has settled.

Errors are our ``{success: false, errCode, errMessage}``, answered as the original's ``ApiViolation`` by the
function's wrapper (:func:`vaultcore.iframe.violations.v4_errors`).
"""

from __future__ import annotations

from vaultcore.api.http import Request, Response, json_response
from vaultcore.payments import records
from vaultcore.v4.auth import authorize

__all__ = ["route", "SCOPES"]

_BASE = "/api/v4/accounts/{account_id}/payments"
_INIT = _BASE + "/init"
_ONE = _BASE + "/{transaction_id}"
#: The original's scope of each operation ("one of the following scopes": it, or pcx:payments:*).
SCOPES = {(_INIT, "POST"): "pcx:payments:create", (_ONE, "GET"): "pcx:payments:read",
          (_ONE, "PATCH"): "pcx:payments:update"}


def route(request: Request) -> Response:
    method = request.method.upper()
    account = authorize(request, SCOPES).account
    if request.resource == _INIT:
        return json_response(201, records.init(account, request.json()))
    transaction_id = request.path_params.get("transaction_id", "")
    if method == "GET":
        return json_response(200, records.details(account, transaction_id))
    return json_response(200, records.update(account, transaction_id, request.json()))
