"""Schemathesis hooks for tests/fuzz.py (loaded through SCHEMATHESIS_HOOKS): an import's body is
JSON Lines, text as far as a generated case goes, so it is sent as text/plain is."""

import schemathesis

schemathesis.serializer.alias("application/x-ndjson", "text/plain")
