"""Clients generated from the original platform's own published documents (issue 30) run unchanged against the
session's runner: ShieldConex tokenization (every operation) and Decryptx (every operation: ``decrypt``,
``decrypt-ext``, ``healthcheck``, ``validateDevice``, and ``validatePartner`` with the partner's Basic credentials
as the document's undefined ``ApiKeyAuth`` header).

The documents are read from ``../shared/original-contracts/`` (or ``$ORIGINAL_CONTRACTS``); the module is skipped
when they are absent. openapi-python-client generates each client (the generator and the cache of
``tests/e2e/test_generated_clients_e2e.py``: ``.local/generated-clients``, never the committed tree). The partner
is set up as the original onboards one: created without ``apiSecurity`` (so Basic ``partnerId:partnerKey``
works), a template, the detokenize permission, and a device registered under the original's example serial and
client id. Requests use the original's own examples where its document has them (Decryptx: reference, serial,
clientId, firmware, sequence number, encoding, value name); the ShieldConex document has none, so its requests
carry the template's fields. What only our platform can supply replaces the example: the credentials and the
encrypted value (made under the demo BDK with the original's example sequence number). Every answer, the error
cases' included, is checked two ways: the generated client parses it into the model its document names, and it
validates against the original's response schema for its status (jsonschema).
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import sys
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.e2e.conftest import Runner
from tests.e2e.http import admin
from tests.e2e.test_generated_clients_e2e import BIN, OPC_ACCEPTED, OPC_FATAL, _generated, _version

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = Path(os.environ.get("ORIGINAL_CONTRACTS") or ROOT.parent / "shared" / "original-contracts")
SHIELDCONEX = CONTRACTS / "shieldconex-openapi.json"
DECRYPTX = CONTRACTS / "decryptx-openapi.json"
pytestmark = pytest.mark.skipif(not (SHIELDCONEX.exists() and DECRYPTX.exists()),
                                reason=f"the original's documents are not in {CONTRACTS}")

TEMPLATE = "ORIGINAL"
CARD = "4111111111111111"
TRACK1 = b"%B4111111111111111^TEST/BLUEFIN^2212101123456789?"


def _client(name: str, document: Path) -> ModuleType:
    out, log = _generated(f"opc{_version('openapi-python-client')}", f"original-{name}", [
        str(BIN / "openapi-python-client"), "generate", "--path", "{doc}", "--output-path", "{out}"], document)
    assert not OPC_FATAL.search(log), log
    for line in log.splitlines():
        if line.startswith(("Unsupported", "Cannot parse")):
            assert OPC_ACCEPTED.search(line), f"{name}: unexpected generator warning: {line}"
    package = next(p.parent for p in out.glob("*/client.py"))
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    module = importlib.import_module(package.name)
    for info in pkgutil.walk_packages(module.__path__, package.name + "."):
        importlib.import_module(info.name)
    return module


class Original:
    """One original document: its generated client and its response schemas."""

    def __init__(self, name: str, document: Path) -> None:
        self.doc = json.loads(document.read_text(encoding="utf-8"))
        self.module = _client(name, document)
        self.models = importlib.import_module(f"{self.module.__name__}.models")

    def op(self, name: str) -> Any:
        """The generated module of the operation ``name`` (its file name)."""
        return next(importlib.import_module(info.name) for info in pkgutil.walk_packages(
            importlib.import_module(f"{self.module.__name__}.api").__path__, f"{self.module.__name__}.api.")
            if info.name.endswith("." + name) and not info.ispkg)

    def check(self, path: str, method: str, answer: Any, model: str) -> dict[str, Any]:
        """The answer's status is one the original documents for the operation, its body validates against that
        status's schema, and the generated client parsed it into ``model``."""
        responses = self.doc["paths"][path][method]["responses"]
        status = str(int(answer.status_code))
        assert status in responses, (path, status, answer.content)
        payload = json.loads(answer.content)
        schema = responses[status]["content"]["application/json"]["schema"]
        errors = sorted(Draft202012Validator({**schema, "components": self.doc["components"]}).iter_errors(payload),
                        key=str)
        assert not errors, (path, status, payload, [e.message for e in errors])
        assert type(answer.parsed).__name__ == model, (path, status, type(answer.parsed), payload)
        return payload

    def example(self, schema: str) -> dict[str, Any]:
        """The original's own example (else its default) of each member of ``schema`` (nested objects too)."""
        props = self.doc["components"]["schemas"][schema].get("properties", {})
        out: dict[str, Any] = {}
        for name, prop in props.items():
            if "$ref" in prop:
                out[name] = self.example(prop["$ref"].rsplit("/", 1)[1])
            elif "example" in prop or "default" in prop:
                out[name] = prop.get("example", prop.get("default"))
        return out


