"""Outbound fetching of documents and their conversion to text.

`guard` decides which addresses a fetch may connect to, `client` fetches a URL through it within
limits of redirects, size and time, and `convert` turns the bytes (fetched or uploaded) into text,
in a child process when the input is not trusted. A leaf: imports nothing from smemd but
`smemd.errors` and the version.
"""
