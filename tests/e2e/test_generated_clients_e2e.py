"""Clients generated from ``openapi/*.json`` build and work (issue 22; docs/integrators/clients.md).

* openapi-python-client generates a client from every document; every module of it imports; the gateway, secure
  and proxy clients make real calls against the session's runner: a SALE as a form and as JSON, a partner validate
  and a tokenize signed with ``clients/python/vault_hmac_auth.py`` (an ``httpx.Auth``), a proxy call. An unknown
  error code parses (the codes are open).
* openapi-generator (PyPI ``openapi-generator-cli``, Java from Debian's ``default-jre-headless`` when missing)
  generates ``python`` and ``typescript-fetch`` for every document: the Python ones import, the gateway's and the
  secure API's make a real call each; the TypeScript ones type-check with ``tsc --noEmit`` (strict; typescript
  pinned below, from npm into ``.local/node-typescript``), and ``clients/typescript/vaultHmac.ts`` with the generated secure client is compiled
  and run by node against the runner (partner validate and tokenize).

Generated code goes to ``.local/generated-clients/<generator>-<api>-<hash>`` (the hash covers the document and the
generator's version), so a second run reuses it; nothing is written into the committed tree.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.e2e.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ROOT / "openapi"
CACHE = ROOT / ".local" / "generated-clients"
TS_PREFIX = ROOT / ".local" / "node-typescript"
TYPESCRIPT_VERSION = "5.9.3"
TYPES_NODE_VERSION = "20.19.8"
BIN = Path(sys.executable).parent
APIS = ("gateway", "secure", "parser", "proxy", "collector", "management")
CARD = "4242424242424242"
# What openapi-python-client may warn about: bodies it has no type for (scripts, XML, any type, the collector's
# text/plain beacon); those operations are still generated (the body as raw content). Anything else fails.
OPC_ACCEPTED = re.compile(r"Unsupported content[ _]type (application/javascript|application/xml|\*/\*|text/plain)")
OPC_FATAL = re.compile(r"Unable to process schema|Attempted to generate duplicate|Failure to process|Recursive")

sys.path.insert(0, str(ROOT / "clients" / "python"))
from vault_hmac_auth import VaultHmacAuth, VaultHmacPoolManager  # noqa: E402  (clients/ is for integrators: not a package here)


def _run(cmd: list[str], *, cwd: Path | None = None, timeout: int = 900, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "npm_config_fund": "false",
                "npm_config_audit": "false", "npm_config_update_notifier": "false",
                "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})}
    out = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}")
    return out.stdout + out.stderr


def _apt_install(command: str, *packages: str) -> None:
    if shutil.which(command):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.fail(f"{command} is missing and cannot be installed here (needs root and apt-get)")
    _run(["apt-get", "update", "-qq"], timeout=600)
    _run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], timeout=1800)


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def _generated(generator: str, api: str, command: list[str], document: Path | None = None) -> tuple[Path, str]:
    """The output of ``command`` (which writes to ``{out}``) for one document (``openapi/<api>.json`` unless
    ``document`` is given), cached by the document's hash."""
    document = document or DOCUMENTS / f"{api}.json"
    key = hashlib.sha256(document.read_bytes() + " ".join(command).encode()).hexdigest()[:16]
    out = CACHE / f"{generator}-{api}-{key}"
    if not (out / ".done").exists():
        shutil.rmtree(out, ignore_errors=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        for old in CACHE.glob(f"{generator}-{api}-*"):  # earlier versions of the document
            # only this document's (a 16-hex key): "gateway-*" also matches other tests' "gateway-keys-<key>",
            # whose imported package a test in the same process may still be loading modules from
            if re.fullmatch(r"[0-9a-f]{16}", old.name.removeprefix(f"{generator}-{api}-")):
                shutil.rmtree(old, ignore_errors=True)
        tmp = CACHE / f".tmp-{generator}-{api}-{key}"
        shutil.rmtree(tmp, ignore_errors=True)
        log = _run([part.format(doc=str(document), out=str(tmp)) for part in command], cwd=CACHE)
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / "generator.log").write_text(log)
        (tmp / ".done").write_text(key)
        tmp.rename(out)
    return out, (out / "generator.log").read_text()


