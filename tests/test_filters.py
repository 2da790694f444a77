"""The v5 filter: its grammar errors, its semantics, and SQL that agrees with Python."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smemd.engine.filters import Filter, FilterError, Group, Predicate, parse_filter
from smemd.store.postgres import filter_sql as postgres_sql
from smemd.store.sqlite.filter_sql import filter_sql
from tests import postgres
from tests.raw_sqlite import connect

# Whether a filter's SQL admits a row holding the metadata, and the metadata as the backend
# holds it (what a read of the row gives back).
Matches = Callable[..., tuple[bool, dict[str, Any]]]


def sql_matches(
    filter_: Filter, metadata: dict[str, Any], *, ensure_ascii: bool = True
) -> tuple[bool, dict[str, Any]]:
    """Run the filter's SQL over a one-row SQLite table holding the metadata as JSON text."""
    where, params = filter_sql(filter_, "meta")
    with connect(":memory:") as db:
        db.execute("CREATE TABLE t (meta TEXT NOT NULL)")
        db.execute("INSERT INTO t VALUES (?)", (json.dumps(metadata, ensure_ascii=ensure_ascii),))
        (count,) = db.execute(f"SELECT count(*) FROM t WHERE {where}", params).fetchone()
    return bool(count), metadata  # SQLite keeps the JSON text as it was written


@pytest.fixture(scope="module")
def postgres_table(postgres_server: postgres.Server) -> Iterator[Any]:
    """A PostgreSQL connection with an empty table `t (meta jsonb)`, as the store keeps metadata."""
    dsn = postgres_server.database()
    try:
        with postgres.connect(dsn) as db:
            db.execute("CREATE TABLE t (meta JSONB NOT NULL)")
            yield db
    finally:
        postgres_server.drop(dsn)


@pytest.fixture(params=["sqlite", "postgres"])
def matches(request: pytest.FixtureRequest) -> Matches:
    """Whether a filter's SQL, on one backend, admits a row holding this metadata."""
    if request.param == "sqlite":
        return sql_matches
    db = request.getfixturevalue("postgres_table")

    def postgres_matches(
        filter_: Filter, metadata: dict[str, Any], *, ensure_ascii: bool = True
    ) -> tuple[bool, dict[str, Any]]:
        where, params = postgres_sql.filter_sql(filter_, "meta")
        text = json.dumps(metadata, ensure_ascii=ensure_ascii)
        with db.transaction(force_rollback=True):
            db.execute("INSERT INTO t VALUES (%s)", [text])
            admitted = bool(postgres.count(db, f"SELECT count(*) FROM t WHERE {where}", params))
            # jsonb keeps numbers as decimals: a float past 2**53 reads back as an int.
            (held,) = db.execute("SELECT meta::text FROM t").fetchone()
            return admitted, json.loads(held)

    return postgres_matches


def pred(field: object, op: str, value: object, **extra: object) -> dict[str, object]:
    return {"field": field, "operator": op, "value": value, **extra}


def nest(levels: int) -> dict[str, object]:
    raw: dict[str, object] = pred("a", "eq", "x")
    for _ in range(levels):
        raw = {"operator": "and", "operands": [raw]}
    return raw


