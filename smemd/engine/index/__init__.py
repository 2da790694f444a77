"""One namespace's in-memory indexes: vectors (`flat`, a scan, exact, with `reduction` past a
size; `ann`, an HNSW graph past a larger one, its candidates re-scored on float16 vectors kept
on disk, `rescoring`), BM25 over words (`bm25`, `words`, `stemmer`), the two kept in step per
kind of row (`kinds`), loaded per namespace (`per_namespace`) off the event loop (`loading`),
changed by a write once it commits (`changes`), and a large kind's indexes saved and loaded
whole or refused (`saved`, `lexical_files`, `files`). Imports nothing of the engine: recall,
ingest and dreaming build on it."""
