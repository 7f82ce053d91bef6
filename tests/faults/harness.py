"""Exactly-once under faults (issue 18): the stack, the traffic and the invariants, shared by
``tests/e2e/test_faults_e2e.py`` (short form) and ``bench/bench_faults.py`` (long form).

The stack: a moto server in its own process (``tests.faults.moto_server``, DynamoDB's per-item atomicity), the
fault proxy (``tests.faults.aws_fault_proxy``) in front of it, a real postback receiver
(``tests/postback_receiver.py``), and the local runner as a subprocess pointed at the proxy with
``--aws-endpoint`` (so it can be SIGKILLed and restarted onto the same data). The test talks to moto directly
(boto3, no proxy) to scan what the platform stored.

Traffic goes through plain urllib (not the e2e suite's client, whose contract hook fails a test at the first
undocumented answer); every answer is still checked against its OpenAPI document (``tests.e2e.contract.check``
with ``record=False``) and the mismatches are reported as invariant (g).

Invariants (:meth:`Scenario.check`), each a list of human-readable violations:

(a) ``unanswered_approvals``: an approved transaction (Transactions table) that no client saw -- neither in the
    first answer to its key nor in a replay of it;
(b) ``double_charges``: an idempotency key with more than one approved transaction;
(c) postbacks: each approved transaction has exactly one delivery id at the receiver (``postbacks_missing``,
    ``postbacks_multiple_ids``), no (delivery id, attempt) pair POSTed twice (``attempts_repeated``) and
    exactly one 2xx-answered POST per delivery id (``postbacks_delivered_twice``);
(d) ``false_auth_failures``: a correctly signed request answered 1003 (or 8003);
(e) ``self_collisions``: 409 / error 601 for a key only one client uses, one request at a time (except a replay
    within the 30 s lock of a first request that died or whose outcome was unknown -- docs/integrators/gateway.md
    "Idempotency");
(f) ``tokens_not_detokenizing``: an issued token that a detokenize-only SALE does not turn back into its card;
(g) ``undocumented_answers`` (status/body not in openapi/*.json) and ``false_nothing_charged`` ("nothing was
    charged" while the key has an approved transaction).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.faults.aws_fault_proxy import FaultProxy
from tests.faults.moto_server import MotoProcess

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
DDB_WRITES = ["DynamoDB_20120810.PutItem", "DynamoDB_20120810.UpdateItem", "DynamoDB_20120810.TransactWriteItems",
              "DynamoDB_20120810.DeleteItem"]
CARD = "4242424242424242"
HELD_SECONDS = 30  # docs/integrators/gateway.md "Idempotency": an in-progress key's lock lapses after 30 s
INVARIANTS = ("unanswered_approvals", "double_charges", "postbacks_missing", "postbacks_multiple_ids",
              "attempts_repeated", "postbacks_delivered_twice", "false_auth_failures", "self_collisions",
              "tokens_not_detokenizing", "undocumented_answers", "false_nothing_charged")


def _contract_check(method: str, url: str, status: int, headers: dict[str, str], data: bytes) -> list[str]:
    from tests.e2e import contract

    return contract.check(method, url, status, headers, data, record=False)


@dataclass
class Answer:
    """One request and what came back (``status`` 0: no answer at all -- connection refused, reset, timeout)."""
    kind: str
    key: str
    phase: str
    status: int
    body: dict[str, Any] | None
    headers: dict[str, str]
    error: str | None
    sent_at: float
    contract: list[str] = field(default_factory=list)

    @property
    def code(self) -> int | None:
        if not isinstance(self.body, dict):
            return None
        for name in ("error_code", "errCode"):
            if isinstance(self.body.get(name), int):
                return self.body[name]
        return None

    @property
    def approved_tx(self) -> str | None:
        if self.status == 200 and isinstance(self.body, dict) and self.body.get("transaction_approved") is True:
            return str(self.body.get("transaction_id"))
        return None

    @property
    def message(self) -> str:
        if not isinstance(self.body, dict):
            return ""
        return str(self.body.get("error_message") or self.body.get("errMessage") or "")

    @property
    def unknown_outcome(self) -> bool:
        return self.status == 0 or (self.status >= 500 and "nothing was charged" not in self.message)


def _cents(item: dict[str, Any]) -> int | None:
    """A stored transaction's amount in cents (the Transactions table keeps ``request_cents``)."""
    for name in ("request_cents", "transaction_cents"):
        if item.get(name) is not None:
            return int(item[name])
    amount = item.get("request_amount", item.get("transaction_amount"))
    return int(round(float(amount) * 100)) if amount is not None else None


