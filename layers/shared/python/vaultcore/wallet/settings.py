"""Per-account wallet settings (DESIGN.md §5 ``PUT /admin/v1/accounts/{account_id}/wallet``).

Stored in the Registry:

* ``WALLET#<account_id>`` / ``SETTINGS``: ``merchant_identifier``, ``domains``, ``verify_signature``,
  ``trust_roots`` (public PEM certificates: the anchors this account's tokens must chain to), the public
  facts shown back (``public_key_hash`` of the payment processing key, the identity certificate's subject and
  expiry), and ``secrets``: ONE KMS envelope (``store/keys.wrap_secret``, context ``{purpose: wallet-keys,
  account}``) around the payment processing key and certificate and the merchant identity key and
  certificate. One envelope means one KMS call per cold container, not four.
* ``WALLETDOMAIN#<domain>`` / ``ACCOUNT``: which account claimed a domain (a domain belongs to one account, so
  the association file served for a host is unambiguous and a referrer cannot be borrowed).
* ``WALLETFILE#<account_id>`` / ``<file name>``: the domain association file (public text).
* ``WALLET#DEFAULT`` / ``TRUST_ROOTS``: the stack-wide default trust roots, used when an account has none.

Private keys are never returned. A PUT that omits a key or certificate keeps the stored one, so the operator
can change domains without re-sending keys. Keys and certificates are accepted in the forms operators have
(SEC1 or PKCS#8 PEM, encrypted PKCS#8 with a passphrase, PKCS#12, base64 DER: :mod:`vaultcore.wallet.key_forms`)
and normalised to unencrypted PKCS#8 PEM and PEM certificates before the envelope is made. ``verify_signature``
false is refused outside the certification environment (a prod stack always verifies the signature chain and
signing time).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from vaultcore import clock
from vaultcore.cache import ContainerCache
from vaultcore.errors import Conflict, NotFound, ValidationError
from vaultcore.logs import get_logger
from vaultcore.settings import settings as platform_settings
from vaultcore.store import registry
from vaultcore.store.keys import unwrap_secret, wrap_secret
from vaultcore.wallet import key_forms

__all__ = [
    "WalletSettings",
    "WalletSecrets",
    "DEFAULT_ASSOCIATION_FILE",
    "put_wallet_settings",
    "get_wallet_settings",
    "wallet_view",
    "load_secrets",
    "account_for_domain",
    "put_association_file",
    "get_association_file",
    "put_default_trust_roots",
    "get_default_trust_roots",
    "default_trust_roots_view",
    "trust_roots_for",
    "normalise_domain",
]

_log = get_logger("wallet.settings")
DEFAULT_ASSOCIATION_FILE = "apple-developer-merchantid-domain-association"
MAX_DOMAINS = 50
MAX_TRUST_ROOTS = 10
MAX_PEM_CHARS = key_forms.MAX_PEM_CHARS
MAX_ASSOCIATION_BYTES = 65_536
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SECRET_FIELDS = ("payment_processing_private_key", "payment_processing_certificate",
                  "merchant_identity_private_key", "merchant_identity_certificate")

_records: ContainerCache[Any] = ContainerCache("record_cache_seconds", max_items=2048)


@dataclass(frozen=True)
class WalletSettings:
    account_id: str
    merchant_identifier: str
    domains: tuple[str, ...]
    verify_signature: bool
    trust_roots: tuple[str, ...]
    secrets_envelope: dict[str, str]
    public: dict[str, Any]


@dataclass(frozen=True)
class WalletSecrets:
    payment_processing_private_key: str
    payment_processing_certificate: str | None
    merchant_identity_private_key: str | None
    merchant_identity_certificate: str | None

    def __repr__(self) -> str:  # never print key material
        return "WalletSecrets(<redacted>)"


def _context(account_id: str) -> dict[str, str]:
    return {"purpose": "wallet-keys", "account": account_id}


# ---------------------------------------------------------------------------------------------- validation


def normalise_domain(value: Any) -> str | None:
    """A lower-case host name (no scheme, port or path), or None when ``value`` is not one."""
    if not isinstance(value, str):
        return None
    host = value.strip().lower()
    if "://" in host:
        host = host.split("://", 1)[1]
    host = host.split("/", 1)[0].split("?", 1)[0]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    host = host.rstrip(".")
    labels = host.split(".")
    if not 3 <= len(host) <= 253 or len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        return None
    if labels[-1].isdigit():  # an IP address is not a shop domain
        return None
    return host


def _load_cert(pem: str, name: str) -> Any:
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificate(pem.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        raise ValidationError(f"{name} is not a readable PEM certificate.", code=400) from None


def _load_key(pem: str, name: str) -> Any:
    from cryptography.hazmat.primitives import serialization

    try:
        return serialization.load_pem_private_key(pem.encode("ascii"), password=None)
    except (ValueError, TypeError, UnicodeEncodeError):
        # Never chain the parser's exception: it is about a private key.
        raise ValidationError(f"{name} is not a readable unencrypted PEM private key.", code=400) from None
    except Exception:  # noqa: BLE001 - UnsupportedAlgorithm and friends: same answer, no detail
        raise ValidationError(f"{name} is not a supported private key.", code=400) from None


def _spki(public_key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _check_pair(key_pem: str, cert_pem: str | None, key_name: str, cert_name: str) -> Any:
    key = _load_key(key_pem, key_name)
    if cert_pem is not None:
        cert = _load_cert(cert_pem, cert_name)
        if _spki(cert.public_key()) != _spki(key.public_key()):
            raise ValidationError(f"{cert_name} does not hold the public key of {key_name}.", code=400)
        return cert
    return None


def _trust_roots(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or len(items) > MAX_TRUST_ROOTS:
        raise ValidationError(f"trust_roots must be a list of at most {MAX_TRUST_ROOTS} certificates (PEM or "
                              "base64 DER).", code=400)
    from cryptography.hazmat.primitives.serialization import Encoding

    roots: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_PEM_CHARS:
            raise ValidationError("trust_roots must be certificates (PEM, or base64 of their DER).", code=400)
        certs = key_forms.read_certificates(item.strip(), f"trust_roots[{index}]")
        roots.extend(c.public_bytes(Encoding.PEM).decode("ascii") for c in certs)
    return tuple(roots)


def _fingerprint(pem: str) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    return x509.load_pem_x509_certificate(pem.encode("ascii")).fingerprint(hashes.SHA256()).hex()


# ------------------------------------------------------------------------------------------------ settings


def _require_account(account_id: str) -> None:
    from vaultcore.wallet.merchants import require_account

    require_account(account_id)


def put_wallet_settings(account_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Create or replace an account's wallet settings; returns :func:`wallet_view`."""
    _require_account(account_id)
    current = get_wallet_settings(account_id, fresh=True)
    merchant_identifier = body.get("merchant_identifier")
    if not isinstance(merchant_identifier, str) or not 1 <= len(merchant_identifier) <= 255 \
            or not merchant_identifier.isprintable():
        raise ValidationError("merchant_identifier is required (1 to 255 printable characters).", code=400)
    verify = body.get("verify_signature", True)
    if not isinstance(verify, bool):
        raise ValidationError("verify_signature must be a boolean.", code=400)
    if not verify and not platform_settings().is_cert:
        raise ValidationError("verify_signature may be false in the certification environment only.", code=400)
    domains_in = body.get("domains", [])
    if not isinstance(domains_in, list) or len(domains_in) > MAX_DOMAINS:
        raise ValidationError(f"domains must be a list of at most {MAX_DOMAINS} host names.", code=400)
    domains: list[str] = []
    for item in domains_in:
        host = normalise_domain(item)
        if host is None:
            raise ValidationError("domains must be host names such as shop.example.com.", code=400)
        if host not in domains:
            domains.append(host)
    trust_roots = _trust_roots(body.get("trust_roots"))

    old = load_secrets(current) if current is not None else None
    # Whether the identity key and certificate go together is decided on what is given, before parsing.
    key_given, cert_given = key_forms.fields_given(body, "merchant_identity")
    if (key_given or bool(old and old.merchant_identity_private_key)) \
            != (cert_given or bool(old and old.merchant_identity_certificate)):
        raise ValidationError("merchant_identity_certificate and merchant_identity_private_key go together.", code=400)
    given: dict[str, str | None] = {}
    for role in key_forms.ROLES:
        material = key_forms.read_role(body, role)
        given[f"{role}_private_key"], given[f"{role}_certificate"] = material.private_key_pem, material.certificate_pem
    new: dict[str, str | None] = {}
    for name in _SECRET_FIELDS:
        new[name] = given[name] if given[name] is not None else (getattr(old, name) if old is not None else None)
    if not new["payment_processing_private_key"]:
        raise ValidationError("payment_processing_private_key is required.", code=400)
    pp_cert = _check_pair(new["payment_processing_private_key"], new["payment_processing_certificate"],
                          "payment_processing_private_key", "payment_processing_certificate")
    if (new["merchant_identity_private_key"] is None) != (new["merchant_identity_certificate"] is None):
        raise ValidationError("merchant_identity_certificate and merchant_identity_private_key go together.", code=400)
    identity = None
    if new["merchant_identity_private_key"]:
        identity = _check_pair(new["merchant_identity_private_key"], new["merchant_identity_certificate"],
                               "merchant_identity_private_key", "merchant_identity_certificate")

    from vaultcore.crypto import wallet_token as wt

    processing_key = _load_key(new["payment_processing_private_key"], "payment_processing_private_key")
    try:
        wt.merchant_id_hash(merchant_certificate_pem=new["payment_processing_certificate"],
                            merchant_identifier=merchant_identifier)
    except wt.WalletTokenError as exc:
        raise ValidationError(f"payment processing certificate: {exc.message}.", code=400) from None
    public = {
        "payment_processing_public_key_hash": wt.public_key_hash(processing_key.public_key()),
        "has_payment_processing_certificate": pp_cert is not None,
        "payment_processing_certificate_not_after": pp_cert.not_valid_after_utc.isoformat() if pp_cert else None,
        "merchant_identity_subject": identity.subject.rfc4514_string() if identity is not None else None,
        "merchant_identity_not_after": identity.not_valid_after_utc.isoformat() if identity is not None else None,
    }

    _claim_domains(account_id, domains, current.domains if current is not None else ())
    envelope = wrap_secret(json.dumps(new).encode("utf-8"), _context(account_id))
    item = {
        "pk": f"WALLET#{account_id}", "sk": "SETTINGS", "account_id": account_id,
        "merchant_identifier": merchant_identifier, "domains": domains, "verify_signature": verify,
        "trust_roots": list(trust_roots), "secrets": envelope, "public": public, "updated_at": int(clock.now()),
    }
    registry.put(item)
    _records.invalidate(("settings", account_id))
    _log.info("wallet settings stored", extra={"account_id": account_id, "count": len(domains)})
    result = _from_item(item)
    assert result is not None
    return wallet_view(result)