# ------------------------------------------------------------------------------------- openapi-python-client
def _opc(api: str) -> ModuleType:
    """openapi-python-client's client of ``api``, generated (once per document) and imported, every module."""
    out, log = _generated(f"opc{_version('openapi-python-client')}", api, [
        str(BIN / "openapi-python-client"), "generate", "--path", "{doc}", "--output-path", "{out}"])
    assert not OPC_FATAL.search(log), log
    for line in log.splitlines():
        if line.startswith(("Unsupported", "Cannot parse")):
            assert OPC_ACCEPTED.search(line), f"{api}: unexpected generator warning: {line}"
    package = next(p.parent for p in out.glob("*/client.py"))
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    module = importlib.import_module(package.name)
    for info in pkgutil.walk_packages(module.__path__, package.name + "."):
        importlib.import_module(info.name)  # every module imports (one did not: issue 22)
    return module


@pytest.fixture(scope="module")
def opc() -> dict[str, ModuleType]:
    return {api: _opc(api) for api in APIS}


def _sale(runner: Runner, reference: str) -> dict[str, str]:
    account = runner.demo["account"]
    return {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
            "response_format": "JSON", "transaction_type": "SALE", "tender_type": "CARD", "card_number": CARD,
            "card_expiration": "1230", "card_verification": "123", "transaction_amount": "19.99", "currency": "USD",
            "transaction_description": reference}


def _sub(module: ModuleType, name: str) -> Any:
    return importlib.import_module(f"{module.__name__}.{name}")


def test_openapi_python_client_gateway_sale_as_form_and_as_json(runner: Runner, opc: dict[str, ModuleType]) -> None:
    gw = opc["gateway"]
    qsapi = _sub(gw, "api.qsapi.qsapi")
    models = _sub(gw, "models")
    client = gw.Client(base_url=runner.base_url, raise_on_unexpected_status=True)
    for body in (models.QsapiRequest.from_dict(_sale(runner, "opc-form")),
                 models.QsapiJsonRequest.from_dict(_sale(runner, "opc-json"))):
        kwargs = qsapi._get_kwargs(body=body)
        assert ("data" in kwargs) == isinstance(body, models.QsapiRequest)  # a form is sent as a form
        assert kwargs["headers"]["Content-Type"] == ("application/x-www-form-urlencoded" if "data" in kwargs
                                                     else "application/json")
        answer = qsapi.sync(client=client, body=body)
        assert isinstance(answer, models.TransactionResponse), answer
        assert answer.transaction_approved is True and answer.authorization_message == "APPROVED", answer
        assert (answer.transaction_type, answer.last4, answer.error_code, answer.transaction_amount) == (
            "SALE", "4242", 0, 19.99)
        assert re.fullmatch(r"[1-9][0-9]{11}", answer.transaction_id)
    # a refusal parses too, and so does a code no release has documented yet (the codes are open)
    refused = qsapi.sync(client=client, body=models.QsapiJsonRequest.from_dict(
        {**_sale(runner, "opc-bad"), "api_accesskey": "wrong"}))
    assert isinstance(refused, models.GatewayError) and refused.error_code == 102, refused
    future = models.GatewayError.from_dict({"error": True, "error_code": 99999, "error_message": "new",
                                            "error_msg": "new", "transaction_approved": False})
    assert future.error_code == 99999


