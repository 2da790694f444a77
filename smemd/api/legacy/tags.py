"""Container tags, the legacy name of a namespace.

v4 names one (`containerTag`); v3 accepted several (`containerTags`). The first tag names the
namespace the request works in; a document keeps every tag it was given in its metadata, under
`containerTags`, where a filter can read them (so each must be a namespace the caller may write
to), but further tags isolate nothing: search, list
and profile work in the first tag's namespace only (v5 has one namespace per request too).
A request that names no tag works in `DEFAULT_TAG`'s namespace, as the hosted service used one
default container for untagged writes.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiohttp import web

from smemd.api import params

DEFAULT_TAG = "default"
TAGS_KEY = "containerTags"  # the metadata key a document's tags are kept under


def namespace_of(
    request: web.Request, tag: str | None, tags: Sequence[str] | None = None, *, path: str = "$"
) -> str:
    """The namespace a legacy request names: `containerTag`, else the first of `containerTags`,
    else the default; checked whole and within the caller's namespaces (400 / 403)."""
    if tag:
        return params.namespace_in_scope(request, tag, f"{path}.containerTag")
    if tags:
        return params.namespace_in_scope(request, tags[0], f"{path}.containerTags[0]")
    return params.namespace_in_scope(request, DEFAULT_TAG, f"{path}.containerTag")


def all_tags(tag: str | None, tags: Sequence[str] | None) -> list[str]:
    """Every tag a write named, in order, once each: what the document keeps under `TAGS_KEY`."""
    named = ([tag] if tag else []) + list(tags or [])
    return list(dict.fromkeys(named)) or [DEFAULT_TAG]


def kept_tags(
    request: web.Request, tag: str | None, tags: Sequence[str] | None, *, path: str = "$"
) -> list[str]:
    """`all_tags`, each of which the caller may write to (403 otherwise): a tag kept in metadata
    names a namespace, and a token must not write another tenant's name into its documents."""
    kept = all_tags(tag, tags)
    given = list(tags or [])
    for name in kept:
        where = (
            f"{path}.containerTags[{given.index(name)}]"
            if name in given
            else f"{path}.containerTag"
        )
        params.check_sees(request, name, where)
    return kept
