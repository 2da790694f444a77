"""Dates in text: absolute ones a query names as windows (`absolute`), relative ones a fact or a
query names resolved against a reference day (`relative`). Pure functions; imports nothing of
the engine."""
