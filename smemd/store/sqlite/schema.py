"""Migrations: ordered, named functions, each recorded by name once applied; the first
(`m0001_initial`, the tables as first made) is in smemd.store.sqlite.tables."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import aiosqlite

from smemd.store.sql.chains import rechain
from smemd.store.sqlite.connection import SqliteConnection
from smemd.store.sqlite.tables import execute_script, m0001_initial

Migration = Callable[[aiosqlite.Connection], Awaitable[None]]


async def m0002_drop_full_text(db: aiosqlite.Connection) -> None:
    """Recall ranks words in memory now (engine/index/bm25.py): FTS5's bm25() cost about a
    microsecond per matching row, and its triggers a second write of every text."""
    await execute_script(
        db,
        """
        DROP TRIGGER memories_fts_insert;
        DROP TRIGGER memories_fts_delete;
        DROP TRIGGER chunks_fts_insert;
        DROP TRIGGER chunks_fts_delete;
        DROP TABLE memories_fts;
        DROP TABLE chunks_fts;
        ALTER TABLE memories DROP COLUMN ns;
        ALTER TABLE chunks DROP COLUMN ns;
        """,
    )


async def m0003_judgements(db: aiosqlite.Connection) -> None:
    """The judge's decisions kept with their probabilities, the labels that grade them, what
    dreaming has done to each memory, the entities extraction names, and each memory's
    connectedness."""
    await execute_script(
        db,
        """
        -- Who gave a memory its type: NULL the heuristic (dreaming may ask the judge),
        -- 'extraction' the model that read it, 'judge' dreaming, 'label' a person.
        ALTER TABLE memories ADD COLUMN typed_by TEXT;
        ALTER TABLE candidates ADD COLUMN typed_by TEXT;
        -- The people, places and things a fact is about, as the model named them (JSON list).
        ALTER TABLE memories ADD COLUMN entities TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE candidates ADD COLUMN entities TEXT NOT NULL DEFAULT '[]';
        -- When dreaming looked for the memories this one extends (NULL: not yet).
        ALTER TABLE memories ADD COLUMN linked_at REAL;
        -- How connected a memory is: its sources plus its relations, kept in step by the
        -- triggers below, so the profile's order is an index away instead of a count per row
        -- (300 ms at 100k memories).
        ALTER TABLE memories ADD COLUMN connections INTEGER NOT NULL DEFAULT 0;
        UPDATE memories SET connections =
            (SELECT count(*) FROM memory_sources s WHERE s.memory_id = memories.id)
            + (SELECT count(*) FROM relations r WHERE r.from_id = memories.id OR r.to_id = memories.id);
        CREATE TRIGGER memory_sources_connect AFTER INSERT ON memory_sources BEGIN
            UPDATE memories SET connections = connections + 1 WHERE id = new.memory_id;
        END;
        CREATE TRIGGER memory_sources_disconnect AFTER DELETE ON memory_sources BEGIN
            UPDATE memories SET connections = connections - 1 WHERE id = old.memory_id;
        END;
        CREATE TRIGGER relations_connect AFTER INSERT ON relations BEGIN
            UPDATE memories SET connections = connections + 1 WHERE id IN (new.from_id, new.to_id);
        END;
        CREATE TRIGGER relations_disconnect AFTER DELETE ON relations BEGIN
            UPDATE memories SET connections = connections - 1 WHERE id IN (old.from_id, old.to_id);
        END;
        CREATE INDEX memories_profile ON memories(namespace, type, is_static, connections, created_at)
            WHERE is_latest = 1 AND forgotten_at IS NULL;

        -- Dreaming's backlogs: small once it has caught up, so counting them stays cheap.
        CREATE INDEX memories_untyped ON memories(seq)
            WHERE typed_by IS NULL AND is_latest = 1 AND forgotten_at IS NULL;
        CREATE INDEX memories_unlinked ON memories(seq)
            WHERE linked_at IS NULL AND is_latest = 1 AND forgotten_at IS NULL;

        -- One row per judge call: the outcome each letter stood for, each letter's
        -- probability, the judge's own pick, what was applied, and the heuristic's answer.
        CREATE TABLE judgements (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            kind TEXT NOT NULL,
            subject_id TEXT NOT NULL,
            text TEXT NOT NULL,
            options TEXT NOT NULL,
            probabilities TEXT NOT NULL,
            proposal TEXT,
            applied TEXT NOT NULL,
            fallback TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE INDEX judgements_kind ON judgements(kind, seq);
        CREATE INDEX judgements_subject ON judgements(subject_id);

        -- A person's word: a memory's type ('type', memory id, the type) or a verdict on a
        -- judgement ('judgement', judgement id, 'correct' or 'wrong'). The latest word stands.
        CREATE TABLE labels (
            kind TEXT NOT NULL,
            subject_id TEXT NOT NULL,
            value TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (kind, subject_id)
        );
        """,
    )


async def m0004_valid_time(db: aiosqlite.Connection) -> None:
    """Two times per memory: valid time (when the fact held in the world) orders versions and
    answers `asOf`; record time (`created_at`, and `superseded_at` when another version took
    over) answers what smem believed then. `valid_until` was the record time of the supersede
    and becomes the next version's valid_from. Chains are put in valid-time order, which may
    differ from the order they were stored in."""
    await execute_script(
        db,
        """
        ALTER TABLE memories ADD COLUMN valid_from REAL;
        ALTER TABLE memories ADD COLUMN superseded_at REAL;
        UPDATE memories SET superseded_at = valid_until WHERE is_latest = 0;
        UPDATE memories SET valid_from = coalesce(
            event_at,
            (SELECT d.content_date FROM documents d WHERE d.id = memories.document_id),
            created_at
        );
        CREATE INDEX memories_valid ON memories(namespace, valid_from);
        """,
    )
    roots = await db.execute_fetchall(
        "SELECT root_id FROM memories GROUP BY root_id HAVING count(*) > 1"
    )
    now = time.time()
    await _relations_namespaced(db)  # what today's rechain writes (0016 fills the rest)
    for (root_id,) in roots:
        # No retraction_id column yet.
        await rechain(SqliteConnection(db), root_id, now, skip_retracted=False)


async def m0005_contradictions(db: aiosqlite.Connection) -> None:
    """`contradicts` relations: an index that lists them newest first, and none counted in a
    memory's connections (a dispute is no support: the profile's best connected stay those with
    more sources and more updates and extends links)."""
    await execute_script(
        db,
        """
        CREATE INDEX relations_contradicts ON relations(created_at) WHERE kind = 'contradicts';
        DROP TRIGGER relations_connect;
        DROP TRIGGER relations_disconnect;
        CREATE TRIGGER relations_connect AFTER INSERT ON relations
            WHEN new.kind != 'contradicts' BEGIN
            UPDATE memories SET connections = connections + 1 WHERE id IN (new.from_id, new.to_id);
        END;
        CREATE TRIGGER relations_disconnect AFTER DELETE ON relations
            WHEN old.kind != 'contradicts' BEGIN
            UPDATE memories SET connections = connections - 1 WHERE id IN (old.from_id, old.to_id);
        END;
        -- Any the old triggers counted.
        UPDATE memories SET connections = connections - (SELECT count(*) FROM relations r
            WHERE r.kind = 'contradicts' AND memories.id IN (r.from_id, r.to_id))
            WHERE id IN (SELECT from_id FROM relations WHERE kind = 'contradicts'
                UNION SELECT to_id FROM relations WHERE kind = 'contradicts');
        """,
    )


async def m0006_profile_buckets(db: aiosqlite.Connection) -> None:
    """A namespace's own profile buckets (name and description), beside the built-in ones."""
    await execute_script(
        db,
        """
        CREATE TABLE profile_buckets (
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            description TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (namespace, name)
        );
        CREATE INDEX judgements_namespace ON judgements(namespace);
        CREATE INDEX jobs_namespace ON jobs(namespace);
        """,
    )


