"""The HTTP surface: one aiohttp application served on the TCP port and on the Unix socket."""