INVALID: list[tuple[object, str]] = [
    ([], "$.filter: expected an object"),
    ({}, "$.filter.field: required"),
    (
        {"AND": [pred("a", "eq", "x")]},
        "$.filter.AND: legacy v3/v4 filter key, not part of the v5 grammar",
    ),
    (
        {"key": "a", "value": "x", "filterType": "metadata"},
        "$.filter.key: legacy v3/v4 filter key, not part of the v5 grammar",
    ),
    ({"operator": "and", "operands": []}, "$.filter.operands: expected at least one operand"),
    (
        {"operator": "or", "operands": [pred("a", "eq", "x")] * 201},
        "$.filter.operands[200]: more than 200 predicates in one filter",
    ),
    (
        {
            "operator": "or",
            "operands": [{"operator": "and", "operands": [pred("a", "eq", "x")] * 100}] * 3,
        },
        "$.filter.operands[2].operands[0]: more than 200 predicates in one filter",
    ),
    (pred("a", "contains", "x" * 1001), "$.filter.value: longer than 1000 characters"),
    ({"operator": "and"}, "$.filter.operands: required"),
    (
        {"operator": "xor", "operands": [pred("a", "eq", 1)]},
        '$.filter.operator: expected "and" or "or"',
    ),
    ({"operator": "and", "operands": {"a": 1}}, "$.filter.operands: expected an array"),
    (
        {"operator": "and", "operands": [pred("a", "eq", 1)], "negated": True},
        "$.filter.negated: unknown field",
    ),
    (
        {"operator": "and", "operands": [pred("a", "eq", 1), {**pred("b", "eq", 1), "extra": 1}]},
        "$.filter.operands[1].extra: unknown field",
    ),
    (
        {"operator": "and", "operands": [pred("a", "eq", 1), pred("b", "like", "x")]},
        "$.filter.operands[1].operator: expected one of eq, neq, gt, gte, lt, lte, contains, "
        "notContains, arrayContains, arrayNotContains",
    ),
    ({"operator": "eq", "value": 1}, "$.filter.field: required"),
    ({"field": "a", "value": 1}, "$.filter.operator: required"),
    ({"field": "a", "operator": "eq"}, "$.filter.value: required"),
    (pred("a b", "eq", "x"), "$.filter.field: expected a string matching ^[a-zA-Z0-9_.-]+$"),
    (pred('a"b', "eq", "x"), "$.filter.field: expected a string matching ^[a-zA-Z0-9_.-]+$"),
    (pred("", "eq", "x"), "$.filter.field: expected a string matching ^[a-zA-Z0-9_.-]+$"),
    (pred("a\n", "eq", "x"), "$.filter.field: expected a string matching ^[a-zA-Z0-9_.-]+$"),
    (pred(3, "eq", "x"), "$.filter.field: expected a string matching ^[a-zA-Z0-9_.-]+$"),
    (pred("a", "gt", True), "$.filter.value: expected a number for gt"),
    (pred("a", "lte", "3"), "$.filter.value: expected a number for lte"),
    (pred("a", "eq", None), "$.filter.value: expected a string, number or boolean for eq"),
    (pred("a", "neq", ["x"]), "$.filter.value: expected a string, number or boolean for neq"),
    (pred("a", "contains", 1), "$.filter.value: expected a string for contains"),
    (pred("a", "arrayContains", ["x"]), "$.filter.value: expected a string for arrayContains"),
    (pred("a", "eq", "x\x00"), "$.filter.value: must not contain U+0000"),
    (pred("a", "gt", float("nan")), "$.filter.value: expected a finite number"),
    (pred("a", "eq", 2**63), "$.filter.value: integer outside the 64-bit range"),
    (
        pred("a", "gt", 1, caseSensitive=False),
        "$.filter.caseSensitive: not allowed for gt with a number",
    ),
    (
        pred("a", "eq", True, caseSensitive=True),
        "$.filter.caseSensitive: not allowed for eq with a boolean",
    ),
    (
        pred("a", "arrayContains", "x", caseSensitive=False),
        "$.filter.caseSensitive: not allowed for arrayContains with a string",
    ),
    (pred("a", "eq", "x", caseSensitive="no"), "$.filter.caseSensitive: expected a boolean"),
    (nest(6), "$.filter" + ".operands[0]" * 5 + ": groups nest deeper than 5 levels"),
]


@pytest.mark.parametrize(("raw", "message"), INVALID)
def test_invalid_filters_name_the_path(raw: object, message: str) -> None:
    with pytest.raises(FilterError) as caught:
        parse_filter(raw)
    assert str(caught.value) == message


def test_root_is_configurable() -> None:
    with pytest.raises(FilterError, match=r"^\$\.body\.filter\.operands\[0\]\.value: required$"):
        parse_filter(
            {"operator": "or", "operands": [{"field": "a", "operator": "eq"}]}, root="$.body.filter"
        )


def test_parse_builds_an_immutable_tree() -> None:
    raw = {
        "operator": "and",
        "operands": [
            pred("customer.plan", "eq", "Pro", caseSensitive=False),
            pred("n", "gte", 2.5),
        ],
    }
    tree = parse_filter(raw)
    assert tree == Group(
        "and", (Predicate("customer.plan", "eq", "Pro", False), Predicate("n", "gte", 2.5, True))
    )
    assert parse_filter(nest(5)) is not None  # five levels of groups are allowed
    with pytest.raises(AttributeError):
        tree.op = "or"  # type: ignore[misc]


def test_a_predicate_outside_the_key_grammar_cannot_be_built() -> None:
    with pytest.raises(ValueError, match="outside"):
        Predicate('a"b', "eq", "x")


META = {
    "customer.plan": "Pro",
    "customer": {"plan": "free"},
    "n": 3,
    "f": 2.5,
    "flag": True,
    "off": False,
    "tags": ["red", "Blue", "50%"],
    "name": "Ünïcode 100%_done",
    "zero": 0,
    "one": 1,
    "numtext": "3",
    "frac": 0.1,
    "half": 1.5,
    "big": float(2**53),  # on PostgreSQL held as a decimal that reads back as an int
}

