"""The store: what the engine may ask of it (`protocol`, with the records and typed queries that
cross it), and the backends that answer. Only a backend's folder (`sqlite/`) speaks SQL or
imports a driver; tests/test_layout.py holds every other package to that."""
