"""Entities: the people, places, organisations and things a memory is about, found without a
model (`finder`) and turned into the mentions the store links to entity rows (`mentions`).
Imports nothing of the engine."""
