"""One namespace's in-memory indexes: vectors (`vectors`, with `reduction` past a size), BM25 over
words (`bm25`, `words`, `stemmer`), loaded from the store per namespace (`per_namespace`).
Imports nothing of the engine: recall, ingest and dreaming build on it."""
