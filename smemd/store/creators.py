"""Whom a request's new namespaces count against, as the store keeps it: the API names the caller
and its bound (`[api] max-namespaces`) for each request over TCP; the store checks it where a
namespace is made, in the same transaction. No creator (the socket, background work): no bound.

A context variable, as the deadline is, so that every way of making a namespace (a document, a
move's target, buckets, a legacy tag) is bounded without each of them passing it along.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import msgspec

from smemd.errors import Forbidden


class Creator(msgspec.Struct, frozen=True):
    name: str  # the token's name ("anonymous" when none is configured)
    limit: int  # namespaces it may have made that still exist


class NamespaceLimit(Forbidden):
    code = "namespace_limit"


_current: contextvars.ContextVar[Creator | None] = contextvars.ContextVar(
    "smem_creator", default=None
)


def current() -> Creator | None:
    return _current.get()


@contextlib.contextmanager
def acting_as(creator: Creator) -> Iterator[None]:
    token = _current.set(creator)
    try:
        yield
    finally:
        _current.reset(token)


def refusal(creator: Creator, made: int) -> NamespaceLimit:
    return NamespaceLimit(
        "namespace limit reached",
        f"{creator.name!r} has made {made} namespaces, the limit of [api] max-namespaces"
        f" ({creator.limit}); remove some, or raise the limit",
    )
