"""The v5 metadata filter as a tree the engine parses (smemd.engine.filters) and a store
compiles to its own query language; `matches` evaluates it in Python, and every store's
compilation agrees with it exactly (a property test holds SQLite's to it). The rules of
meaning are in smemd.engine.filters."""

from __future__ import annotations

import operator
import re
import string
from collections.abc import Callable, Mapping
from typing import Literal, TypeAlias, cast

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

FIELD = re.compile(r"[a-zA-Z0-9_.-]+")
# Each negative operator is the exact complement of a positive one.
NEGATED = {"neq": "eq", "notContains": "contains", "arrayNotContains": "arrayContains"}
COMPARE: dict[str, tuple[str, Callable[[float, float], bool]]] = {
    "gt": (">", operator.gt),
    "gte": (">=", operator.ge),
    "lt": ("<", operator.lt),
    "lte": ("<=", operator.le),
}
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class Predicate(msgspec.Struct, frozen=True):
    """One test of one metadata key; build it with `parse_filter`, which checks op against value."""

    field: str
    op: PredicateOp
    value: Value
    case_sensitive: bool = True

    def __post_init__(self) -> None:
        # A store quotes the key in its own syntax (SQLite: `$."field"`, with no escape inside).
        if not FIELD.fullmatch(self.field):
            raise ValueError(f"metadata key {self.field!r} is outside ^[a-zA-Z0-9_.-]+$")

    def matches(self, metadata: Mapping[str, object]) -> bool:
        """Whether the metadata object satisfies this predicate."""
        positive = NEGATED.get(self.op)
        if positive is not None:
            return not self._holds(positive, metadata.get(self.field))
        return self._holds(self.op, metadata.get(self.field))

    def _holds(self, op: str, have: object) -> bool:
        want = self.value
        if op in COMPARE:
            return is_number(have) and COMPARE[op][1](cast(float, have), cast(float, want))
        if op == "arrayContains":
            return isinstance(have, list) and any(isinstance(x, str) and x == want for x in have)
        if isinstance(want, bool):
            return isinstance(have, bool) and have == want
        if not isinstance(want, str):
            return is_number(have) and have == want
        if not isinstance(have, str):
            return False
        if not self.case_sensitive:
            have, want = have.translate(_ASCII_LOWER), want.translate(_ASCII_LOWER)
        return have == want if op == "eq" else want in have


class Group(msgspec.Struct, frozen=True):
    """`and`/`or` over one or more operands."""

    op: GroupOp
    operands: tuple[Filter, ...]

    def matches(self, metadata: Mapping[str, object]) -> bool:
        """Whether the metadata object satisfies all (`and`) or any (`or`) operand."""
        test = all if self.op == "and" else any
        return test(operand.matches(metadata) for operand in self.operands)


Filter: TypeAlias = Group | Predicate


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
