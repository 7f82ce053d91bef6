"""DynamoDB adapter of the detokenization audit trail (issue 21): the Audit table.

One item per detokenized bfid of a secure-API detokenization (a batch writes one per successful item): key
``partnerId`` + ``auditId`` (``<13-digit epoch milliseconds>#<request id>#<item index>``, so a partner's records
sort by time and a query reads them newest first), ``bfid``, ``fields`` (the field names, never a value or a
token), ``operation`` (``detokenize`` or ``batch/detokenize``), ``at`` (epoch milliseconds), ``sourceIp`` (the
caller's address as API Gateway saw it) and ``expiresAt`` (the table's TTL: :data:`RETENTION_SECONDS`, PCI DSS
10.5.1's twelve months and a margin).

Why a table of its own rather than a key prefix in Tokens or Registry: the records are append-only, kept for
months (Tokens items live an hour, Registry items forever), read only by the management API, and the functions
that write them get ``PutItem``/``BatchWriteItem`` on this table only (no read, no delete), while the management
function gets ``Query`` only: least privilege that a shared table could not express (IAM conditions on key
prefixes would be needed on both sides).

Partition spread (:mod:`vaultcore.store.spread`): the sort key starts with the time, so keyed by the partner
alone every record of a partner landed on one partition (a 1,000-item batch detokenization wrote 1,000 records
there). A record is written under ``partnerId = <partner>#<shard>``, the shard from a hash of its ``auditId``
(``AUDIT_SHARDS`` shards, template parameter ``AuditShards``); records written before that stay under
``<partner>``. :func:`list_records` reads the legacy partition and every shard and merges them newest first.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from typing import Any

from vaultcore import clock
from vaultcore.errors import DependencyError, ValidationError
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import aws_errors, to_item
from vaultcore.store.spread import merged_query, owns_partition, partitions, spread_value

__all__ = ["RETENTION_SECONDS", "MAX_PAGE", "write_records", "list_records"]

RETENTION_SECONDS = 400 * 86400
MAX_PAGE = 100
_BATCH_WRITE = 25  # BatchWriteItem's limit of items per call


def _table() -> str:
    return settings().audit_table


def write_records(partner_id: str, entries: list[tuple[str, list[str]]], *, operation: str, source_ip: str,
                  request_id: str) -> None:
    """Write one record per ``(bfid, field names)`` of ``entries`` before any clear value is answered.

    One PutItem for one entry; BatchWriteItem (25 a call, unprocessed items written again) for more. Raises
    DependencyError when the records cannot be written: the caller then answers no clear value at all.
    """
    if not entries:
        return
    now_ms = int(clock.now() * 1000)
    rid = (request_id or secrets.token_hex(8))[:64]
    expires_at = now_ms // 1000 + RETENTION_SECONDS
    shards = settings().audit_shards
    items = []
    for i, (bfid, fields) in enumerate(entries):
        audit_id = f"{now_ms:013d}#{rid}#{i:04d}"
        items.append({"partnerId": spread_value(partner_id, audit_id, shards), "auditId": audit_id, "bfid": bfid,
                      "fields": list(fields), "operation": operation, "at": now_ms, "sourceIp": source_ip or "",
                      "expiresAt": expires_at})
    table = _table()
    if len(items) == 1:
        with aws_errors("audit write"):
            dynamodb().put_item(TableName=table, Item=to_item(items[0]))
        return
    for i in range(0, len(items), _BATCH_WRITE):
        pending: list[dict[str, Any]] = [{"PutRequest": {"Item": to_item(it)}} for it in items[i:i + _BATCH_WRITE]]
        for _attempt in range(8):
            with aws_errors("audit write"):
                out = dynamodb().batch_write_item(RequestItems={table: pending})
            pending = (out.get("UnprocessedItems") or {}).get(table) or []
            if not pending:
                break
        else:
            raise DependencyError("Internal error: audit write failed.")


def _encode_token(key: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode().rstrip("=")


def _decode_token(token: str, partner_id: str) -> tuple[str, str]:
    """The cursor ``(auditId, partition value)`` of a token; tokens of the unsharded version (the legacy
    partition's value) are accepted as they are."""
    try:
        key = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ValidationError("nextToken is not valid.", code=400) from None
    if (not isinstance(key, dict) or set(key) != {"partnerId", "auditId"}
            or not owns_partition(partner_id, key["partnerId"]) or not isinstance(key["auditId"], str)):
        raise ValidationError("nextToken is not valid.", code=400)
    return key["auditId"], key["partnerId"]


def list_records(partner_id: str, *, limit: int = 25, next_token: str | None = None,
                 bfid: str | None = None) -> dict[str, Any]:
    """A page of the partner's detokenization records, newest first; ``nextToken`` when more may follow.

    ``bfid`` keeps only that bfid's records. Records past their ``expiresAt`` are left out (TTL deletes late).
    One Query per partition (the legacy one and each shard) at least, more for a sparse filter (at most 20 more,
    then a short page with a ``nextToken``, as before the spread).
    """
    if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise ValidationError(f"limit must be an integer from 1 to {MAX_PAGE}.", code=400)
    cursor = _decode_token(next_token, partner_id) if next_token else None
    names = {"#e": "expiresAt"}
    values: dict[str, Any] = {":now": int(clock.now())}
    filters = "#e > :now"
    if bfid:
        names["#b"] = "bfid"
        values[":b"] = bfid
        filters += " AND #b = :b"
    partition_values = partitions(partner_id, settings().audit_shards)
    with aws_errors("audit query"):
        items, next_cursor = merged_query(
            dynamodb().query, table=_table(), partition_attr="partnerId", sort_attr="auditId",
            partition_values=partition_values, limit=limit, cursor=cursor, filter_expression=filters,
            names=names, values=values, max_queries=len(partition_values) + 20)
    records = [{"auditId": item.get("auditId"), "bfid": item.get("bfid"), "fields": list(item.get("fields") or []),
                "operation": item.get("operation"), "at": int(item.get("at") or 0),
                "sourceIp": item.get("sourceIp") or ""} for item in items]
    result: dict[str, Any] = {"partnerId": partner_id, "records": records}
    if next_cursor is not None:
        result["nextToken"] = _encode_token({"partnerId": next_cursor[1], "auditId": next_cursor[0]})
    return result
