"""Wallet token (EC_v1) decryption and CMS signature verification.

Known answers from tests/vectors/applepay.json (a real vendor token and a KDF/GCM-only case); signature cases
on tokens built with a private CA chain by local.wallet_token_forge (sandbox and tests only: it can forge tokens).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from local.wallet_token_forge import (
    TestChain,
    build_token,
    make_merchant_keys,
    make_test_chain,
    sample_payment_data,
    sign_content,
    wrap_payment_token,
)
from vaultcore.crypto import wallet_token as wt

VECTORS = json.loads((Path(__file__).resolve().parent.parent / "vectors" / "applepay.json").read_text())
FULL = next(e for e in VECTORS["entries"] if e["type"] == "full_token")
KDF_ONLY = next(e for e in VECTORS["entries"] if e["type"] == "kdf_and_gcm_only")

# The vendor's published root (Apple Root CA - G3), public; pinned below to the fingerprint the vector file records.
APPLE_ROOT_CA_G3_PEM = b"""-----BEGIN CERTIFICATE-----
MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
6BgD56KyKA==
-----END CERTIFICATE-----
"""

MERCHANT_ID = "merchant.com.example.vault"
NOW = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


def _kat_key() -> bytes:
    return FULL["merchant_private_key_pem"].encode()


def _kat_cert() -> bytes:
    return FULL["merchant_certificate_pem"].encode()


def _kat_token() -> dict:
    return json.loads(json.dumps(FULL["payment_data"]))  # a deep copy the test may tamper with


def _kat_signing_time() -> datetime:
    return datetime.fromisoformat(FULL["signature_verification"]["signing_time_utc"].replace("Z", "+00:00"))


def _flip_b64(value: str, index: int = 0) -> str:
    raw = bytearray(base64.b64decode(value))
    raw[index] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


@pytest.fixture(scope="module")
def chain() -> TestChain:
    return make_test_chain()


@pytest.fixture(scope="module")
def merchant() -> tuple[bytes, bytes]:
    return make_merchant_keys(MERCHANT_ID)


@pytest.fixture()
def token(chain: TestChain, merchant: tuple[bytes, bytes]) -> dict:
    return build_token(
        sample_payment_data(), merchant[1], chain, signing_time=NOW, transaction_id="c0ffee" * 10 + "0123"
    )


# ---------------------------------------------------------------------------------- known answers


def test_kat_decrypts_vendor_token_with_certificate():
    # Given the vendor token, merchant key and certificate of the vector; When decrypted
    result = wt.decrypt_ec_v1(_kat_token(), _kat_key(), merchant_certificate_pem=_kat_cert())
    # Then the payment data is the expected JSON, field by field
    assert result == json.loads(FULL["expected_decrypted_json"])
    fields = FULL["expected_fields"]
    assert result["applicationPrimaryAccountNumber"] == fields["applicationPrimaryAccountNumber"]
    assert result["applicationExpirationDate"] == fields["applicationExpirationDate"]
    assert result["transactionAmount"] == fields["transactionAmount"]
    assert result["paymentData"]["onlinePaymentCryptogram"] == fields["onlinePaymentCryptogram"]
    assert result["paymentData"]["eciIndicator"] == fields["eciIndicator"]


def test_kat_decrypts_with_identifier_only_and_full_wallet_token():
    # The merchant identifier string gives the same party V info as the certificate extension
    wrapped = {"paymentData": _kat_token(), "paymentMethod": {}, "transactionIdentifier": "x"}
    result = wt.decrypt_ec_v1(wrapped, _kat_key(), merchant_identifier=FULL["merchant_identifier"])
    assert result == json.loads(FULL["expected_decrypted_json"])


def test_kat_intermediate_values():
    cert = x509.load_pem_x509_certificate(_kat_cert())
    party_v = wt.merchant_id_hash(merchant_certificate_pem=_kat_cert())
    assert party_v.hex().upper() == FULL["merchant_id_field_hex"]
    assert wt.merchant_id_hash(merchant_identifier=FULL["merchant_identifier"]) == party_v
    assert wt.public_key_hash(_kat_cert()) == FULL["public_key_hash_b64"] == wt.public_key_hash(cert.public_key())

    key = serialization.load_pem_private_key(_kat_key(), password=None)
    ephemeral = serialization.load_der_public_key(
        base64.b64decode(FULL["payment_data"]["header"]["ephemeralPublicKey"])
    )
    shared = key.exchange(ec.ECDH(), ephemeral)
    assert base64.b64encode(shared).decode() == FULL["shared_secret_b64"]
    assert wt.ec_v1_other_info(party_v).hex().upper() == FULL["kdf_other_info_hex"]
    assert base64.b64encode(wt.ec_v1_derive_key(shared, party_v)).decode() == FULL["symmetric_key_b64"]
    digest = hashlib.sha256(wt.signed_content(FULL["payment_data"])).digest()
    assert base64.b64encode(digest).decode() == FULL["signature_verification"]["message_digest_sha256_b64"]


def test_kat_kdf_and_gcm_only_vector():
    shared = bytes.fromhex(KDF_ONLY["shared_secret_hex"])
    party_v = bytes.fromhex(KDF_ONLY["merchant_id_field_hex"])
    assert wt.ec_v1_other_info(party_v) == base64.b64decode(KDF_ONLY["kdf_other_info_b64"])
    key = wt.ec_v1_derive_key(shared, party_v)
    assert base64.b64encode(key).decode() == KDF_ONLY["symmetric_key_b64"]
    assert bytes.fromhex(KDF_ONLY["iv_hex"]) == bytes(16)
    plaintext = wt.aes_gcm_decrypt(key, base64.b64decode(KDF_ONLY["data_b64"]))
    assert json.loads(plaintext) == json.loads(KDF_ONLY["expected_decrypted_json"])


def test_kat_vendor_signature_verifies_against_pinned_root():
    # Given the vendor root, pinned to the fingerprint recorded with the vector
    pinned = re.search(r"fingerprint ([0-9A-F]{64})", " ".join(FULL["signature_verification"]["checks_passed"]))
    root = x509.load_pem_x509_certificate(APPLE_ROOT_CA_G3_PEM)
    assert root.fingerprint(hashes.SHA256()).hex().upper() == pinned.group(1)
    # When verified with a clock just after the signing time (the token is from 2014)
    info = wt.verify_signature(_kat_token(), [APPLE_ROOT_CA_G3_PEM], _kat_signing_time() + timedelta(minutes=1))
    # Then the BER (indefinite-length) CMS, the chain and both marker OIDs check out
    assert info.signing_time == _kat_signing_time()
    assert info.signer_subject == FULL["signature_verification"]["leaf_subject"]


def test_kat_vendor_signature_refused_today_and_under_foreign_root(chain: TestChain):
    with pytest.raises(wt.ChainInvalidError, match="validity") as exc:
        wt.verify_signature(_kat_token(), [APPLE_ROOT_CA_G3_PEM], datetime.now(UTC))
    assert exc.value.reason == "chain_invalid"
    with pytest.raises(wt.ChainInvalidError, match="trust root"):
        wt.verify_signature(_kat_token(), [chain.root_pem], _kat_signing_time())


def test_kat_signing_time_window():
    late = _kat_signing_time() + timedelta(minutes=5, seconds=1)
    with pytest.raises(wt.SigningTimeError, match="more than 300s") as exc:
        wt.verify_signature(_kat_token(), [APPLE_ROOT_CA_G3_PEM], late)
    assert exc.value.reason == "signing_time_out_of_window"
    info = wt.verify_signature(_kat_token(), [APPLE_ROOT_CA_G3_PEM], late, max_age=timedelta(minutes=10))
    assert info.signing_time == _kat_signing_time()


# ------------------------------------------------------------------------------- decryption refusals


def test_public_key_hash_mismatch_is_key_mismatch():
    tampered = _kat_token()
    tampered["header"]["publicKeyHash"] = base64.b64encode(hashlib.sha256(b"another key").digest()).decode()
    with pytest.raises(wt.KeyMismatchError, match="publicKeyHash") as exc:
        wt.decrypt_ec_v1(tampered, _kat_key(), merchant_certificate_pem=_kat_cert())
    assert exc.value.reason == "key_mismatch"


def test_token_for_another_merchant_key_is_key_mismatch(merchant: tuple[bytes, bytes]):
    with pytest.raises(wt.KeyMismatchError, match="publicKeyHash"):
        wt.decrypt_ec_v1(_kat_token(), merchant[0], merchant_identifier=FULL["merchant_identifier"])


def test_private_key_not_matching_certificate_is_key_mismatch(merchant: tuple[bytes, bytes]):
    with pytest.raises(wt.KeyMismatchError, match="does not belong"):
        wt.decrypt_ec_v1(_kat_token(), merchant[0], merchant_certificate_pem=_kat_cert())


def test_identifier_disagreeing_with_certificate_is_key_mismatch():
    with pytest.raises(wt.KeyMismatchError, match="does not match the merchant certificate"):
        wt.decrypt_ec_v1(_kat_token(), _kat_key(), "merchant.other", _kat_cert())


def test_no_merchant_identity_is_key_mismatch():
    with pytest.raises(wt.KeyMismatchError, match="unavailable"):
        wt.decrypt_ec_v1(_kat_token(), _kat_key())


@pytest.mark.parametrize("index", [0, 40, -1])
def test_tampered_data_is_decrypt_failed(index: int):
    tampered = _kat_token()
    tampered["data"] = _flip_b64(tampered["data"], index)
    with pytest.raises(wt.DecryptFailedError) as exc:
        wt.decrypt_ec_v1(tampered, _kat_key(), merchant_certificate_pem=_kat_cert())
    assert exc.value.reason == "decrypt_failed"


def test_wrong_merchant_identifier_is_decrypt_failed():
    with pytest.raises(wt.DecryptFailedError):
        wt.decrypt_ec_v1(_kat_token(), _kat_key(), merchant_identifier="merchant.com.wrong")


def test_non_json_plaintext_refused_without_leaking_it(merchant: tuple[bytes, bytes], chain: TestChain):
    # Given a well-encrypted token whose plaintext is not JSON but holds a PAN
    token = build_token(sample_payment_data(), merchant[1], chain, signing_time=NOW)
    key = serialization.load_pem_private_key(merchant[0], password=None)
    ephemeral = serialization.load_der_public_key(base64.b64decode(token["header"]["ephemeralPublicKey"]))
    assert isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(ephemeral, ec.EllipticCurvePublicKey)
    sym = wt.ec_v1_derive_key(key.exchange(ec.ECDH(), ephemeral), wt.merchant_id_hash(merchant_identifier=MERCHANT_ID))
    token["data"] = base64.b64encode(AESGCM(sym).encrypt(bytes(16), b"PAN 4111111111111111 {", None)).decode()
    # When decrypted; Then refused, with neither the message nor a chained exception carrying the plaintext
    with pytest.raises(wt.DecryptFailedError) as exc:
        wt.decrypt_ec_v1(token, merchant[0], MERCHANT_ID)
    assert "4111" not in str(exc.value)
    assert exc.value.__context__ is None and exc.value.__cause__ is None


@pytest.mark.parametrize(
    ("mutate", "error", "match"),
    [
        (lambda t: t.update(version="RSA_v1"), wt.UnsupportedVersionError, "unsupported token version"),
        (lambda t: t.pop("version"), wt.TokenFormatError, "version missing"),
        (lambda t: t.pop("header"), wt.TokenFormatError, "no header"),
        (lambda t: t.update(data="not base64!"), wt.TokenFormatError, "data is not base64"),
        (lambda t: t["header"].pop("ephemeralPublicKey"), wt.TokenFormatError, "ephemeralPublicKey missing"),
        (lambda t: t["header"].update(ephemeralPublicKey="AAAA"), wt.TokenFormatError, "not a public key"),
        (lambda t: t.update(data="AAAA"), wt.TokenFormatError, "shorter than the GCM tag"),
    ],
)
def test_malformed_tokens(mutate, error, match):
    tampered = _kat_token()
    mutate(tampered)
    with pytest.raises(error, match=match) as exc:
        wt.decrypt_ec_v1(tampered, _kat_key(), merchant_certificate_pem=_kat_cert())
    assert exc.value.reason == error.reason


def test_not_an_object_is_bad_format():
    with pytest.raises(wt.TokenFormatError):
        wt.decrypt_ec_v1("token", _kat_key(), merchant_certificate_pem=_kat_cert())  # type: ignore[arg-type]


def test_unreadable_private_key_is_key_mismatch():
    with pytest.raises(wt.KeyMismatchError, match="not a readable"):
        wt.decrypt_ec_v1(_kat_token(), b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")


# ----------------------------------------------------------------------- self-built chain and tokens


def test_built_token_verifies_and_decrypts(token: dict, chain: TestChain, merchant: tuple[bytes, bytes]):
    info = wt.verify_signature(token, [chain.root_pem], NOW + timedelta(seconds=30))
    assert info.signing_time == NOW
    assert info.signer_subject.endswith("CN=Wallet Test Signer")
    assert wt.decrypt_ec_v1(token, merchant[0], merchant_certificate_pem=merchant[1]) == sample_payment_data()
    assert wt.decrypt_ec_v1(wrap_payment_token(token), merchant[0], MERCHANT_ID) == sample_payment_data()


def test_merchant_certificate_extension_is_the_identifier_hash(merchant: tuple[bytes, bytes]):
    expected = hashlib.sha256(MERCHANT_ID.encode()).digest()
    assert wt.merchant_id_hash(merchant_certificate_pem=merchant[1]) == expected


def test_application_data_is_signed(chain: TestChain, merchant: tuple[bytes, bytes]):
    token = build_token(sample_payment_data(), merchant[1], chain, signing_time=NOW, application_data="ab" * 32)
    wt.verify_signature(token, [chain.root_pem], NOW)
    token["header"]["applicationData"] = "cd" * 32
    with pytest.raises(wt.SignatureInvalidError, match="message digest"):
        wt.verify_signature(token, [chain.root_pem], NOW)


def test_pinned_intermediate_is_an_accepted_anchor(token: dict, chain: TestChain):
    wt.verify_signature(token, [chain.intermediate_pem], NOW)


def test_wrong_root_is_chain_invalid(token: dict):
    other = make_test_chain()  # same subject names, different keys: only signatures tell them apart
    with pytest.raises(wt.ChainInvalidError, match="does not chain") as exc:
        wt.verify_signature(token, [other.root_pem], NOW)
    assert exc.value.reason == "chain_invalid"


def test_no_trust_root_is_chain_invalid(token: dict):
    with pytest.raises(wt.ChainInvalidError, match="no trust root"):
        wt.verify_signature(token, [], NOW)


@pytest.mark.parametrize("offset", [timedelta(minutes=5, seconds=1), -timedelta(minutes=6), timedelta(days=1)])
def test_signing_time_out_of_window(token: dict, chain: TestChain, offset: timedelta):
    with pytest.raises(wt.SigningTimeError) as exc:
        wt.verify_signature(token, [chain.root_pem], NOW + offset)
    assert exc.value.reason == "signing_time_out_of_window"


def test_signing_time_window_edges_and_configuration(token: dict, chain: TestChain):
    wt.verify_signature(token, [chain.root_pem], NOW + timedelta(minutes=5))
    wt.verify_signature(token, [chain.root_pem], NOW - timedelta(minutes=5))
    with pytest.raises(wt.SigningTimeError):
        wt.verify_signature(token, [chain.root_pem], NOW + timedelta(seconds=61), max_age=timedelta(minutes=1))


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t["header"].update(transactionId="00" + t["header"]["transactionId"][2:]),
        lambda t: t.update(data=_flip_b64(t["data"], 3)),
        lambda t: t["header"].update(ephemeralPublicKey=_flip_b64(t["header"]["ephemeralPublicKey"], -1)),
        lambda t: t["header"].update(applicationData="ab" * 32),
    ],
    ids=["transactionId", "data", "ephemeralPublicKey", "added applicationData"],
)
def test_tampered_signed_fields_are_signature_invalid(token: dict, chain: TestChain, mutate):
    mutate(token)
    with pytest.raises(wt.SignatureInvalidError, match="message digest") as exc:
        wt.verify_signature(token, [chain.root_pem], NOW)
    assert exc.value.reason == "signature_invalid"


def test_tampered_signature_value_is_signature_invalid(token: dict, chain: TestChain):
    token["signature"] = _flip_b64(token["signature"], -5)  # inside the ECDSA signature's last integer
    with pytest.raises(wt.SignatureInvalidError, match="does not verify|well-formed"):
        wt.verify_signature(token, [chain.root_pem], NOW)


def test_signature_by_a_key_other_than_the_leaf_is_signature_invalid(token: dict, chain: TestChain):
    other = make_test_chain()
    forged = TestChain(**{**chain.__dict__, "leaf_key_pem": other.leaf_key_pem})
    token["signature"] = base64.b64encode(sign_content(wt.signed_content(token), forged, NOW)).decode()
    with pytest.raises(wt.SignatureInvalidError, match="does not verify"):
        wt.verify_signature(token, [chain.root_pem], NOW)


@pytest.mark.parametrize("blob", [b"", b"\x30\x03\x02\x01\x01", b"\x30\x80" + b"\x02\x01\x01" * 3, bytes(64)])
def test_garbage_cms_is_signature_invalid(token: dict, chain: TestChain, blob: bytes):
    token["signature"] = base64.b64encode(blob).decode() or "AA=="
    with pytest.raises(wt.SignatureInvalidError):
        wt.verify_signature(token, [chain.root_pem], NOW)


def test_cms_without_certificates_is_signature_invalid(token: dict, chain: TestChain):
    blob = sign_content(wt.signed_content(token), chain, NOW, include_certificates=False)
    token["signature"] = base64.b64encode(blob).decode()
    with pytest.raises(wt.SignatureInvalidError, match="signer certificate not included"):
        wt.verify_signature(token, [chain.root_pem], NOW)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"leaf_oid": False}, "leaf marker"), ({"intermediate_oid": False}, "intermediate marker")],
)
def test_missing_marker_oids_are_chain_invalid(merchant: tuple[bytes, bytes], kwargs: dict, match: str):
    bare = make_test_chain(**kwargs)
    token = build_token(sample_payment_data(), merchant[1], bare, signing_time=NOW)
    with pytest.raises(wt.ChainInvalidError, match=match):
        wt.verify_signature(token, [bare.root_pem], NOW)
    # the flag exists for chains that lack them by design
    wt.verify_signature(token, [bare.root_pem], NOW, check_apple_oids=False)


def test_expired_chain_is_chain_invalid(merchant: tuple[bytes, bytes]):
    old = make_test_chain(valid_from=datetime(2010, 1, 1, tzinfo=UTC), valid_until=datetime(2020, 1, 1, tzinfo=UTC))
    token = build_token(sample_payment_data(), merchant[1], old, signing_time=NOW)
    with pytest.raises(wt.ChainInvalidError, match="validity"):
        wt.verify_signature(token, [old.root_pem], NOW)


def test_unsupported_version_refused_before_signature(token: dict, chain: TestChain):
    token["version"] = "RSA_v1"
    with pytest.raises(wt.UnsupportedVersionError):
        wt.verify_signature(token, [chain.root_pem], NOW)


def test_naive_now_is_a_programming_error(token: dict, chain: TestChain):
    with pytest.raises(ValueError, match="timezone-aware"):
        wt.verify_signature(token, [chain.root_pem], datetime(2030, 6, 1, 12, 0))  # noqa: DTZ001


# ------------------------------------------------------------------ why a signature is refused (issue 18)
#
# Each refusal carries a stable ``detail``; the service maps it to its own public message under the same code
# (vaultcore.wallet.errors.SIGNATURE_REFUSALS). The messages are distinct, and none holds token or key material.


def _refusal(token: dict, roots: list[bytes], now: datetime = NOW) -> wt.WalletTokenError:
    with pytest.raises(wt.WalletTokenError) as exc:
        wt.verify_signature(token, roots, now)
    return exc.value


def _tampered_certificate_pem(pem: bytes) -> bytes:
    """The certificate with one bit of its signature value flipped (the DER stays well formed)."""
    der = bytearray(x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER))
    der[-2] ^= 0x01  # inside the ECDSA signature's last INTEGER, the certificate's last field
    return x509.load_der_x509_certificate(bytes(der)).public_bytes(serialization.Encoding.PEM)


def test_expired_signing_certificate_is_signer_expired(merchant: tuple[bytes, bytes]):
    # Given a chain whose root and intermediate are valid but whose signing certificate expired in 2025
    chain = make_test_chain(leaf_valid_until=datetime(2025, 1, 1, tzinfo=UTC))
    token = build_token(sample_payment_data(), merchant[1], chain, signing_time=NOW)
    # Then the refusal says the signer's certificate expired, not that it does not chain
    error = _refusal(token, [chain.root_pem])
    assert (error.reason, error.detail) == ("chain_invalid", "signer_expired")
    # and a signing certificate valid only from later is "not yet valid"
    later = make_test_chain(leaf_valid_from=NOW + timedelta(days=1))
    token = build_token(sample_payment_data(), merchant[1], later, signing_time=NOW)
    assert _refusal(token, [later.root_pem]).detail == "signer_not_yet_valid"


def test_expired_intermediate_is_issuer_expired(merchant: tuple[bytes, bytes]):
    old = make_test_chain(valid_from=datetime(2010, 1, 1, tzinfo=UTC), valid_until=datetime(2020, 1, 1, tzinfo=UTC),
                          leaf_valid_until=datetime(2099, 1, 1, tzinfo=UTC))
    token = build_token(sample_payment_data(), merchant[1], old, signing_time=NOW)
    assert _refusal(token, [old.root_pem]).detail == "issuer_expired"


def test_vendor_token_today_is_signer_expired():
    # The published vendor token (2014) under the vendor's root: its signing certificate expired in 2019.
    error = _refusal(_kat_token(), [APPLE_ROOT_CA_G3_PEM], datetime(2030, 1, 1, tzinfo=UTC))
    assert error.detail == "signer_expired"


def test_token_signed_under_an_unknown_root_is_unknown_root(token: dict, chain: TestChain):
    other = make_test_chain()  # same names, other keys: the token's intermediate was not issued by this root
    assert _refusal(token, [other.root_pem]).detail == "unknown_root"
    assert _refusal(token, [make_test_chain(name="Elsewhere").root_pem]).detail == "unknown_root"
    # the vendor's token under the test root: another name altogether
    assert _refusal(_kat_token(), [chain.root_pem], _kat_signing_time()).detail == "unknown_root"


def test_tampered_certificate_signature_is_certificate_signature(token: dict, chain: TestChain):
    # Given the token re-signed by the same leaf key, but with the leaf certificate's own signature altered
    tampered = TestChain(**{**chain.__dict__, "leaf_pem": _tampered_certificate_pem(chain.leaf_pem)})
    token["signature"] = base64.b64encode(sign_content(wt.signed_content(token), tampered, NOW)).decode()
    # Then the CMS signature verifies, but the leaf is not the intermediate's: an altered certificate
    error = _refusal(token, [chain.root_pem])
    assert (error.reason, error.detail) == ("chain_invalid", "certificate_signature")


def test_tampered_signature_value_is_signature_mismatch(token: dict, chain: TestChain):
    token["signature"] = base64.b64encode(
        sign_content(wt.signed_content(token), chain, NOW)[:-1] + b"\x00").decode()  # ECDSA s altered
    error = _refusal(token, [chain.root_pem])
    assert (error.reason, error.detail) == ("signature_invalid", "signature_mismatch")


def test_altered_token_fields_are_digest_mismatch(token: dict, chain: TestChain):
    token["data"] = _flip_b64(token["data"], 3)
    assert _refusal(token, [chain.root_pem]).detail == "digest_mismatch"


def test_signing_time_missing_or_invalid(token: dict, chain: TestChain):
    content = wt.signed_content(token)
    token["signature"] = base64.b64encode(sign_content(content, chain, NOW, include_signing_time=False)).decode()
    assert _refusal(token, [chain.root_pem]).detail == "signing_time_missing"
    bad_time = b"\x17\x0d" + b"301399120000Z"  # month 13
    token["signature"] = base64.b64encode(sign_content(content, chain, NOW, signing_time_der=bad_time)).decode()
    assert _refusal(token, [chain.root_pem]).detail == "signing_time_invalid"


def test_signing_time_too_old_or_in_the_future(token: dict, chain: TestChain):
    assert _refusal(token, [chain.root_pem], NOW + timedelta(minutes=6)).detail == "signing_time_too_old"
    assert _refusal(token, [chain.root_pem], NOW - timedelta(minutes=6)).detail == "signing_time_in_future"


@pytest.mark.parametrize(
    ("kwargs", "detail"), [({"leaf_oid": False}, "leaf_marker"), ({"intermediate_oid": False}, "intermediate_marker")]
)
def test_marker_details(merchant: tuple[bytes, bytes], kwargs: dict, detail: str):
    bare = make_test_chain(**kwargs)
    token = build_token(sample_payment_data(), merchant[1], bare, signing_time=NOW)
    assert _refusal(token, [bare.root_pem]).detail == detail


def test_trust_root_details(token: dict):
    assert _refusal(token, []).detail == "no_trust_root"
    assert _refusal(token, [b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"]).detail == (
        "trust_root_unreadable")


def test_every_detail_has_a_distinct_public_message():
    from vaultcore.wallet.errors import SIGNATURE_REFUSALS, W

    source = Path(wt.__file__).read_text()
    details = set(re.findall(r'",\s*"([a-z_]+)"(?:\)| from None)', source))  # Error("message", "detail")
    details |= {"signer_expired", "signer_not_yet_valid", "issuer_expired", "issuer_not_yet_valid",
                "signing_time_too_old", "signing_time_in_future"}  # built with f-strings / a conditional
    assert len(details) == 27
    assert details == set(SIGNATURE_REFUSALS), details ^ set(SIGNATURE_REFUSALS)
    messages = [message for _code, message in SIGNATURE_REFUSALS.values()]
    assert len(set(messages)) == len(messages)
    assert {code for code, _ in SIGNATURE_REFUSALS.values()} == {
        W.SIGNATURE_INVALID, W.CHAIN_INVALID, W.SIGNING_TIME, W.NO_TRUST_ROOT}
    for message in messages:  # names the check, never a key, certificate body or time from the token
        assert "BEGIN" not in message and not re.search(r"\d{4}-\d{2}-\d{2}", message)


def test_readme_documents_every_signature_refusal():
    from vaultcore.wallet.errors import SIGNATURE_REFUSALS, W

    page = (Path(__file__).resolve().parents[2] / "docs" / "integrators" / "wallets.md").read_text()
    section = page.split("\n## Wallet and fraud error codes (`error_code`)\n", 1)[1].split("\n## ", 1)[0]
    for detail, (code, message) in SIGNATURE_REFUSALS.items():
        if code != W.NO_TRUST_ROOT:  # 715 has its own row
            assert f"| {code} | `{detail}` | {message}" in section, detail
