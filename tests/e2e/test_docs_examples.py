"""The documentation's shell examples, followed literally against a runner of this module's own.

Every ```sh block of ``docs/`` either runs here or is listed in ``NOT_RUN`` with the reason (it needs an AWS
account, Docker, a value only a browser produces, or another test runs it). The blocks of one page run in
order in one bash, after the documented first step (``docs/index.md``, "The examples": ``BASE`` and
``HMAC_KEY`` from ``.local/demo.json``), in a scratch copy of the repository's top level (links) whose ``.local``
is the runner's state directory, so the base URL and the credentials come from that runner's ``demo.json`` exactly as a reader's
do. Only the interpreter (``.venv/bin/python``) is the test's. The runner is private: the examples rotate keys,
grant permissions and delete bfids, which other tests must not see.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
OWNED_ELSEWHERE = {"integrators/clients.md"}  # its examples are tested with the generated clients

# (page, a text of the block) -> why the block does not run here
NOT_RUN = {
    ("design/api-contracts.md", "-m local.contracts"): "rewrites openapi/*.json in the repository",
    ("integrators/iframe.md", 'etoken="$ETOKEN"'): "the eToken comes from the browser (tests/e2e/test_iframe_browser.py)",
    ("integrators/wallets.md", "local.wallet_sandbox --configure"): "tests/e2e/test_wallet_readme_e2e.py runs it",
    ("integrators/wallets.md", '/admin/v1/accounts/$A/wallet"'): "tests/e2e/test_wallet_readme_e2e.py runs it",
    ("local.md", "sam local invoke"): "needs Docker",
    ("local.md", "make invoke FN=PostbackFunction"): "local.invoke reads the repository's own .local; "
                                                   "tests/e2e/test_events_e2e.py runs every event through it",
    ("operators/deploying.md", "make sam-build"): "deploys to AWS",
    ("operators/capacity.md", "GatewayApiReservedConcurrency=250"): "deploys to AWS",
    ("operators/deploying.md", "GatewayApiReservedConcurrency=150"): "deploys to AWS",
    ("operators/transactions-migration.md", "OutputKey=='TransactionsTableName'].OutputValue\" --output text)\necho"):
        "reads a deployed stack of the previous release; tests/integration/test_transactions_migration.py rehearses it",
    ("operators/transactions-migration.md", "TransactionsLegacyTableName=$OLD"): "deploys to AWS",
    ("operators/transactions-migration.md", "-m vaultcore.gateway.migrate --from"): "needs the tables of a deployed "
        "stack; tests/integration/test_transactions_migration.py runs the backfill on moto",
    ("operators/transactions-migration.md", "TransactionsLegacyTableName=\""): "deploys to AWS",
    ("operators/deploying.md", "SnapStart=true"): "deploys to AWS",
    ("operators/onboarding.md", "aws cloudformation describe-stacks"): "reads a deployed stack; the rehearsal "
                                                                      "block points the same steps at the runner",
    ("operators/retention.md", "sam delete"): "deletes a deployed stack",
}

# What each page's run must print: the examples did what the page says they do.
EXPECT = {
    "index.md": [],
    "integrators/index.md": [],
    "integrators/authentication.md": ['"reference": "openssl-1"', '"isValid": true'],
    "integrators/parser.md": ['"reference": "swipe-1"', '"PAN": "4761739001010010"', '"Surname": "SMITH"'],
    "integrators/tokenization.md": ['"deleted": true', '"status": "ok"', '"detokenize": true',
                                    '"value": "4242424242424242"', '"succeeded": 1', '"errCode": 3003'],
    "integrators/gateway.md": ['"authorization_message": "CAPTURED", "request_amount": 35.0',
                               '"vault_token_card_number": "424242',
                               '"authorization_message": "APPROVED", "request_amount": 5.0, "transaction_amount": 5.0',
                               '"request_amount": 6.0, "transaction_amount": 6.0',
                               '"request_amount": 71.0, "transaction_amount": 71.0',
                               '"custom_id": "iframe-session-1", "error": false',
                               '"authorization_message": "REFUND"', '"error_code": 410',
                               '"authorization_message": "CREDIT"', '"entry_mode": "swiped"',
                               '"first_name": "JOHN"'],
    "integrators/webhooks.md": ['"postback_url": "http://127.0.0.1:', '"transaction_type":"SALE"', "signature ok",
                                "hash ok", '"status": "delivered", "http_status": 200', '"postback_url": null'],
    "integrators/iframe.md": ['"label": "Web shop"', '"savePaymentOption": "optional", "billingAddress": "optional"}',
                              '"bearerToken": "ifb_', '"transactionId": "order-1001"}', '"tokens": [], "customer": {"email"'],
    "integrators/proxy.md": ['vault-id: djQAAQ', '\\"number\\":\\"4111111111111111\\"', '"outcome": "forwarded"',
                             '"result": "detokenized 1 value(s)"', '411111******1111'],
    "operators/onboarding.md": ['"reference": "onboarding-1"', '"transaction_approved": true'],
    "quickstart.md": ['"reference": "quickstart-1"', '"success": true, "messageId"', '"reference": "quickstart-2"',
                      '"name": "vault_token_card_number"', '"authorization_message": "APPROVED"',
                      '"authorization_message": "REFUND"', '"refunded_cents": 500'],
}


def pages() -> dict[str, list[str]]:
    out = {}
    for path in sorted(DOCS.rglob("*.md")):
        rel = path.relative_to(DOCS).as_posix()
        if rel not in OWNED_ELSEWHERE:
            out[rel] = re.findall(r"```sh\n(.*?)```", path.read_text(encoding="utf-8"), re.S)
    return out


def _excluded(rel: str, block: str) -> bool:
    return any(page == rel and text in block for page, text in NOT_RUN)


def first_step() -> str:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    section = index[index.index("## The examples"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "docs/index.md: no sh block under ## The examples"
    return block.group(1)


def as_pasted(text: str) -> str:
    """The commands as they run here: the module's runner plays ``make run-bg`` (and ``make run``), and a
    ``make stop`` would stop the reader's runner of the repository's own ``.local``, not this one."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(("make run", "make stop")))


