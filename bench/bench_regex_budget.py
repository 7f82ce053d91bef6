"""Bounded work per request (issue 12): how long adversarial proxy exchanges take now, beside before. Prints JSON.

Each case is one in-process proxy exchange (``service._Exchange``: actions, forwarding to a local echo target,
masked log; moto behind), with a configuration stored as if it had been saved before the 1 MiB save-time
probes (they refuse these patterns now, 8202):

* ``regex_substitution``: a detokenize action whose body substitution is the classic e-mail pattern of the
  issue, over a 231 KB JSON body of near-misses (runs of 2,500 local-part characters ending in ``@`` with no
  domain, each followed by a real address: ~90 searches per pass, each under the former 50 ms per-search limit);
* ``regex_request_mask`` / ``regex_response_mask``: the same pattern as a request / response log mask;
* ``jsonpath_two_descendants``: ``$..a..b`` over a 0.9 MiB body of 28-deep nested ``a`` objects;
* ``xpath_two_descendants``: ``//*//*`` over 250-deep nested elements (64 KiB: the former evaluation is
  quadratic, ~30 min at 1 MiB), and the same path over 1 MiB now.

"now" is the code as it is, with the request's budget (``PATTERN_BUDGET``, 2 s of pattern work in all).
"before" restores the former semantics in-process: a 50 ms limit per regex search and no request budget,
jsonpath-ng's own ``find``, one lxml XPath over the whole path. It keeps today's log rule that a body over 256 KiB
is neither stored nor masked (the former code masked it anyway, for nothing): for the 0.9 MiB jsonpath case the
former code made a second pass of the same length in the log, so "before" shows half of it there. Also: how long the save-time check of a pattern
takes (fresh caches), for e-mail validators and common patterns, with the verdict.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

from bench.common import LAYER, in_process_platform

EMAIL = (r"([a-zA-Z0-9_\-\.]+)@((\[[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.)|(([a-zA-Z0-9\-]+\.)+))([a-zA-Z]{2,4}|"
         r"[0-9]{1,3})(\]?)")
SAVE_TIME_PATTERNS = {
    "classic e-mail (issue 12)": EMAIL,
    "unanchored e-mail": r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}",
    "anchored e-mail ^...$": r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$",
    "word-bounded e-mail \\b...\\b": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b",
    "e-mail, dot-free domain labels": r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b",
    "e-mail after a literal": r'"email"\s*:\s*"([^"@\s]+@[^"@\s]+)"',
    "catastrophic (a+)+$": r"(a+)+$",
    "PAN \\b\\d{13,19}\\b": r"\b\d{13,19}\b",
    "JSON member": r'"number":\s*"(\d+)"',
    "lookbehind (?<=cvv=)\\d{3,4}": r"(?<=cvv=)\d{3,4}",
}


def _near_miss_body(size: int = 231_000) -> bytes:
    segment = "a" * 2500 + "@! x@y.co "
    return json.dumps({"note": (segment * (size // len(segment) + 1))[: size - 12]}).encode()


def _deep_json(size: int = 960_000) -> bytes:
    leaf: dict = {f"k{i}": 0 for i in range(50)}
    node = leaf
    for _ in range(28):
        node = {"a": node, **{f"b{i}": {"x": 1} for i in range(3)}}
    one = json.dumps(node)
    return json.dumps({"items": [node] * (size // len(one))}).encode()


def _deep_xml(size: int) -> bytes:
    chain = "<a>" * 250 + "<b>1</b>" + "</a>" * 250
    return ("<r>" + chain * max(1, size // len(chain)) + "</r>").encode()


def _old_json_slots(cpath, body):
    """transform._json_slots before issue 12: jsonpath-ng's find over the whole document."""
    from jsonpath_ng.jsonpath import Fields, Index

    from vaultcore.proxy.transform import _JsonSlot

    for datum in cpath.jsonpath.find(body.tree()):
        p, container = datum.path, datum.context.value if datum.context is not None else None
        if isinstance(p, Fields) and isinstance(container, dict):
            yield _JsonSlot(container, p.fields[0], body)
        elif isinstance(p, Index) and isinstance(container, list):
            yield _JsonSlot(container, p.indices[0], body)


@contextlib.contextmanager
def _former_semantics(config) -> Iterator[None]:
    """The proxy as it was: 50 ms per regex search, no request budget, jsonpath-ng, a single XPath."""
    from lxml import etree

    from vaultcore.proxy import pathwalk, transform

    patterns = {m.path.regex for m in config.request_masks + config.response_masks + config.error_masks
                if m.path.regex is not None}
    patterns |= {s.path.regex for a in config.actions for s in a.substitutions if s.path.regex is not None}
    saved = (transform.PATTERN_BUDGET, transform._json_slots, pathwalk.BoundedXPath.__call__)
    limits = {p: p.timeout for p in patterns}
    for p in patterns:
        object.__setattr__(p, "timeout", 0.05)
    transform.PATTERN_BUDGET = 1e9
    transform._json_slots = _old_json_slots
    # the XPath evaluation before issue 12, swapped in on purpose
    pathwalk.BoundedXPath.__call__ = lambda self, tree: list(etree.XPath(self.path)(tree))  # type: ignore[method-assign]
    try:
        yield
    finally:
        for p, limit in limits.items():
            object.__setattr__(p, "timeout", limit)
        transform.PATTERN_BUDGET, transform._json_slots, pathwalk.BoundedXPath.__call__ = saved  # type: ignore[method-assign]


