"""The legacy filter grammar: its translation to the v5 filter selects exactly the rows a
reference evaluator of the legacy semantics (written here, apart from the translation) selects,
in Python, in SQLite and through the daemon's list route; hand-built v5 filters agree."""

from __future__ import annotations

import json
import operator
from decimal import Decimal, InvalidOperation
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smemd.api.legacy.filters import to_filter, translate
from smemd.engine.filters import FilterError
from smemd.errors import BadRequest
from tests.conftest import Running
from tests.test_api import call
from tests.test_filters import sql_matches

# --- the reference: legacy semantics, evaluated directly --------------------------------------


def _fold(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def _reading(text: str) -> int | float | None:
    """The number a legacy value reads as: plain decimal notation only (no spaces, `_`, inf)."""
    if not text or any(c not in "0123456789+-.eE" for c in text):
        return None
    try:
        exact = Decimal(text)
    except InvalidOperation:
        return None
    if not exact.is_finite():
        return None
    if "." not in text and "e" not in text.lower() and -(2**63) <= exact < 2**63:
        return int(exact)
    number = float(exact)
    return None if number in (float("inf"), float("-inf")) else number


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _true(flag: object) -> bool:
    return flag is True or flag == "true"


def legacy_holds(node: dict[str, Any], metadata: dict[str, Any]) -> bool:
    if "AND" in node:
        return all(legacy_holds(n, metadata) for n in node["AND"])
    if "OR" in node:
        return any(legacy_holds(n, metadata) for n in node["OR"])
    kind = node.get("filterType", "metadata")
    negate, fold = _true(node.get("negate")), _true(node.get("ignoreCase"))
    have, value = metadata.get(node["key"]), node["value"]
    if kind == "numeric":
        if not _is_number(have):
            return False  # a numeric condition, negated or not, holds for numbers only
        want = _reading(value)
        assert want is not None
        ops = {
            "=": operator.eq,
            "<": operator.lt,
            "<=": operator.le,
            ">": operator.gt,
            ">=": operator.ge,
        }
        compare = ops[node.get("numericOperator", "=")](cast(float, have), want)
        return compare != negate
    if kind == "array_contains":
        found = isinstance(have, list) and any(isinstance(x, str) and x == value for x in have)
    elif kind == "string_contains":
        found = isinstance(have, str) and (_fold(value) in _fold(have) if fold else value in have)
    elif isinstance(have, bool):
        found = value in ("true", "false") and have == (value == "true")
    elif _is_number(have):
        found = _reading(value) == have if _reading(value) is not None else False
    elif isinstance(have, str):
        found = _fold(have) == _fold(value) if fold else have == value
    else:
        found = False
    return found != negate


# --- random legacy filters and metadata ------------------------------------------------------

KEYS = ["a", "n", "tags", "plan", "x.y", "missing"]
TEXTS = ["", "a", "A", "pro", "Pro", "PRO", "3", "3.0", "true", "false", "x pro y", "é", "É", "b"]
NUMERIC_TEXTS = ["3", "3.0", "-1", "0", "2.5", "5", "10", "1e1", "0.1", "+4", ".5", "-0"]
VALUES = TEXTS + NUMERIC_TEXTS + ["1_0", " 3", "inf", "nan", "1e999", "0x10"]
NUMBERS = [0, 1, -1, 3, 3.0, 2.5, 5, 10, 100.0, -0.0, 0.1, 4, 0.5, 2**53 + 1]
STORED = st.one_of(
    st.sampled_from(TEXTS + NUMERIC_TEXTS),
    st.sampled_from(NUMBERS),
    st.booleans(),
    st.lists(st.sampled_from(["a", "A", "b", "3", "pro"]), max_size=3),
    st.just(None),
    st.just({"o": 1}),
)
METADATA = st.dictionaries(st.sampled_from(KEYS[:-1]), STORED, max_size=5)
FLAG = st.sampled_from([True, False, "true", "false"])

NUMERIC = st.fixed_dictionaries(
    {"key": st.sampled_from(KEYS), "value": st.sampled_from(NUMERIC_TEXTS), "filterType": st.just("numeric")},
    optional={"numericOperator": st.sampled_from([">", "<", ">=", "<=", "="]), "negate": FLAG},
)  # fmt: skip
TEXTUAL = st.fixed_dictionaries(
    {"key": st.sampled_from(KEYS), "value": st.sampled_from(VALUES)},
    optional={
        "filterType": st.sampled_from(["metadata", "string_contains"]), "negate": FLAG,
        "ignoreCase": FLAG,
    },
)  # fmt: skip
ARRAY = st.fixed_dictionaries(
    {"key": st.sampled_from(KEYS), "value": st.sampled_from(VALUES), "filterType": st.just("array_contains")},
    optional={"negate": FLAG, "ignoreCase": st.sampled_from([False, "false"])},
)  # fmt: skip


def _depth(node: dict[str, Any]) -> int:
    items = node.get("AND", node.get("OR"))
    return 0 if items is None else 1 + max((_depth(n) for n in items), default=0)


def _group(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda op, items: {op: items},
        st.sampled_from(["AND", "OR"]),
        st.lists(children, min_size=1, max_size=4),
    )


# Four levels of groups: a condition that becomes a group of its own may add a fifth.
LEGACY = _group(st.recursive(st.one_of(NUMERIC, TEXTUAL, ARRAY), _group, max_leaves=10)).filter(
    lambda node: _depth(node) <= 4
)


@settings(max_examples=500, deadline=None)
@given(raw=LEGACY, rows=st.lists(METADATA, min_size=1, max_size=6), as_text=st.booleans())
def test_the_translation_selects_what_the_legacy_semantics_select(
    raw: dict[str, Any], rows: list[dict[str, Any]], as_text: bool
) -> None:
    tree = to_filter(json.dumps(raw) if as_text else raw)
    assert tree is not None
    for metadata in rows:
        expected = legacy_holds(raw, metadata)
        assert tree.matches(metadata) is expected, (raw, metadata, translate(raw))
        assert sql_matches(tree, metadata)[0] is expected, (raw, metadata, translate(raw))


INVALID: list[tuple[object, str]] = [
    ({"key": "a", "value": "x"}, '$.filters: expected {"AND": [...]} or {"OR": [...]}'),
    ({"operator": "and", "operands": []}, '$.filters: expected {"AND": [...]} or {"OR": [...]}'),
    ({"AND": [], "OR": []}, '$.filters: a group is one of {"AND": [...]} or {"OR": [...]}'),
    ({"AND": []}, "$.filters.AND: expected at least one condition"),
    ({"OR": {"key": "a"}}, "$.filters.OR: expected an array"),
    ({"AND": [3]}, "$.filters.AND[0]: expected a condition or a group"),
    ({"AND": [{"value": "x"}]}, "$.filters.AND[0].key: required"),
    ({"AND": [{"key": "a", "value": 3}]}, "$.filters.AND[0].value: expected a string"),
    ({"AND": [{"key": "a b", "value": "x"}]}, "$.filters.AND[0].key: expected a string matching ^[a-zA-Z0-9_.-]+$"),
    ({"AND": [{"key": "a", "value": "x", "field": "a"}]}, "$.filters.AND[0].field: unknown field"),
    ({"AND": [{"key": "a", "value": "x", "filterType": "regex"}]}, "$.filters.AND[0].filterType: expected one of metadata, numeric, array_contains, string_contains"),
    ({"OR": [{"AND": [{"key": "a", "value": "x", "negate": "yes"}]}]}, '$.filters.OR[0].AND[0].negate: expected a boolean, "true" or "false"'),
    ({"AND": [{"key": "a", "value": "x", "filterType": "numeric"}]}, "$.filters.AND[0].value: expected a finite number (as a string)"),
    ({"AND": [{"key": "a", "value": "1e999", "filterType": "numeric"}]}, "$.filters.AND[0].value: expected a finite number (as a string)"),
    ({"AND": [{"key": "a", "value": "1", "filterType": "numeric", "numericOperator": "!="}]}, "$.filters.AND[0].numericOperator: expected one of >, <, >=, <=, ="),
    ({"AND": [{"key": "a", "value": "1", "numericOperator": ">"}]}, "$.filters.AND[0].numericOperator: allowed with filterType numeric only"),
    ({"AND": [{"key": "a", "value": "x", "filterType": "array_contains", "ignoreCase": True}]}, "$.filters.AND[0].ignoreCase: not allowed with filterType array_contains"),
    ({"AND": [{"key": "a", "value": "x\x00"}]}, "$.filters.AND[0].value: must hold no U+0000 and at most 1000 characters"),
    ("{not json", "$.filters: not a JSON filter: JSON is malformed: object keys must be strings (byte 1)"),
    ({"AND": [{"key": "a", "value": str(i)} for i in range(101)]}, "$.filters.AND[100]: more than 200 predicates in one filter once translated"),
]  # fmt: skip


def _nest(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
    node = leaf
    for _ in range(levels):
        node = {"AND": [node]}
    return node


@pytest.mark.parametrize(("raw", "message"), INVALID)
def test_invalid_filters_are_400s_naming_the_path(raw: object, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        to_filter(raw)
    assert caught.value.status == 400
    assert caught.value.details == message


def test_the_v5_depth_limit_counts_a_condition_that_becomes_a_group() -> None:
    text = {"key": "a", "value": "x"}
    assert to_filter(_nest(5, text)) is not None  # five levels, one predicate: as in v5
    with pytest.raises(FilterError, match=r"\.AND\[0\]: groups nest deeper than 5 levels$"):
        translate(_nest(6, text))
    number = {"key": "a", "value": "3"}  # a text or a number: a group of two under AND
    assert translate(_nest(4, number)) is not None
    with pytest.raises(FilterError, match="deeper than 5 levels once translated"):
        translate(_nest(5, number))
    # Under OR the alternatives join their parent: no level added.
    assert translate(_nest(4, {"OR": [number]})) is not None


# --- hand-built v5 filters, and the daemon's list route ---------------------------------------

ROWS: dict[str, dict[str, Any]] = {
    "r0": {"plan": "Pro", "n": 5, "tags": ["a", "b"]},
    "r1": {"plan": "free", "n": 50, "tags": ["b"]},
    "r2": {"plan": "pro", "n": "7", "a": True},
    "r3": {"a": "no plan", "n": 2.5},
    "r4": {"plan": "PRO plan", "n": -1, "tags": []},
    "r5": {"x.y": "3", "a": False, "n": 10},
    "r6": {},
}
NS = "legacy_filters"

PAIRS: list[tuple[dict[str, Any], dict[str, Any], set[str]]] = [
    (
        {"AND": [{"key": "plan", "value": "pro", "ignoreCase": "true"}]},
        {"field": "plan", "operator": "eq", "value": "pro", "caseSensitive": False},
        {"r0", "r2"},
    ),
    (
        {"OR": [{"key": "n", "value": "10", "filterType": "numeric", "numericOperator": ">=", "negate": True}]},
        {"field": "n", "operator": "lt", "value": 10},
        {"r0", "r3", "r4"},
    ),
    (
        {"AND": [{"key": "n", "value": "5", "filterType": "numeric", "negate": True}]},
        {"operator": "or", "operands": [{"field": "n", "operator": "lt", "value": 5}, {"field": "n", "operator": "gt", "value": 5}]},
        {"r1", "r3", "r4", "r5"},
    ),
    (
        {"AND": [{"key": "tags", "value": "b", "filterType": "array_contains", "negate": True}]},
        {"field": "tags", "operator": "arrayNotContains", "value": "b"},
        {"r2", "r3", "r4", "r5", "r6"},
    ),
    (
        {"AND": [{"key": "plan", "value": "PRO", "filterType": "string_contains", "ignoreCase": True}, {"key": "n", "value": "0", "filterType": "numeric", "numericOperator": ">"}]},
        {"operator": "and", "operands": [{"field": "plan", "operator": "contains", "value": "PRO", "caseSensitive": False}, {"field": "n", "operator": "gt", "value": 0}]},
        {"r0"},
    ),
    (
        {"OR": [{"key": "a", "value": "true"}, {"key": "x.y", "value": "3"}]},
        {"operator": "or", "operands": [{"field": "a", "operator": "eq", "value": "true"}, {"field": "a", "operator": "eq", "value": True}, {"field": "x.y", "operator": "eq", "value": "3"}, {"field": "x.y", "operator": "eq", "value": 3}]},
        {"r2", "r5"},
    ),
    (
        {"AND": [{"key": "a", "value": "false", "negate": True}, {"OR": [{"key": "plan", "value": "free"}, {"key": "n", "value": "2.5"}]}]},
        {"operator": "and", "operands": [{"field": "a", "operator": "neq", "value": "false"}, {"field": "a", "operator": "neq", "value": False}, {"operator": "or", "operands": [{"field": "plan", "operator": "eq", "value": "free"}, {"field": "n", "operator": "eq", "value": 2.5}]}]},
        {"r1", "r3"},
    ),
]  # fmt: skip


@pytest.fixture
async def stored(running: Running) -> Running:
    for custom_id, metadata in ROWS.items():
        status, body, _ = await call(
            running.unix, "POST", "http://smemd/v3/documents",
            json={"content": f"Row {custom_id}.", "customId": custom_id, "containerTag": NS, "metadata": metadata},
        )  # fmt: skip
        assert status == 200, body
    return running


async def listed(running: Running, path: str, body: dict[str, Any]) -> set[str]:
    status, out, _ = await call(running.unix, "POST", f"http://smemd{path}", json=body)
    assert status == 200, (body, out)
    return {d["customId"] for d in out["memories" if path.startswith("/v3") else "documents"]}


@pytest.mark.parametrize(("legacy", "v5", "expected"), PAIRS)
async def test_a_legacy_filter_and_its_hand_built_v5_twin_list_the_same_documents(
    stored: Running, legacy: dict[str, Any], v5: dict[str, Any], expected: set[str]
) -> None:
    assert {k for k, m in ROWS.items() if legacy_holds(legacy, m)} == expected
    body = {"containerTags": [NS], "filters": legacy, "limit": 100}
    assert await listed(stored, "/v3/documents/list", body) == expected
    assert await listed(stored, f"/ns/{NS}/list/documents?limit=100", {"filter": v5}) == expected


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=LEGACY)
async def test_the_list_route_selects_what_the_legacy_semantics_select(
    stored: Running, raw: dict[str, Any]
) -> None:
    expected = {k for k, m in ROWS.items() if legacy_holds(raw, m)}
    body = {"containerTags": [NS], "filters": raw, "limit": 100}
    assert await listed(stored, "/v3/documents/list", body) == expected, raw
