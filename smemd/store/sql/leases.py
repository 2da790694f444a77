"""Jobs leased to the daemon working them, and the daemons that share a store.

Every daemon's worker takes its jobs from the one `jobs` table: it leases open jobs that no
daemon holds (or whose lease expired: its daemon died or stalled), renews its leases while it
works, and each of a job's commits checks, with the job's row locked, that the lease is still
its own. So a job whose daemon was killed is taken over once its lease expires, and finished
once: a daemon that lost a lease and comes back commits nothing more of that job. On
PostgreSQL the lease is taken with `FOR UPDATE SKIP LOCKED`, so two daemons leasing at once
take different jobs without waiting for each other.

`daemons` is a heartbeat: each daemon's row, refreshed while it runs, is what `/v1/status`
shows as its peers.
"""

from __future__ import annotations

from typing import Any

from smemd.store.records import Job, Peer
from smemd.store.sql.connection import Connection
from smemd.store.sql.rows import JOB_COLUMNS, to_records

_OPEN = "phase NOT IN ('done', 'failed')"


class LeaseReads:
    db: Connection

    async def peers(self, since: float) -> list[Peer]:
        """The daemons heard from since `since`, the longest running first."""
        rows = await self.db.execute_fetchall(
            "SELECT id, host, pid, version, started_at, seen_at FROM daemons WHERE seen_at >= ?"
            " ORDER BY started_at, id",
            [since],
        )
        return to_records(Peer, list(rows))

    async def lease_holder(self, job_id: str) -> str | None:
        """Who holds the job's lease; the row stays locked until the transaction ends."""
        rows = await self.db.execute_fetchall(
            f"SELECT leased_by FROM jobs WHERE id = ?{self.db.dialect.for_update()}", [job_id]
        )
        return rows[0][0] if rows else None


class LeaseWrites(LeaseReads):
    async def lease_jobs(self, owner: str, limit: int, until: float, now: float) -> list[Job]:
        """Up to `limit` open jobs for `owner`, until `until`: its own, those nobody holds and
        those whose lease expired; in the order they are to be worked."""
        rows = await self.db.execute_fetchall(
            f"UPDATE jobs SET leased_by = ?, lease_until = ? WHERE seq IN (SELECT seq FROM jobs"
            f" WHERE {_OPEN} AND (leased_by IS NULL OR leased_by = ? OR lease_until < ?)"
            f" ORDER BY priority DESC, seq LIMIT ?{self.db.dialect.skip_locked()})"
            f" RETURNING priority, {JOB_COLUMNS}",
            [owner, until, owner, now, limit],
        )
        rows = sorted(rows, key=lambda row: (-row[0], row[1]))  # RETURNING keeps no order
        return to_records(Job, [row[1:] for row in rows])

    async def renew_leases(self, owner: str, until: float) -> int:
        return await self.db.execute(
            f"UPDATE jobs SET lease_until = ? WHERE leased_by = ? AND {_OPEN}", [until, owner]
        )

    async def release_leases(self, owner: str | None) -> None:
        """`owner`'s leases (None: everyone's, for a store one daemon alone opens)."""
        if owner is None:
            await self.db.execute("UPDATE jobs SET leased_by = NULL, lease_until = NULL"
                                  " WHERE leased_by IS NOT NULL")  # fmt: skip
        else:
            await self.db.execute(
                "UPDATE jobs SET leased_by = NULL, lease_until = NULL WHERE leased_by = ?", [owner]
            )

    async def heartbeat(self, peer: Peer) -> None:
        await self.db.execute(
            "INSERT INTO daemons (id, host, pid, version, started_at, seen_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET host = excluded.host,"
            " pid = excluded.pid, version = excluded.version, started_at = excluded.started_at,"
            " seen_at = excluded.seen_at",
            _peer_row(peer),
        )

    async def forget_peers(self, before: float) -> None:
        """Daemons not heard from since `before` are dropped from the table."""
        await self.db.execute("DELETE FROM daemons WHERE seen_at < ?", [before])


def _peer_row(peer: Peer) -> list[Any]:
    return [peer.id, peer.host, peer.pid, peer.version, peer.started_at, peer.seen_at]