async def m0007_job_priority(db: aiosqlite.Connection) -> None:
    """A job's priority: a document sent with `dreaming: "instant"` is worked before the queue."""
    await execute_script(
        db,
        """
        ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX jobs_open_first ON jobs(priority DESC, seq)
            WHERE phase NOT IN ('done', 'failed');
        """,
    )


async def m0008_entities(db: aiosqlite.Connection) -> None:
    """Entities as rows: who and what the memories are about, each linked to the memories that
    mention it. The names extraction already gave (the `entities` column) are carried over."""
    await execute_script(
        db,
        """
        CREATE TABLE entities (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'thing',
            aliases TEXT NOT NULL DEFAULT '[]',
            -- The earliest and latest valid time of the memories that mention it.
            first_seen REAL NOT NULL,
            last_seen REAL NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE UNIQUE INDEX entities_name ON entities(namespace, lower(name));
        CREATE TABLE memory_entities (
            memory_id TEXT NOT NULL,
            entity_id TEXT NOT NULL,
            PRIMARY KEY (memory_id, entity_id)
        );
        CREATE INDEX memory_entities_entity ON memory_entities(entity_id);

        INSERT OR IGNORE INTO entities
            (id, namespace, name, kind, first_seen, last_seen, created_at)
            SELECT 'ent_' || lower(hex(randomblob(8))), m.namespace, trim(e.value), 'thing',
                min(m.valid_from), max(m.valid_from), min(m.created_at)
            FROM memories m, json_each(m.entities) e
            WHERE m.entities != '[]' AND trim(e.value) != ''
            GROUP BY m.namespace, lower(trim(e.value));
        INSERT OR IGNORE INTO memory_entities (memory_id, entity_id)
            SELECT m.id, n.id FROM memories m, json_each(m.entities) e
            JOIN entities n ON n.namespace = m.namespace AND lower(n.name) = lower(trim(e.value))
            WHERE m.entities != '[]';
        """,
    )