def _claim_domains(account_id: str, domains: list[str], previous: tuple[str, ...]) -> None:
    for host in domains:
        if host in previous:
            continue
        try:
            registry.put_new({"pk": f"WALLETDOMAIN#{host}", "sk": "ACCOUNT", "account_id": account_id})
        except registry.ConditionFailed:
            owner = registry.get(f"WALLETDOMAIN#{host}", "ACCOUNT", consistent=True) or {}
            if owner.get("account_id") != account_id:
                raise Conflict("A domain is already registered to another account.", code=409) from None
    for host in previous:
        if host not in domains:
            registry.delete(f"WALLETDOMAIN#{host}", "ACCOUNT")
            _records.invalidate(("domain", host))


def _from_item(item: dict[str, Any] | None) -> WalletSettings | None:
    if not item:
        return None
    return WalletSettings(
        account_id=item["account_id"], merchant_identifier=item["merchant_identifier"],
        domains=tuple(item.get("domains") or ()), verify_signature=bool(item.get("verify_signature", True)),
        trust_roots=tuple(item.get("trust_roots") or ()), secrets_envelope=item["secrets"],
        public=dict(item.get("public") or {}))


def get_wallet_settings(account_id: str, *, fresh: bool = False) -> WalletSettings | None:
    def load() -> WalletSettings | None:
        return _from_item(registry.get(f"WALLET#{account_id}", "SETTINGS", consistent=fresh))

    if fresh:
        return load()
    return _records.get_or_load(("settings", account_id), load)