def test_openapi_python_client_secure_with_the_hmac_auth(runner: Runner, opc: dict[str, ModuleType]) -> None:
    sec = opc["secure"]
    partner = runner.demo["partner"]
    models = _sub(sec, "models")
    client = sec.Client(base_url=runner.base_url, httpx_args={"auth": VaultHmacAuth(partner["partnerId"],
                                                                                     partner["hmacKey"])})
    validate = _sub(sec, "api.partners.partner_validate")
    answer = validate.sync(client=client, body=models.PartnerValidateRequest(reference="opc-validate"))
    assert isinstance(answer, models.Success) and answer.success is True, answer
    assert answer.reference == "opc-validate" and re.fullmatch(r"[0-9]{25}", answer.message_id)
    # every call has a fresh nonce: a second call with the same client succeeds too
    assert validate.sync(client=client, body=models.PartnerValidateRequest(reference="opc-2")).success is True

    tokenize = _sub(sec, "api.tokenization.tokenize")
    body = models.TokenizeRequest.from_dict({"reference": "opc-t", "templateRef": runner.demo["template"],
                                             "values": [{"name": "vault_token_card_number", "value": CARD}]})
    tokens = tokenize.sync(client=client, body=body)
    assert isinstance(tokens, models.TokenizeResponse) and tokens.success is True, tokens
    [value] = tokens.values
    assert value.name == "vault_token_card_number"
    assert re.fullmatch(r"424242[0-9]{6}4242", value.value) and value.value != CARD, value.value
    assert len(tokens.bfid) >= 30

    # without the auth: the uniform 1003, parsed
    bare = sec.Client(base_url=runner.base_url)
    refused = validate.sync(client=bare, body=models.PartnerValidateRequest(reference="opc-bare"))
    assert refused is not None and refused.err_code == 1003, refused


def test_openapi_python_client_proxy_call(runner: Runner, opc: dict[str, ModuleType]) -> None:
    sec, px = opc["secure"], opc["proxy"]
    partner = runner.demo["partner"]
    auth = VaultHmacAuth(partner["partnerId"], partner["hmacKey"])
    tokenize = _sub(sec, "api.tokenization.tokenize")
    tokens = tokenize.sync(client=sec.Client(base_url=runner.base_url, httpx_args={"auth": auth}),
                           body=_sub(sec, "models").TokenizeRequest.from_dict({
                               "templateRef": runner.demo["template"],
                               "values": [{"name": "vault_token_card_number", "value": CARD}]}))
    config = runner.demo["proxyConfig"]["configReferenceID"]
    proxy = _sub(px, "api.proxy.proxy_request")
    body = _sub(px, "models").ProxyJsonBody.from_dict({"card": {"number": tokens.values[0].value}, "amount": 10})
    answer = proxy.sync_detailed(partner["partnerId"], config, body=body, vault_id=tokens.bfid,
                                 client=px.AuthenticatedClient(base_url=runner.base_url, token="",
                                                               httpx_args={"auth": auth}))
    assert answer.status_code == 200, answer.content
    received = json.loads(answer.content)["received"]
    assert received["path"] == "/_local/echo"
    assert json.loads(received["body"]) == {"card": {"number": CARD}, "amount": 10}  # detokenized on the way


def test_openapi_python_client_every_document_imports(opc: dict[str, ModuleType]) -> None:
    assert set(opc) == set(APIS)
    for api, module in opc.items():
        assert hasattr(module, "Client"), api


# ----------------------------------------------------------------------------------------- openapi-generator
def _openapi_generator(generator: str, api: str, *extra: str) -> Path:
    _apt_install("java", "default-jre-headless")
    out, log = _generated(f"og{_version('openapi-generator-cli')}-{generator}", api, [
        str(BIN / "openapi-generator-cli"), "generate", "-i", "{doc}", "-g", generator, "-o", "{out}", *extra])
    errors = [line for line in log.splitlines() if re.search(r"\bERROR\b|Exception", line)]
    assert not errors, f"{api} {generator}: " + "\n".join(errors[:10])  # e.g. its normalizer on a type list
    return out


def _openapi_generator_all(generator: str, *extra: str) -> dict[str, Path]:
    """Every document through one openapi-generator generator, two at a time (the JVM starts for each)."""
    from concurrent.futures import ThreadPoolExecutor

    _apt_install("java", "default-jre-headless")
    with ThreadPoolExecutor(2) as pool:
        outs = pool.map(lambda api: _openapi_generator(generator, api, *[e.format(api=api) for e in extra]), APIS)
        return dict(zip(APIS, outs, strict=True))


