"""The PostgreSQL backend: a pool of psycopg connections, writes one at a time per daemon,
migrations under an advisory lock. `store.PostgresStore` is the front; the SQL is shared with
SQLite (smemd.store.sql), bound by the client, with PostgreSQL's phrases in `dialect.py` and
the placeholders translated in `connection.py`."""
