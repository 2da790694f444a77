"""The legacy Supermemory API generations, v3 and v4, as a thin layer over the v5 engine calls:
what SDK 3.x, the TypeScript SDK 4 and memorybench speak. No second engine: each route renames
its fields, turns its container tag into a namespace and its filter into the v5 filter, calls
what the v5 route calls, and renders the reply in its generation's shape.

`tags` (container tags → namespace), `filters` (the `{"AND": […]}` grammar → v5), then one
module per group of routes (`v3_documents`, `v3_search`, `v4_search`, `v4_memories`, …), each
with its ROUTES, registered in `smemd/api/app.py` and marked deprecated in the OpenAPI document.
"""
