"""Decide how a Delta column follows a MySQL type change: keep, widen, or refuse (pure)."""

from enum import Enum
from typing import Any

from pyspark.sql import types as T

_INTEGRAL = [T.ByteType(), T.ShortType(), T.IntegerType(), T.LongType()]
# Integer digits an integral type needs as a DECIMAL (Delta widens integers to such decimals).
_INTEGRAL_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}


class Change(Enum):
    SAME = "same"
    KEEP = "keep"  # the Delta type already holds every value of the new type
    WIDEN = "widen"  # ALTER COLUMN TYPE to `target`
    REFUSE = "refuse"


def plan_change(existing: Any, incoming: Any) -> tuple[Change, Any]:
    """(decision, the type the Delta column should have afterwards)."""
    if existing == incoming:
        return Change.SAME, existing
    if existing in _INTEGRAL and incoming in _INTEGRAL:
        grows = _INTEGRAL.index(incoming) > _INTEGRAL.index(existing)
        return (Change.WIDEN, incoming) if grows else (Change.KEEP, existing)
    if isinstance(existing, T.DecimalType) and isinstance(incoming, T.DecimalType | T.IntegralType):
        int_digits, scale = _digits(incoming)
        need_int = max(existing.precision - existing.scale, int_digits)
        need_scale = max(existing.scale, scale)
        if (need_int, need_scale) == (existing.precision - existing.scale, existing.scale):
            return Change.KEEP, existing
        if need_int + need_scale > 38:
            return Change.REFUSE, incoming
        return Change.WIDEN, T.DecimalType(need_int + need_scale, need_scale)
    if existing in _INTEGRAL and isinstance(incoming, T.DecimalType):
        int_digits = _INTEGRAL_DIGITS[existing.simpleString()]
        if incoming.precision - incoming.scale >= int_digits:
            return Change.WIDEN, incoming
        target_int = max(int_digits, incoming.precision - incoming.scale)
        if target_int + incoming.scale > 38:
            return Change.REFUSE, incoming
        return Change.WIDEN, T.DecimalType(target_int + incoming.scale, incoming.scale)
    if isinstance(existing, T.FloatType) and isinstance(incoming, T.DoubleType):
        return Change.WIDEN, incoming
    if isinstance(existing, T.DoubleType) and isinstance(incoming, T.FloatType | T.IntegralType):
        return Change.KEEP, existing
    if isinstance(existing, T.DateType) and isinstance(incoming, T.TimestampNTZType):
        return Change.WIDEN, incoming
    if isinstance(existing, T.StringType) and isinstance(incoming, T.StringType):
        return Change.SAME, existing
    return Change.REFUSE, incoming


def _digits(data_type: Any) -> tuple[int, int]:
    if isinstance(data_type, T.DecimalType):
        return data_type.precision - data_type.scale, data_type.scale
    return _INTEGRAL_DIGITS[data_type.simpleString()], 0
