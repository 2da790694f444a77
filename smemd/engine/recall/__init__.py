"""Recall: hybrid search over memories and chunks (`hybrid`), for a `query`, over what it may
see (the query's `Visibility`, which the store compiles), passages scored by `scoring`; a namespace's profile (`profile`), and
recalled text rendered as numbered evidence (`evidence`) with credentials redacted
(`redaction`). May import `dates`, `index` and the shared modules; never `ingest`."""
