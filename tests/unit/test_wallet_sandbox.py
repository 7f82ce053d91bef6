"""The wallet sandbox CLI (local/wallet_sandbox.py): its artefacts, checked with the platform's own code.

The token it writes must verify (CMS signature, chain to the generated trust root, signing time) and decrypt
(EC_v1 with the generated payment processing key) through vaultcore.crypto.wallet_token, and map to the card and
amount asked for through vaultcore.wallet.token_payload — the code that pays it in the gateway.
"""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from local import wallet_sandbox
from local.wallet_sandbox import ensure_sandbox, main, make_token, settings_body
from vaultcore.crypto import wallet_token as wt
from vaultcore.wallet.token_payload import card_from_payment_data, check_amount_and_currency, payment_network

KEY_FILES = ("root-ca-key.pem", "signing-intermediate-key.pem", "signing-leaf-key.pem", "payment-processing-key.pem",
             "merchant-identity-key.pem")


def _run(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def _cert(directory, name) -> x509.Certificate:
    return x509.load_pem_x509_certificate((directory / name).read_bytes())


def test_the_cli_makes_every_artefact_and_a_token_the_platform_verifies_and_decrypts(tmp_path, capsys):
    out = _run(capsys, "--state-dir", str(tmp_path), "--token", str(tmp_path / "token.json"), "--amount", "10.00",
               "--currency", "USD", "--card", "4111111111111111")
    directory = tmp_path / "wallet-sandbox"
    assert out["sandbox"] == str(directory) and out["merchant_identifier"] == "merchant.com.example.shop"
    assert out["token"]["last4"] == "1111" and out["token"]["amount"] == "10.00"
    for name in KEY_FILES:  # private keys: owner only, and never in what the CLI prints
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600, name
        key_lines = [line for line in (directory / name).read_text().splitlines() if "-----" not in line]
        assert not [line for line in key_lines if line in json.dumps(out)]
    assert stat.S_IMODE((tmp_path / "token.json").stat().st_mode) == 0o600

    token = json.loads((tmp_path / "token.json").read_text())
    assert set(token) == {"paymentData", "paymentMethod", "transactionIdentifier"}
    assert token["paymentData"]["version"] == "EC_v1"
    root_pem = (directory / "root-ca.pem").read_bytes()
    now = datetime.now(UTC)
    info = wt.verify_signature(token, [root_pem], now=now)  # the vendor marker OIDs are checked by default
    assert abs(info.signing_time - now) < timedelta(minutes=1)
    decrypted = wt.decrypt_ec_v1(token, (directory / "payment-processing-key.pem").read_bytes(),
                                 "merchant.com.example.shop", (directory / "payment-processing.pem").read_bytes())
    check_amount_and_currency(decrypted, "10.00", "USD")
    card = card_from_payment_data(decrypted, token["paymentData"]["header"]["transactionId"], payment_network(token),
                                  now.date())
    assert (card.pan, card.last4, card.brand, card.network) == ("4111111111111111", "1111", "Visa", "Visa")

    # Another root does not verify it: the generated root is the trust anchor.
    from local.wallet_token_forge import new_root

    with pytest.raises(wt.ChainInvalidError):
        wt.verify_signature(token, [new_root("Other")[0]], now=now)


def test_the_certificates_chain_to_the_sandbox_root_with_the_vendors_extensions(tmp_path):
    sandbox, made = ensure_sandbox(tmp_path / "wallet-sandbox")
    d = sandbox.directory
    root = _cert(d, "root-ca.pem")
    for name in ("signing-intermediate.pem", "payment-processing.pem", "merchant-identity.pem"):
        _cert(d, name).verify_directly_issued_by(root)
    _cert(d, "signing-leaf.pem").verify_directly_issued_by(_cert(d, "signing-intermediate.pem"))
    oids = {name: {e.oid.dotted_string for e in _cert(d, name).extensions} for name in
            ("signing-intermediate.pem", "signing-leaf.pem", "payment-processing.pem")}
    assert wt.OID_INTERMEDIATE_MARKER in oids["signing-intermediate.pem"]
    assert wt.OID_LEAF_MARKER in oids["signing-leaf.pem"]
    assert wt.OID_MERCHANT_ID in oids["payment-processing.pem"]
    identity = _cert(d, "merchant-identity.pem")
    assert ExtendedKeyUsageOID.CLIENT_AUTH in identity.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert identity.subject.get_attributes_for_oid(x509.NameOID.USER_ID)[0].value == "merchant.com.example.shop"
    body = settings_body(sandbox)
    assert body["trust_roots"] == [(d / "root-ca.pem").read_text()] and body["domains"] == ["shop.example.com"]
    assert body["payment_processing_private_key"].startswith("-----BEGIN PRIVATE KEY-----")


def test_artefacts_are_reused_renewed_or_reissued_for_another_merchant(tmp_path):
    directory = tmp_path / "wallet-sandbox"
    _, made = ensure_sandbox(directory)
    assert len(made) == 4
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    _, made = ensure_sandbox(directory)
    assert made == [] and {p.name: p.read_bytes() for p in directory.iterdir()} == before
    sandbox, made = ensure_sandbox(directory, merchant_identifier="merchant.com.example.other", domain="o.example.com")
    assert made == ["payment-processing.pem", "merchant-identity.pem"]
    assert (sandbox.merchant_identifier, sandbox.domain) == ("merchant.com.example.other", "o.example.com")
    assert ensure_sandbox(directory)[0].merchant_identifier == "merchant.com.example.other"  # remembered
    _, made = ensure_sandbox(directory, renew=True)
    assert len(made) == 4 and (directory / "root-ca.pem").read_bytes() == before["root-ca.pem"]  # the root stays
    # A new root (the runner's state wiped): everything it issued is made again.
    (directory / "root-ca.pem").unlink()
    _, made = ensure_sandbox(directory)
    assert len(made) == 4


@pytest.mark.parametrize(("amount", "currency", "minor", "numeric"), [
    ("10.00", "USD", 1000, "840"), ("25.5", "eur", 2550, "978"), ("1000", "JPY", 1000, "392"), ("0.01", "GBP", 1, "826"),
])
def test_token_amount_and_currency(tmp_path, amount, currency, minor, numeric):
    sandbox, _ = ensure_sandbox(tmp_path)
    token = make_token(sandbox, amount, currency, "5555555555554444")
    data = wt.decrypt_ec_v1(token, sandbox.read("payment-processing-key.pem"), sandbox.merchant_identifier,
                            sandbox.read("payment-processing.pem"))
    assert (data["transactionAmount"], data["currencyCode"]) == (minor, numeric)
    assert token["paymentMethod"]["network"] == "MasterCard" and token["paymentMethod"]["displayName"].endswith("4444")


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--amount", "10.001"], "at most 2 decimals"),
    (["--amount", "10.5", "--currency", "JPY"], "at most 0 decimals"),
    (["--amount", "-1"], "positive"),
    (["--amount", "ten"], "not a number"),
    (["--amount", "1", "--currency", "XXX"], "not a wallet currency"),
    (["--amount", "1", "--card", "4111111111111112"], "Luhn"),
    (["--amount", "1", "--expiry", "291331"], "YYMMDD"),
])
def test_bad_token_options_are_refused_by_name(tmp_path, capsys, argv, fragment):
    with pytest.raises(SystemExit) as excinfo:
        main(["--state-dir", str(tmp_path), "--token", str(tmp_path / "t.json"), *argv])
    assert excinfo.value.code == 2 and fragment in capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()


def test_configure_reports_the_platforms_refusal(tmp_path, capsys, monkeypatch):
    calls = []

    def fake_put(base_url, path, body):
        calls.append((base_url, path, sorted(body)))
        return 404, {"errCode": 404, "errMessage": "No such account."}

    monkeypatch.setattr(wallet_sandbox, "_admin_put", fake_put)
    (tmp_path / "demo.json").write_text(json.dumps({"baseUrl": "http://127.0.0.1:4567"}))
    assert main(["--state-dir", str(tmp_path), "--configure", "999999999999"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["configured"] == {"account_id": "999999999999", "status": 404,
                                 "response": {"errCode": 404, "errMessage": "No such account."}}
    assert calls == [("http://127.0.0.1:4567", "/admin/v1/accounts/999999999999/wallet",
                      sorted(settings_body(ensure_sandbox(tmp_path / "wallet-sandbox")[0])))]
