"""The v5 metadata filter: parse a FilterExpression, then evaluate it in Python or in SQLite.

Both evaluators agree exactly (a property test holds them to it):

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
import operator
import re
import string
from collections.abc import Callable, Mapping
from typing import Literal, TypeAlias, cast, get_args

import msgspec

GroupOp = Literal["and", "or"]
PredicateOp = Literal[
    "eq",
    "neq",
    "gt",
    "gte",
    "lt",
    "lte",
    "contains",
    "notContains",
    "arrayContains",
    "arrayNotContains",
]
Value: TypeAlias = str | int | float | bool

MAX_DEPTH = 5
MAX_PREDICATES = 200
MAX_VALUE_CHARS = 1000
_FIELD = re.compile(r"[a-zA-Z0-9_.-]+")
_OPS: tuple[str, ...] = get_args(PredicateOp)
_NEGATED = {"neq": "eq", "notContains": "contains", "arrayNotContains": "arrayContains"}
_COMPARE: dict[str, tuple[str, Callable[[float, float], bool]]] = {
    "gt": (">", operator.gt),
    "gte": (">=", operator.ge),
    "lt": ("<", operator.lt),
    "lte": ("<=", operator.le),
}
_CASE_OPS = {"eq", "neq", "contains", "notContains"}
_LEGACY = {"AND", "OR", "key", "filterType", "negate", "numericOperator", "ignoreCase"}
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class FilterError(ValueError):
    """A filter outside the v5 grammar; the message starts with the JSON path of the fault."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class Predicate(msgspec.Struct, frozen=True):
    """One test of one metadata key; build it with `parse_filter`, which checks op against value."""

    field: str
    op: PredicateOp
    value: Value
    case_sensitive: bool = True

    def __post_init__(self) -> None:
        # to_sql quotes the key as `$."field"`; SQLite (3.40) has no escape inside that label.
        if not _FIELD.fullmatch(self.field):
            raise ValueError(f"metadata key {self.field!r} is outside ^[a-zA-Z0-9_.-]+$")

    def matches(self, metadata: Mapping[str, object]) -> bool:
        """Whether the metadata object satisfies this predicate."""
        positive = _NEGATED.get(self.op)
        if positive is not None:
            return not self._holds(positive, metadata.get(self.field))
        return self._holds(self.op, metadata.get(self.field))

    def _holds(self, op: str, have: object) -> bool:
        want = self.value
        if op in _COMPARE:
            return _is_number(have) and _COMPARE[op][1](cast(float, have), cast(float, want))
        if op == "arrayContains":
            return isinstance(have, list) and any(isinstance(x, str) and x == want for x in have)
        if isinstance(want, bool):
            return isinstance(have, bool) and have == want
        if not isinstance(want, str):
            return _is_number(have) and have == want
        if not isinstance(have, str):
            return False
        if not self.case_sensitive:
            have, want = have.translate(_ASCII_LOWER), want.translate(_ASCII_LOWER)
        return have == want if op == "eq" else want in have

    def to_sql(self, column: str) -> tuple[str, list[object]]:
        """A WHERE fragment over `column` (trusted SQL holding the metadata JSON text)."""
        positive = _NEGATED.get(self.op, self.op)
        sql, params = self._positive_sql(positive, column)
        # A missing key makes json_type NULL; ifnull keeps NOT from turning that into "no row".
        sql = f"ifnull({sql}, 0)"
        return (f"(NOT {sql})" if positive != self.op else sql), params

    def _positive_sql(self, op: str, column: str) -> tuple[str, list[object]]:
        path = f'$."{self.field}"'
        kind = f"json_type({column}, ?)"
        have = f"json_extract({column}, ?)"
        want = self.value
        if op == "arrayContains":
            member = (
                f"EXISTS (SELECT 1 FROM json_each({column}, ?) AS m"
                " WHERE m.type = 'text' AND m.value = ?)"
            )
            return f"({kind} = 'array' AND {member})", [path, path, want]
        if isinstance(want, bool):
            return f"({kind} = '{'true' if want else 'false'}')", [path]
        if not isinstance(want, str):
            sign = _COMPARE[op][0] if op in _COMPARE else "="
            return f"({kind} IN ('integer', 'real') AND {have} {sign} ?)", [path, path, want]
        if not self.case_sensitive:
            have, value = f"lower({have})", "lower(?)"
        else:
            value = "?"
        test = f"{have} = {value}" if op == "eq" else f"instr({have}, {value}) > 0"
        return f"({kind} = 'text' AND {test})", [path, path, want]


class Group(msgspec.Struct, frozen=True):
    """`and`/`or` over one or more operands."""

    op: GroupOp
    operands: tuple[Filter, ...]

    def matches(self, metadata: Mapping[str, object]) -> bool:
        """Whether the metadata object satisfies all (`and`) or any (`or`) operand."""
        test = all if self.op == "and" else any
        return test(operand.matches(metadata) for operand in self.operands)

    def to_sql(self, column: str) -> tuple[str, list[object]]:
        """A WHERE fragment over `column` (trusted SQL holding the metadata JSON text)."""
        return _join(f" {self.op.upper()} ", [o.to_sql(column) for o in self.operands])


Filter: TypeAlias = Group | Predicate


def _join(glue: str, parts: list[tuple[str, list[object]]]) -> tuple[str, list[object]]:
    """Chain in about sqrt(n) parenthesized runs of about sqrt(n) operands each.

    SQLite refuses both a long flat chain nested five deep (expression depth > 1000) and deep
    balanced parentheses (parser stack overflow); two short levels per group pass both.
    """
    size = math.isqrt(len(parts) - 1) + 1
    runs = [_chain(glue, parts[i : i + size]) for i in range(0, len(parts), size)]
    return _chain(glue, runs)


def _chain(glue: str, parts: list[tuple[str, list[object]]]) -> tuple[str, list[object]]:
    if len(parts) == 1:
        return parts[0]
    sql = glue.join(sql for sql, _ in parts)
    return f"({sql})", [param for _, params in parts for param in params]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
    if not isinstance(field, str) or not _FIELD.fullmatch(field):
        raise FilterError(f"{path}.field", "expected a string matching ^[a-zA-Z0-9_.-]+$")
    op = _require(raw, path, "operator")
    if op not in _OPS:
        raise FilterError(f"{path}.operator", f"expected one of {', '.join(_OPS)}")
    value = _require(raw, path, "value")
    if op in _COMPARE:
        if not _is_number(value):
            raise FilterError(f"{path}.value", f"expected a number for {op}")
    elif op in ("eq", "neq"):
        if not isinstance(value, str | bool) and not _is_number(value):
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