def http(url: str, body: bytes, headers: dict[str, str], method: str = "POST", timeout: float = 40.0,
         ) -> tuple[int, dict[str, str], bytes, str | None]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read(), None
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read(), None
    except (urllib.error.URLError, OSError, ConnectionError) as exc:
        return 0, {}, b"", f"{type(exc).__name__}: {exc}"[:200]


def admin(base_url: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    status, _, raw, error = http(base_url + path, data or b"", {"Content-Type": "application/json"}, method)
    if error:
        raise RuntimeError(f"{method} {path}: {error}")
    return status, json.loads(raw) if raw else None


def sign(partner_id: str, hmac_key: str, path: str, body: bytes) -> str:
    """docs/integrators/authentication.md "The HMAC scheme" (the key as issued), as tests/spec_client.py."""
    nonce, ts = secrets.token_hex(16), int(time.time())
    to_sign = f"POST {path}\n{nonce}\n{ts}\n\n{hashlib.sha256(body).hexdigest()}"
    response = hmac.new(hmac_key.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
    return f'Hmac username="{partner_id}", nonce="{nonce}", timestamp="{ts}", response="{response}"'


# ---------------------------------------------------------------------------------------------------- the stack
class Stack:
    """moto (own process) <- fault proxy <- runner (subprocess, --aws-endpoint) -> postback receiver."""

    def __init__(self, workdir: Path, sweep_seconds: float = 2.0,
                 visibility_timeout: int | None = 35, root: Path | None = None) -> None:
        """``visibility_timeout``: the postback queue is created before the runner (which then keeps it) with this
        visibility timeout instead of the template's 180 s, so a postback a killed runner had received comes back
        within the test (still above the postback function's 30 s timeout). ``root``: another checkout of the
        project to run (``previous_tree``), the same tests and harness."""
        from tests.postback_receiver import Receiver

        self.root = Path(root or ROOT)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.state = self.workdir / "state"
        self.sweep_seconds = sweep_seconds
        self.moto = MotoProcess(self.workdir / "moto.log")
        self.proxy = FaultProxy(self.moto.url).start()
        self.receiver = Receiver()
        self.proc: subprocess.Popen | None = None
        self.base_url = ""
        self.starts = 0
        import boto3

        session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                                        region_name=REGION)
        self.ddb = session.client("dynamodb", endpoint_url=self.moto.url)  # direct: never through the faults
        if visibility_timeout is not None:
            self._postback_queues(session.client("sqs", endpoint_url=self.moto.url), visibility_timeout)
        self.start_runner()

    @staticmethod
    def _postback_queues(sqs: Any, visibility_timeout: int) -> None:
        """template.yaml's PostbackFifoQueue and its DLQ (SQS FIFO, as the runner names them), but for the
        visibility timeout."""
        fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "false", "DeduplicationScope": "messageGroup",
                "FifoThroughputLimit": "perMessageGroupId", "MessageRetentionPeriod": "1209600"}
        dlq = sqs.create_queue(QueueName="PostbackFifoDeadLetterQueue.fifo", Attributes=fifo)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sqs.create_queue(QueueName="PostbackFifoQueue.fifo", Attributes={
            **fifo, "VisibilityTimeout": str(visibility_timeout),
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 12})})

    def runner_command(self) -> list[str]:
        return [sys.executable, "-m", "local.runner", "--port", "0", "--state-dir", str(self.state),
                "--quiet-banner", "--no-seed", "--aws-endpoint", self.proxy.url,
                "--env", "KEY_CACHE_SECONDS=0", "--env", "RECORD_CACHE_SECONDS=0",
                "--env", "POSTBACK_RETRY_SCHEDULE=" + ",".join(["1"] * 11)]

    def start_runner(self) -> str:
        self.starts += 1
        err = self.workdir / f"runner-{self.starts}.stderr.log"
        out = self.workdir / f"runner-{self.starts}.stdout.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update({"PYTHONUNBUFFERED": "1", "LOCAL_SCHEDULE_SECONDS": f"{self.sweep_seconds:g}",
                    "LOG_LEVEL": "WARNING"})
        if self.root != ROOT:  # its layer before the venv's (.pth) one
            env["PYTHONPATH"] = f"{self.root / 'layers' / 'shared' / 'python'}{os.pathsep}{self.root}"
        self.proc = subprocess.Popen(self.runner_command(), cwd=self.root, env=env, stdout=open(out, "wb"),
                                     stderr=open(err, "wb"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("runner exited:\n" + err.read_text(errors="replace")[-3000:])
            text = err.read_text(errors="replace")
            m = re.search(r"Local platform listening on (http://\S+)", text)
            if m and '"startedInSeconds"' in text:
                self.base_url = m.group(1)
                return self.base_url
            time.sleep(0.1)
        raise RuntimeError("runner did not start in 60 s")

    def kill_runner(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.receiver.close()
        self.proxy.stop()
        self.moto.stop()

    # ------------------------------------------------------------------------------------------ setup calls
    def account(self, postback_path: str | None, **options: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"options": {"tokenization": False, "token_payments": False, **options}}
        if "partnerId" in options:
            body["partnerId"] = body["options"].pop("partnerId")
        if postback_path:
            body["postback_url"] = self.receiver.url + postback_path
        status, account = admin(self.base_url, "POST", "/admin/v1/accounts", body)
        assert status == 201, account
        return account

    def hmac_partner(self) -> dict[str, Any]:
        from local.seed_tokens import DEMO_TEMPLATE

        status, partner = admin(self.base_url, "POST", "/admin/v1/partners",
                                {"name": "Fault test partner", "apiSecurity": "hmac"})
        assert status == 201, partner
        status, template = admin(self.base_url, "POST", f"/admin/v1/partners/{partner['partnerId']}/templates",
                                 DEMO_TEMPLATE)
        assert status == 201, template
        partner["templateRef"] = template["templateRef"]
        return partner

    # ------------------------------------------------------------------------------------------ inspection
    def scan(self, table: str) -> list[dict[str, Any]]:
        from boto3.dynamodb.types import TypeDeserializer

        des = TypeDeserializer()
        items, kwargs = [], {"TableName": table}
        while True:
            page = self.ddb.scan(**kwargs)
            items += [{k: des.deserialize(v) for k, v in it.items()} for it in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def approved_transactions(self, account_id: str) -> list[dict[str, Any]]:
        out = []
        for item in self.scan("TransactionsV2Table"):
            if item.get("account_id") != account_id or item.get("writer") == "#fence":
                continue
            if item.get("transaction_approved") in (True, 1) or item.get("approved") in (True, 1):
                out.append(item)
        return out


def stack_for_tests(tmp_path_factory: Any, name: str) -> Iterator[Stack]:
    """A module's fault stack (the body of each fault test file's ``stack`` fixture): the platform of this tree,
    or of ``FAULTS_PLATFORM_COMMIT`` when set (to show a scenario failing on an earlier commit)."""
    commit = os.environ.get("FAULTS_PLATFORM_COMMIT")
    root = previous_tree(commit, tmp_path_factory.mktemp("platform")) if commit else None
    stack = Stack(tmp_path_factory.mktemp(name), root=root)
    try:
        yield stack
    finally:
        stack.stop()


def previous_tree(commit: str, dest: Path) -> Path:
    """This checkout's committed files with ``layers/`` and ``functions/`` as of ``commit``: the same runner,
    harness and tests against an older platform (``FAULTS_PLATFORM_COMMIT`` in the bench and the e2e test)."""
    import io
    import tarfile

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for ref, paths in (("HEAD", []), (commit, ["layers", "functions"])):
        data = subprocess.run(["git", "archive", ref, *paths], cwd=ROOT, check=True, capture_output=True).stdout
        for path in paths:  # nothing of HEAD's layer or functions stays beside the old ones
            shutil.rmtree(dest / path, ignore_errors=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(dest, filter="data")
    return dest


# ---------------------------------------------------------------------------------------------------- a scenario
class Scenario:
    """The traffic of one scenario and the checks of its invariants."""

    def __init__(self, stack: Stack, name: str) -> None:
        self.stack, self.name = stack, name
        self.answers: list[Answer] = []
        self.lock = threading.Lock()
        self.keys: dict[str, int] = {}  # idempotency key -> amount in cents (unique per key in an account)
        self.account: dict[str, Any] | None = None
        self.partner: dict[str, Any] | None = None
        self.tokens: list[dict[str, Any]] = []  # {"bfid", "values", "key"} of each successful tokenize
        self.postback_path = f"/ok/{name}"
        self.notes: dict[str, Any] = {}

    # ------------------------------------------------------------------------------------------ requests
    def _record(self, answer: Answer) -> Answer:
        with self.lock:
            self.answers.append(answer)
        return answer

    def sale(self, key: str, phase: str, account: dict[str, Any] | None = None) -> Answer:
        account = account or self.account
        assert account is not None
        if key not in self.keys:  # from 20.00 up: clear of the sandbox's amount triggers (1.01 declines)
            self.keys[key] = 2000 + len(self.keys)
        cents = self.keys[key]
        form = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
                "response_format": "JSON", "transaction_type": "SALE", "tender_type": "CARD", "card_number": CARD,
                "card_expiration": "1230", "card_verification": "123", "currency": "USD",
                "transaction_amount": f"{cents // 100}.{cents % 100:02d}"}
        return self._gateway(form, key, phase, "sale")

    def token_sale(self, token: dict[str, Any], account: dict[str, Any], phase: str = "detokenize") -> Answer:
        values = {v["name"]: v["value"] for v in token["values"]}
        form = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
                "response_format": "JSON", "transaction_type": "SALE", "tender_type": "CARD",
                "transaction_amount": "1.00", "bfid": token["bfid"],
                "vault_token_card_number": values["vault_token_card_number"],
                "vault_token_card_expiration": values["vault_token_card_expiration"]}
        return self._gateway(form, token["key"], phase, "token_sale", idempotency=False)

    def _gateway(self, form: dict[str, str], key: str, phase: str, kind: str, idempotency: bool = True) -> Answer:
        url = self.stack.base_url + "/api/qsapi/3.8"
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if idempotency:
            headers["Idempotency-Key"] = key
        body = urllib.parse.urlencode(form).encode()
        sent = time.monotonic()
        status, hdrs, raw, error = http(url, body, headers)
        return self._answer(kind, key, phase, "POST", url, status, hdrs, raw, error, sent)

    def tokenize(self, key: str, phase: str) -> Answer:
        assert self.partner is not None
        path = "/api/tokenization/tokenize"
        body = json.dumps({"reference": key[:50], "templateRef": self.partner["templateRef"], "values": [
            {"name": "vault_token_card_number", "value": CARD},
            {"name": "vault_token_card_expiration", "value": "1230"}]}).encode()
        headers = {"Content-Type": "application/json",
                   "Authorization": sign(self.partner["partnerId"], self.partner["hmacKey"], path, body)}
        sent = time.monotonic()
        status, hdrs, raw, error = http(self.stack.base_url + path, body, headers)
        answer = self._answer("tokenize", key, phase, "POST", self.stack.base_url + path, status, hdrs, raw,
                              error, sent)
        if status == 200 and isinstance(answer.body, dict) and answer.body.get("success") is True:
            with self.lock:
                self.tokens.append({"bfid": answer.body["bfid"], "values": answer.body["values"], "key": key})
        return answer

    def _answer(self, kind: str, key: str, phase: str, method: str, url: str, status: int, hdrs: dict[str, str],
                raw: bytes, error: str | None, sent: float) -> Answer:
        body: dict[str, Any] | None = None
        contract: list[str] = []
        if status:
            try:
                parsed = json.loads(raw) if raw else None
                body = parsed if isinstance(parsed, dict) else {"_raw": parsed}
            except ValueError:
                body = {"_raw": raw[:200].decode(errors="replace")}
            contract = _contract_check(method, url, status, hdrs, raw)
        return self._record(Answer(kind, key, phase, status, body, hdrs, error, sent, contract))

    # ------------------------------------------------------------------------------------------ traffic
    def burst(self, kind: str, seconds: float, workers: int, phase: str = "burst",
              stop: threading.Event | None = None) -> list[str]:
        """``workers`` clients, each sending new keys one after another for ``seconds`` (each key once)."""
        deadline = time.monotonic() + seconds
        sent: list[str] = []
        counter = iter(range(10**9))
        counter_lock = threading.Lock()

        def client(n: int) -> None:
            while time.monotonic() < deadline and not (stop and stop.is_set()):
                with counter_lock:
                    key = f"{self.name}-{next(counter):05d}-{secrets.token_hex(3)}"
                    sent.append(key)
                answer = self.tokenize(key, phase) if kind == "tokenize" else self.sale(key, phase)
                if answer.status == 0 and stop is not None and stop.is_set():
                    return

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(client, range(workers)))
        return sent

    def replay_keys(self, keys: list[str], workers: int = 4, phase: str = "replay") -> None:
        """Every key once more (faults off); a key still held after a first request that died or whose outcome
        was unknown is sent again once its 30 s lock has lapsed."""
        def first(key: str) -> Answer | None:
            with self.lock:
                return next((a for a in self.answers if a.key == key and a.kind == "sale"), None)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda k: self.sale(k, phase), keys))
        held = []
        with self.lock:
            replays = [a for a in self.answers if a.phase == phase and a.code == 601]
        for a in replays:
            f = first(a.key)
            if f is not None and f.unknown_outcome:
                held.append((a.key, f.sent_at))
        if held:
            wait_until = max(t for _, t in held) + HELD_SECONDS + 1.5
            self.notes["waited_for_held_keys_s"] = round(max(0.0, wait_until - time.monotonic()), 1)
            time.sleep(max(0.0, wait_until - time.monotonic()))
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(lambda k: self.sale(k, phase + "-after-lock"), [k for k, _ in held]))

    def wait_postbacks(self, seconds: float = 40.0, settle: float = 2.0) -> None:
        assert self.account is not None
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            approved = {str(t["transaction_id"]) for t in self.stack.approved_transactions(self.account["account_id"])}
            delivered = {tx for tx, _ in self._postbacks(only_ok=True)}
            if approved <= delivered:
                break
            time.sleep(0.5)
        time.sleep(settle)  # time for a duplicate to show

    def _postbacks(self, only_ok: bool = False) -> list[tuple[str, dict[str, Any]]]:
        out = []
        with self.stack.receiver.lock:
            requests = list(self.stack.receiver.requests)
        for r in requests:
            if r["path"] != self.postback_path or (only_ok and r["status"] != 200):
                continue
            try:
                tx = str(json.loads(r["body"])["responses"][0]["transaction_id"])
            except (ValueError, KeyError, IndexError):
                continue
            out.append((tx, r))
        return out

    def detokenize_all(self, account: dict[str, Any], workers: int = 4, owner: dict[str, Any] | None = None) -> None:
        """A detokenize-only SALE per issued token: by ``account``, or for a SALE's own capture (key ``tx-``) by
        ``owner``, the account it is bound to."""
        def sale(t: dict[str, Any]) -> Answer:
            return self.token_sale(t, owner if owner is not None and t["key"].startswith("tx-") else account)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(sale, list(self.tokens)))

    # ------------------------------------------------------------------------------------------ invariants
    def check(self, postbacks: bool = True, snapshot: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
        v: dict[str, list[str]] = {name: [] for name in INVARIANTS}
        answers = list(self.answers)
        # (g) documented answers
        for a in answers:
            for problem in a.contract:
                v["undocumented_answers"].append(f"{a.kind} {a.key} [{a.phase}]: {problem}")
        # (d) false authentication failures
        for a in answers:
            if a.kind == "tokenize" and a.code in (1003, 8003):
                v["false_auth_failures"].append(f"{a.key} [{a.phase}]: HTTP {a.status} {a.code}")
        # (e) self-collisions
        by_key: dict[str, list[Answer]] = defaultdict(list)
        for a in sorted(answers, key=lambda a: a.sent_at):
            if a.kind == "sale":
                by_key[a.key].append(a)
        for key, seq in by_key.items():
            for i, a in enumerate(seq):
                if a.status != 409 and a.code != 601:
                    continue
                earlier = [e for e in seq[:i] if e.unknown_outcome]
                excused = any(a.sent_at - e.sent_at < HELD_SECONDS for e in earlier)
                if not excused:
                    v["self_collisions"].append(f"{key} [{a.phase}]: HTTP {a.status} error {a.code}"
                                                f" (earlier: {[(e.phase, e.status, e.code) for e in seq[:i]]})")
        if self.account is not None and self.keys:
            token_sales = {a.approved_tx for a in answers if a.kind == "token_sale" and a.approved_tx}
            txs = [t for t in self.stack.approved_transactions(self.account["account_id"])
                   if str(t["transaction_id"]) not in token_sales]  # the detokenize checks' own SALEs
            amount_key = {cents: key for key, cents in self.keys.items()}
            tx_key: dict[str, str] = {}
            per_key: dict[str, list[str]] = defaultdict(list)
            for t in txs:
                cents = _cents(t)
                owner = amount_key.get(cents) if cents is not None else None
                tx_key[str(t["transaction_id"])] = owner or "?"
                per_key[owner or "?"].append(str(t["transaction_id"]))
            # (b) double charges
            for key, ids in per_key.items():
                if len(ids) > 1:
                    v["double_charges"].append(f"{key}: {sorted(ids)}")
            # (a) every approval answered to a client (first answer or a replay of its key)
            seen = {a.approved_tx for a in answers if a.approved_tx}
            for tx, key in tx_key.items():
                if tx not in seen:
                    statuses = [(a.phase, a.status, a.code) for a in by_key.get(key, [])]
                    v["unanswered_approvals"].append(f"{tx} (key {key}; answers {statuses})")
            # (g) "nothing was charged" when the key was charged, judged on the snapshot taken before replays
            charged_before = snapshot if snapshot is not None else {}
            for a in answers:
                if a.kind == "sale" and "nothing was charged" in a.message and charged_before.get(a.key):
                    v["false_nothing_charged"].append(f"{a.key} [{a.phase}]: HTTP {a.status} {a.code}: "
                                                      f"{charged_before[a.key]} was charged")
            # (c) postbacks
            if postbacks:
                posts = self._postbacks()
                by_tx: dict[str, list[dict[str, Any]]] = defaultdict(list)
                for tx, r in posts:
                    by_tx[tx].append(r)
                for tx in tx_key:
                    rs = by_tx.get(tx, [])
                    delivery_ids = {r["headers"].get("Vault-Delivery-Id") for r in rs}
                    if not any(r["status"] == 200 for r in rs):
                        v["postbacks_missing"].append(f"{tx}: {len(rs)} POSTs, none answered 2xx")
                    if len(delivery_ids) > 1:
                        v["postbacks_multiple_ids"].append(f"{tx}: delivery ids {sorted(map(str, delivery_ids))}")
                    pairs = Counter((r["headers"].get("Vault-Delivery-Id"), r["headers"].get("Vault-Delivery-Attempt"))
                                    for r in rs)
                    for pair, n in pairs.items():
                        if n > 1:
                            v["attempts_repeated"].append(f"{tx}: (delivery id, attempt) {pair} POSTed {n} times")
                    ok = Counter(r["headers"].get("Vault-Delivery-Id") for r in rs if r["status"] == 200)
                    for did, n in ok.items():
                        if n > 1:
                            v["postbacks_delivered_twice"].append(f"{tx}: delivery {did} answered 2xx {n} times")
        # (f) tokens
        for a in answers:
            if a.kind == "token_sale" and not (a.approved_tx and a.body and a.body.get("last4") == CARD[-4:]):
                v["tokens_not_detokenizing"].append(f"{a.key}: HTTP {a.status} {a.code} {a.message[:120]}")
        return v

    def charged_snapshot(self) -> dict[str, list[str]]:
        """Key -> approved transaction ids now (taken before the replays, for "nothing was charged")."""
        assert self.account is not None
        amount_key = {cents: key for key, cents in self.keys.items()}
        out: dict[str, list[str]] = defaultdict(list)
        for t in self.stack.approved_transactions(self.account["account_id"]):
            cents = _cents(t)
            key = amount_key.get(cents) if cents is not None else None
            if key:
                out[key].append(str(t["transaction_id"]))
        return dict(out)

    def summary(self, violations: dict[str, list[str]]) -> dict[str, Any]:
        answers = list(self.answers)
        statuses = Counter(f"{a.kind}:{a.status}:{a.code}" for a in answers)
        approved = set()
        if self.account is not None:
            approved = {str(t["transaction_id"]) for t in self.stack.approved_transactions(self.account["account_id"])}
        posts = self._postbacks()
        per_tx = Counter(tx for tx, r in posts if r["status"] == 200)
        return {
            "scenario": self.name,
            "requests": len(answers),
            "keys": len(self.keys),
            "approvals": len(approved),
            "answers": dict(sorted(statuses.items())),
            "tokens_issued": len(self.tokens),
            "double_charges": len(violations["double_charges"]),
            "unanswered_approvals": len(violations["unanswered_approvals"]),
            "false_1003": len(violations["false_auth_failures"]),
            "self_collisions": len(violations["self_collisions"]),
            "undocumented_answers": len(violations["undocumented_answers"]),
            "false_nothing_charged": len(violations["false_nothing_charged"]),
            "tokens_not_detokenizing": len(violations["tokens_not_detokenizing"]),
            "postbacks_delivered_once": sum(1 for tx in approved if per_tx.get(tx) == 1),
            "postbacks_delivered_twice_or_more": sum(1 for tx in approved if per_tx.get(tx, 0) > 1),
            "postbacks_missing": sum(1 for tx in approved if not per_tx.get(tx)),
            "attempts_repeated": len(violations["attempts_repeated"]),
            "faults": {k: n for k, n in sorted(self.stack.proxy.counts.items()) if not k.startswith("forwarded")},
            "error_messages": dict(Counter(f"{a.kind} {a.status} {a.code}: {a.message[:90]}" for a in answers
                                           if a.status >= 400 or a.status == 0 or (a.code or 0) > 0)),
            **self.notes,
        }


def failures(violations: dict[str, list[str]], limit: int = 8) -> str:
    lines = []
    for name, items in violations.items():
        if items:
            lines.append(f"{name}: {len(items)}")
            lines += [f"    {item}" for item in items[:limit]]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------- scenarios
def lost_answers_gateway(stack: Stack, seconds: float, workers: int = 6, probability: float = 0.3,
                         postback_wait: float = 40.0) -> tuple[Scenario, dict[str, list[str]]]:
    """SALEs with card data and an Idempotency-Key while 30% of DynamoDB writes lose their answer; then faults off
    and every key replayed once; then the postbacks."""
    sc = Scenario(stack, "ddb-lost-sale")
    sc.account = stack.account(sc.postback_path)
    stack.proxy.clear(counts=True)
    stack.proxy.set_rules([{"mode": "lost_answer", "operations": DDB_WRITES, "probability": probability}])
    keys = sc.burst("sale", seconds, workers)
    stack.proxy.clear()
    snapshot = sc.charged_snapshot()
    sc.replay_keys(keys)
    sc.wait_postbacks(postback_wait)
    return sc, sc.check(snapshot=snapshot)


def lost_answers_signed(stack: Stack, seconds: float, workers: int = 6, probability: float = 0.3,
                        ) -> tuple[Scenario, dict[str, list[str]]]:
    """HMAC-signed tokenize calls while 30% of DynamoDB writes (the nonce's among them) lose their answer: no
    false 1003; every token issued detokenizes."""
    sc = Scenario(stack, "ddb-lost-signed")
    sc.partner = stack.hmac_partner()
    token_account = stack.account(None, token_payments=True, partnerId=sc.partner["partnerId"])
    stack.proxy.clear(counts=True)
    stack.proxy.set_rules([{"mode": "lost_answer", "operations": DDB_WRITES, "probability": probability}])
    sc.burst("tokenize", seconds, workers)
    stack.proxy.clear()
    sc.detokenize_all(token_account)
    return sc, sc.check(postbacks=False)


def _relay_sends(stack: Stack, mode: str) -> int:
    return stack.proxy.counts.get(f"{mode} AmazonSQS.SendMessageBatch", 0)


def sqs_lost_while_relaying(stack: Stack, sales: int = 12, refused_seconds: float = 4.0, lost_seconds: float = 8.0,
                            postback_wait: float = 40.0) -> tuple[Scenario, dict[str, list[str]]]:
    """The stream relay's SendMessageBatch refused (reset before moto) while SALEs run, so their postbacks wait in
    the Deliveries stream (the event source mapping retries the batch, backing off); then half its answers lost
    (applied, then retried: copies on the queue, and a failed batch is sent again from its first record); then
    faults off. Each postback must still be POSTed once per attempt and delivered once."""
    sc = Scenario(stack, "sqs-lost-relay")
    sc.account = stack.account(sc.postback_path)
    stack.proxy.clear(counts=True)
    stack.proxy.set_rules([{"mode": "reset_before", "operations": ["AmazonSQS.SendMessageBatch"]}])
    keys = [f"{sc.name}-{i:04d}-{secrets.token_hex(3)}" for i in range(sales)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda k: sc.sale(k, "refused-sqs"), keys))
    time.sleep(refused_seconds)  # the relay keeps retrying the batch: nothing reaches the queue
    sc.notes["relay_sends_refused"] = _relay_sends(stack, "reset_before")
    sc.notes["delivered_while_refused"] = len(sc._postbacks(only_ok=True))
    # the next send's answer is lost for certain (else a first send that kept its answer ended the phase with
    # nothing lost, half the time), then half of the answers of the retries it causes
    stack.proxy.set_rules([{"mode": "lost_answer", "operations": ["AmazonSQS.SendMessageBatch"], "count": 1},
                           {"mode": "lost_answer", "operations": ["AmazonSQS.SendMessageBatch"],
                            "probability": 0.5}])
    time.sleep(lost_seconds)  # the retries, half of their answers lost
    sc.notes["relay_answers_lost"] = _relay_sends(stack, "lost_answer")
    stack.proxy.clear()
    snapshot = sc.charged_snapshot()
    sc.replay_keys(keys)
    sc.wait_postbacks(postback_wait)
    return sc, sc.check(snapshot=snapshot)


