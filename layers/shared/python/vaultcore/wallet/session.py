"""``POST /api/v1/wallet_pay/get_wallet_pay_session``: a wallet payment session from the vendor.

The browser's ``onvalidatemerchant`` hands the page a validation request; the merchant's server asks us for a
session (it holds ``account_id`` and ``api_accesskey``; spec Authentication rule 2), and we ask the wallet
vendor, authenticating with the merchant identity certificate over mutual TLS. The answer (an opaque session
object) goes back unchanged, to be passed to ``completeMerchantValidation`` in the browser.

Request (JSON): ``account_id``, ``api_accesskey``, ``display_name`` (1-64 characters), ``referrer`` (the shop
domain or a URL on it: it must be one of the account's wallet domains, 716), ``merchant_id`` (the wallet
merchant identifier; it must be the account's, 718).

Errors are the gateway error body with gateway codes and an HTTP status by class (docs/integrators/wallets.md "Wallet
session"): 400 for the request (100 not one JSON object or refused by the input gate, 200 a field missing or empty, 219
a field's type or length, 701, 716-718), 401 for the credentials (200 ``account_id``/``api_accesskey`` missing,
101 ``account_id`` not 12 digits, 102 authentication failed), 502 for the vendor (719), 500 internal (1).

The vendor endpoint is one per stack: ``WALLET_MERCHANT_VALIDATION_URL`` (the vendor's published payment
session URL in the template). The call is SSRF-checked like every egress (:mod:`vaultcore.net.ssrf`: URL
policy, every resolved address checked, the connection made to a checked address with SNI and certificate
checks on the name), carries the vendor's body ``{merchantIdentifier, displayName, initiative: "web",
initiativeContext: <domain>}``, follows no redirect, and is bounded in time (15 s) and size (64 KB).

The vendor's server certificate is verified against the system trust store. The one exception is the local
runner: ``WALLET_MERCHANT_VALIDATION_CA_FILE`` names the CA bundle of the runner's stand-in for the vendor
(local/wallet_vendor.py), and it is honoured only together with the runner's switch
``VAULT_ALLOW_LOCAL_EGRESS=1`` in the certification environment (:func:`runner_ca_file`). A deployed stack sets
neither variable (template.yaml; tests/unit/test_layer_contents.py checks), and with ``ENVIRONMENT=prod`` the
bundle is ignored whatever else is set: production never trusts anything but the system store.

Python's ``ssl`` loads a client certificate only from a path: the identity key is written to an anonymous
memory file (``memfd_create``), loaded into the SSL context through ``/proc/self/fd`` and closed at once, so it
never reaches a disk; the context is cached per container (``KEY_CACHE_SECONDS``), so this happens once per
cold container and account.
"""

from __future__ import annotations

import hashlib
import json
import os
import ssl
from typing import Any

from vaultcore.api.http import Request, Response, json_response
from vaultcore.cache import ContainerCache
from vaultcore.errors import VaultError
from vaultcore.gateway.errors import E
from vaultcore.logs import get_logger
from vaultcore.wallet import settings as wallet_settings
from vaultcore.wallet.errors import W, WalletError
from vaultcore.wallet.merchants import authenticate_merchant

__all__ = ["get_wallet_pay_session", "request_session", "runner_ca_file", "SESSION_ERRORS", "VALIDATION_URL_ENV",
           "VALIDATION_CA_ENV"]

VALIDATION_URL_ENV = "WALLET_MERCHANT_VALIDATION_URL"
#: Runner only (its stand-in's CA bundle): ignored without VAULT_ALLOW_LOCAL_EGRESS=1 or with ENVIRONMENT=prod.
VALIDATION_CA_ENV = "WALLET_MERCHANT_VALIDATION_CA_FILE"
_TOTAL_SECONDS = 15.0
_CONNECT_SECONDS = 3.0
_USER_AGENT = "vaultcore-wallet/1"
_MAX_RESPONSE = 65_536
_log = get_logger("wallet.session")