def _exchange(service, config, caller, pid, ref, body: bytes, content_type: str, *, before: bool,
              entries: list[dict]) -> dict:
    from tests.helpers import api_event
    from vaultcore.api.http import request_from_event
    from vaultcore.errors import VaultError
    from vaultcore.net import deadline
    from vaultcore.proxy.transform import PATTERN_BUDGET

    path = f"/api/v1/partners/{pid}/configurations/{ref}"
    request = request_from_event(api_event("POST", path, body.decode(), {"Content-Type": content_type, "X-Key": "k"},
                                           path_params={"partnerID": pid, "configReferenceID": ref}))
    exchange = service._Exchange(config, caller, request, service._Clock())
    budget = contextlib.nullcontext() if before else deadline.using(deadline.WorkBudget(PATTERN_BUDGET))
    former = _former_semantics(config) if before else contextlib.nullcontext()
    started = time.perf_counter()
    with former, budget:
        try:
            status, code = exchange.run().status, None
        except VaultError as exc:
            status, code = exc.status, exc.code
    took = time.perf_counter() - started
    entry = entries[-1]
    logged = {k: v for k, v in (entry.get("request") or {}).items() if k in ("bodyOmitted", "maskError")}
    logged.update({f"response_{k}": v for k, v in (entry.get("response") or {}).items()
                   if k in ("bodyOmitted", "maskError")})
    return {"seconds": round(took, 2), "status": status, "code": code,
            "pattern_work_ms": round(entry["durationsMs"].get("actions", 0) + entry["durationsMs"].get("log", 0)),
            **({"log": logged} if logged else {})}


def _save_time_checks() -> dict:
    from vaultcore.net import safe_regex

    out = {}
    for name, pattern in SAVE_TIME_PATTERNS.items():
        safe_regex._verdict.cache_clear()
        started = time.perf_counter()
        try:
            safe_regex.compile_bounded(pattern)
            verdict = "accepted"
        except safe_regex.UnsafeRegex as exc:
            verdict = f"refused: {exc}"
        out[name] = {"check_ms": round((time.perf_counter() - started) * 1000), "verdict": verdict}
    return out


def main() -> dict:
    if str(LAYER) not in sys.path:
        sys.path.insert(0, str(LAYER))
    import uuid

    from tests.helpers import admin
    from tests.proxy_target import Target
    from vaultcore.partners.service import load_partner
    from vaultcore.proxy import logs as proxy_logs
    from vaultcore.proxy import service, store

    place = {"transformationSource": "body", "transformationType": "regex", "transformationPath": EMAIL}
    detok = {"type": "tokenization", "method": "detokenize", "templateRef": "GATEWAY",
             "authorization": {"type": "passthrough"}}
    result: dict = {"budget_s": None, "cases": {}}
    with in_process_platform() as platform, Target() as target:
        _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "bench", "apiSecurity": "hmac"})
        pid = partner["partnerId"]
        caller = load_partner(pid)

        def stored(actions=(), **log_settings) -> tuple[str, object]:
            doc = {"proxy": {"authorization": {"type": "passthrough", "headerName": "X-Key"}, "method": "post",
                             "target": target.url + "/echo", "logSettings": log_settings}, "actions": list(actions)}
            ref = str(uuid.uuid4())
            store.put_new({"partnerId": pid, "configReferenceID": ref, "version": 1, "createdAt": 0, "updatedAt": 0,
                           "document": json.dumps(doc)})
            return ref, service.load_config(pid, ref)

        cases = {
            "regex_substitution": (stored([{**detok, "substitutions": [{**place, "fieldName": "vault_token_card_number"}]}]),
                                   _near_miss_body(), "application/json", None),
            "regex_request_mask": (stored(requestMasks=[{**place, "pattern": "allAsRedacted"}]), _near_miss_body(),
                                   "application/json", None),
            "regex_response_mask": (stored(responseMasks=[{**place, "pattern": "allAsRedacted"}]), _near_miss_body(),
                                    "application/json", None),
            "jsonpath_two_descendants": (stored([{**detok, "substitutions": [{
                "transformationSource": "body", "transformationType": "jsonpath", "transformationPath": "$..a..b",
                "fieldName": "vault_token_card_number"}]}]), _deep_json(), "application/json", None),
            "xpath_two_descendants": (stored([{**detok, "substitutions": [{
                "transformationSource": "body", "transformationType": "xpath", "transformationPath": "//*//*",
                "fieldName": "vault_token_card_number"}]}]), _deep_xml(64 * 1024), "application/xml",
                _deep_xml(1_000_000)),
        }
        entries: list[dict] = []
        saved_record = proxy_logs.record

        def keep(entry: dict[str, Any]) -> None:
            entries.append(entry)

        proxy_logs.record = keep  # the log item is inspected here, not written
        try:
            for name, ((ref, config), body, content_type, larger) in cases.items():
                figures: dict[str, Any] = {"body_bytes": len(body)}
                figures["before"] = _exchange(service, config, caller, pid, ref, body, content_type, before=True,
                                              entries=entries)
                figures["now"] = _exchange(service, config, caller, pid, ref, body, content_type, before=False,
                                           entries=entries)
                if larger is not None:
                    figures["now_1MiB"] = {"body_bytes": len(larger), **_exchange(
                        service, config, caller, pid, ref, larger, content_type, before=False, entries=entries)}
                result["cases"][name] = figures
        finally:
            proxy_logs.record = saved_record
    from vaultcore.proxy.transform import PATTERN_BUDGET

    result["budget_s"] = PATTERN_BUDGET
    result["save_time_check"] = _save_time_checks()
    print(json.dumps({"bench": "regex_budget", **result}, indent=1))
    return result


if __name__ == "__main__":
    main()