@pytest.fixture(scope="module")
def sc() -> Original:
    return Original("shieldconex", SHIELDCONEX)


@pytest.fixture(scope="module")
def dx() -> Original:
    return Original("decryptx", DECRYPTX)


@pytest.fixture(scope="module")
def onboarded(runner: Runner, dx: Original) -> dict[str, Any]:
    """A partner set up as the original's onboarding would: no apiSecurity (Basic works), a template that may be
    detokenized, the permission, and a device under the original's example serial and client id."""
    status, p = admin(runner.base_url, "POST", "/admin/v1/partners", {"name": "Original onboarding"})
    assert status == 201 and p["apiSecurity"] == "key", p
    pid = p["partnerId"]
    status, t = admin(runner.base_url, "POST", f"/admin/v1/partners/{pid}/templates", {
        "templateRef": TEMPLATE, "accessMode": "detokenize",
        "fields": [{"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"},
                   {"name": "zip", "type": "field", "format": "NONE"}]})
    assert status == 201, t
    status, _ = admin(runner.base_url, "PUT", f"/admin/v1/partners/{pid}/permissions", {"detokenize": True})
    assert status == 200
    example = dx.example("DecryptParam")
    status, d = admin(runner.base_url, "POST", f"/admin/v1/partners/{pid}/devices", {
        "serial": example["serial"], "clientId": example["clientId"], "firmware": example["firmware"],
        "deviceType": "terminal", "bdkId": "demo-tdes"})
    assert status == 201, d
    return p


def _sc_client(sc: Original, runner: Runner, partner: dict[str, Any] | None) -> Any:
    auth = {"auth": (partner["partnerId"], partner["partnerKey"])} if partner else {}
    return sc.module.Client(base_url=runner.base_url + "/api", httpx_args=auth)


def _values(payload: dict[str, Any]) -> list[dict[str, str]]:
    return [{"name": v["name"], "value": v["value"]} for v in payload["values"]]


def test_every_shieldconex_operation(sc: Original, runner: Runner, onboarded: dict[str, Any]) -> None:
    client, m = _sc_client(sc, runner, onboarded), sc.models
    clear = [{"name": "vault_token_card_number", "value": CARD}, {"name": "zip", "value": "30301"}]
    out = sc.check("/partner/validate", "post", sc.op("partner_validate").sync_detailed(
        client=client, body=m.PartnerValidateRequest.from_dict({"reference": "orig-1"})), "ValidateResponse")
    assert out["messageId"]
    sc.check("/template/validate", "post", sc.op("template_validate").sync_detailed(
        client=client, body=m.TemplateValidateRequest.from_dict({"templateRef": TEMPLATE})), "ValidateResponse")
    # tokenize, kept for read (omit=2), read once, detokenize, delete answering what it deletes
    tokens = sc.check("/tokenization/tokenize", "post", sc.op("tokenize").sync_detailed(
        client=client, omit=2, body=m.TokenizeRequest.from_dict(
            {"reference": "orig-t", "templateRef": TEMPLATE, "values": clear})), "TokenizeResponse")
    read = sc.check("/tokenization/read", "post", sc.op("tokenize_read").sync_detailed(
        client=client, body=m.TokenizeReadRequest.from_dict({"bfid": tokens["bfid"]})), "TokenizeReadResponse")
    assert sorted(map(str, read["values"])) == sorted(map(str, tokens["values"]))
    back = sc.check("/tokenization/detokenize", "post", sc.op("detokenize").sync_detailed(
        client=client, body=m.DetokenizeRequest.from_dict({"bfid": tokens["bfid"], "values": _values(tokens)})),
        "DetokenizeResponse")
    assert sorted(map(str, back["values"])) == sorted(map(str, clear))
    deleted = sc.check("/tokenization/delete", "post", sc.op("tokenize_delete").sync_detailed(
        client=client, body=m.TokenizeDeleteRequest.from_dict({"bfid": tokens["bfid"]})), "TokenizeResponse")
    assert sorted(map(str, deleted["values"])) == sorted(map(str, tokens["values"]))
    # batches in the original's form: tokenize (kept for read), read, detokenize, delete
    batch = sc.check("/tokenization/batch/tokenize", "post", sc.op("tokenize_batch").sync_detailed(
        client=client, omit=2, body=m.TokenizeBatchRequest.from_dict({"reference": "orig-b", "templateRef": TEMPLATE,
                                                                      "batches": [{"reference": "b-0", "values": clear},
                                                                                  {"reference": "b-1", "values": clear}]})),
        "TokenizeBatchResponse")
    assert [b["reference"] for b in batch["batches"]] == ["b-0", "b-1"] and batch["reference"] == "orig-b"
    bfids = [{"reference": b["reference"], "bfid": b["bfid"]} for b in batch["batches"]]
    sc.check("/tokenization/batch/read", "post", sc.op("tokenize_read_batch").sync_detailed(
        client=client, body=m.TokenizeReadBatchRequest.from_dict({"batches": bfids})), "TokenizeBatchResponse")
    detok = sc.check("/tokenization/batch/detokenize", "post", sc.op("detokenize_batch").sync_detailed(
        client=client, body=m.DetokenizeBatchRequest.from_dict({"batches": [
            {"reference": b["reference"], "bfid": b["bfid"], "values": _values(b)} for b in batch["batches"]]})),
        "DetokenizeBatchResponse")
    assert all(sorted(map(str, b["values"])) == sorted(map(str, clear)) for b in detok["batches"])
    sc.check("/tokenization/batch/delete", "post", sc.op("tokenize_delete_batch").sync_detailed(
        client=client, body=m.TokenizeDeleteBatchRequest.from_dict({"batches": bfids})), "TokenizeBatchResponse")
    # the health checks tokenize and detokenize for real, with Basic auth
    health = sc.check("/healthcheck/tokenize", "get", sc.op("healthcheck_tokenize").sync_detailed(
        client=client, template_ref=TEMPLATE, reference="hc", field_names="vault_token_card_number|zip",
        field_values=f"{CARD}|30301"), "TokenizeResponse")
    tokens_by_name = {v["name"]: v["value"] for v in health["values"]}
    again = sc.check("/healthcheck/detokenize", "get", sc.op("healthcheck_detokenize").sync_detailed(
        client=client, bfid=health["bfid"], field_names="vault_token_card_number|zip",
        field_values=f"{tokens_by_name['vault_token_card_number']}|{tokens_by_name['zip']}"), "DetokenizeResponse")
    assert {v["name"]: v["value"] for v in again["values"]} == {"vault_token_card_number": CARD, "zip": "30301"}