def wallet_view(ws: WalletSettings) -> dict[str, Any]:
    """What the management API shows: never a private key; certificates by their public facts."""
    return {
        "account_id": ws.account_id, "merchant_identifier": ws.merchant_identifier, "domains": list(ws.domains),
        "verify_signature": ws.verify_signature,
        "trust_roots": [{"sha256": _fingerprint(pem)} for pem in ws.trust_roots],
        **ws.public,
    }


def load_secrets(ws: WalletSettings) -> WalletSecrets:
    raw = json.loads(unwrap_secret(ws.secrets_envelope, _context(ws.account_id)))
    return WalletSecrets(**{name: raw.get(name) for name in _SECRET_FIELDS})


def account_for_domain(host: str) -> str | None:
    domain = normalise_domain(host)
    if domain is None:
        return None

    def load() -> str:
        item = registry.get(f"WALLETDOMAIN#{domain}", "ACCOUNT")
        return (item or {}).get("account_id", "")

    return _records.get_or_load(("domain", domain), load) or None


# ------------------------------------------------------------------------------- domain association file


def put_association_file(account_id: str, body: dict[str, Any]) -> dict[str, Any]:
    _require_account(account_id)
    name = body.get("file_name", DEFAULT_ASSOCIATION_FILE)
    content = body.get("content")
    if not isinstance(name, str) or not _FILE_NAME.match(name):
        raise ValidationError("file_name must be 1 to 128 letters, digits, dots, hyphens or underscores.", code=400)
    if not isinstance(content, str) or not content or len(content.encode("utf-8")) > MAX_ASSOCIATION_BYTES:
        raise ValidationError(f"content must be 1 to {MAX_ASSOCIATION_BYTES} bytes of text.", code=400)
    registry.put({"pk": f"WALLETFILE#{account_id}", "sk": name, "content": content, "updated_at": int(clock.now())})
    _records.invalidate(("file", account_id, name))
    return {"account_id": account_id, "file_name": name, "path": f"/.well-known/{name}",
            "sha256": hashlib.sha256(content.encode("utf-8")).hexdigest(), "bytes": len(content.encode("utf-8"))}


