"""schemathesis, driven by every OpenAPI document in ``openapi/``, against the local runner
(docs/integrators/openapi.md).

One test per document, one test item per operation (schemathesis' pytest integration): the examples, coverage
and fuzzing phases generate requests from the document (valid and invalid ones), send them to a runner of this
module's own (``python -m local.runner``, as ``tests/e2e/conftest.py`` starts the session's: the fuzzing rotates,
disables and deletes whatever it reaches, so the session's runner and its demo data stay untouched) and check
every response with

- ``not_a_server_error``: no 5xx,
- ``status_code_conformance``: the status is documented for the operation,
- ``content_type_conformance``: the ``Content-Type`` is one the document gives for that status,
- ``response_schema_conformance``: the body validates against the document's schema for that status,
- ``response_headers_conformance``: documented response headers are present and valid.

Credentials, in a good share of the cases and not all (the rest keep what was generated, usually nothing or a
random ``Authorization``, and must get the documented 401 / 1003 / error_code 102):

- secure API, parser, proxy: an HMAC ``Authorization`` of the demo partner over the exact bytes sent (a
  ``requests`` auth that signs the prepared request's path and body, ``tests/spec_client.py``), or ``Basic`` of
  the demo key-security partner, or that partner's ``partnerId``/``partnerKey`` in the body where the operation
  takes body credentials (``x-body-credentials``);
- gateway: a demo account's ``account_id``/``api_accesskey`` as body variables (QSAPI, RSAPI, wallet session,
  ``/paymentMethods``, ``/payments``), or the ``X-Account-Id``/``X-Api-Accesskey`` headers where documented;
- management: none (the runner serves it on loopback without auth).

Path parameters are, in a share of the cases, ids the runner seeded (the demo partner, account, BDK, device,
template, proxy configurations, collector client), so the operations reach real resources and not only 404s.

Bounded for ``make test`` on 2 cores: ``VAULT_SCHEMATHESIS_EXAMPLES`` (default 50) fuzzed cases per operation
besides the examples and coverage phases, a fixed seed (``VAULT_SCHEMATHESIS_SEED``, default 18: the same cases on
every run, different ones per operation), no example database (nothing is written to ``.hypothesis``).
"""

from __future__ import annotations

import base64
import json
import os
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import requests
import schemathesis
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from local.contracts.common import closed
from tests import spec_client
from tests.e2e.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ROOT / "openapi"
EXAMPLES = int(os.environ.get("VAULT_SCHEMATHESIS_EXAMPLES", "50"))
SEED = int(os.environ.get("VAULT_SCHEMATHESIS_SEED", "18"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]

CONFIG = schemathesis.Config.from_dict({
    "seed": SEED,
    "suppress-health-check": ["all"],
    "request-timeout": 30,
    "generation": {"max-examples": EXAMPLES, "database": "none", "mode": "all"},
    # Methods no route has, every one schemathesis can send: the runner answers each as API Gateway does (405 in
    # the API's JSON). HEAD, which schemathesis does not send, is in tests/e2e/test_foundation_e2e.py.
    "phases": {"coverage": {"unexpected-methods": ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "TRACE"]}},
})

# The demo data of this module's runner (filled by the `platform` fixture; the auth providers and hooks read it
# when a case is generated, after the fixture ran).
DEMO: dict[str, Any] = {}


def _share(*parts: Any) -> int:
    """A number in 0..99 that is a function of the case (so a failing case replays with the same credentials)."""
    return zlib.crc32(repr(parts).encode("utf-8", "backslashreplace")) % 100


def _plain(value: Any) -> Any:
    return value if isinstance(value, (dict, list, str, bytes, int, float, bool, type(None))) else "<not set>"


