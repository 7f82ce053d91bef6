"""The proxy's reads ahead (vaultcore.proxy.service._Prefetch, cold start): when a container reads a configuration
from the table, the partner's token key ring, its current key and the tokenize actions' templates are read in a
background thread while the configuration compiles, into the caches the actions read. Nothing is read twice,
nothing is decided there (a failed read ahead leaves the action to read and decide), and no read outlives its
request. On moto, in-process; no timings (bench/bench_cold_start.py measures the cold start)."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import pytest

from tests.helpers import admin, call
from tests.proxy_target import Target
from vaultcore.auth.hmac_scheme import build_hmac_header
from vaultcore.store.aws import client

PAN = "4000056655665556"
PREFETCH = "proxy-prefetch"


class Calls:
    """Every DynamoDB and KMS call, with the name of the thread that made it (``before-call`` hooks)."""

    def __init__(self) -> None:
        self.made: list[tuple[str, str]] = []

    def hook(self, model: Any, **_kwargs: Any) -> None:
        self.made.append((f"{model.service_model.service_name}.{model.name}", threading.current_thread().name))

    def __enter__(self) -> Calls:
        for service in ("dynamodb", "kms"):
            client(service).meta.events.register("before-call", self.hook, unique_id="test-proxy-prefetch")
        return self

    def __exit__(self, *exc: object) -> None:
        for service in ("dynamodb", "kms"):
            client(service).meta.events.unregister("before-call", unique_id="test-proxy-prefetch")

    def named(self, name: str) -> list[str]:
        return [thread for call_name, thread in self.made if call_name == name]


@pytest.fixture
def partner(platform):
    status, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Prefetch Co", "apiSecurity": "hmac"})
    assert status == 201
    status, body = admin(platform, "POST", f"/admin/v1/partners/{p['partnerId']}/templates", {
        "templateRef": "PF", "name": "prefetch",
        "fields": [{"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"}]})
    assert status == 201, body
    return p


def _config(platform, partner, target: str, actions: list[dict], authorization: dict | None = None) -> str:
    doc = {"proxy": {"authorization": authorization or {"type": "passthrough", "headerName": "X-Key"},
                     "method": "post", "target": target}, "actions": actions}
    status, body = admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/proxy-configurations", doc)
    assert status == 201, body
    return body["configReferenceID"]


TOKENIZE = {"type": "tokenization", "method": "tokenize", "templateRef": "PF", "authorization": {"type": "passthrough"},
            "substitutions": [{"transformationSource": "body", "transformationType": "jsonpath",
                               "transformationPath": "$.card.number", "fieldName": "vault_token_card_number"}]}


def _exchange(platform, partner, ref: str) -> tuple[int, dict[str, str], Any]:
    path = f"/api/v1/partners/{partner['partnerId']}/configurations/{ref}"
    body = json.dumps({"card": {"number": PAN}})
    auth = build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]), path, body.encode())
    return call(platform, "ProxyFunction", "POST", path, body, {"Authorization": auth, "X-Key": "k"},
                path_params={"partnerID": partner["partnerId"], "configReferenceID": ref},
                resource="/api/v1/partners/{partnerID}/configurations/{configReferenceID}")


def _cold() -> None:
    """A new container's caches, as far as the proxy's configuration and the token service go."""
    from vaultcore.proxy import service
    from vaultcore.store import keys as unwrapped
    from vaultcore.tokens import keys, template_store

    service.reset_caches()
    keys.reset_caches()
    template_store.reset_caches()
    unwrapped._cache.reset()  # the KMS-unwrapped secrets (key_cache_seconds)


def _no_prefetch_alive() -> bool:
    return not any(t.name == PREFETCH and t.is_alive() for t in threading.enumerate())


def test_a_cold_exchange_reads_ring_key_and_template_ahead_once(platform, partner):
    with Target() as target:
        ref = _config(platform, partner, target.url + "/echo", [TOKENIZE])
        status, _, _ = _exchange(platform, partner, ref)  # the partner's first tokenization creates its key ring
        assert status == 200
        _cold()
        with Calls() as calls:
            status, headers, _ = _exchange(platform, partner, ref)
        assert status == 200 and headers["vault-id"]
        token = json.loads(target.seen[-1]["body"])["card"]["number"]
        assert token != PAN and token[:6] == PAN[:6] and token[-4:] == PAN[-4:]
    # The ring and the template: one Query each, both ahead, none again by the action.
    assert calls.named("dynamodb.Query") == [PREFETCH, PREFETCH]
    assert PREFETCH in calls.named("kms.Decrypt")  # the current key unwrapped ahead
    assert calls.named("dynamodb.UpdateItem") == ["MainThread"]  # the tokens are written by the action
    assert _no_prefetch_alive()

    with Calls() as warm:  # a warm container: the caches answer, nothing is read ahead
        assert _exchange(platform, partner, ref)[0] == 200
    assert PREFETCH not in {thread for _, thread in warm.made}


def test_the_configuration_secret_is_unwrapped_ahead_and_still_checked(platform, partner, monkeypatch):
    """A configuration signing the target with the partner's HMAC key (as the demo's): its secret is unwrapped
    ahead too; the check that it is still the partner's live key runs as before (a rotated key: 8004)."""
    secret = base64.b64decode(partner["hmacKey"]).decode("ascii")
    hmac_auth = {"type": "hmac", "username": partner["partnerId"], "secret": secret}
    with Target() as target:
        ref = _config(platform, partner, target.url + "/echo", [TOKENIZE], hmac_auth)
        assert _exchange(platform, partner, ref)[0] == 200
        _cold()
        with Calls() as calls:
            status, headers, _ = _exchange(platform, partner, ref)
        assert status == 200 and headers["vault-id"]
        assert target.seen[-1]["headers"]["authorization"].startswith("Hmac ")  # signed with the unwrapped secret
    # The partner's own key is unwrapped by the authentication; the configuration's secret and the token key ahead.
    assert sorted(calls.named("kms.Decrypt")) == ["MainThread", PREFETCH, PREFETCH]
    assert calls.named("dynamodb.Query") == [PREFETCH, PREFETCH]

    # The credentials check still decides, on the secret read ahead: a configuration whose secret is no longer
    # the partner's (as after a rotation) is refused with 8004 and nothing is forwarded.
    from vaultcore.proxy import service

    monkeypatch.setattr(service, "credentials_match", lambda auth, partner, secret: False)
    _cold()
    with Target() as target:
        status, _, body = _exchange(platform, partner, ref)
        assert (status, body["code"]) == (403, 8004) and target.seen == []
    assert _no_prefetch_alive()


