"""The engine's layout: each stage imports only the stages its package says it may."""

from __future__ import annotations

import ast
from pathlib import Path

import smemd.engine

ENGINE = Path(smemd.engine.__file__).parent
SHARED = {"ids", "quiet", "filters"}
# What each sub-package may import of the engine, besides itself.
ALLOWED = {
    "dates": set(),
    "index": set(),
    "entities": {"ids"},
    "judgement": {"ids", "index", "entities"},
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


def test_review_imports_only_the_shared_modules() -> None:
    assert engine_imports(ENGINE / "review.py") <= {"ids", "filters"}
