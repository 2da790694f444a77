"""The tree's shape: only the store talks to a database or holds SQL, the API reaches the store
only through the engine, no package imports another that imports it back, and each engine stage
imports only the stages its package says it may.

Each rule (tests/layout_rules.py) runs on the real tree, and on a tree planted here with one of
each violation, to show it can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import smemd.engine
from tests import layout_rules as rules

ENGINE = Path(smemd.engine.__file__).parent
ROOT = ENGINE.parent.parent
CODE = ("smemd", "boot", "smemctl", "nodeimages")
STORE = ("smemd/store",)
# The tests' doors to the databases themselves: SQLite's file, and the PostgreSQL server.
DATABASE_HELPERS = ("tests/raw_sqlite.py", "tests/postgres.py")
FRONT = ("smemd/api", "smemd/console")
SHARED = {"ids", "quiet", "filters", "transcripts", "sessions"}
# What each sub-package may import of the engine, besides itself. `transcripts` (a chat turn's
# speaker) and `sessions` (the turns a conversation's session holds) are read by every stage
# that reads turns.
ALLOWED = {
    "dates": set(),
    "index": set(),
    "entities": {"ids", "transcripts"},
    "judgement": {"ids", "index", "entities", "transcripts"},
    "ingest": {"dates", "index", "judgement", "entities"} | SHARED,
    "recall": {"dates", "index"} | SHARED,
    "dreaming": {"index", "judgement", "entities"} | SHARED,
}


def engine_imports(path: Path) -> set[str]:
    """The engine's top-level modules and packages that `path` imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["smemd", "engine"] and len(parts) > 2:
                found.add(parts[2])
    return found


def test_every_package_is_listed() -> None:
    packages = {p.name for p in ENGINE.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(ALLOWED)


def test_stages_import_only_what_they_may() -> None:
    wrong = []
    for package, allowed in ALLOWED.items():
        for path in sorted((ENGINE / package).glob("*.py")):
            for name in sorted(engine_imports(path) - allowed - {package}):
                wrong.append(f"{package}/{path.name} imports {name}")
    assert not wrong


def test_shared_modules_import_no_stage() -> None:
    for name in SHARED:
        assert not engine_imports(ENGINE / f"{name}.py") & set(ALLOWED), name


def test_review_imports_only_the_shared_modules_and_the_indexes() -> None:
    # The indexes: a forgotten memory leaves them once the resolution commits.
    assert engine_imports(ENGINE / "review.py") <= {"ids", "filters", "index"}


def driver_imports(root: Path) -> list[str]:
    return rules.driver_imports(root, CODE, STORE) + rules.driver_imports(
        root, ["tests"], DATABASE_HELPERS
    )


def sql_strings(root: Path) -> list[str]:
    return rules.sql_strings(root, CODE, STORE)


def store_reaches(root: Path) -> list[str]:
    return rules.store_reaches(root, FRONT)


def import_cycles(root: Path) -> list[str]:
    """Between floors (top-level packages, smemd's parts), and between boot's modules."""
    return rules.cycles(rules.import_graph(root, CODE, rules.floor)) + rules.cycles(
        rules.import_graph(root, ["boot"], rules.boot_module)
    )


@pytest.mark.parametrize("rule", [driver_imports, sql_strings, store_reaches, import_cycles])
def test_the_tree_keeps_the_rule(rule: rules.Rule) -> None:
    found = rule(ROOT)
    assert not found, "\n".join(found)


# One of each violation, beside what each rule must let be (marked "allowed"). A driver comes after
# another name (`import os, …`): a grep of tests/ for a driver's import then finds only the helper.
PLANTED = {
    "smemd/__init__.py": "",
    "smemd/daemon.py": """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from boot import a
""",
    "smemd/store/sqlite/db.py": """
import asyncio, aiosqlite  # allowed
ALL = "SELECT * FROM memories WHERE namespace = ?"  # allowed
""",
    "smemd/engine/x.py": '''
"""Allowed: SELECT the latest FROM each chain WHERE it is live, in a docstring."""
import typing
METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE"  # allowed: CORS, not SQL
LIVE = "m.forgotten_at IS NULL"
if typing.TYPE_CHECKING:
    import os, aiosqlite
def run(column: str) -> str:
    from psycopg import sql, rows
    from smemd.api import y
    return f"SELECT {column} FROM memories"
''',
    "smemd/api/y.py": """
from ..engine import x
async def read(engine, request, store):
    async with engine.store.read() as reader:
        pass
    async with request.app[STORE].store.write() as writer:
        pass
    async with store.scan("n") as reader:  # allowed: a store handed in
        pass
""",
    "smemd/console/z.py": "def page(self):\n    return self.engine.store\n",
    "boot/__init__.py": "from boot.c import C\n",
    "boot/a.py": "import smemd.daemon\nfrom . import b\n",
    "boot/b.py": "from boot.a import thing\n",
    "boot/c.py": "from boot import b  # allowed: boot.b, not boot\nC = 1\n",
    "tests/raw_sqlite.py": "import os, sqlite3, aiosqlite  # allowed\n",
    "tests/test_x.py": "import pytest, sqlite3.dbapi2\n",
}


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    for name, text in PLANTED.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text.lstrip("\n"))
    return tmp_path


def test_a_driver_outside_the_store_is_found(planted: Path) -> None:
    assert driver_imports(planted) == [
        "smemd/engine/x.py:6: imports aiosqlite",
        "smemd/engine/x.py:8: imports psycopg",
        "tests/test_x.py:1: imports sqlite3",
    ]


def test_sql_outside_the_store_is_found_and_prose_is_not(planted: Path) -> None:
    assert sql_strings(planted) == [
        "smemd/engine/x.py:4: 'IS NULL'",
        "smemd/engine/x.py:10: 'SELECT {} FROM'",
    ]


def test_the_front_reaching_for_the_store_is_found(planted: Path) -> None:
    assert store_reaches(planted) == [
        "smemd/api/y.py:3: engine.store",
        "smemd/api/y.py:5: request.app[STORE].store.write",
        "smemd/console/z.py:2: self.engine.store",
    ]


def test_import_cycles_are_found(planted: Path) -> None:
    assert import_cycles(planted) == [
        "boot <-> smemd.daemon"
        "\n  boot -> smemd.daemon: boot/a.py:1 imports smemd.daemon"
        "\n  smemd.daemon -> boot: smemd/daemon.py:3 imports boot.a",
        "smemd.api <-> smemd.engine"
        "\n  smemd.api -> smemd.engine: smemd/api/y.py:1 imports smemd.engine.x"
        "\n  smemd.engine -> smemd.api: smemd/engine/x.py:9 imports smemd.api.y",
        "boot.a <-> boot.b"
        "\n  boot.a -> boot.b: boot/a.py:2 imports boot.b"
        "\n  boot.b -> boot.a: boot/b.py:1 imports boot.a",
    ]