def test_openapi_generator_python_every_document_and_calls(runner: Runner) -> None:
    clients = {}
    for api, out in _openapi_generator_all("python", "--additional-properties", "packageName=og_{api}").items():
        if str(out) not in sys.path:
            sys.path.insert(0, str(out))
        clients[api] = importlib.import_module(f"og_{api}")
        for info in pkgutil.walk_packages(clients[api].__path__, f"og_{api}."):
            if ".test" not in info.name:
                importlib.import_module(info.name)
    gw, sec = clients["gateway"], clients["secure"]
    with gw.ApiClient(gw.Configuration(host=runner.base_url)) as api_client:
        sale = _sale(runner, "og-python")
        answer = gw.QsapiApi(api_client).qsapi(qsapi_json_request=gw.QsapiJsonRequest.from_dict(sale)).actual_instance
        assert isinstance(answer, gw.TransactionResponse), answer
        assert answer.transaction_approved is True and answer.authorization_message == "APPROVED", answer
        future = gw.GatewayError.from_dict({"error": True, "error_code": 99999, "error_message": "new",
                                            "error_msg": "new", "transaction_approved": False})
        assert future is not None and future.error_code == 99999  # an unknown code parses
    with sec.ApiClient(sec.Configuration(host=runner.base_url)) as api_client:
        health = sec.TokenizationApi(api_client).healthcheck_tokenize()
        assert health.success is True and health.status == "ok", health
        # signed at the pool manager (clients/python/vault_hmac_auth.py): the bytes its REST layer serialized
        partner = runner.demo["partner"]
        api_client.rest_client.pool_manager = VaultHmacPoolManager(api_client.rest_client.pool_manager,
                                                                   partner["partnerId"], partner["hmacKey"])
        validated = sec.PartnersApi(api_client).partner_validate(sec.PartnerValidateRequest(reference="og-1"))
        assert validated.success is True and validated.reference == "og-1", validated
        tokens = sec.TokenizationApi(api_client).tokenize(sec.TokenizeRequest.from_dict({
            "templateRef": runner.demo["template"], "values": [{"name": "vault_token_card_number", "value": CARD}]}))
        assert tokens is not None and tokens.success is True, tokens
        assert re.fullmatch(r"424242[0-9]{6}4242", tokens.values[0].value) and tokens.values[0].value != CARD


def _typescript() -> Path:
    _apt_install("node", "nodejs", "npm")
    tsc = TS_PREFIX / "node_modules" / "typescript" / "bin" / "tsc"
    if not tsc.exists() or not (TS_PREFIX / "node_modules" / "@types" / "node").exists():
        TS_PREFIX.mkdir(parents=True, exist_ok=True)
        _run(["npm", "install", "--prefix", str(TS_PREFIX), "--no-save", f"typescript@{TYPESCRIPT_VERSION}",
              f"@types/node@{TYPES_NODE_VERSION}"], timeout=900)
    return tsc


_TSCONFIG = {"compilerOptions": {"target": "ES2020", "module": "commonjs", "lib": ["ES2020", "DOM"],
                                 "strict": True, "skipLibCheck": True, "esModuleInterop": True,
                                 "typeRoots": [str(TS_PREFIX / "node_modules" / "@types")], "types": ["node"]}}