def sigkill_between_stream_read_and_send(stack: Stack, sales: int = 4, applied: bool = False, hold: float = 4.0,
                                         postback_wait: float = 60.0) -> tuple[Scenario, dict[str, list[str]]]:
    """The runner is SIGKILLed while its stream relay holds records it has read from the Deliveries stream and
    has not queued: its SendMessageBatch is held by the proxy for ``hold`` seconds, the kill comes meanwhile, then
    the send is dropped (``applied`` False: nothing queued) or forwarded (``applied``: queued, the answer lost
    with the process). The restarted runner reads the stream again from TRIM_HORIZON (its checkpoint was in
    memory), so it queues these postbacks again -- and every earlier one of the stream: 0 lost, and the copies
    POST nothing (one POST per delivery id and attempt, one 2xx per delivery id)."""
    sc = Scenario(stack, "sigkill-relay-applied" if applied else "sigkill-relay")
    sc.account = stack.account(sc.postback_path)
    stack.proxy.clear(counts=True)
    mode = "delay" if applied else "reset_after"
    stack.proxy.set_rules([{"mode": mode, "operations": ["AmazonSQS.SendMessageBatch"], "seconds": hold}])
    keys = [f"{sc.name}-{i:04d}-{secrets.token_hex(3)}" for i in range(sales)]
    for key in keys:
        sc.sale(key, "before-kill")
    deadline = time.monotonic() + 10
    while _relay_sends(stack, mode) == 0 and time.monotonic() < deadline:  # the relay is in its send
        time.sleep(0.05)
    sc.notes["held_sends"] = _relay_sends(stack, mode)
    stack.kill_runner()
    stack.proxy.clear()
    sc.notes["delivered_at_kill"] = len(sc._postbacks(only_ok=True))
    time.sleep(hold + 0.5)  # the held send is dropped or applied by now
    stack.start_runner()
    snapshot = sc.charged_snapshot()
    sc.replay_keys(keys)
    sc.wait_postbacks(postback_wait, settle=5.0)
    return sc, sc.check(snapshot=snapshot)


