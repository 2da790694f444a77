"""The VCA device clients: `vcactl` and its output, ssh links to the nodes, their pinned host keys.

Below both `boot/` and `smemd.cards`, which drive the cards through them; these modules import
only `smemd.errors` and each other, never `boot` or another `smemd` package.
"""
