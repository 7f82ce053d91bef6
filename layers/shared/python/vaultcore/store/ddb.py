"""DynamoDB adapter helpers: typed (de)serialisation and the translation of SDK errors into domain errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from vaultcore.errors import DependencyError

__all__ = ["to_item", "from_item", "aws_errors", "is_conditional_failure", "ConditionFailed"]


class ConditionFailed(Exception):
    """A conditional write lost (the item exists, or its condition did not hold)."""


def _ser():
    from boto3.dynamodb.types import TypeSerializer

    return TypeSerializer()


def _deser():
    from boto3.dynamodb.types import TypeDeserializer

    return TypeDeserializer()


def to_item(data: dict[str, Any]) -> dict[str, Any]:
    from decimal import Decimal

    ser = _ser()

    def fix(v: Any) -> Any:
        if isinstance(v, float):
            return Decimal(str(v))
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    return {k: ser.serialize(fix(v)) for k, v in data.items() if v is not None}


def from_item(item: dict[str, Any] | None) -> dict[str, Any] | None:
    if item is None:
        return None
    from decimal import Decimal

    de = _deser()

    def fix(v: Any) -> Any:
        if isinstance(v, Decimal):
            return int(v) if v == v.to_integral_value() else float(v)
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, (bytes, bytearray)):
            return bytes(v)
        return v

    return {k: fix(de.deserialize(v)) for k, v in item.items()}


def is_conditional_failure(exc: BaseException) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("ConditionalCheckFailedException", "TransactionCanceledException")


@contextmanager
def aws_errors(what: str) -> Iterator[None]:
    """Turn botocore errors into domain errors; conditional-check failures into :class:`ConditionFailed`."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except ClientError as exc:
        if is_conditional_failure(exc):
            raise ConditionFailed(what) from exc
        raise DependencyError(f"Internal error: {what} failed.") from exc
    except BotoCoreError as exc:
        raise DependencyError(f"Internal error: {what} failed.") from exc