#: Every ``error_code`` this endpoint answers, with its HTTP status: the "Wallet session errors" table of
#: docs/integrators/wallets.md and the OpenAPI enum are this dict (tests/unit/test_openapi_contracts.py).
SESSION_ERRORS: dict[int, str] = {
    1: "Internal error: a dependency is unavailable (HTTP 500).",
    100: "The body is not one JSON object, or the request was refused by the input gate (HTTP 400).",
    101: "`account_id` is not 12 digits (HTTP 401).",
    102: "Authentication failed: wrong access key, unknown or disabled account (HTTP 401).",
    200: "A required variable is missing or empty: `account_id` or `api_accesskey` (HTTP 401); `display_name`, "
         "`merchant_id` or `referrer` (HTTP 400).",
    219: "`display_name`, `merchant_id` or `referrer` is not a string of 1 to 64/255/2048 printable characters "
         "(HTTP 400).",
    W.NOT_CONFIGURED: "Wallet payments are not configured for this account (HTTP 400).",
    W.REFERRER: "`referrer` is not one of the account's wallet domains (HTTP 400).",
    W.IDENTITY_MISSING: "The account has no merchant identity certificate (HTTP 400).",
    W.MERCHANT_ID: "`merchant_id` is not the account's merchant identifier (HTTP 400).",
    W.VALIDATION_FAILED: "The wallet vendor's merchant validation failed, or none is configured on this platform "
                         "(HTTP 502).",
}
_contexts: ContainerCache[ssl.SSLContext] = ContainerCache("key_cache_seconds", max_items=256)


def runner_ca_file() -> str | None:
    """The local runner's CA bundle for its vendor stand-in, or None (the system trust store).

    Read at call time. Honoured only when the runner's switch ``VAULT_ALLOW_LOCAL_EGRESS`` is exactly ``1`` and
    the environment is the certification one; otherwise a set bundle is ignored (and the refusal logged, without
    the path), so a stray variable in a deployed stack can never widen whom the session call trusts."""
    from vaultcore.net.ssrf import LOCAL_EGRESS_ENV

    path = os.environ.get(VALIDATION_CA_ENV, "")
    if not path:
        return None
    if os.environ.get(LOCAL_EGRESS_ENV, "") != "1":
        _log.warning("runner-only CA bundle ignored", extra={"reason": "not-local-runner"})
        return None
    if os.environ.get("ENVIRONMENT", "cert").strip().lower() != "cert":
        _log.warning("runner-only CA bundle ignored", extra={"reason": "not-cert-environment"})
        return None
    return path


def _ssl_context(certificate_pem: str, key_pem: str) -> ssl.SSLContext:
    cafile = runner_ca_file()
    cache_key = hashlib.sha256((certificate_pem + key_pem + "\0" + (cafile or "")).encode("utf-8")).hexdigest()
    cached = _contexts.get(cache_key)
    if cached is not None:
        return cached
    context = ssl.create_default_context(cafile=cafile)  # certificate and host name (SNI name) required
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    # Python's ssl loads a client key only from a path. An anonymous memory file (memfd, Linux: Lambda and the
    # local runner) gives it one without the key ever reaching a disk; it is closed as soon as it is loaded.
    fds = []
    try:
        for name, text in (("wallet-cert", certificate_pem), ("wallet-key", key_pem)):
            fd = os.memfd_create(name, os.MFD_CLOEXEC)
            fds.append(fd)
            os.write(fd, text.encode("ascii"))
        context.load_cert_chain(f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}")
    finally:
        for fd in fds:
            os.close(fd)
    _contexts.put(cache_key, context)
    return context


