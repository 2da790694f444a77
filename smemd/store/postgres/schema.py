"""The PostgreSQL schema: the SQLite store's tables with the same names, columns and meaning, so
the shared SQL (smemd.store.sql) reads both. Migrations are ordered, recorded in `migrations`, and
run by one daemon at a time (a session advisory lock), so daemons starting together agree; the
first (`m0001_tables`, the tables as first made) is in smemd.store.postgres.tables.

Text compares byte by byte (`COLLATE "C"`), as SQLite's BINARY does and as Python orders str;
flags are integers (0/1) and JSON is text, as in SQLite; `metadata` is jsonb, which filters read.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import psycopg

from smemd.store.postgres.tables import byte_ordered, m0001_tables

# The key of the advisory lock migrations hold: any number no other tool uses; this one is
# "smem" in ASCII.
MIGRATION_LOCK = 0x736D656D
Migration = Callable[[psycopg.AsyncConnection], Awaitable[None]]

# What searches read, kept by the database itself from the columns every write already sets, so
# no write path (nor a store copy, nor another daemon) can leave a row unsearchable:
# - `embedding`: the float32 `vector` as pgvector's halfvec (half the size of `vector`, the same
#   ranking at 384 dimensions); its HNSW index is made for the embedder's dimension at start
#   (search.py), since a column without a dimension cannot be indexed.
# - `words`: the text as English full-text lexemes, GIN-indexed, and `word_count` their number
#   with repeats: BM25 is computed over them.
_SEARCH = """
-- The little-endian float32 BLOB both stores keep, as an array (denormals read as 0).
CREATE FUNCTION smem_floats(b BYTEA) RETURNS REAL[] LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN (
    SELECT array_agg(CASE WHEN e = 0 THEN 0::REAL ELSE ((1 - 2 * s)
        * power(2::DOUBLE PRECISION, e - 127) * (1 + m / 8388608.0::DOUBLE PRECISION))::REAL END
        ORDER BY i)
    FROM (SELECT i, get_byte(b, 4 * i + 3) >> 7 AS s,
        ((get_byte(b, 4 * i + 3) & 127) << 1) | (get_byte(b, 4 * i + 2) >> 7) AS e,
        ((get_byte(b, 4 * i + 2) & 127) << 16) | (get_byte(b, 4 * i + 1) << 8) | get_byte(b, 4 * i)
            AS m
        FROM generate_series(0, length(b) / 4 - 1) AS i) AS parts
);
-- How many words a text has as BM25 counts them (a lexeme's positions, stopwords left out).
CREATE FUNCTION smem_words(text TEXT) RETURNS INTEGER LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN (SELECT coalesce(sum(array_length(positions, 1)), 0)
        FROM unnest(to_tsvector('english'::regconfig, text)));
ALTER TABLE memories
    ADD COLUMN embedding halfvec GENERATED ALWAYS AS (smem_floats(vector)::halfvec) STORED,
    ADD COLUMN words tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
    ADD COLUMN word_count INTEGER GENERATED ALWAYS AS (smem_words(text)) STORED;
ALTER TABLE chunks
    ADD COLUMN embedding halfvec GENERATED ALWAYS AS (smem_floats(vector)::halfvec) STORED,
    ADD COLUMN words tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
    ADD COLUMN word_count INTEGER GENERATED ALWAYS AS (smem_words(text)) STORED;
CREATE INDEX memories_words ON memories USING gin (words);
CREATE INDEX chunks_words ON chunks USING gin (words);
"""


async def m0002_search(db: psycopg.AsyncConnection) -> None:
    await db.execute(_SEARCH.encode())


_LEASES = """
ALTER TABLE jobs ADD COLUMN leased_by TEXT, ADD COLUMN lease_until DOUBLE PRECISION;
CREATE TABLE daemons (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    version TEXT NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);
"""


async def m0003_leases(db: psycopg.AsyncConnection) -> None:
    """Jobs leased to the daemon working them; the daemons' heartbeats (smemd.store.sql.leases)."""
    await db.execute(byte_ordered(_LEASES).encode())


# Every table's key starts with its namespace, so that the schema can be distributed by it
# (Citus's `create_distributed_table(table, 'namespace')`, README): the rows that link others
# carry the namespace of what they link, and a row is unique by (namespace, id). Ids are made
# unique by their randomness; the plain `id` and `seq` indexes serve the lookups that come
# without a namespace. The tables of no namespace (settings, namespaces, labels, daemons,
# migrations) are the ones a distributed schema keeps whole on every node.
_NAMESPACE_KEYS = """
ALTER TABLE memory_sources ADD COLUMN namespace TEXT COLLATE "C";
UPDATE memory_sources s SET namespace = m.namespace FROM memories m WHERE m.id = s.memory_id;
ALTER TABLE relations ADD COLUMN namespace TEXT COLLATE "C";
UPDATE relations r SET namespace = m.namespace FROM memories m WHERE m.id IN (r.from_id, r.to_id);
ALTER TABLE candidates ADD COLUMN namespace TEXT COLLATE "C";
UPDATE candidates c SET namespace = j.namespace FROM jobs j WHERE j.id = c.job_id;
ALTER TABLE memory_entities ADD COLUMN namespace TEXT COLLATE "C";
UPDATE memory_entities l SET namespace = e.namespace FROM entities e WHERE e.id = l.entity_id;
"""
_LINKS = ("memory_sources", "relations", "candidates", "memory_entities")
_LINK_KEYS = {
    "memory_sources": "memory_id, document_id, chunk_id",
    "relations": "from_id, to_id, kind",
    "candidates": "job_id, position",
    "memory_entities": "memory_id, entity_id",
}
_BY_SEQ = ("documents", "chunks", "memories", "jobs", "judgements", "entities")
_BY_ID = ("retractions", "alias_decisions")
_KEYS = """
ALTER TABLE chunks DROP CONSTRAINT chunks_document_id_fkey;
{by_seq}
{by_id}
{links}
ALTER TABLE chunks ADD FOREIGN KEY (namespace, document_id)
    REFERENCES documents(namespace, id) ON DELETE CASCADE ON UPDATE CASCADE;
CREATE OR REPLACE FUNCTION smem_sources_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE memories SET connections = connections + 1
            WHERE namespace = NEW.namespace AND id = NEW.memory_id;
    ELSE
        UPDATE memories SET connections = connections - 1
            WHERE namespace = OLD.namespace AND id = OLD.memory_id;
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION smem_relations_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.kind <> 'contradicts' THEN
            UPDATE memories SET connections = connections + 1
                WHERE namespace = NEW.namespace AND id IN (NEW.from_id, NEW.to_id);
        END IF;
    ELSIF OLD.kind <> 'contradicts' THEN
        UPDATE memories SET connections = connections - 1
            WHERE namespace = OLD.namespace AND id IN (OLD.from_id, OLD.to_id);
    END IF;
    RETURN NULL;
END $$;
"""


def _keys_ddl() -> str:
    by_seq = "\n".join(
        f"ALTER TABLE {t} DROP CONSTRAINT {t}_pkey, DROP CONSTRAINT {t}_id_key,"
        f" ADD PRIMARY KEY (namespace, id);\n"
        f"CREATE INDEX {t}_id ON {t}(id);\nCREATE INDEX {t}_seq ON {t}(seq);"
        for t in _BY_SEQ
    )
    by_id = "\n".join(
        f"ALTER TABLE {t} DROP CONSTRAINT {t}_pkey, ADD PRIMARY KEY (namespace, id);\n"
        f"CREATE INDEX {t}_id ON {t}(id);"
        for t in _BY_ID
    )
    # A link to rows that are gone (there should be none) names no namespace, and goes.
    links = "\n".join(
        f"DELETE FROM {t} WHERE namespace IS NULL;\n"
        f"ALTER TABLE {t} ALTER COLUMN namespace SET NOT NULL, DROP CONSTRAINT {t}_pkey,"
        f" ADD PRIMARY KEY (namespace, {_LINK_KEYS[t]});"
        for t in _LINKS
    )
    return _KEYS.format(by_seq=by_seq, by_id=by_id, links=links)


async def m0004_namespace_keys(db: psycopg.AsyncConnection) -> None:
    await db.execute(_NAMESPACE_KEYS.encode())
    await db.execute(_keys_ddl().encode())


# BM25's posting lists: each (namespace, lexeme, row) of a row that has a vector, with the
# lexeme's count in the row and the row's length, kept by triggers from `words`. A query reads
# its lexemes' postings by the key alone (an index-only scan over a few pages), where the
# full-text index made it visit every matching row of the wide table, one page each.
_POSTINGS = """
CREATE TABLE {kind}_postings (
    namespace TEXT COLLATE "C" NOT NULL,
    lexeme TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    tf INTEGER NOT NULL,
    length INTEGER NOT NULL,
    PRIMARY KEY (namespace, lexeme, seq) INCLUDE (tf, length)
) WITH (autovacuum_vacuum_insert_scale_factor = 0.02);  -- keep its index-only scans index-only
CREATE FUNCTION smem_{kind}_posted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.vector IS NOT NULL THEN
        DELETE FROM {kind}_postings WHERE namespace = OLD.namespace
            AND lexeme = ANY(tsvector_to_array(OLD.words)) AND seq = OLD.seq;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.vector IS NOT NULL THEN
        INSERT INTO {kind}_postings (namespace, lexeme, seq, tf, length)
            SELECT NEW.namespace, u.lexeme, NEW.seq, cardinality(u.positions), NEW.word_count
            FROM unnest(NEW.words) AS u;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER {kind}_posted AFTER INSERT OR DELETE OR UPDATE OF namespace, text, vector
    ON {kind} FOR EACH ROW EXECUTE FUNCTION smem_{kind}_posted();
INSERT INTO {kind}_postings (namespace, lexeme, seq, tf, length)
    SELECT r.namespace, u.lexeme, r.seq, cardinality(u.positions), r.word_count
    FROM {kind} r, unnest(r.words) AS u WHERE r.vector IS NOT NULL;
DROP INDEX {kind}_words;
"""


async def m0005_postings(db: psycopg.AsyncConnection) -> None:
    for kind in ("memories", "chunks"):
        await db.execute(_POSTINGS.replace("{kind}", kind).encode())


async def m0006_ingest_ids(db: psycopg.AsyncConnection) -> None:
    """The add that brought each document, so that one add can be undone whole."""
    await db.execute(b'ALTER TABLE documents ADD COLUMN ingest_id TEXT COLLATE "C"')
    await db.execute(
        b"CREATE INDEX documents_ingest ON documents(namespace, ingest_id)"
        b" WHERE ingest_id IS NOT NULL"
    )


# A chunk's context (the turn before its document) is searched with its text: its words are
# made of both, and a change to either moves its postings.
_CHUNK_CONTEXT = """
ALTER TABLE chunks ADD COLUMN context TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE chunks DROP COLUMN words, DROP COLUMN word_count;
ALTER TABLE chunks
    ADD COLUMN words tsvector
        GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text || ' ' || context)) STORED,
    ADD COLUMN word_count INTEGER GENERATED ALWAYS AS (smem_words(text || ' ' || context)) STORED;
DROP TRIGGER chunks_posted ON chunks;
CREATE TRIGGER chunks_posted AFTER INSERT OR DELETE OR UPDATE OF namespace, text, context, vector
    ON chunks FOR EACH ROW EXECUTE FUNCTION smem_chunks_posted();
CREATE INDEX documents_session ON documents(namespace, content_date, seq)
    WHERE content_date IS NOT NULL;
"""


async def m0007_chunk_context(db: psycopg.AsyncConnection) -> None:
    """A chunk's context, and a document's session (smemd.store.sqlite.schema 0018)."""
    await db.execute(_CHUNK_CONTEXT.encode())


async def m0008_chunk_said_at(db: psycopg.AsyncConnection) -> None:
    """When a chunk's message was sent (smemd.store.sqlite.schema 0019)."""
    await db.execute(b"ALTER TABLE chunks ADD COLUMN said_at DOUBLE PRECISION")


MIGRATIONS: list[tuple[str, Migration]] = [
    ("0001_tables", m0001_tables),
    ("0002_search", m0002_search),
    ("0003_leases", m0003_leases),
    ("0004_namespace_keys", m0004_namespace_keys),
    ("0005_postings", m0005_postings),
    ("0006_ingest_ids", m0006_ingest_ids),
    ("0007_chunk_context", m0007_chunk_context),
    ("0008_chunk_said_at", m0008_chunk_said_at),
]


async def migrate(db: psycopg.AsyncConnection) -> list[str]:
    """Apply, in order, each migration not yet recorded; the names applied now. Holds the
    migration lock throughout: a second daemon waits, then finds them recorded."""
    applied: list[str] = []
    await db.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK])
    try:
        await db.execute(
            "CREATE TABLE IF NOT EXISTS migrations"
            ' (name TEXT COLLATE "C" PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)'
        )
        cursor = await db.execute("SELECT name FROM migrations")
        done = {row[0] for row in await cursor.fetchall()}
        for name, migration in MIGRATIONS:
            if name in done:
                continue
            async with db.transaction():
                await migration(db)
                await db.execute(
                    "INSERT INTO migrations (name, applied_at) VALUES (%s, %s)", [name, time.time()]
                )
            applied.append(name)
    finally:
        await db.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK])
    return applied
