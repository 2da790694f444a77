"""The HTTP surface: one aiohttp application (`app`) served on the TCP port and on the Unix
socket. This package holds what every route shares: who is calling (`access`), the middlewares,
the browser rules, bodies and forms, request parameters, JSON in and out (`wire`), records into
v5 wire types (`render`), the shared state with its metrics and activity, and the OpenAPI
document. The routes live by face: `memory/` (what applications call), `control/` (the daemon
itself) and `legacy/` (v3 and v4); what a route is, `smemd.http.route`."""