EVALUATION: list[tuple[dict[str, object], bool]] = [
    (pred("customer.plan", "eq", "Pro"), True),
    (pred("customer.plan", "eq", "pro"), False),  # caseSensitive defaults to true
    (pred("customer.plan", "eq", "pro", caseSensitive=False), True),
    (pred("customer.plan", "neq", "pro"), True),
    (pred("customer.plan", "neq", "Pro"), False),
    (pred("name", "eq", "üNÏCODE 100%_DONE", caseSensitive=False), False),  # ASCII folding only
    (pred("name", "eq", "ÜNïCODE 100%_DONE", caseSensitive=False), True),
    (pred("name", "contains", "100%_"), True),
    (pred("name", "contains", "1_0"), False),  # % and _ are not wildcards
    (pred("name", "contains", "%"), True),
    (pred("name", "contains", "DONE", caseSensitive=False), True),
    (pred("name", "contains", ""), True),
    (pred("name", "notContains", "done"), False),
    (pred("n", "contains", "3"), False),  # contains needs a string
    (pred("n", "notContains", "3"), True),
    (pred("n", "eq", 3), True),
    (pred("n", "eq", 3.0), True),  # ints and floats compare by value
    (pred("f", "gt", 2), True),
    (pred("f", "lte", 2.5), True),
    (pred("f", "lt", 2.5), False),
    (pred("frac", "eq", 0.1), True),
    (pred("frac", "gt", 0.1), False),
    (pred("big", "eq", 2**53), True),
    (pred("big", "eq", 2**53 + 1), False),  # compared exactly, not as doubles
    (pred("big", "lt", 2**53 + 1), True),
    (pred("half", "lt", 2**53 + 1), True),  # a float against an int between two doubles
    (pred("half", "gte", 2**53 + 1), False),
    (pred("half", "eq", 2**53 + 1), False),
    (pred("half", "gt", 1), True),
    (pred("numtext", "eq", 3), False),  # no coercion from strings
    (pred("numtext", "gt", 1), False),
    (pred("n", "eq", "3"), False),
    (pred("flag", "eq", True), True),
    (pred("one", "eq", True), False),  # true is not 1
    (pred("flag", "eq", 1), False),
    (pred("off", "eq", False), True),
    (pred("zero", "eq", False), False),
    (pred("off", "neq", False), False),
    (pred("flag", "gte", 1), False),  # booleans are not numbers
    (pred("tags", "arrayContains", "Blue"), True),
    (pred("tags", "arrayContains", "blue"), False),
    (pred("tags", "arrayNotContains", "green"), True),
    (pred("name", "arrayContains", "Ünïcode 100%_done"), False),  # not an array
    (pred("name", "arrayNotContains", "x"), True),
    (pred("customer", "eq", "free"), False),  # an object value matches nothing positive
    (pred("tags", "eq", '["red","Blue","50%"]'), False),
    # A missing key fails every positive operator and passes every negative one.
    (pred("missing", "eq", "x"), False),
    (pred("missing", "gt", 0), False),
    (pred("missing", "lt", 0), False),
    (pred("missing", "contains", ""), False),
    (pred("missing", "arrayContains", "x"), False),
    (pred("missing", "neq", "x"), True),
    (pred("missing", "neq", False), True),
    (pred("missing", "notContains", "x"), True),
    (pred("missing", "arrayNotContains", "x"), True),
    ({"operator": "and", "operands": [pred("n", "eq", 3), pred("flag", "eq", True)]}, True),
    ({"operator": "and", "operands": [pred("n", "eq", 3), pred("flag", "eq", False)]}, False),
    ({"operator": "or", "operands": [pred("missing", "eq", 1), pred("f", "gt", 2)]}, True),
    (
        {
            "operator": "or",
            "operands": [
                {"operator": "and", "operands": [pred("n", "gt", 5), pred("f", "lt", 3)]},
                {"operator": "and", "operands": [pred("missing", "neq", 1)]},
            ],
        },
        True,
    ),
]


@pytest.mark.parametrize(("raw", "expected"), EVALUATION)
def test_evaluation_in_python_and_sql(
    raw: dict[str, object], expected: bool, matches: Matches
) -> None:
    tree = parse_filter(raw)
    assert tree.matches(META) is expected
    assert matches(tree, META)[0] is expected


def test_sql_binds_keys_and_values_as_parameters() -> None:
    tree = parse_filter(pred("a.b", "eq", "x'); DROP TABLE t; --"))
    sql, params = filter_sql(tree, "meta")
    assert "a.b" not in sql and "DROP" not in sql
    assert params == ['$."a.b"', '$."a.b"', "x'); DROP TABLE t; --"]


