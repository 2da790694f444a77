"""The memory engine: ingest, recall, reconcile, forget; it never imports the API.

Sub-packages by stage, each importing only those listed before it (tests/test_layout.py holds
them to it):

- `dates`: calendar expressions, absolute and relative, as days and windows. Imports nothing.
- `index`: one namespace's in-memory vector and BM25 indexes. Imports nothing of the engine.
- `entities`: names in a fact's text found without a model, the mentions a new memory links to
  entity rows, alias suggestions, merging and splitting entities by a person's or the judge's
  decision, and an entity's listing and story. Imports `ids`.
- `judgement`: the letter-probability judge, its questions, the heuristic and model reconcile
  decisions, people's labels and calibration. Imports `index` for its words, `entities` for
  the alias calls a label settles.
- `ingest`: documents in, and the durable worker's phases: fetching, chunking, extracting,
  reconciling.
- `recall`: hybrid search, the profile, and evidence rendered for a model.
- `dreaming`: background typing, linking and inferring while the models are idle.

Shared by all: `ids` (identifiers, clocks), `quiet` (when the models were last used), `filters`
(the v5 metadata filter). `memories` (reading, versioning and forgetting memories), `review`
(contradictions listed and resolved by a person), `graph` (a bounded neighbourhood of documents
and memories) and `core` (the `Engine` that ties them together) sit on top.
"""