def test_shieldconex_error_answers(sc: Original, runner: Runner, onboarded: dict[str, Any]) -> None:
    client, m = _sc_client(sc, runner, onboarded), sc.models
    unknown = sc.check("/template/validate", "post", sc.op("template_validate").sync_detailed(
        client=client, body=m.TemplateValidateRequest.from_dict({"templateRef": "NOSUCH"})), "ErrorResponse")
    assert (unknown["errCode"], len(unknown["messageId"])) == (3001, 25)
    bad = sc.check("/tokenization/tokenize", "post", sc.op("tokenize").sync_detailed(
        client=client, body=m.TokenizeRequest.from_dict({"templateRef": TEMPLATE, "values": [
            {"name": "vault_token_card_number", "value": "4111111111111112"}]})), "ErrorResponse")
    assert bad["errCode"] == 3003 and CARD[:-1] not in bad["errMessage"]
    failed = sc.check("/tokenization/batch/tokenize", "post", sc.op("tokenize_batch").sync_detailed(
        client=client, body=m.TokenizeBatchRequest.from_dict({"templateRef": TEMPLATE, "batches": [
            {"reference": "ok", "values": [{"name": "zip", "value": "30301"}]},
            {"reference": "nope", "values": [{"name": "nope", "value": "30301"}]}]})), "ErrorResponse")
    assert (failed["errCode"], failed["itemIndex"], failed["itemReference"]) == (3002, 1, "nope")
    refused = sc.check("/tokenization/tokenize", "post", sc.op("tokenize").sync_detailed(
        client=_sc_client(sc, runner, None), body=m.TokenizeRequest.from_dict(
            {"templateRef": TEMPLATE, "values": [{"name": "zip", "value": "30301"}]})), "ErrorResponse")
    assert (refused["errCode"], len(refused["messageId"])) == (1003, 25)
    # a path the API does not have: the documented error body, not API Gateway's {"message": ...}
    assert _unknown_route(runner, "/api/tokenization/nope", sc, "ErrorResponse") == 1007


def _unknown_route(runner: Runner, path: str, original: Original, schema: str) -> int:
    """The errCode of the runner's answer to ``path`` (no route has it), which must be a 404 whose body validates
    against the original's error schema."""
    try:
        urllib.request.urlopen(runner.base_url + path, timeout=30)
    except urllib.error.HTTPError as exc:
        status, payload = exc.code, json.loads(exc.read())
    else:  # pragma: no cover - the assertion below reports it
        status, payload = 200, {}
    errors = list(Draft202012Validator({"$ref": f"#/components/schemas/{schema}",
                                        "components": original.doc["components"]}).iter_errors(payload))
    assert (status, errors) == (404, []), payload
    return int(payload["errCode"])


