"""DynamoDB adapter helpers: typed (de)serialisation and the translation of SDK errors into domain errors.

The attribute-value conversion is boto3's ``TypeSerializer``/``TypeDeserializer`` rules, written out here so no
function imports boto3 (botocore alone; vaultcore.store.aws): numbers in DynamoDB's decimal context, ``B`` values
as ``bytes``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set
from contextlib import contextmanager
from decimal import Clamped, Context, Decimal, Inexact, Overflow, Rounded, Underflow
from typing import Any, overload

from vaultcore.errors import DependencyError

__all__ = ["to_item", "from_item", "serialize", "deserialize", "aws_errors", "is_conditional_failure",
           "ConditionFailed"]

# DynamoDB's number type: 38 digits, exponent -128..126, nothing silently rounded (as boto3's DYNAMODB_CONTEXT).
_NUMBERS = Context(Emin=-128, Emax=126, prec=38, traps=[Clamped, Overflow, Inexact, Rounded, Underflow])


class ConditionFailed(Exception):
    """A conditional write lost (the item exists, or its condition did not hold)."""


def _number(value: int | Decimal) -> str:
    text = str(_NUMBERS.create_decimal(value))
    if text in ("Infinity", "-Infinity", "NaN", "sNaN"):
        raise TypeError("Infinity and NaN not supported")
    return text


def _is_number(value: Any) -> bool:
    if isinstance(value, float):
        raise TypeError("Float types are not supported. Use Decimal types instead.")
    return isinstance(value, (int, Decimal)) and not isinstance(value, bool)


def serialize(value: Any) -> dict[str, Any]:
    """One Python value as a DynamoDB attribute value."""
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if _is_number(value):
        return {"N": _number(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, (bytes, bytearray)):
        return {"B": bytes(value)}
    if isinstance(value, Set):
        if all(_is_number(v) for v in value):
            return {"NS": [_number(v) for v in value]}
        if all(isinstance(v, str) for v in value):
            return {"SS": list(value)}
        if all(isinstance(v, (bytes, bytearray)) for v in value):
            return {"BS": [bytes(v) for v in value]}
    if isinstance(value, Mapping):
        return {"M": {k: serialize(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"L": [serialize(v) for v in value]}
    raise TypeError(f'Unsupported type "{type(value)}" for a DynamoDB attribute')


def deserialize(value: dict[str, Any]) -> Any:
    """One DynamoDB attribute value as Python (numbers as Decimal, binary as bytes)."""
    if not value:
        raise TypeError("Value must be a nonempty dictionary whose key is a valid dynamodb type.")
    kind, data = next(iter(value.items()))
    if kind == "S" or kind == "BOOL":
        return data
    if kind == "N":
        return _NUMBERS.create_decimal(data)
    if kind == "M":
        return {k: deserialize(v) for k, v in data.items()}
    if kind == "L":
        return [deserialize(v) for v in data]
    if kind == "NULL":
        return None
    if kind == "B":
        return bytes(data)
    if kind == "SS":
        return set(data)
    if kind == "NS":
        return {_NUMBERS.create_decimal(v) for v in data}
    if kind == "BS":
        return {bytes(v) for v in data}
    raise TypeError(f"Dynamodb type {kind} is not supported")


def to_item(data: dict[str, Any]) -> dict[str, Any]:
    def fix(v: Any) -> Any:
        if isinstance(v, float):
            return Decimal(str(v))
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    return {k: serialize(fix(v)) for k, v in data.items() if v is not None}


@overload
def from_item(item: dict[str, Any]) -> dict[str, Any]: ...
@overload
def from_item(item: None) -> None: ...
@overload
def from_item(item: dict[str, Any] | None) -> dict[str, Any] | None: ...
def from_item(item: dict[str, Any] | None) -> dict[str, Any] | None:
    if item is None:
        return None

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

    return {k: fix(deserialize(v)) for k, v in item.items()}


def is_conditional_failure(exc: BaseException) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("ConditionalCheckFailedException", "TransactionCanceledException")


@contextmanager
def aws_errors(what: str) -> Iterator[None]:
    """Turn AWS errors (either client's) into domain errors; conditional-check failures into
    :class:`ConditionFailed`."""
    from vaultcore.store.aws import client_errors, transport_errors

    try:
        yield
    except client_errors() as exc:
        if is_conditional_failure(exc):
            raise ConditionFailed(what) from exc
        raise DependencyError(f"Internal error: {what} failed.") from exc
    except transport_errors() as exc:
        raise DependencyError(f"Internal error: {what} failed.") from exc
