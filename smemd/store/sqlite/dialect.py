"""SQLite's phrases for what the shared SQL (smemd.store.sql) says differently per engine."""

from __future__ import annotations

from smemd.store.filter_tree import Filter
from smemd.store.sqlite.filter_sql import filter_sql


class SqliteDialect:
    def least(self, a: str, b: str) -> str:
        return f"min({a}, {b})"

    def greatest(self, a: str, b: str) -> str:
        return f"max({a}, {b})"

    def whole(self, number: str) -> str:
        return f"CAST({number} AS INTEGER)"

    def name_list(self, expression: str) -> str:
        return f"json_group_array({expression})"

    def has_element(self, array_json: str) -> str:
        return f"EXISTS (SELECT 1 FROM json_each({array_json}) r WHERE r.value = ?)"

    def matches_pattern(self, column: str) -> str:
        return f"{column} GLOB ?"

    def pattern(self, glob: str) -> str:
        return glob

    def for_update(self) -> str:
        return ""

    def skip_locked(self) -> str:
        return ""

    def begin_snapshot(self) -> str:
        return "BEGIN"  # deferred: its first read fixes the WAL snapshot it sees

    def columns_sql(self) -> str:
        return "SELECT name FROM pragma_table_info(?) ORDER BY cid"

    def sequence_reset(self, table: str) -> str | None:
        return None  # an INTEGER PRIMARY KEY continues from the largest

    def indexed_by(self, index: str) -> str:
        """SQLite's planner picks a covering partial index only when told to."""
        return f" INDEXED BY {index}"

    def metadata_filter(self, tree: Filter, column: str) -> tuple[str, list[object]]:
        return filter_sql(tree, column)
