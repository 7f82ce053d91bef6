"""Backfill of the Transactions table from the previous design's (issue 29): ``python -m vaultcore.gateway.migrate``.

The previous table is keyed ``(account_id, transaction_id)`` with the LSI ``byCreatedAt``; the new one
``(pk, transaction_id)`` with ``pk`` = ``<account_id>#<shard>`` (vaultcore.gateway.store). Every item of the old
table (transactions, fences, the ``BATCHES`` items, the daily credit counters) is copied as it is, plus its key
attributes, by one conditional PutItem: ``attribute_not_exists(transaction_id)``. So:

* re-running copies nothing twice and never overwrites: an item already in the new table (copied by an earlier
  run, or by the platform itself when a request changed it during the switch-over: store._adopt) is newer or
  the same, and stays;
* it is resumable: each scan segment's position is saved to ``--state`` after every page, and a new run with the
  same file continues from there (rescanning from the start is also correct, only slower);
* the old table is only read (a consistent Scan), so the tool can run while the platform serves.

``--verify`` reads instead of writing: every old item must have an item of the same key in the new table; it
lists the first missing ones and exits 1 when there are any. The operators' steps:
docs/operators/transactions-migration.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultcore.gateway import store
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["Counts", "backfill", "verify", "main"]


@dataclass
class Counts:
    scanned: int = 0
    copied: int = 0
    present: int = 0  # already in the new table: left as it is
    missing: list[str] = field(default_factory=list)  # --verify: "<account_id>/<transaction_id>"

    def add(self, other: Counts) -> None:
        self.scanned += other.scanned
        self.copied += other.copied
        self.present += other.present
        self.missing += other.missing


class _State:
    """Per-segment scan positions in a JSON file (``{"<segment>": <LastEvaluatedKey> | "done"}``)."""

    def __init__(self, path: Path | None, source: str, segments: int) -> None:
        self.path, self._lock = path, threading.Lock()
        self.data: dict[str, Any] = {"source": source, "segments": segments, "positions": {}}
        if path is not None and path.exists():
            saved = json.loads(path.read_text())
            if saved.get("source") != source or saved.get("segments") != segments:
                raise SystemExit(f"{path} belongs to another run (source {saved.get('source')}, "
                                 f"{saved.get('segments')} segments): use another --state file")
            self.data = saved

    def position(self, segment: int) -> Any:
        return self.data["positions"].get(str(segment))

    def save(self, segment: int, position: Any) -> None:
        with self._lock:
            self.data["positions"][str(segment)] = position
            if self.path is not None:
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps(self.data))
                tmp.replace(self.path)  # atomic: a killed run leaves the previous or the new state


def _copy(target: str, item: dict[str, Any]) -> bool:
    """One conditional put of ``item`` (old layout) into ``target``; False when an item of its key is there."""
    shard = store.shard_of(str(item["transaction_id"]), store.shard_count())
    try:
        with aws_errors("backfill put"):
            dynamodb().put_item(TableName=target, Item=to_item(store.stored_form(item, shard)),
                                ConditionExpression="attribute_not_exists(transaction_id)")
    except ConditionFailed:
        return False
    return True


def _present(target: str, item: dict[str, Any]) -> bool:
    tid = str(item["transaction_id"])
    for count in (store.shard_count(), *store.earlier_shard_counts()):
        key = to_item({"pk": store.partition_key(item["account_id"], store.shard_of(tid, count)),
                       "transaction_id": tid})
        with aws_errors("verify read"):
            if dynamodb().get_item(TableName=target, Key=key, ConsistentRead=True).get("Item"):
                return True
    return False


def _segment(source: str, target: str, segment: int, segments: int, state: _State, check_only: bool,
             page_size: int) -> Counts:
    counts = Counts()
    position = state.position(segment)
    if position == "done":
        return counts
    kwargs: dict[str, Any] = {"TableName": source, "ConsistentRead": True, "Segment": segment,
                              "TotalSegments": segments, "Limit": page_size}
    if position:
        kwargs["ExclusiveStartKey"] = position
    while True:
        with aws_errors("backfill scan"):
            out = dynamodb().scan(**kwargs)
        for raw in out.get("Items", []):
            item = from_item(raw)
            counts.scanned += 1
            if check_only:
                if not _present(target, item):
                    counts.missing.append(f"{item['account_id']}/{item['transaction_id']}")
            elif _copy(target, item):
                counts.copied += 1
            else:
                counts.present += 1
        last = out.get("LastEvaluatedKey")
        if not check_only:
            state.save(segment, last or "done")  # after the page's puts: a resumed run never skips an item
        if not last:
            return counts
        kwargs["ExclusiveStartKey"] = last


def _run(source: str, target: str, segments: int, state_path: Path | None, check_only: bool,
         page_size: int) -> Counts:
    state = _State(None if check_only else state_path, source, segments)
    total = Counts()
    with ThreadPoolExecutor(max_workers=min(segments, 16)) as pool:
        for counts in pool.map(lambda s: _segment(source, target, s, segments, state, check_only, page_size),
                               range(segments)):
            total.add(counts)
    return total


def backfill(source: str, target: str, *, segments: int = 4, state_path: Path | None = None,
             page_size: int = 500) -> Counts:
    """Copy every item of ``source`` (old layout) that ``target`` does not hold yet."""
    return _run(source, target, segments, state_path, False, page_size)


def verify(source: str, target: str, *, segments: int = 4, page_size: int = 500) -> Counts:
    """Check that every item of ``source`` has its copy (or a newer item of its key) in ``target``."""
    return _run(source, target, segments, None, True, page_size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vaultcore.gateway.migrate", description=__doc__.split("\n")[0])
    parser.add_argument("--from", dest="source", required=True, help="the previous design's table (TransactionsTable)")
    parser.add_argument("--to", dest="target", default=os.environ.get("TRANSACTIONS_TABLE"),
                        help="the new table (output TransactionsTableName; default: $TRANSACTIONS_TABLE)")
    parser.add_argument("--shards", type=int, help="the stack's TransactionShards (default: $TRANSACTION_SHARDS or "
                                                   f"{store.DEFAULT_SHARDS})")
    parser.add_argument("--shards-before", default=None, help="the stack's TransactionShardsBefore, if any")
    parser.add_argument("--segments", type=int, default=4, help="parallel scan segments (1-16 threads)")
    parser.add_argument("--state", type=Path, help="file of scan positions: resume from it, save to it")
    parser.add_argument("--verify", action="store_true", help="only check that every item was copied")
    args = parser.parse_args(argv)
    if not args.target:
        parser.error("--to is required (or TRANSACTIONS_TABLE)")
    if args.shards is not None:
        os.environ["TRANSACTION_SHARDS"] = str(args.shards)
    if args.shards_before is not None:
        os.environ["TRANSACTION_SHARDS_BEFORE"] = args.shards_before
    store.shard_count()  # a wrong value fails here, before any write
    store.earlier_shard_counts()
    if args.verify:
        counts = verify(args.source, args.target, segments=args.segments)
        print(json.dumps({"scanned": counts.scanned, "missing": len(counts.missing),
                          "first_missing": counts.missing[:20]}))
        return 1 if counts.missing else 0
    counts = backfill(args.source, args.target, segments=args.segments, state_path=args.state)
    print(json.dumps({"scanned": counts.scanned, "copied": counts.copied, "already_present": counts.present}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
