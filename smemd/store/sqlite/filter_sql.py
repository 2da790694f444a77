"""The filter tree compiled to SQLite: JSON functions over a column of metadata text.

It agrees exactly with `Filter.matches` (see smemd.engine.filters for the rules): a missing key
or a value of another type never satisfies a positive operator, negatives are exact
complements, `caseSensitive: false` folds ASCII only (as SQLite's `lower()` does).
"""

from __future__ import annotations

import math

from smemd.store.filter_tree import COMPARE, NEGATED, Filter, Group, Predicate


def filter_sql(tree: Filter, column: str) -> tuple[str, list[object]]:
    """A WHERE fragment over `column` (trusted SQL holding the metadata JSON text)."""
    if isinstance(tree, Group):
        return _join(f" {tree.op.upper()} ", [filter_sql(o, column) for o in tree.operands])
    return _predicate_sql(tree, column)


def _predicate_sql(p: Predicate, column: str) -> tuple[str, list[object]]:
    positive = NEGATED.get(p.op, p.op)
    sql, params = _positive_sql(p, positive, column)
    # A missing key makes json_type NULL; ifnull keeps NOT from turning that into "no row".
    sql = f"ifnull({sql}, 0)"
    return (f"(NOT {sql})" if positive != p.op else sql), params


def _positive_sql(p: Predicate, op: str, column: str) -> tuple[str, list[object]]:
    path = f'$."{p.field}"'
    kind = f"json_type({column}, ?)"
    have = f"json_extract({column}, ?)"
    want = p.value
    if op == "arrayContains":
        member = (
            f"EXISTS (SELECT 1 FROM json_each({column}, ?) AS m"
            " WHERE m.type = 'text' AND m.value = ?)"
        )
        return f"({kind} = 'array' AND {member})", [path, path, want]
    if isinstance(want, bool):
        return f"({kind} = '{'true' if want else 'false'}')", [path]
    if not isinstance(want, str):
        sign = COMPARE[op][0] if op in COMPARE else "="
        return f"({kind} IN ('integer', 'real') AND {have} {sign} ?)", [path, path, want]
    if not p.case_sensitive:
        have, value = f"lower({have})", "lower(?)"
    else:
        value = "?"
    test = f"{have} = {value}" if op == "eq" else f"instr({have}, {value}) > 0"
    return f"({kind} = 'text' AND {test})", [path, path, want]


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