def request_session(url: str, body: dict[str, Any], certificate_pem: str, key_pem: str) -> dict[str, Any]:
    """POST ``body`` to the vendor over mutual TLS; the session object, or WalletError 719 (HTTP 502)."""
    import http.client
    import socket

    from vaultcore.net.http import _ConnectFailed, _PinnedHTTPSConnection  # the egress client's pinned connection
    from vaultcore.net.ssrf import EgressError, EgressPolicy, resolve_and_check, validate_target_url

    def fail(reason: str) -> WalletError:
        _log.warning("merchant validation failed", extra={"reason": reason})
        return WalletError(W.VALIDATION_FAILED, status=502)

    policy = EgressPolicy.from_env()
    try:
        target = validate_target_url(url, policy)
        if target.scheme != "https":
            raise fail("not-https")
        addresses = resolve_and_check(target.host, target.port, policy)
    except EgressError as exc:
        raise fail(f"egress-{exc.reason}") from None
    context = _ssl_context(certificate_pem, key_pem)
    payload = json.dumps(body).encode("utf-8")
    headers = (("Host", target.host_header), ("Content-Type", "application/json"), ("Accept", "application/json"),
               ("Accept-Encoding", "identity"), ("User-Agent", _USER_AGENT), ("Content-Length", str(len(payload))))
    for ip in addresses[:4]:
        # The socket goes to the checked address; SNI and the certificate check use the name (the context checks
        # the host name). No redirect is followed: a 3xx is just not a 200.
        conn = _PinnedHTTPSConnection(str(ip), target.port, context=context, server_hostname=target.host)
        conn.timeout = _CONNECT_SECONDS
        response: http.client.HTTPResponse | None = None
        try:
            try:
                conn.connect()  # TCP connect and TLS handshake, each bounded by the connect timeout
            except (_ConnectFailed, socket.gaierror):
                continue  # nothing was sent: the next checked address
            assert conn.sock is not None
            conn.putrequest("POST", target.request_target, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name, value)
            conn.endheaders(payload)
            conn.sock.settimeout(_TOTAL_SECONDS - _CONNECT_SECONDS)  # the read timeout
            response = conn.getresponse()
            chunks: list[bytes] = []
            size = 0
            while size <= _MAX_RESPONSE:  # at most one byte past the cap, never drained
                chunk = response.read(_MAX_RESPONSE + 1 - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if size <= _MAX_RESPONSE and response.length:
                raise http.client.IncompleteRead(b"".join(chunks), response.length)  # closed before its length
            data = b"".join(chunks)
        except (OSError, http.client.HTTPException) as exc:
            raise fail("tls" if isinstance(exc, ssl.SSLError) else "io") from None
        finally:
            if response is not None:
                response.close()
            conn.close()
        if response.status != 200:
            raise fail(f"status-{response.status}")
        if len(data) > _MAX_RESPONSE:
            raise fail("too-large")
        try:
            session = json.loads(data)
        except ValueError:
            session = None
        if not isinstance(session, dict):
            raise fail("not-json")
        return session
    raise fail("connect")


def _text(body: dict[str, Any], name: str, high: int) -> str:
    """A required text field: 200 when missing or empty (as QSAPI counts empty values), 219 when malformed."""
    value = body.get(name)
    if value is None or value == "":
        raise WalletError(E.MISSING, f"{name} is required.", status=400)
    if not isinstance(value, str) or len(value) > high or not value.isprintable():
        raise WalletError(E.VARIABLE, f"{name} must be 1 to {high} printable characters.", status=400)
    return value


def get_wallet_pay_session(request: Request) -> Response:
    body = request.json()
    if not isinstance(body, dict):
        raise WalletError(E.BODY, "The request body must be one JSON object.", status=400)
    try:
        account = authenticate_merchant(body.get("account_id"), body.get("api_accesskey"))
    except VaultError as exc:  # the gateway's 101/102/200 answer, with an HTTP status that says so
        if exc.status >= 500:
            raise  # a dependency failed: error 1 (HTTP 500), never an authentication failure
        raise WalletError(exc.code, exc.message, status=401) from None
    display_name = _text(body, "display_name", 64)
    merchant_id = _text(body, "merchant_id", 255)
    referrer = _text(body, "referrer", 2048)
    ws = wallet_settings.get_wallet_settings(account.account_id)
    if ws is None:
        raise WalletError(W.NOT_CONFIGURED, status=400)
    if merchant_id != ws.merchant_identifier:
        raise WalletError(W.MERCHANT_ID, status=400)
    domain = wallet_settings.normalise_domain(referrer)
    if domain is None or domain not in ws.domains:
        raise WalletError(W.REFERRER, status=400)
    secrets = wallet_settings.load_secrets(ws)
    if not secrets.merchant_identity_certificate or not secrets.merchant_identity_private_key:
        raise WalletError(W.IDENTITY_MISSING, status=400)
    url = os.environ.get(VALIDATION_URL_ENV, "")
    if not url:
        raise WalletError(W.VALIDATION_FAILED, "Wallet merchant validation is not configured on this platform.",
                          status=502)
    session = request_session(url, {"merchantIdentifier": ws.merchant_identifier, "displayName": display_name,
                                     "initiative": "web", "initiativeContext": domain},
                              secrets.merchant_identity_certificate, secrets.merchant_identity_private_key)
    _log.info("wallet session issued", extra={"account_id": account.account_id})
    return json_response(200, session)