def _dx_body(dx: Original, partner: dict[str, Any], **override: Any) -> dict[str, Any]:
    """The original's example DecryptParam, with our credentials and a value our demo BDK encrypted under the
    example's sequence number."""
    from vaultcore.crypto import dukpt
    from vaultcore.devices.simulator import DEFAULT_BDK

    body = dx.example("DecryptParam")
    params = body["decryptionParameters"]
    ksn = bytes.fromhex(params["sequenceNumber"])
    sealed = dukpt.encrypt("tdes", bytes.fromhex(DEFAULT_BDK[dukpt.Scheme.TDES]), ksn, TRACK1, "data")
    name = dx.example("Encrypted")["name"]
    body.update({"partnerId": partner["partnerId"], "partnerKey": partner["partnerKey"],
                 "encrypted": [{"name": name, "value": sealed.hex().upper()}], **override})
    return body


def test_decryptx_operations(dx: Original, runner: Runner, onboarded: dict[str, Any]) -> None:
    client, m = dx.module.Client(base_url=runner.base_url + "/api"), dx.models
    body = _dx_body(dx, onboarded)
    out = dx.check("/decrypt", "post", dx.op("decrypt").sync_detailed(
        client=client, body=m.DecryptParam.from_dict(body)), "DecryptResponse")
    [value] = out["decrypted"]
    assert value["failed"] is False and bytes.fromhex(value["value"]).rstrip(b"\0") == TRACK1
    assert out["reference"] == body["reference"]
    example = dx.example("DecryptParam")
    health = dx.check("/healthcheck", "get", dx.op("healthcheck").sync_detailed(
        client=client, partner_id=onboarded["partnerId"], partner_key=onboarded["partnerKey"],
        serial=example["serial"], client_id=example["clientId"]), "DecryptResponse")
    assert health["success"] is True
    device = {k: v for k, v in dx.example("DeviceParam").items()}
    device.update({"partnerId": onboarded["partnerId"], "partnerKey": onboarded["partnerKey"]})
    dx.check("/device/validate", "post", dx.op("validate_device").sync_detailed(
        client=client, body=m.DeviceParam.from_dict(device)), "ValidationResponse")
    recorded = dx.check("/decrypt-ext", "post", dx.op("decrypt_external").sync_detailed(
        client=client, body=m.DecryptExternalRequest.from_dict({
            "reference": body["reference"], "partnerId": onboarded["partnerId"],
            "partnerKey": onboarded["partnerKey"], "clientId": example["clientId"], "serial": example["serial"],
            "encrypted": 1, "decrypted": 1, "success": True})), "DecryptExternalResponse")
    assert (recorded["success"], recorded["decrypted"]) == (True, 1)
    # errors: an unknown device (409), wrong credentials (401 on the health check)
    missing = dx.check("/decrypt", "post", dx.op("decrypt").sync_detailed(
        client=client, body=m.DecryptParam.from_dict({**body, "serial": "NOT-A-DEVICE"})), "DecryptxError")
    assert missing["errCode"] == 1202
    dx.check("/healthcheck", "get", dx.op("healthcheck").sync_detailed(
        client=client, partner_id=onboarded["partnerId"], partner_key="wrong", serial=example["serial"]),
        "ErrorResponse")
    assert _unknown_route(runner, "/api/decrypt/nope", dx, "DecryptxError") == 1007


def test_decryptx_validate_partner(dx: Original, runner: Runner, onboarded: dict[str, Any]) -> None:
    """The document's ApiKeyAuth is an ``Authorization`` header whose content it does not define: the generated
    client's AuthenticatedClient sends the partner's Basic credentials in it, beside the body's PartnerParam."""
    import base64

    basic = base64.b64encode(f"{onboarded['partnerId']}:{onboarded['partnerKey']}".encode()).decode()
    client = dx.module.AuthenticatedClient(base_url=runner.base_url + "/api", token=basic, prefix="Basic")
    param = dx.models.PartnerParam.from_dict({"partnerId": onboarded["partnerId"],
                                              "partnerKey": onboarded["partnerKey"], "reference": "dx-partner"})
    out = dx.check("/partner/validate", "post", dx.op("validate_partner").sync_detailed(client=client, body=param),
                   "ValidationResponse")
    assert out["success"] is True
