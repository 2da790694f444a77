"""SQL for contradictions: `contradicts` relations whose two memories both still stand, and the
labels that resolve them."""

from __future__ import annotations

from smemd.store.records import Contradiction, Memory, Relation
from smemd.store.scope import EVERY, Scope
from smemd.store.sql.connection import Connection, Dialect
from smemd.store.sql.rows import columns, to_record, to_records


def _pair(dialect: Dialect) -> str:
    """A pair's label subject in SQL, as pair_subject makes it in Python: ids compare byte by
    byte (SQLite's BINARY, PostgreSQL's "C" collation), which orders UTF-8 as Python orders str."""
    first = dialect.least("r.from_id", "r.to_id")
    return f"{first} || '|' || {dialect.greatest('r.from_id', 'r.to_id')}"


_FIELDS = len(Memory.__struct_fields__)


def _standing(alias: str) -> str:
    """The memory is latest, not forgotten and not expired (at the one `?`)."""
    return (
        f"{alias}.is_latest = 1 AND {alias}.forgotten_at IS NULL"
        f" AND ({alias}.expires_at IS NULL OR {alias}.expires_at > ?)"
    )


class ContradictionReads:
    db: Connection

    async def open_contradictions(
        self, *, now: float, limit: int, offset: int, namespace: str | None = None,
        scope: Scope = EVERY,
    ) -> tuple[list[Contradiction], int]:  # fmt: skip
        """Newest first: `contradicts` relations whose memories both stand, in the namespace (or
        every one in scope), but for pairs a person said are both true; and how many in all.
        A pair resolved by keeping one is open again when the other is restored."""
        mine, mine_params = scope.where("a.namespace", self.db.dialect)
        theirs, theirs_params = scope.where("b.namespace", self.db.dialect)
        where = (
            f"r.kind = 'contradicts' AND {_standing('a')} AND {_standing('b')}"
            f" AND {mine} AND {theirs} AND (l.value IS NULL OR l.value != 'both')"
        )
        params: list[object] = [now, now, *mine_params, *theirs_params]
        if namespace is not None:
            where += " AND a.namespace = ? AND b.namespace = ?"
            params += [namespace, namespace]
        source = (
            "FROM relations r JOIN memories a ON a.id = r.from_id JOIN memories b ON b.id = r.to_id"
            f" LEFT JOIN labels l ON l.kind = 'contradiction' AND l.subject_id = {_pair(self.db.dialect)}"
            f" WHERE {where}"
        )
        rows = list(
            await self.db.execute_fetchall(
                f"SELECT {columns(Memory, 'a.')}, {columns(Memory, 'b.')}, r.score, r.created_at,"
                f" l.value {source} ORDER BY r.created_at DESC, r.from_id, r.to_id LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
        )
        newer = to_records(Memory, [r[:_FIELDS] for r in rows])
        older = to_records(Memory, [r[_FIELDS : 2 * _FIELDS] for r in rows])
        found = [
            Contradiction(memory=a, contradicts=b, score=r[-3], created_at=r[-2], label=r[-1])
            for a, b, r in zip(newer, older, rows, strict=True)
        ]
        total = await self.db.execute_fetchall(f"SELECT count(*) {source}", params)
        return found, int(next(iter(total))[0])

    async def contradiction(self, a: str, b: str) -> Relation | None:
        """The `contradicts` relation between two memories, whichever way it points."""
        rows = list(
            await self.db.execute_fetchall(
                "SELECT from_id, to_id, kind, score, created_at FROM relations"
                " WHERE kind = 'contradicts' AND ((from_id = ? AND to_id = ?)"
                " OR (from_id = ? AND to_id = ?)) ORDER BY created_at DESC LIMIT 1",
                [a, b, b, a],
            )
        )
        return to_record(Relation, rows[0]) if rows else None