@pytest.mark.parametrize("subgroup_first", [True, False])
def test_the_widest_deepest_filter_runs_in_sql(subgroup_first: bool, matches: Matches) -> None:
    def deepest(innermost: int) -> dict[str, object]:
        raw: dict[str, object] = {"operator": "and", "operands": [pred("n", "gte", 0)] * innermost}
        for _ in range(4):
            operands = [raw, pred("n", "gte", 0)]
            raw = {"operator": "and", "operands": operands if subgroup_first else operands[::-1]}
        return raw

    tree = parse_filter(deepest(196))  # 200 predicates, five levels: the most the limits allow
    with pytest.raises(FilterError, match="more than 200 predicates"):
        parse_filter(deepest(197))
    assert tree.matches(META)
    assert matches(tree, META)[0]


# The property test: random filters over random metadata agree in Python and SQLite.

FIELDS = ["a", "A", "customer.plan", "customer", "x-y", "_", "0", "a.b.c"]
# Keys the grammar cannot name still sit in the metadata next to the ones it can.
META_KEYS = st.sampled_from([*FIELDS, 'a"b', "back\\slash", "ünï", "%_", "customer.plan "])
# No U+0000: SQLite's JSON functions end a string there (the parser rejects it in values).
# Mostly a few short strings that collide, equal but for case, or hold one another.
TEXT = st.one_of(
    st.sampled_from(["", "a", "A", "é", "É", "%", "_", '"', "\\", "Aé%_"]),
    st.sampled_from(["aé%_", "ß", "SS", "'", "x%y_z"]),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6),
)
NUMBERS = st.one_of(
    st.sampled_from([0, 1, -1, 0.5, 1.0, -0.0, 2.5, 2**53, 2**53 + 1, float(2**53)]),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
)
VALUES = st.one_of(
    TEXT,
    NUMBERS,
    st.booleans(),
    st.lists(TEXT, max_size=4),
    st.just({"plan": "a"}),
    st.none(),
)
FIELD = st.sampled_from(FIELDS)
STRING_PREDICATES = st.fixed_dictionaries(
    {
        "field": FIELD,
        "operator": st.sampled_from(["eq", "neq", "contains", "notContains"]),
        "value": TEXT,
    },
    optional={"caseSensitive": st.booleans()},
)
OTHER_PREDICATES = st.one_of(
    st.fixed_dictionaries(
        {
            "field": FIELD,
            "operator": st.sampled_from(["eq", "neq"]),
            "value": st.one_of(NUMBERS, st.booleans()),
        }
    ),
    st.fixed_dictionaries(
        {
            "field": FIELD,
            "operator": st.sampled_from(["gt", "gte", "lt", "lte"]),
            "value": NUMBERS,
        }
    ),
    st.fixed_dictionaries(
        {
            "field": FIELD,
            "operator": st.sampled_from(["arrayContains", "arrayNotContains"]),
            "value": TEXT,
        }
    ),
)


def depth(raw: dict[str, Any]) -> int:
    if "operands" not in raw:
        return 0
    return 1 + max(depth(o) for o in raw["operands"])


FILTERS = st.recursive(
    st.one_of(STRING_PREDICATES, OTHER_PREDICATES),
    lambda children: st.fixed_dictionaries(
        {
            "operator": st.sampled_from(["and", "or"]),
            "operands": st.lists(children, min_size=1, max_size=4),
        }
    ),
    max_leaves=10,
).filter(lambda raw: depth(raw) <= 5)


def leaves(raw: dict[str, Any]) -> list[dict[str, Any]]:
    if "operands" in raw:
        return [leaf for operand in raw["operands"] for leaf in leaves(operand)]
    return [raw]


def near(value: object) -> list[object]:
    """Metadata values close to a predicate's: equal, equal but for case, around it, holding it."""
    if isinstance(value, str):
        texts = [value, value.swapcase(), value.upper(), value[1:], f"x{value}_"]
        return [*texts, [value], [value.swapcase(), "a"]]
    if isinstance(value, bool):
        return [value, not value, int(value)]
    assert isinstance(value, int | float)
    numbers = [value, float(value), -value, value + 0.5, value - 1, str(value)]
    # Metadata integers beyond 64 bits are out of scope: SQLite does not compare them exactly.
    return [n for n in numbers if not isinstance(n, int) or -(2**63) <= n < 2**63]


# The fixture is the backend, the same for every example.
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=FILTERS, data=st.data(), ensure_ascii=st.booleans())
def test_sql_agrees_with_python(
    raw: dict[str, Any], data: st.DataObject, ensure_ascii: bool, matches: Matches
) -> None:
    metadata = data.draw(st.dictionaries(META_KEYS, VALUES, max_size=5))
    # Give most predicates a value near their own under their key: matches and near misses.
    for leaf in leaves(raw):
        if data.draw(st.integers(0, 3)):
            metadata[leaf["field"]] = data.draw(st.sampled_from(near(leaf["value"])))
    tree = parse_filter(raw)
    admitted, held = matches(tree, metadata, ensure_ascii=ensure_ascii)
    assert admitted == tree.matches(held)
