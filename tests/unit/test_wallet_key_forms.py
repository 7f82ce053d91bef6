"""Wallet key material forms (vaultcore.wallet.key_forms), pure: the published fixture key as the openssl CLI
wrote it in each form (tests/vectors/wallet_keys/README.md) normalises to one PKCS#8 PEM."""

from __future__ import annotations

import base64

import pytest

from tests.wallet_support import GALA_DIR, gala_certificate_pem, gala_key_fields, gala_vector
from vaultcore.errors import ValidationError
from vaultcore.wallet import key_forms

FORMS = ("sec1", "pkcs8", "pkcs8-encrypted", "sec1-encrypted", "pkcs12")


def _normalised(form: str, role: str = "payment_processing") -> key_forms.RoleMaterial:
    body = gala_key_fields(form, role)
    if form != "pkcs12":
        body[f"{role}_certificate"] = gala_certificate_pem()
    return key_forms.read_role(body, role)


def test_every_form_normalises_to_the_same_pkcs8_key_and_pem_certificate():
    results = {form: _normalised(form) for form in FORMS}
    keys = {r.private_key_pem for r in results.values()}
    certs = {r.certificate_pem for r in results.values()}
    assert len(keys) == 1 and len(certs) == 1
    key = keys.pop()
    assert key.startswith("-----BEGIN PRIVATE KEY-----\n") and "ENCRYPTED" not in key
    # The same key the fixture's SEC1 PEM holds, the same certificate as the fixture's PEM.
    from cryptography.hazmat.primitives import serialization

    fixture = serialization.load_pem_private_key(gala_vector()["merchant_private_key_pem"].encode(), None)
    assert serialization.load_pem_private_key(key.encode(), None).private_numbers() == fixture.private_numbers()
    assert certs.pop().strip() == gala_certificate_pem().strip()
    assert "redacted" in repr(results["sec1"])


def test_base64_der_key_and_certificate():
    from cryptography.hazmat.primitives import serialization

    pem = (GALA_DIR / "gala-key.sec1.pem").read_text()
    der = serialization.load_pem_private_key(pem.encode(), None).private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())
    material = key_forms.read_role({
        "payment_processing_private_key": base64.b64encode(der).decode(),
        "payment_processing_certificate": base64.encodebytes((GALA_DIR / "gala-cert.der").read_bytes()).decode(),
    }, "payment_processing")
    assert material.private_key_pem == _normalised("sec1").private_key_pem
    assert material.certificate_pem == _normalised("sec1").certificate_pem


def test_nothing_given_is_nothing_normalised():
    assert key_forms.read_role({}, "merchant_identity") == key_forms.RoleMaterial(None, None)
    assert key_forms.fields_given({"merchant_identity_pkcs12": "x"}, "merchant_identity") == (True, True)


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"payment_processing_private_key": 7}, "payment_processing_private_key must be a non-empty string"),
    ({"payment_processing_private_key": "   "}, "payment_processing_private_key must be a non-empty string"),
    ({"payment_processing_private_key": "x" * 20_000}, "at most 16384"),
    ({"payment_processing_private_key": "%%%"}, "base64 of its DER"),
    ({"payment_processing_private_key_passphrase": 5}, "must be a string"),
])
def test_malformed_fields_name_themselves(changes, fragment):
    body = {**gala_key_fields("sec1-encrypted"), **changes}
    with pytest.raises(ValidationError) as excinfo:
        key_forms.read_role(body, "payment_processing")
    assert fragment in excinfo.value.message and excinfo.value.status == 400
    # The refusal carries no parser exception as its cause or context.
    assert excinfo.value.__cause__ is None and excinfo.value.__context__ is None


def test_wrong_passphrase_refusal_has_no_exception_context():
    body = {**gala_key_fields("pkcs12"), "payment_processing_pkcs12_passphrase": "wrong"}
    with pytest.raises(ValidationError) as excinfo:
        key_forms.read_role(body, "payment_processing")
    assert excinfo.value.__context__ is None and "wrong passphrase" in excinfo.value.message
    body = {**gala_key_fields("pkcs8-encrypted"), "payment_processing_private_key_passphrase": "wrong"}
    with pytest.raises(ValidationError) as excinfo:
        key_forms.read_role(body, "payment_processing")
    assert excinfo.value.__context__ is None and "payment_processing_private_key_passphrase" in excinfo.value.message
