"""The only package that speaks SQL: SQLite through aiosqlite, one writer, read-only readers."""
