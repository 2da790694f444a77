"""Entities: the people, places, organisations and things a memory is about, found without a
model (`finder`) and turned into the mentions the store links to entity rows (`mentions`);
which may be one under two names (`suggestions`), merged and split (`merging`) by a person's
or the judge's call (`decisions`); and an entity's listing and story (`profiles`). Imports only
`ids` of the engine."""