def kms_faults(stack: Stack, seconds: float, workers: int = 4, probability: float = 0.3,
               postback_wait: float = 40.0) -> tuple[Scenario, dict[str, list[str]]]:
    """KMS answering 500/503 and throttling (key cache off) under signed tokenize calls and auto-tokenizing
    SALEs: only documented errors, and every token issued (and every SALE's stored tokens) detokenizes."""
    sc = Scenario(stack, "kms-5xx")
    sc.partner = stack.hmac_partner()
    sc.account = stack.account(sc.postback_path, tokenization=True, token_payments=True,
                               partnerId=sc.partner["partnerId"])
    stack.proxy.clear(counts=True)
    share = probability / 3
    stack.proxy.set_rules([
        {"mode": "http_5xx", "operations": ["TrentService.*"], "probability": share},
        {"mode": "http_5xx", "status": 503, "operations": ["TrentService.*"], "probability": share / (1 - share)},
        {"mode": "throttle", "operations": ["TrentService.*"], "probability": share / (1 - 2 * share)},
    ])
    stop_at = time.monotonic() + seconds
    with ThreadPoolExecutor(max_workers=2) as pool:
        f1 = pool.submit(sc.burst, "tokenize", seconds, max(1, workers // 2))
        f2 = pool.submit(sc.burst, "sale", seconds, max(1, workers // 2))
        keys = f2.result()
        f1.result()
    del stop_at
    stack.proxy.clear()
    snapshot = sc.charged_snapshot()
    sc.replay_keys(keys)
    # the tokens the approved SALEs stored (auto-tokenization) detokenize too
    for t in stack.approved_transactions(sc.account["account_id"]):
        if t.get("bfid") and t.get("vault_token_card_number"):
            sc.tokens.append({"bfid": t["bfid"], "key": f"tx-{t['transaction_id']}", "values": [
                {"name": "vault_token_card_number", "value": t["vault_token_card_number"]},
                {"name": "vault_token_card_expiration", "value": t["vault_token_card_expiration"]}]})
    sc.wait_postbacks(postback_wait)
    # the tokenize API's tokens by another account of the partner; a SALE's capture only by its own account (its
    # bfid is bound to it for good: vaultcore.tokens.policy), whose detokenize-only SALEs check() leaves out
    token_account = stack.account(None, token_payments=True, partnerId=sc.partner["partnerId"])
    sc.detokenize_all(token_account, owner=sc.account)
    return sc, sc.check(snapshot=snapshot)


def sigkill_mid_burst(stack: Stack, seconds: float, kill_after: float, workers: int = 6,
                      postback_wait: float = 40.0) -> tuple[Scenario, dict[str, list[str]]]:
    """SIGKILL the runner in the middle of a SALE burst (moto keeps the data), restart it on the same state dir
    and endpoint, replay every key, wait for the postbacks."""
    sc = Scenario(stack, "sigkill")
    sc.account = stack.account(sc.postback_path)
    stack.proxy.clear(counts=True)
    stop = threading.Event()

    def killer() -> None:
        time.sleep(kill_after)
        stop.set()  # the clients send nothing new; the requests in flight die with the runner
        stack.kill_runner()

    k = threading.Thread(target=killer)
    k.start()
    keys = sc.burst("sale", seconds, workers, stop=stop)
    k.join()
    sc.notes["unanswered_at_kill"] = sum(1 for a in sc.answers if a.status == 0)
    stack.start_runner()
    snapshot = sc.charged_snapshot()
    sc.replay_keys(keys)
    sc.wait_postbacks(postback_wait)
    return sc, sc.check(snapshot=snapshot)