async def m0009_retraction(db: aiosqlite.Connection) -> None:
    """Retractions: what each did (to undo it exactly), and which memories one withdrew.

    A withdrawn memory is forgotten (out of recall, list and profile as any forgotten one) and
    names its retraction; a version chain closes over it (`rechain` skips it), so the version
    it had superseded is latest again.
    """
    await execute_script(
        db,
        """
        CREATE TABLE retractions (
            id TEXT PRIMARY KEY,
            namespace TEXT NOT NULL,
            subject_kind TEXT NOT NULL,
            subject_id TEXT NOT NULL,
            created_at REAL NOT NULL,
            undone_at REAL,
            effects TEXT NOT NULL
        );
        CREATE INDEX retractions_subject ON retractions(subject_id) WHERE undone_at IS NULL;
        ALTER TABLE memories ADD COLUMN retraction_id TEXT;
        CREATE INDEX memories_retraction ON memories(retraction_id)
            WHERE retraction_id IS NOT NULL;
        """,
    )


async def m0010_entity_aliases(db: aiosqlite.Connection) -> None:
    """Aliases by merging: a name's row stays and points at the entity it was merged into, and
    links keep naming the row their memory used, so a split is only clearing that pointer, and
    memories stored after a merge follow whichever way the names are joined. Each decision on a
    pair (the same one, or two) is recorded, by whom, with the judge's probability."""
    await execute_script(
        db,
        """
        ALTER TABLE entities ADD COLUMN merged_into TEXT;
        CREATE INDEX entities_merged_into ON entities(merged_into) WHERE merged_into IS NOT NULL;
        ALTER TABLE entities DROP COLUMN aliases;
        CREATE TABLE alias_decisions (
            id TEXT PRIMARY KEY,
            namespace TEXT NOT NULL,
            entity_id TEXT NOT NULL,  -- the entity kept
            alias_id TEXT NOT NULL,   -- the one merged into it, or judged distinct from it
            same INTEGER NOT NULL,
            by TEXT NOT NULL,         -- 'person' or 'judge'
            probability REAL,         -- the judge's, that they are the same
            judgement_id TEXT,
            rows TEXT NOT NULL DEFAULT '[]',  -- a merge's: the rows it pointed at the entity
            created_at REAL NOT NULL,
            undone_at REAL            -- a split, or a person overruling the judge
        );
        CREATE INDEX alias_decisions_pair ON alias_decisions(namespace, entity_id, alias_id);
        """,
    )


