"""The memory engine: ingest, recall, reconcile, forget; it never imports the API."""