def test_openapi_generator_typescript_fetch_builds_and_the_hmac_helper_signs(runner: Runner, tmp_path: Path) -> None:
    tsc = _typescript()
    outs = _openapi_generator_all("typescript-fetch")
    # every client type-checks (strict), all in one tsc run
    config = {**_TSCONFIG, "include": [str(out / "**" / "*.ts") for out in outs.values()]}
    (tmp_path / "tsconfig.clients.json").write_text(json.dumps(config))
    _run(["node", str(tsc), "--noEmit", "-p", str(tmp_path / "tsconfig.clients.json")], timeout=600)

    # the helper with the generated secure client, compiled and run by node against the runner
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(ROOT / "clients" / "typescript" / "vaultHmac.ts", app / "vaultHmac.ts")
    shutil.copytree(outs["secure"], app / "secure", ignore=shutil.ignore_patterns("docs", ".*", "*.log"))
    (app / "main.ts").write_text("""
import { Configuration, PartnersApi, TokenizationApi } from "./secure";
import { vaultHmacMiddleware, vaultHmacFetch } from "./vaultHmac";

async function main(): Promise<void> {
  const [baseUrl, partnerId, hmacKey, templateRef] = process.argv.slice(2);
  const config = new Configuration({ basePath: baseUrl, middleware: [vaultHmacMiddleware(partnerId, hmacKey)] });
  const validated = await new PartnersApi(config).partnerValidate({ partnerValidateRequest: { reference: "ts-1" } });
  const tokens = await new TokenizationApi(config).tokenize({ tokenizeRequest: { reference: "ts-2", templateRef,
    values: [{ name: "vault_token_card_number", value: "4242424242424242" }] } });
  const signedFetch = vaultHmacFetch(partnerId, hmacKey);
  const plain = await signedFetch(baseUrl + "/api/partner/validate", { method: "POST",
    headers: { "Content-Type": "application/json" }, body: JSON.stringify({ reference: "ts-3" }) });
  console.log(JSON.stringify({ validated, tokens, plain: await plain.json() }));
}
main().catch((e) => { console.error(e); process.exit(1); });
""")
    config = {**_TSCONFIG, "compilerOptions": {**_TSCONFIG["compilerOptions"], "outDir": str(tmp_path / "js")},
              "include": [str(app / "**" / "*.ts")]}
    (tmp_path / "tsconfig.app.json").write_text(json.dumps(config))
    _run(["node", str(tsc), "-p", str(tmp_path / "tsconfig.app.json")], timeout=600)
    partner = runner.demo["partner"]
    printed = _run(["node", str(tmp_path / "js" / "main.js"), runner.base_url, partner["partnerId"],
                    partner["hmacKey"], runner.demo["template"]], timeout=120)
    result = json.loads(printed.strip().splitlines()[-1])
    assert result["validated"]["success"] is True and result["validated"]["reference"] == "ts-1", result
    assert result["plain"]["success"] is True and result["plain"]["reference"] == "ts-3", result
    [value] = result["tokens"]["values"]
    assert result["tokens"]["success"] is True and re.fullmatch(r"424242[0-9]{6}4242", value["value"]), result
    assert value["value"] != CARD


# ------------------------------------------------------------------------- docs/integrators/clients.md, as pasted
PAGE = ROOT / "docs" / "integrators" / "clients.md"
# What each shell example prints (a line of it, by a text only that example has).
PAGE_EXPECTS = {
    '"httpx-1"': ["{'success': True, 'reference': 'httpx-1'"],
    "openapi-python-client generate": [],
    "QsapiJsonRequest.from_dict(sale)": ["QsapiRequest True APPROVED", "QsapiJsonRequest True APPROVED",
                                         '200 {"card":{"number":"4242424242424242"},"amount":10}'],
    "-g typescript-fetch": [],
    "VaultHmacPoolManager(client": ["True APPROVED"],
    "tsc -p .local/ts-example": ["true 424242"],
}


def test_the_clients_page_examples_run_as_pasted(runner: Runner, tmp_path: Path) -> None:
    """Every shell example of docs/integrators/clients.md, in order, from a directory laid out as the repository
    (its openapi/, clients/ and .venv, a .local/demo.json of the session's runner), prints what the page says."""
    tsc = _typescript()
    _apt_install("java", "default-jre-headless")
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    for name in ("openapi", "clients", ".venv"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / ".local").mkdir()
    (tmp_path / ".local" / "demo.json").write_text(json.dumps(runner.demo))
    (tmp_path / ".local" / "node-typescript").symlink_to(TS_PREFIX)
    npm = (f"npm install --prefix .local/node-typescript --no-save typescript@{TYPESCRIPT_VERSION} "
           f"@types/node@{TYPES_NODE_VERSION}\n")
    assert tsc.exists() and npm in text  # the page pins what this test installed
    ran = set()
    for block in blocks:
        if block.startswith("make run"):
            continue  # the session's runner plays `make run`
        script = block.replace(npm, "")
        [key] = [k for k in PAGE_EXPECTS if k in block] or [block[:60]]
        printed = _run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, timeout=900)
        for line in PAGE_EXPECTS[key]:
            assert line in printed, f"{key}: {line!r} not in\n{printed[-3000:]}"
        ran.add(key)
    assert ran == set(PAGE_EXPECTS)
