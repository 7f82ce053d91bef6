"""Spread partition keys: one owner's items over ``count`` DynamoDB partitions, and the newest-first listing that
merges them back.

Why: DynamoDB serves at most 1,000 write units and 3,000 read units a second per partition key value. The Audit,
ProxyLogs and Nonces tables were keyed by the partner alone, so one busy partner's detokenizations, proxy calls
or HMAC requests all wrote one partition key (the audit and proxy-log sort keys even start with the time, so
every write lands on the table's last partition). The tables keep their key schemas (changing one replaces a
``Retain`` table): what changes is the value written in the partition key attribute, ``<owner>#<shard>``, the
shard from a stable hash of a value the writer already has (the item's own sort key or the nonce). Owners never
contain ``#`` (partner ids are letters and digits), so a spread value never equals another owner's legacy key.

Items written before the spread stay under the bare owner value (the *legacy* partition). Listings read the
legacy partition and every shard, so nothing needs migrating; TTL removes the legacy items in time.

The shard count is a template parameter (an environment variable per table). It may be raised, never lowered: a
listing reads shards ``0 .. count-1``, so items in a shard above a lowered count would disappear from listings.

Paging: the merged order is (sort key, partition value) descending, a total order across partitions. A paging
cursor is the position of the last item answered, ``{<partition attribute>: <its partition value>, <sort
attribute>: <its sort key>}``, the same shape as the ``LastEvaluatedKey`` the unsharded listings put in their
tokens, so a token issued by the previous version (whose partition value is the legacy one) still pages on. The
next page reads, in every partition ``Q``, the items below the cursor in that order: sort key ``<=`` the cursor's
when ``Q`` sorts before the cursor's partition, ``<`` otherwise.

:class:`_Stream` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a dataclass costs
0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any

from vaultcore.plain import Mutable
from vaultcore.store.ddb import from_item, to_item

__all__ = ["shard_of", "spread_value", "partitions", "owns_partition", "merged_query"]

SEPARATOR = "#"


def shard_of(value: str, count: int) -> int:
    """A stable shard number in ``0 .. count-1`` for ``value`` (the same in every process; not ``hash()``)."""
    if count <= 1:
        return 0
    digest = hashlib.blake2b(value.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def spread_value(owner: str, value: str, count: int) -> str:
    """The partition key value under which an item of ``owner`` identified by ``value`` is written."""
    return f"{owner}{SEPARATOR}{shard_of(value, count)}"


def partitions(owner: str, count: int) -> list[str]:
    """Every partition value a listing of ``owner`` reads: the legacy one, then each shard."""
    return [owner] + [f"{owner}{SEPARATOR}{n}" for n in range(max(1, count))]


def owns_partition(owner: str, value: object) -> bool:
    """Whether ``value`` (from a paging token) is one of ``owner``'s partition values, whatever the shard count."""
    if not isinstance(value, str):
        return False
    if value == owner:
        return True
    head, sep, shard = value.rpartition(SEPARATOR)
    return bool(sep) and head == owner and shard.isdigit() and len(shard) <= 6


_TOP = ("\U0010ffff", "")  # above every real position: a partition not read yet


class _Stream(Mutable):
    """One partition's query: the items read but not answered yet and how far down it has been read."""

    __slots__ = ("partition", "items", "last_key", "started", "page")
    partition: str
    items: list[dict[str, Any]]  # read, matching, not answered; newest first
    last_key: dict[str, Any] | None
    started: bool
    page: int  # the Limit of its next query

    def __init__(self, partition: str, items: list[dict[str, Any]] | None = None,
                 last_key: dict[str, Any] | None = None, started: bool = False, page: int = 1) -> None:
        self.partition = partition
        self.items = [] if items is None else items
        self.last_key = last_key
        self.started = started
        self.page = page

    @property
    def done(self) -> bool:
        return self.started and self.last_key is None

    def frontier(self, sort_attr: str) -> tuple[str, str] | None:
        """Everything of this partition above this position has been read; None when all of it has."""
        if not self.started:
            return _TOP
        if self.last_key is None:
            return None
        return (str((from_item(self.last_key) or {}).get(sort_attr)), self.partition)


