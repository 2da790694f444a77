"""PostgreSQL's phrases for what the shared SQL (smemd.store.sql) says differently per engine."""

from __future__ import annotations

from smemd.store.filter_tree import Filter
from smemd.store.postgres.filter_sql import filter_sql


class PostgresDialect:
    def least(self, a: str, b: str) -> str:
        return f"LEAST({a}, {b})"

    def greatest(self, a: str, b: str) -> str:
        return f"GREATEST({a}, {b})"

    def whole(self, number: str) -> str:
        return f"floor({number})::bigint"  # a CAST would round

    def name_list(self, expression: str) -> str:
        return f"coalesce(json_agg({expression})::text, '[]')"

    def has_element(self, array_json: str) -> str:
        return (
            f"EXISTS (SELECT 1 FROM jsonb_array_elements_text({array_json}::jsonb) r WHERE r = ?)"
        )

    def matches_pattern(self, column: str) -> str:
        return f"{column} LIKE ? ESCAPE '!'"

    def pattern(self, glob: str) -> str:
        # Namespace characters include `_`, LIKE's one-character wildcard: it is escaped.
        return glob.replace("_", "!_").replace("*", "%").replace("?", "_")

    def for_update(self) -> str:
        return " FOR UPDATE"

    def skip_locked(self) -> str:
        return " FOR UPDATE SKIP LOCKED"

    def begin_snapshot(self) -> str:
        return "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    def columns_sql(self) -> str:
        return (
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?"
            " AND table_schema = current_schema() AND is_generated = 'NEVER'"
            " ORDER BY ordinal_position"
        )

    def sequence_reset(self, table: str) -> str | None:
        return (
            f"SELECT setval(pg_get_serial_sequence('{table}', 'seq'),"
            f" coalesce(max(seq), 0) + 1, false) FROM {table}"
        )

    def indexed_by(self, index: str) -> str:
        return ""  # the planner finds a covering index itself

    def metadata_filter(self, tree: Filter, column: str) -> tuple[str, list[object]]:
        return filter_sql(tree, column)