async def m0011_inference(db: aiosqlite.Connection) -> None:
    """When dreaming looked at a memory for inferences drawn from it and the older memories
    beside it (NULL: not yet)."""
    await execute_script(
        db,
        """
        ALTER TABLE memories ADD COLUMN inferred_at REAL;
        CREATE INDEX memories_uninferred ON memories(seq)
            WHERE inferred_at IS NULL AND is_inference = 0 AND is_latest = 1
            AND forgotten_at IS NULL;
        """,
    )


async def m0012_index_states(db: aiosqlite.Connection) -> None:
    """Which rows a namespace's vector index holds, and whether each is live, read from an index
    in seq order: a saved graph of a million rows is checked against them at every load, and a
    scan of the table (vectors and texts) took seconds."""
    await execute_script(
        db,
        """
        CREATE INDEX memories_index_state ON memories(namespace, seq, is_latest, forgotten_at)
            WHERE vector IS NOT NULL;
        CREATE INDEX chunks_index_state ON chunks(namespace, seq, document_id)
            WHERE vector IS NOT NULL;
        """,
    )


async def m0013_superseded_jobs(db: aiosqlite.Connection) -> None:
    """A move or a new content used to end a document's unfinished job as failed ("superseded by
    a newer revision") and queue another: nothing had failed, and /v1/jobs counted it. Such a
    job only ever stood for work its successor does, so it goes, with anything it extracted."""
    await execute_script(
        db,
        """
        DELETE FROM candidates WHERE job_id IN (SELECT id FROM jobs
            WHERE phase = 'failed' AND error = 'superseded by a newer revision');
        DELETE FROM jobs WHERE phase = 'failed' AND error = 'superseded by a newer revision';
        """,
    )


async def m0014_namespace_creators(db: aiosqlite.Connection) -> None:
    """Who made each namespace (the token's name; NULL for the socket and for namespaces made
    before this), so that `[api] max-namespaces` bounds what one token creates."""
    await execute_script(
        db,
        """
        ALTER TABLE namespaces ADD COLUMN created_by TEXT;
        CREATE INDEX namespaces_created_by ON namespaces(created_by) WHERE created_by IS NOT NULL;
        """,
    )


async def m0015_leases(db: aiosqlite.Connection) -> None:
    """Jobs leased to the daemon working them, and the daemons' heartbeats (smemd.store.sql.leases):
    one daemon opens a SQLite store, but the worker speaks as it does on a shared one."""
    await execute_script(
        db,
        """
        ALTER TABLE jobs ADD COLUMN leased_by TEXT;
        ALTER TABLE jobs ADD COLUMN lease_until REAL;
        CREATE TABLE daemons (
            id TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            version TEXT NOT NULL,
            started_at REAL NOT NULL,
            seen_at REAL NOT NULL
        );
        """,
    )


async def _relations_namespaced(db: aiosqlite.Connection) -> None:
    """The `namespace` of relations, unless an earlier migration added it already."""
    columns = {row[1] for row in await db.execute_fetchall("PRAGMA table_info(relations)")}
    if "namespace" not in columns:
        await db.execute("ALTER TABLE relations ADD COLUMN namespace TEXT NOT NULL DEFAULT ''")


