"""The v5 metadata filter: parse a FilterExpression into the tree of smemd.store.filter_tree,
which Python (`matches`) and each store evaluate. All evaluators agree exactly (a property test
holds SQLite's to it):

* `field` is a literal key of the metadata object (`customer.plan` is one key, not a path).
* A missing key, or a value of another type, never satisfies a positive operator (`eq`, `gt`,
  `gte`, `lt`, `lte`, `contains`, `arrayContains`); the negative operators (`neq`,
  `notContains`, `arrayNotContains`) are their exact complements, so they hold then.
* No coercion: a number predicate never matches a string, `true` never equals `1`, and ints and
  floats compare by value (`1 == 1.0`).
* `caseSensitive: false` folds ASCII letters only, because SQLite's built-in `lower()` does.
* `arrayContains` needs a JSON array and compares its string members exactly.

Beyond the published grammar, a value may not hold U+0000 (SQLite's JSON functions stop there),
NaN/Infinity, or an integer outside 64 bits (SQLite cannot bind it).

A filter is evaluated on every row of a namespace, so its size is its cost: groups nest at most
MAX_DEPTH levels, a filter holds at most MAX_PREDICATES predicates in all, and a string value is
at most MAX_VALUE_CHARS characters. Past a limit it is refused, naming the limit.
"""

from __future__ import annotations

import math
from typing import cast, get_args

from smemd.store.filter_tree import (
    COMPARE,
    FIELD,
    Filter,
    Group,
    Predicate,
    PredicateOp,
    Value,
    is_number,
)

__all__ = ["FIELD", "Filter", "FilterError", "Group", "Predicate", "parse_filter"]

MAX_DEPTH = 5
MAX_PREDICATES = 200
MAX_VALUE_CHARS = 1000
_OPS: tuple[str, ...] = get_args(PredicateOp)
_CASE_OPS = {"eq", "neq", "contains", "notContains"}
_LEGACY = {"AND", "OR", "key", "filterType", "negate", "numericOperator", "ignoreCase"}


class FilterError(ValueError):
    """A filter outside the v5 grammar; the message starts with the JSON path of the fault."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def parse_filter(raw: object, root: str = "$.filter") -> Filter:
    """Validate decoded JSON as a v5 FilterExpression; FilterError names the first fault."""
    return _Parser().node(raw, root, depth=1)


class _Parser:
    """One filter's parse: it counts predicates across the whole tree."""

    def __init__(self) -> None:
        self.predicates = 0

    def node(self, raw: object, path: str, depth: int) -> Filter:
        if not isinstance(raw, dict):
            raise FilterError(path, "expected an object")
        for key in raw:
            if key in _LEGACY:
                raise FilterError(
                    f"{path}.{key}", "legacy v3/v4 filter key, not part of the v5 grammar"
                )
        if "operands" in raw or raw.get("operator") in ("and", "or"):
            return self.group(raw, path, depth)
        self.predicates += 1
        if self.predicates > MAX_PREDICATES:
            raise FilterError(path, f"more than {MAX_PREDICATES} predicates in one filter")
        return _parse_predicate(raw, path)

    def group(self, raw: dict[str, object], path: str, depth: int) -> Group:
        _reject_unknown(raw, path, ("operator", "operands"))
        if depth > MAX_DEPTH:
            raise FilterError(path, f"groups nest deeper than {MAX_DEPTH} levels")
        op = _require(raw, path, "operator")
        if op not in ("and", "or"):
            raise FilterError(f"{path}.operator", 'expected "and" or "or"')
        operands = _require(raw, path, "operands")
        if not isinstance(operands, list):
            raise FilterError(f"{path}.operands", "expected an array")
        if not operands:
            raise FilterError(f"{path}.operands", "expected at least one operand")
        children = tuple(
            self.node(o, f"{path}.operands[{i}]", depth + 1) for i, o in enumerate(operands)
        )
        return Group(op, children)


def _parse_predicate(raw: dict[str, object], path: str) -> Predicate:
    _reject_unknown(raw, path, ("field", "operator", "value", "caseSensitive"))
    field = _require(raw, path, "field")
    if not isinstance(field, str) or not FIELD.fullmatch(field):
        raise FilterError(f"{path}.field", "expected a string matching ^[a-zA-Z0-9_.-]+$")
    op = _require(raw, path, "operator")
    if op not in _OPS:
        raise FilterError(f"{path}.operator", f"expected one of {', '.join(_OPS)}")
    value = _require(raw, path, "value")
    if op in COMPARE:
        if not is_number(value):
            raise FilterError(f"{path}.value", f"expected a number for {op}")
    elif op in ("eq", "neq"):
        if not isinstance(value, str | bool) and not is_number(value):
            raise FilterError(f"{path}.value", f"expected a string, number or boolean for {op}")
    elif not isinstance(value, str):
        raise FilterError(f"{path}.value", f"expected a string for {op}")
    _check_value(cast(Value, value), f"{path}.value")
    case_sensitive = raw.get("caseSensitive", True)
    if "caseSensitive" in raw:
        if op not in _CASE_OPS or not isinstance(value, str):
            raise FilterError(
                f"{path}.caseSensitive", f"not allowed for {op} with a {_kind(value)}"
            )
        if not isinstance(case_sensitive, bool):
            raise FilterError(f"{path}.caseSensitive", "expected a boolean")
    return Predicate(field, cast(PredicateOp, op), cast(Value, value), bool(case_sensitive))


def _check_value(value: Value, path: str) -> None:
    # SQLite's JSON functions end a string at U+0000, so SQL could not agree with Python on it.
    if isinstance(value, str) and "\x00" in value:
        raise FilterError(path, "must not contain U+0000")
    if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
        raise FilterError(path, f"longer than {MAX_VALUE_CHARS} characters")
    if isinstance(value, float) and not math.isfinite(value):
        raise FilterError(path, "expected a finite number")
    # SQLite binds 64-bit integers only.
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise FilterError(path, "integer outside the 64-bit range")


def _kind(value: object) -> str:
    return (
        "string" if isinstance(value, str) else "boolean" if isinstance(value, bool) else "number"
    )


def _reject_unknown(raw: dict[str, object], path: str, known: tuple[str, ...]) -> None:
    for key in raw:
        if key not in known:
            raise FilterError(f"{path}.{key}", "unknown field")


def _require(raw: dict[str, object], path: str, key: str) -> object:
    if key not in raw:
        raise FilterError(f"{path}.{key}", "required")
    return raw[key]
