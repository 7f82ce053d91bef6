"""A QSAPI 3.8 client written from the spec and the gateway's published lifecycle alone (issue 20).

It imports nothing from the platform (no ``vaultcore``, no ``local``): it posts form-urlencoded variables as
clients of the original gateway do, and reads the JSON transaction response. Tests that use it prove the
platform answers what such a client sends, not what the platform's own helpers send.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlencode

PATH = "/api/qsapi/3.8"
REPORTING_PATH = "/api/rsapi/v1/transactions"


class QsapiClient:
    def __init__(self, base_url: str, account_id: str, api_accesskey: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.account_id = account_id
        self.api_accesskey = api_accesskey

    def _post(self, path: str, variables: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        body = urlencode({"account_id": self.account_id, "api_accesskey": self.api_accesskey,
                          "response_format": "JSON", **variables}).encode()
        request = urllib.request.Request(self.base_url + path, data=body, method="POST",
                                         headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def transact(self, **variables: Any) -> dict[str, Any]:
        status, answer = self._post(PATH, variables)
        if status != 200:
            raise AssertionError(f"HTTP {status}: {answer}")
        return answer

    def report(self, **variables: Any) -> dict[str, Any]:
        status, answer = self._post(REPORTING_PATH, variables)
        if status != 200:
            raise AssertionError(f"HTTP {status}: {answer}")
        return answer

    # the operations, as the lifecycle names them
    def sale(self, amount: str, **payment: Any) -> dict[str, Any]:
        return self.transact(transaction_type="SALE", transaction_amount=amount, **payment)

    def authorize(self, amount: str, **payment: Any) -> dict[str, Any]:
        return self.transact(transaction_type="AUTHORIZATION", transaction_amount=amount, **payment)

    def capture(self, token_id: str, amount: str) -> dict[str, Any]:
        return self.transact(transaction_type="CAPTURE", token_id=token_id, transaction_amount=amount)

    def refund(self, token_id: str, amount: str) -> dict[str, Any]:
        return self.transact(transaction_type="REFUND", token_id=token_id, transaction_amount=amount)

    def void(self, token_id: str) -> dict[str, Any]:
        return self.transact(transaction_type="REVERSAL", token_id=token_id)

    def store(self, **payment: Any) -> dict[str, Any]:
        return self.transact(transaction_type="STORE", **payment)

    def credit(self, amount: str, **payment: Any) -> dict[str, Any]:
        return self.transact(transaction_type="CREDIT", transaction_amount=amount, **payment)

    def settle(self) -> dict[str, Any]:
        return self.transact(transaction_type="SETTLE-BATCH")

    def status_of(self, transaction_id: str) -> str:
        return self.report(transaction_id=transaction_id)["transaction"]["status"]
