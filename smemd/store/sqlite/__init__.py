"""The SQLite backend: one file, one writer under BEGIN IMMEDIATE, read-only readers, through
aiosqlite. `store.SqliteStore` is the front; the SQL itself is shared (smemd.store.sql), with
SQLite's phrases in `dialect.py`."""
