"""The SQLite backend: one file, one writer under BEGIN IMMEDIATE, read-only readers, through
aiosqlite. `store.SqliteStore` is the front; each other module is the SQL of one concern."""
