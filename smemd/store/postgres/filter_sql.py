"""The filter tree compiled to PostgreSQL: jsonb operators over a column of metadata.

It agrees exactly with `Filter.matches`, as the SQLite compilation does (smemd.store.sqlite.
filter_sql): a missing key or a value of another type never satisfies a positive operator,
negatives are exact complements, and `caseSensitive: false` folds ASCII only (`lower()` under
the "C" collation). A number is read only once its type is known to be one: a cast of any other
value would fail the whole query.
"""

from __future__ import annotations

import math
from decimal import Decimal

from smemd.store.filter_tree import COMPARE, NEGATED, Filter, Group, Predicate


def filter_sql(tree: Filter, column: str) -> tuple[str, list[object]]:
    """A WHERE fragment over `column` (trusted SQL naming a jsonb value)."""
    if isinstance(tree, Group):
        parts = [filter_sql(o, column) for o in tree.operands]
        glue = f" {tree.op.upper()} "
        return f"({glue.join(sql for sql, _ in parts)})", [p for _, ps in parts for p in ps]
    positive = NEGATED.get(tree.op, tree.op)
    sql, params = _positive_sql(tree, positive, column)
    sql = f"coalesce({sql}, false)"  # a missing key is NULL: NOT must not make that "no row"
    return (f"(NOT {sql})" if positive != tree.op else sql), params


def _positive_sql(p: Predicate, op: str, column: str) -> tuple[str, list[object]]:
    value = f"({column} -> ?::text)"
    kind = f"jsonb_typeof({value})"
    want = p.value
    if op == "arrayContains":
        return f"({kind} = 'array' AND {value} @> jsonb_build_array(?::text))", [
            p.field, p.field, want,
        ]  # fmt: skip
    if isinstance(want, bool):
        return f"({value} = '{'true' if want else 'false'}'::jsonb)", [p.field]
    if not isinstance(want, str):
        return _number_sql(p, op, column, kind, want)
    have = f'({column} ->> ?::text) COLLATE "C"'
    target = '?::text COLLATE "C"'
    if not p.case_sensitive:
        have, target = f"lower({have})", f"lower({target})"
    test = f"{have} = {target}" if op == "eq" else f"strpos({have}, {target}) > 0"
    return f"({kind} = 'string' AND {test})", [p.field, p.field, want]


def _number_sql(
    p: Predicate, op: str, column: str, kind: str, want: int | float
) -> tuple[str, list[object]]:
    """A number compared as Python compares the metadata it reads back: jsonb keeps a number
    as a decimal, and its text reads back as an int (no point: compared exactly, as numeric,
    with a float's exact binary value) or as a float (a point: compared as the double it reads
    as, float8; an int between two doubles is compared with its neighbours)."""
    sign = COMPARE[op][0] if op in COMPARE else "="
    text = f"({column} ->> ?::text)"
    exact = str(Decimal(want))  # a float's exact value, not its shortest repr
    between = isinstance(want, int) and float(want) != want
    if not between:
        as_double = f"{text}::float8 {sign} ?::float8"
        doubles: list[object] = [p.field, repr(float(want))]
    elif op == "eq":
        as_double, doubles = "false", []
    else:  # no double lies between the two neighbours of `want`: > lo is >= hi, < hi is <= lo
        lo = float(want) if float(want) < want else math.nextafter(float(want), -math.inf)
        hi = math.nextafter(lo, math.inf)
        bound, sign = (lo, ">") if sign in (">", ">=") else (hi, "<")
        as_double, doubles = f"{text}::float8 {sign} ?::float8", [p.field, repr(bound)]
    sql = (
        f"(CASE WHEN {kind} <> 'number' THEN NULL"
        f" WHEN strpos({text}, '.') > 0 THEN {as_double}"
        f" ELSE {text}::numeric {COMPARE[op][0] if op in COMPARE else '='} ?::numeric END)"
    )
    return sql, [p.field, p.field, *doubles, p.field, exact]
