"""Recall: hybrid search over memories and chunks (`hybrid`), a namespace's profile (`profile`),
and recalled text rendered as numbered evidence (`evidence`) with credentials redacted
(`redaction`). May import `dates`, `index` and the shared modules; never `ingest`."""
