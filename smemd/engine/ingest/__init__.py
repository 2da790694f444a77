"""Ingest: documents accepted durably (`documents`), then the worker's phases, one commit each:
`fetching` (a URL's content), `chunking`, `extracting` (facts by `model_facts` or, without a
model, `sentence_facts`), `reconciling` (each fact against its neighbours, by `judgement`).
May import `dates`, `index`, `judgement` and the shared modules; never `recall` or `dreaming`."""
