"""The SQLite store's first tables, as migration 0001 made them (smemd.store.sqlite.schema
applies it and every later change), and how a migration runs a script of statements."""

from __future__ import annotations

import sqlite3

import aiosqlite


async def m0001_initial(db: aiosqlite.Connection) -> None:
    await execute_script(
        db,
        """
        -- Facts about the store itself, e.g. which embedder made its vectors.
        CREATE TABLE settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE namespaces (
            name TEXT PRIMARY KEY,
            supporting_context TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE TABLE documents (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL REFERENCES namespaces(name),
            caller_id TEXT,
            title TEXT,
            type TEXT NOT NULL DEFAULT 'text',
            content TEXT NOT NULL,
            url TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            content_date REAL,
            content_hash TEXT NOT NULL,
            task_type TEXT NOT NULL DEFAULT 'memory',
            status TEXT NOT NULL,
            error TEXT,
            revision INTEGER NOT NULL DEFAULT 1,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE UNIQUE INDEX documents_caller ON documents(namespace, caller_id)
            WHERE caller_id IS NOT NULL;
        CREATE INDEX documents_namespace ON documents(namespace, created_at);

        CREATE TABLE chunks (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            namespace TEXT NOT NULL,
            position INTEGER NOT NULL,
            heading TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            vector BLOB,
            created_at REAL NOT NULL
        );
        CREATE INDEX chunks_document ON chunks(document_id, position);
        CREATE INDEX chunks_namespace ON chunks(namespace);

        CREATE TABLE memories (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            text TEXT NOT NULL,
            type TEXT NOT NULL DEFAULT 'fact',
            version INTEGER NOT NULL DEFAULT 1,
            is_latest INTEGER NOT NULL DEFAULT 1,
            root_id TEXT NOT NULL,
            parent_id TEXT,
            document_id TEXT,
            chunk_id TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            event_at REAL,
            valid_until REAL,
            forgotten_at REAL,
            forget_reason TEXT,
            expires_at REAL,
            is_static INTEGER NOT NULL DEFAULT 0,
            is_inference INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}',
            vector BLOB
        );
        CREATE INDEX memories_namespace ON memories(namespace, is_latest, created_at);
        CREATE INDEX memories_root ON memories(root_id, version);
        CREATE INDEX memories_document ON memories(document_id);

        -- Every document a memory was seen in; a duplicate adds a row here, not a memory.
        CREATE TABLE memory_sources (
            memory_id TEXT NOT NULL,
            document_id TEXT NOT NULL,
            chunk_id TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            PRIMARY KEY (memory_id, document_id, chunk_id)
        );
        CREATE INDEX memory_sources_document ON memory_sources(document_id);

        CREATE TABLE relations (
            from_id TEXT NOT NULL,
            to_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            score REAL NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            PRIMARY KEY (from_id, to_id, kind)
        );
        CREATE INDEX relations_to ON relations(to_id);

        CREATE TABLE jobs (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            document_id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            phase TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX jobs_open ON jobs(seq) WHERE phase NOT IN ('done', 'failed');
        CREATE INDEX jobs_document ON jobs(document_id);

        -- Facts extracted by a job and not yet reconciled: they survive a crash between phases.
        CREATE TABLE candidates (
            job_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            chunk_id TEXT NOT NULL,
            text TEXT NOT NULL,
            type TEXT NOT NULL,
            event_at REAL,
            vector BLOB NOT NULL,
            PRIMARY KEY (job_id, position)
        );

        -- Full text over memories and chunks. The `ns` column holds one token per namespace
        -- ('ns' || hex(name)), so a MATCH narrows to a namespace inside the index itself.
        ALTER TABLE memories ADD COLUMN ns TEXT GENERATED ALWAYS AS ('ns' || hex(namespace)) VIRTUAL;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            text, ns, content='memories', content_rowid='seq', tokenize='porter unicode61'
        );
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, text, ns) VALUES (new.seq, new.text, new.ns);
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, ns) VALUES ('delete', old.seq, old.text, old.ns);
        END;

        ALTER TABLE chunks ADD COLUMN ns TEXT GENERATED ALWAYS AS ('ns' || hex(namespace)) VIRTUAL;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            text, ns, content='chunks', content_rowid='seq', tokenize='porter unicode61'
        );
        CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts(rowid, text, ns) VALUES (new.seq, new.text, new.ns);
        END;
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, text, ns) VALUES ('delete', old.seq, old.text, old.ns);
        END;
        """,
    )


async def execute_script(db: aiosqlite.Connection, script: str) -> None:
    """Run statements one by one: `executescript` would commit the migration's transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            await db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement: {statement.strip()[:80]}")
