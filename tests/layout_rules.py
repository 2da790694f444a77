"""The layout rules tests/test_layout.py holds the tree to, each a function of a source tree's root
that returns its violations as `path:line: what` lines (empty when the tree keeps the rule).

They read the source with `ast`, never import it, so the test can run them on a tree it plants.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

Rule = Callable[[Path], list[str]]  # a tree's root -> its violations

# The tree's own top-level packages; tests/ and a checkout's other folders are not part of it.
PACKAGES = ("boot", "smemctl", "smemd", "nodeimages")
# Database drivers and the libraries over them: only a store backend talks to a database.
DRIVERS = frozenset(
    "sqlite3 aiosqlite apsw sqlite_vec sqlite_vss psycopg psycopg2 psycopg_pool asyncpg aiopg"
    " pgvector sqlalchemy pymysql aiomysql MySQLdb mysql duckdb oracledb cx_Oracle pyodbc"
    " pymongo motor redis".split()
)
# SQL, not prose: upper-case keywords in the shapes of statements and clauses.
SQL = re.compile(
    r"\bSELECT\b.+\bFROM\b|\bINSERT\s+(OR\s+[A-Z]+\s+)?INTO\b|\bUPDATE\b.+\bSET\b"
    r"|\bDELETE\s+FROM\b|\bWHERE\b|\bORDER\s+BY\b|\bGROUP\s+BY\b|\bIS\s+(NOT\s+)?NULL\b"
    r"|\b(LEFT\s+|INNER\s+)?JOIN\b.+\bON\b|\bCREATE\s+(TABLE|INDEX|VIEW|TRIGGER)\b"
    r"|\bPRAGMA\s+\w|\bBEGIN\s+IMMEDIATE\b|\bjson_(extract|each|tree)\(|\bcount\(\*\)",
    re.DOTALL,
)


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    module: str  # absolute, relative imports resolved
    name: str | None = None  # `from module import name`

    def site(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"

    def target(self, modules: set[str]) -> str | None:
        """The module of the tree imported (`module.name` if that is one), if any."""
        if self.name and (inner := f"{self.module}.{self.name}") in modules:
            return inner
        return self.module if self.module in modules else None


def python_files(root: Path, *folders: str) -> Iterator[Path]:
    """The tree's Python files under `folders`, not those under a hidden folder (tests/.sdk)."""
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            if not any(part.startswith(".") for part in path.relative_to(root).parts):
                yield path


@cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root: Path, path: Path) -> Iterator[Import]:
    """Every import in `path`, in functions and `if TYPE_CHECKING:` blocks too."""
    package = module_name(root, path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                yield Import(path, node.lineno, stem, alias.name)


def within(root: Path, path: Path, allowed: Iterable[str]) -> bool:
    relative = path.relative_to(root).as_posix()
    return any(relative == a or relative.startswith(a.rstrip("/") + "/") for a in allowed)


def driver_imports(root: Path, folders: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """Imports of a database driver outside the `allowed` files and folders."""
    found = []
    for path in python_files(root, *folders):
        if within(root, path, allowed):
            continue
        for i in imports(root, path):
            if i.module.split(".")[0] in DRIVERS:
                found.append(f"{i.site(root)}: imports {i.module.split('.')[0]}")
    return sorted(set(found))  # once for `from driver import a, b`


def docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants of a module and its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def text_of(node: ast.JoinedStr) -> str:
    """An f-string's text, each replacement field as `{}`."""
    pieces = node.values
    return "".join(str(p.value) if isinstance(p, ast.Constant) else "{}" for p in pieces)


def sql_strings(root: Path, folders: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """String constants and f-strings that look like SQL, outside the `allowed` folders."""
    found = []
    for path in python_files(root, *folders):
        if within(root, path, allowed):
            continue
        tree = parsed(path)
        skip = docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                skip.update(id(p) for p in node.values)
                text = text_of(node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            if id(node) not in skip and (match := SQL.search(text)):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {match[0][:40]!r}")
    return found


def is_engine(node: ast.expr) -> bool:
    """`engine`, `….engine` or `….engine(…)`."""
    if isinstance(node, ast.Call):
        node = node.func
    return (isinstance(node, ast.Name) and node.id == "engine") or (
        isinstance(node, ast.Attribute) and node.attr == "engine"
    )


def reaches_store(node: ast.Attribute) -> bool:
    """`engine.store`, or `….store.read`/`write`/`scan` of another store than the engine's."""
    if node.attr == "store":
        return is_engine(node.value)
    return (
        node.attr in {"read", "write", "scan"}
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "store"
        and not is_engine(node.value.value)  # counted once, as engine.store
    )


def store_reaches(root: Path, folders: Iterable[str]) -> list[str]:
    """`engine.store`, and a read, write or scan of any `….store`, in the given folders."""
    found = []
    for path in python_files(root, *folders):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Attribute) and reaches_store(node):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return sorted(found)


# (importer's node, imported node): where the first import between them is, and what it names.
Graph = dict[tuple[str, str], str]


def import_graph(root: Path, folders: Iterable[str], node_of: Callable[[str], str | None]) -> Graph:
    """Edges between the nodes `node_of` gives modules (None: not a node), from every import of
    every module under `folders` that names a module of the tree."""
    files = list(python_files(root, *folders))
    modules = {module_name(root, path) for path in files}
    graph: Graph = {}
    for path in files:
        source = node_of(module_name(root, path))
        for i in imports(root, path):
            module = i.target(modules)
            target = node_of(module) if module else None
            if source and target and source != target:
                graph.setdefault((source, target), f"{i.site(root)} imports {module}")
    return graph


def components(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's), each sorted."""
    edges: dict[str, list[str]] = {}
    for a, b in sorted(graph):
        edges.setdefault(a, []).append(b)
        edges.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for after in edges[node]:
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            if component:
                found.append(sorted([node, *component]))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def cycles(graph: Graph) -> list[str]:
    """Each import cycle (strongly connected component) of `graph`: its nodes, then a line per
    edge between them naming the import that makes it."""
    found = []
    for component in components(graph):
        inside = sorted((a, b) for a, b in graph if a in component and b in component)
        edges = "".join(f"\n  {a} -> {b}: {graph[a, b]}" for a, b in inside)
        found.append(" <-> ".join(component) + edges)
    return found


def top_level(module: str) -> str:
    return module.split(".")[0]


def floor(module: str) -> str:
    """The floor `module` stands on: one of smemd's sub-packages or top-level modules, or
    another top-level package (boot, smemctl) whole. smemd is split because other packages
    stand between its floors: smemd.cards -> boot -> smemd.devices is one way."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "smemd" else parts[0]


def boot_module(module: str) -> str | None:
    return module if top_level(module) == "boot" else None