# ------------------------------------------------------------------------------------------------ credentials
class HmacSigner(requests.auth.AuthBase):
    """Signs the request exactly as sent (docs/integrators/authentication.md, "The HMAC scheme"): the prepared
    request's path and body bytes.

    70 % of the requests get the demo partner's HMAC header, 10 % ``Basic`` of the key-security partner; the rest
    go out with whatever was generated (no ``Authorization``, or a random one)."""

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        body = r.body or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        assert isinstance(body, bytes)  # the cases' bodies are prepared as bytes or str, never streamed
        path = unquote(urlsplit(r.url).path)
        share = _share(path, body)
        if share < 70:
            partner = DEMO["partner"]
            r.headers["Authorization"] = spec_client.authorization(partner["partnerId"], partner["hmacKey"], path,
                                                                   body)
        elif share < 80:
            partner = DEMO["keyPartner"]
            token = base64.b64encode(f"{partner['partnerId']}:{partner['partnerKey']}".encode()).decode()
            r.headers["Authorization"] = "Basic " + token
        return r


class PartnerBodyCredentials:
    """``partnerId``/``partnerKey`` of the key-security partner in the body (device validate, parser): a share of
    the cases of the operations that document body credentials; the others fall through to :class:`HmacSigner`."""

    def get(self, case: schemathesis.Case, context: schemathesis.AuthContext) -> dict | None:
        if "partnerId" not in (case.operation.definition.raw.get("x-body-credentials") or []):
            return None
        if not isinstance(case.body, dict) or _share(case.operation.label, _plain(case.body)) >= 20:
            return None
        return DEMO["keyPartner"]

    def set(self, case: schemathesis.Case, data: dict, context: schemathesis.AuthContext) -> None:
        assert isinstance(case.body, dict)  # get() gives data only for a JSON object body
        case.body["partnerId"] = data["partnerId"]
        case.body["partnerKey"] = data["partnerKey"]


class AccountCredentials:
    """A demo account's ``account_id``/``api_accesskey`` in 75 % of the gateway's cases: body variables, or the
    ``X-Account-Id``/``X-Api-Accesskey`` headers where the operation documents them (``/paymentMethods``,
    ``/payments``), or HTTP Basic on the account's own path for the API-key operations (issue 31)."""

    def get(self, case: schemathesis.Case, context: schemathesis.AuthContext) -> tuple[str, dict] | None:
        security = case.operation.definition.raw.get("security") or []
        if any("apiKeyBasic" in requirement for requirement in security):  # issue 31: the v4 API-key operations
            share = _share(case.operation.label, _plain(case.body), _plain(case.path_parameters))
            return ("basic", DEMO["apiKeysAccount"]) if share < 75 else None
        if not case.operation.definition.raw.get("x-body-credentials"):
            return None
        share = _share(case.operation.label, _plain(case.body), _plain(case.headers))
        if share >= 75:
            return None
        account = DEMO["account"] if share % 2 == 0 else DEMO["checkout"]
        header_scheme = any("accountId" in requirement
                            for requirement in case.operation.definition.raw.get("security") or [])
        if header_scheme and share % 3 == 0:
            return "headers", account
        return ("body", account) if isinstance(case.body, dict) else None

    def set(self, case: schemathesis.Case, data: tuple[str, dict], context: schemathesis.AuthContext) -> None:
        where, account = data
        if where == "basic":  # the account's own key over Basic (every scope), on the path of its account
            token = base64.b64encode(f"{account['account_id']}:{account['api_accesskey']}".encode()).decode()
            case.headers["Authorization"] = "Basic " + token  # case-insensitive: replaces a generated one
            if case.path_parameters and "account_id" in case.path_parameters:
                case.path_parameters["account_id"] = account["account_id"]
        elif where == "headers":
            case.headers["X-Account-Id"] = account["account_id"]
            case.headers["X-Api-Accesskey"] = account["api_accesskey"]
        else:
            assert isinstance(case.body, dict)  # get() gives "body" only for a JSON object body
            case.body["account_id"] = account["account_id"]
            case.body["api_accesskey"] = account["api_accesskey"]


