"""One namespace's in-memory indexes: vectors (`vectors`, exact, with `reduction` past a size;
`ann`, an HNSW graph past a larger one), BM25 over words (`bm25`, `words`, `stemmer`), the two
kept in step per kind of row (`kinds`), loaded per namespace (`per_namespace`) off the event
loop (`loading`), and a large kind's indexes saved and loaded whole or refused (`saved`,
`lexical_files`, `files`). Imports nothing of the engine: recall, ingest and dreaming build on
it."""
