"""The console: smem in a browser, served by smemd itself at `/` and `/console/…`.

The page is static files (`static/`), plain ES modules with no build step, that talk to the
public API only, the same routes the SDKs and smemctl call. `assets` loads them once at start
(bytes, gzip, ETag); `pages` serves them with a strict Content-Security-Policy. What the page
does is in `static/` (`app.js` is the shell, `views/` one file per view — a large view's parts
beside it, named after it — `vendor/` pinned libraries with their licences).
"""