def get_association_file(account_id: str, name: str) -> str | None:
    if not _FILE_NAME.match(name or ""):
        return None

    def load() -> str:
        item = registry.get(f"WALLETFILE#{account_id}", name)
        return (item or {}).get("content", "")

    return _records.get_or_load(("file", account_id, name), load) or None


# ------------------------------------------------------------------------------------------- trust roots


def put_default_trust_roots(body: dict[str, Any]) -> dict[str, Any]:
    roots = _trust_roots(body.get("trust_roots"))
    if not roots:
        raise ValidationError("trust_roots must hold at least one PEM certificate.", code=400)
    registry.put({"pk": "WALLET#DEFAULT", "sk": "TRUST_ROOTS", "trust_roots": list(roots),
                  "updated_at": int(clock.now())})
    _records.invalidate(("default-roots",))
    return {"trust_roots": [{"sha256": _fingerprint(pem)} for pem in roots]}


def get_default_trust_roots() -> tuple[str, ...]:
    def load() -> tuple[str, ...]:
        item = registry.get("WALLET#DEFAULT", "TRUST_ROOTS")
        return tuple((item or {}).get("trust_roots") or ())

    cached = _records.get(("default-roots",))
    if cached is None:
        cached = load()
        _records.put(("default-roots",), cached)
    return cached


def default_trust_roots_view() -> dict[str, Any]:
    roots = get_default_trust_roots()
    if not roots:
        raise NotFound("No default wallet trust roots are configured.")
    return {"trust_roots": [{"sha256": _fingerprint(pem)} for pem in roots]}


def trust_roots_for(ws: WalletSettings) -> tuple[str, ...]:
    """The account's own roots, else the stack-wide default (may be empty: the caller refuses with 715)."""
    return ws.trust_roots or get_default_trust_roots()