async def m0016_namespace_keys(db: aiosqlite.Connection) -> None:
    """The rows that link others carry their namespace too, so that every table can be keyed
    by it (smemd.store.postgres.schema distributes by it); a link names its namespace's rows.
    Links to nothing any more name no namespace and go. The upserts' keys start with it."""
    await _relations_namespaced(db)
    await execute_script(
        db,
        """
        ALTER TABLE memory_sources ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
        UPDATE memory_sources SET namespace = coalesce(
            (SELECT m.namespace FROM memories m WHERE m.id = memory_sources.memory_id), '');
        DELETE FROM memory_sources WHERE namespace = '';
        UPDATE relations SET namespace = coalesce(
            (SELECT m.namespace FROM memories m WHERE m.id IN (relations.from_id, relations.to_id)
             LIMIT 1), '');
        DELETE FROM relations WHERE namespace = '';
        CREATE UNIQUE INDEX relations_key ON relations(namespace, from_id, to_id, kind);
        ALTER TABLE candidates ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
        UPDATE candidates SET namespace = coalesce(
            (SELECT j.namespace FROM jobs j WHERE j.id = candidates.job_id), '');
        DELETE FROM candidates WHERE namespace = '';
        CREATE UNIQUE INDEX candidates_key ON candidates(namespace, job_id, position);
        ALTER TABLE memory_entities ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
        UPDATE memory_entities SET namespace = coalesce(
            (SELECT e.namespace FROM entities e WHERE e.id = memory_entities.entity_id), '');
        DELETE FROM memory_entities WHERE namespace = '';
        """,
    )


async def m0017_ingest_ids(db: aiosqlite.Connection) -> None:
    """The add that brought each document, so that one add can be undone whole."""
    await execute_script(
        db,
        """
        ALTER TABLE documents ADD COLUMN ingest_id TEXT;
        CREATE INDEX documents_ingest ON documents(namespace, ingest_id)
            WHERE ingest_id IS NOT NULL;
        """,
    )


async def m0018_chunk_context(db: aiosqlite.Connection) -> None:
    """A chunk's context (the turn before its document, searched with it), and a document's
    session: the documents of a namespace dated the same instant, in the order they came."""
    await execute_script(
        db,
        """
        ALTER TABLE chunks ADD COLUMN context TEXT NOT NULL DEFAULT '';
        CREATE INDEX documents_session ON documents(namespace, content_date, seq)
            WHERE content_date IS NOT NULL;
        """,
    )


async def m0019_chunk_said_at(db: aiosqlite.Connection) -> None:
    """When a chunk's message was sent, when its chat log states it (NULL: its document's date)."""
    await db.execute("ALTER TABLE chunks ADD COLUMN said_at REAL")


MIGRATIONS: list[tuple[str, Migration]] = [
    ("0001_initial", m0001_initial),
    ("0002_drop_full_text", m0002_drop_full_text),
    ("0003_judgements", m0003_judgements),
    ("0004_valid_time", m0004_valid_time),
    ("0005_contradictions", m0005_contradictions),
    ("0006_profile_buckets", m0006_profile_buckets),
    ("0007_job_priority", m0007_job_priority),
    ("0008_entities", m0008_entities),
    ("0009_retraction", m0009_retraction),
    ("0010_entity_aliases", m0010_entity_aliases),
    ("0011_inference", m0011_inference),
    ("0012_index_states", m0012_index_states),
    ("0013_superseded_jobs", m0013_superseded_jobs),
    ("0014_namespace_creators", m0014_namespace_creators),
    ("0015_leases", m0015_leases),
    ("0016_namespace_keys", m0016_namespace_keys),
    ("0017_ingest_ids", m0017_ingest_ids),
    ("0018_chunk_context", m0018_chunk_context),
    ("0019_chunk_said_at", m0019_chunk_said_at),
]


async def migrate(db: aiosqlite.Connection) -> list[str]:
    """Apply what is missing, each migration in its own transaction; return the names applied."""
    await db.execute(
        "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    async with db.execute("SELECT name FROM migrations") as cursor:
        done = {row[0] async for row in cursor}
    applied = []
    for name, migration in MIGRATIONS:
        if name in done:
            continue
        await db.execute("BEGIN IMMEDIATE")
        try:
            await migration(db)
            await db.execute(
                "INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, time.time())
            )
            await db.execute("COMMIT")
        except BaseException:
            await db.execute("ROLLBACK")
            raise
        applied.append(name)
    return applied