def test_a_failed_read_ahead_leaves_the_action_to_read(platform, partner, monkeypatch):
    from vaultcore.errors import DependencyError
    from vaultcore.tokens import keys

    def broken(partner_id: str) -> None:
        raise DependencyError("Internal error: the tokenization key is not available.")

    with Target() as target:
        ref = _config(platform, partner, target.url + "/echo", [TOKENIZE])
        assert _exchange(platform, partner, ref)[0] == 200
        _cold()
        monkeypatch.setattr(keys, "warm", broken)
        with Calls() as calls:
            status, headers, _ = _exchange(platform, partner, ref)
        assert status == 200 and headers["vault-id"]
    # The template was read ahead (the ring read came first and failed); the action read the ring itself.
    assert sorted(calls.named("dynamodb.Query")) == ["MainThread", PREFETCH]
    assert _no_prefetch_alive()


def test_a_configuration_without_tokenization_reads_nothing_ahead(platform, partner):
    with Target() as target:
        ref = _config(platform, partner, target.url + "/echo", [])
        _cold()
        with Calls() as calls:
            assert _exchange(platform, partner, ref)[0] == 200
    assert calls.made and PREFETCH not in {thread for _, thread in calls.made}


def test_an_exchange_refused_after_its_configuration_leaves_no_read_running(platform, partner):
    """The request's body is not JSON: refused after the configuration loaded, before the actions ran; the reads
    ahead are waited for all the same."""
    with Target() as target:
        ref = _config(platform, partner, target.url + "/echo", [TOKENIZE])
        _cold()
        path = f"/api/v1/partners/{partner['partnerId']}/configurations/{ref}"
        body = "{not json"
        auth = build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]), path, body.encode())
        status, _, answer = call(platform, "ProxyFunction", "POST", path, body,
                                 {"Authorization": auth, "X-Key": "k", "Content-Type": "application/json"},
                                 path_params={"partnerID": partner["partnerId"], "configReferenceID": ref},
                                 resource="/api/v1/partners/{partnerID}/configurations/{configReferenceID}")
        assert status == 400, answer
        assert target.seen == []
    assert _no_prefetch_alive()