def merged_query(query: Callable[..., dict[str, Any]], *, table: str, partition_attr: str, sort_attr: str,
                 partition_values: list[str], limit: int, cursor: tuple[str, str] | None,
                 filter_expression: str | None, names: dict[str, str], values: dict[str, Any],
                 max_queries: int) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
    """Up to ``limit`` items of all ``partition_values``, newest (highest sort key) first, below ``cursor``.

    ``query`` is the DynamoDB client's ``query``. Returns the items (plain dicts) and the cursor of the next page
    (None when nothing more can follow). An item is answered only when it is above every position some partition
    has not been read down to yet, so the order is exact whatever each partition holds. A sparse filter may need
    many pages: after ``max_queries`` queries the answer stops early (possibly empty) with a cursor at the
    highest unread position, as the unsharded listings stopped after a number of pages.
    """
    streams = [_Stream(p) for p in partition_values]
    first_page = math.ceil(limit / len(streams)) + 1  # a partition's expected share of a page, and one more
    for s in streams:
        s.page = first_page
    budget = max(max_queries, len(streams) + 1)
    answered: list[dict[str, Any]] = []
    last: tuple[str, str] | None = None
    queries = 0
    while len(answered) < limit:
        frontiers = [(f, s) for s in streams if (f := s.frontier(sort_attr)) is not None]
        unread = max(frontiers, key=lambda fs: fs[0]) if frontiers else None
        heads = [((str(s.items[0][sort_attr]), s.partition), s) for s in streams if s.items]
        best = max(heads, key=lambda hs: hs[0]) if heads else None
        if best is not None and (unread is None or best[0] >= unread[0]):  # equal: its own last read item
            answered.append(best[1].items.pop(0))
            last = best[0]
            continue
        if unread is None:  # every partition read to its end and answered
            return answered, None
        if queries >= budget:
            # Stop here (every partition has been read at least once, so the position is a real one): every item
            # above the highest unread position has been answered; the next page starts there.
            return answered, unread[0]
        stream = unread[1]
        queries += 1
        out = query(**_query_args(table, partition_attr, sort_attr, stream, cursor, stream.page, filter_expression,
                                  names, values))
        stream.page = min(2 * stream.page, max(limit, first_page))  # a partition read again holds more than its share
        stream.started = True
        stream.last_key = out.get("LastEvaluatedKey")
        stream.items.extend(from_item(raw) or {} for raw in out.get("Items", []))
    more = any(s.items or not s.done for s in streams)
    return answered, (last if more else None)


def _query_args(table: str, partition_attr: str, sort_attr: str, stream: _Stream, cursor: tuple[str, str] | None,
                size: int, filter_expression: str | None, names: dict[str, str],
                values: dict[str, Any]) -> dict[str, Any]:
    names = {**names, "#mp": partition_attr}
    values = {**values, ":mp": stream.partition}
    condition = "#mp = :mp"
    if cursor is not None:
        # Below the cursor in (sort key, partition) order: an equal sort key only in a partition that sorts first.
        names["#ms"] = sort_attr
        values[":ms"] = cursor[0]
        condition += " AND #ms <= :ms" if stream.partition < cursor[1] else " AND #ms < :ms"
    kwargs: dict[str, Any] = {"TableName": table, "KeyConditionExpression": condition,
                              "ExpressionAttributeNames": names, "ExpressionAttributeValues": to_item(values),
                              "ScanIndexForward": False, "Limit": size}
    if filter_expression:
        kwargs["FilterExpression"] = filter_expression
    if stream.last_key is not None:
        kwargs["ExclusiveStartKey"] = stream.last_key
    return kwargs
