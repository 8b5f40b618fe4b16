"""LangGraph store filters: namespace match conditions and value filters, as InMemoryStore reads them.

Example:
    .. code-block:: python

        assert value_matches({"n": 5, "kind": "pref"}, {"n": {"$gte": 3}, "kind": "pref"})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.store.base import MatchCondition

from ...errors import MemoryInputError

__all__ = ["check_filter", "namespace_matches", "value_matches"]

_ORDERINGS = ("$gt", "$gte", "$lt", "$lte")
_OPERATORS = ("$eq", "$ne", *_ORDERINGS)


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Prefix or suffix match with ``"*"`` wildcards, as LangGraph's InMemoryStore does it."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise MemoryInputError(f"Unsupported match type: {condition.match_type!r}")
    return all(want == "*" or label == want for label, want in pairs)


def check_filter(filter: object) -> None:
    """Refuse a search ``filter`` that :func:`value_matches` cannot read: not a mapping of fields to
    conditions, or naming an operator other than ``$eq $ne $gt $gte $lt $lte`` at any depth.

    Raises:
        MemoryInputError: naming what was given and the form a filter takes.
    """
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise MemoryInputError(
            f"filter must be a dict of field conditions such as {{'kind': 'pref', 'age': {{'$gte': 18}}}}, "
            f"got {type(filter).__name__} {_shown(filter)}"
        )
    for wanted in filter.values():
        _check_condition(wanted)


def _check_condition(wanted: Any) -> None:
    # The same walk as _compare: operators may sit in a nested dict or a list's elements.
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            for op in wanted:
                if op not in _OPERATORS:
                    raise _unsupported(op)
            return
        for inner in wanted.values():
            _check_condition(inner)
    elif isinstance(wanted, list | tuple):
        for inner in wanted:
            _check_condition(inner)


def _unsupported(op: object) -> MemoryInputError:
    return MemoryInputError(f"Unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def value_matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether ``value`` passes ``filter`` (equality, nested dicts, ``$eq $ne $gt $gte $lt $lte``)."""
    return not filter or all(_compare(value.get(key), wanted) for key, wanted in filter.items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(str(k).startswith("$") for k in wanted):
            return all(_apply_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, dict) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _apply_operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if op not in _ORDERINGS:
        raise _unsupported(op)
    left, right = _comparable(actual, operand)
    if left is None or right is None:
        return False  # a missing or incomparable field never satisfies an ordering
    if op == "$gt":
        return bool(left > right)
    if op == "$gte":
        return bool(left >= right)
    if op == "$lt":
        return bool(left < right)
    return bool(left <= right)


def _comparable(actual: Any, operand: Any) -> tuple[Any, Any]:
    """Both as numbers (``"5"`` counts), else both as strings (ISO dates sort), else ``None``."""
    if isinstance(actual, str) and isinstance(operand, str):
        try:
            return float(actual), float(operand)
        except ValueError:
            return actual, operand
    if isinstance(actual, bool) or actual is None:
        return None, None
    left, right = _number(actual), _number(operand)
    return (left, right) if left is not None and right is not None else (None, None)


def _number(value: Any) -> int | float | None:
    """``value`` as a number, or ``None``. An int stays one: Python compares an int with a float
    exactly, however large (``float(10**400)`` would overflow)."""
    if isinstance(value, int | float):
        return value
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None
