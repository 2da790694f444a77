"""The memory API, what applications call: v5's documents, files, memories, search, profile and
lists, namespaces and their buckets, the organisation, and smem's own routes beside them (answers,
the graph, entities and their merges, retraction, review, a namespace's overview). Each module
holds one face's handlers and its ROUTES; they may import `smemd.api`'s shared modules and the
engine, never `control` or `legacy`."""
