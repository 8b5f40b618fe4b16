"""LangGraph store filters: namespace match conditions and value filters, as InMemoryStore reads them.

Example:
    .. code-block:: python

        assert value_matches({"n": 5, "kind": "pref"}, {"n": {"$gte": 3}, "kind": "pref"})
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import MatchCondition

from ...errors import MemoryInputError

__all__ = ["namespace_matches", "value_matches"]


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
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise MemoryInputError(f"Unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")
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
    try:
        if isinstance(actual, bool) or actual is None:
            return None, None
        return float(actual), float(operand)
    except (TypeError, ValueError):
        return None, None