def runnable(rel: str) -> list[str]:
    return [b for b in pages()[rel] if not _excluded(rel, b)]


def test_every_block_runs_or_says_why_not():
    blocks = pages()
    assert "BASE=" in first_step() and '["baseUrl"]' in first_step()
    for page, text in NOT_RUN:  # no stale exclusion: each names a block that exists
        assert any(text in b for b in blocks.get(page, [])), (page, text)
    for rel, page_blocks in blocks.items():
        for block in page_blocks:
            # the base URL comes from .local/demo.json: never a hard-coded local port
            assert not re.search(r"127\.0\.0\.1:\d|localhost:3000", block), (rel, block[:200])
            code = "\n".join(line for line in block.splitlines() if not line.lstrip().startswith("#"))
            if not _excluded(rel, block):
                # a block that runs has nothing to fill in (comments may show answers with <...>)
                assert not re.search(r"<[a-z][^>\n]*>", code.replace("<=", "")), (rel, block[:200])
        if any(not _excluded(rel, b) for b in page_blocks) and rel not in ("index.md", "integrators/index.md"):
            assert rel in EXPECT, f"{rel}: add what its examples must print to EXPECT"


@pytest.fixture(scope="module")
def docs_runner(tmp_path_factory):
    from tests.e2e.runner_process import runner_process

    with runner_process(tmp_path_factory.mktemp("docs-runner")) as proc:
        yield proc


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("openssl")),
                    reason="the documentation's shell examples use curl and openssl")
@pytest.mark.parametrize("rel", sorted(EXPECT))
def test_the_page_s_examples_run_as_written(rel, docs_runner, tmp_path):
    blocks = runnable(rel)
    assert blocks or not EXPECT[rel], rel
    script = as_pasted("\n".join(blocks)).replace(".venv/bin/python", sys.executable)
    for child in ROOT.iterdir():  # the repository as the reader has it (Makefile, events/, .venv), but .local
        if child.name != ".local":
            (tmp_path / child.name).symlink_to(child, target_is_directory=child.is_dir())
    (tmp_path / ".local").symlink_to(docs_runner.stdout.parent, target_is_directory=True)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, "PYTHONPATH": str(ROOT)}
    # In a session of its own: a background process a page starts (the webhooks page's receiver) goes with it.
    bash = subprocess.Popen(["bash", "-c", "set -e\n" + as_pasted(first_step()) + "\n" + script], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = bash.communicate(timeout=300)
    finally:
        try:
            os.killpg(bash.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        bash.wait()
    done = subprocess.CompletedProcess(bash.args, bash.returncode, stdout, stderr)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    for text in EXPECT[rel]:
        assert text in done.stdout, (rel, text, done.stdout[-3000:])
    assert '"errCode": 1,' not in done.stdout and '"error_code": 1,' not in done.stdout, done.stdout[-3000:]