# ------------------------------------------------------------------------------------- seeded path parameters
def _known_path_values() -> dict[str, list[str]]:
    demo = DEMO
    return {
        "partner_id": [demo["partner"]["partnerId"], demo["keyPartner"]["partnerId"]],
        "partnerID": [demo["partner"]["partnerId"]],
        "account_id": [demo["account"]["account_id"], demo["checkout"]["account_id"]],
        "bdk_id": [b["bdkId"] for b in demo["bdks"]],
        "serial": [d["serial"] for d in demo["devices"]],
        "template_ref": [demo["template"]],
        "reference": [demo["proxyConfig"]["configReferenceID"], demo["proxyTokenizeConfig"]["configReferenceID"]],
        "configReferenceID": [demo["proxyConfig"]["configReferenceID"],
                              demo["proxyTokenizeConfig"]["configReferenceID"]],
        "client_id": [demo["checkout"]["fraud_client_id"]],
        "version": ["1"],
    }


def seeded_path_parameters(context: schemathesis.HookContext, path_parameters: dict[str, Any] | None):
    """Each path parameter is the generated value or, as often, one the runner seeded."""
    if not path_parameters:
        return st.just(path_parameters)
    known = _known_path_values()
    is_script = context.operation is not None and context.operation.path == "/cdn/cs/{client_id}"
    choices = {}
    for name, value in path_parameters.items():
        options = [value] + [v + ".js" if is_script and name == "client_id" else v for v in known.get(name, [])]
        choices[name] = st.sampled_from(options)
    return st.fixed_dictionaries(choices)


def _load(api: str) -> schemathesis.BaseSchema:
    # the open error codes closed again (local/contracts/common.py `closed`): the platform answers known codes only
    document = closed(json.loads((DOCUMENTS / f"{api}.json").read_text(encoding="utf-8")))
    schema = schemathesis.openapi.from_dict(document, config=CONFIG)
    if api in ("secure", "parser", "proxy"):
        schema.auth(refresh_interval=None)(PartnerBodyCredentials)
        schema.auth.set_from_requests(HmacSigner())
    elif api == "gateway":
        schema.auth(refresh_interval=None)(AccountCredentials)
    schema.hook("flatmap_path_parameters")(seeded_path_parameters)
    return schema


# ----------------------------------------------------------------------------------------------- the runner
@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    from tests.e2e.runner_process import runner_process

    with runner_process(tmp_path_factory.mktemp("schemathesis-runner")) as started:
        DEMO.clear()
        DEMO.update(started.demo)
        # issue 31: an account of the API-key operations' own, which no other case authenticates against (the
        # fuzzed wrong keys of the demo accounts reach the failure limit and lock those accounts for the window)
        from tests.e2e.http import admin

        status, keys_account = admin(started.base_url, "POST", "/admin/v1/accounts", {})
        assert status == 201, keys_account
        DEMO["apiKeysAccount"] = keys_account
        with requests.Session() as session:
            yield Runner(started.base_url, DEMO, started.stdout, started.stderr), session


# The documents of this file; the others are in test_schemathesis_partner_e2e.py, with a runner of their own, so
# that pytest-xdist runs the two halves on two workers (--dist loadfile keeps a file on one). The management API
# last there: its cases rotate, disable and delete the seeded resources the others use.
APIS_HERE = ("collector", "gateway", "parser")


@pytest.fixture(scope="module", params=APIS_HERE)
def api_schema(request, platform):
    """One document of ``openapi/``, loaded once the runner is up (generation reads its demo data)."""
    return _load(request.param)


lazy_schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture(autouse=True)
def _node_id(request):
    # schemathesis' lazy schema renames the test item per operation through `node._nodeid`, which pytest 9 no
    # longer sets: give it the id to start from.
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid


def call_and_validate(case: schemathesis.Case, platform) -> None:
    """One case against the runner, with the checks. The runner's management API takes no request but GET and HEAD
    without ``Content-Type: application/json`` (issue 27: no cross-site form or text/plain POST;
    local/runner.py ``management_refusal``): its cases that have no body say JSON all the same."""
    runner, session = platform
    if case.path.startswith("/admin/") and case.method.upper() not in ("GET", "HEAD") \
            and "content-type" not in case.headers:  # a case-insensitive dict
        case.headers["Content-Type"] = "application/json"
    case.call_and_validate(base_url=runner.base_url, session=session, checks=CHECKS)


@lazy_schema.parametrize()
def test_every_operation_conforms_to_its_document(case, platform):
    call_and_validate(case, platform)
