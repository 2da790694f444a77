"""What handlers read from a request besides its body: the namespace, query parameters, times."""

from __future__ import annotations

import time
from types import UnionType
from typing import Annotated, Any, Protocol, TypeVar, Union, get_args, get_origin

import msgspec
from aiohttp import web

from smemd import instants
from smemd.api import access
from smemd.api.state import STATE
from smemd.engine.core import Engine
from smemd.engine.filters import Filter, FilterError, parse_filter
from smemd.engine.recall.query import Mode, Query
from smemd.errors import BadRequest, Forbidden, Unavailable, describe_validation_error
from smemd.protocol.memory import check_namespace
from smemd.store.scope import Scope

Q = TypeVar("Q", bound=msgspec.Struct)


def engine(request: web.Request) -> Engine:
    engine = request.app[STATE].engine
    if engine is None:
        raise Unavailable("memory engine not running", "smemd is starting or stopping")
    return engine


def namespace(request: web.Request) -> str:
    """The path's namespace (the authorize middleware has checked the token may touch it)."""
    return namespace_named(request.match_info["ns"])


def namespace_named(name: str, path: str = "$.namespace") -> str:
    """A namespace a request names (its path, or a body field at `path`), checked whole."""
    try:
        return check_namespace(name)
    except ValueError as err:
        raise BadRequest("invalid namespace", f"{path}: {err}") from None


def namespace_in_scope(request: web.Request, name: str, path: str = "$.namespace") -> str:
    """A namespace named in the body or the query: checked whole, and within the caller's."""
    name = namespace_named(name, path)
    check_sees(request, name)
    return name


def scope(request: web.Request) -> Scope:
    """The namespaces the caller may see."""
    return access.principal(request).scope


def check_sees(request: web.Request, name: str, path: str = "") -> None:
    """403 unless the caller may use the namespace `name` (named at `path` of the request)."""
    caller = access.principal(request)
    if not caller.scope.sees(name):
        at = f"{path}: " if path else ""
        raise Forbidden(
            "namespace outside the token's",
            f"{at}token {caller.name!r} may not use {name[:100]!r}",
        )


def query(request: web.Request, type_: type[Q]) -> Q:
    """The query string as `type_` (a protocol Query): a list takes `?a=x&a=y` and `?a=x,y`."""
    raw: dict[str, Any] = {}
    for field in msgspec.structs.fields(type_):
        name = field.encode_name
        if name not in request.query:
            continue
        if _is_list(field.type):
            raw[name] = [
                v.strip()
                for text in request.query.getall(name)
                for v in text.split(",")
                if v.strip()
            ]
        else:
            raw[name] = request.query[name]
    try:
        return msgspec.convert(raw, type_, strict=False)
    except msgspec.ValidationError as err:
        detail = describe_validation_error(err)
        raise BadRequest("invalid query parameter", "?" + detail.removeprefix("$.")) from None


def timestamp(value: str | None, path: str) -> float | None:
    """ISO-8601 date or date-time to Unix seconds (see smemd.instants); None stays None."""
    if value is None:
        return None
    try:
        return instants.parse(value)
    except instants.InstantError as err:
        raise BadRequest("invalid date", f"{path}: {err}") from None


def filter_of(raw: Any, path: str = "$.filter") -> Filter | None:
    if raw is None:
        return None
    try:
        return parse_filter(raw, root=path)
    except FilterError as err:
        raise BadRequest("invalid filter", str(err)) from err


def now() -> float:
    return time.time()


class SearchOptions(Protocol):
    """The search options `search`, `compress` and `ask` share, as their bodies carry them."""

    @property
    def search_mode(self) -> Mode: ...
    @property
    def limit(self) -> int: ...
    @property
    def threshold(self) -> float: ...
    @property
    def filter(self) -> Any: ...
    @property
    def as_of(self) -> str | None: ...
    @property
    def as_of_recorded(self) -> str | None: ...
    @property
    def half_life_days(self) -> float | None: ...
    @property
    def rerank(self) -> str | None: ...


def search_query(
    engine: Engine, text: str, options: SearchOptions, *, include_forgotten: bool = False
) -> Query:
    """The recall query for a request's options, validated (filter, asOf) and defaulted."""
    half_life = options.half_life_days
    return Query(
        text=text, mode=options.search_mode, limit=options.limit, threshold=options.threshold,
        filter=filter_of(options.filter), as_of=timestamp(options.as_of, "$.asOf"),
        as_of_recorded=timestamp(options.as_of_recorded, "$.asOfRecorded"),
        half_life_days=engine.config.half_life_days if half_life is None else half_life,
        include_forgotten=include_forgotten, rerank=options.rerank != "none",
    )  # fmt: skip


def _is_list(type_: Any) -> bool:
    """Whether a query field takes several values: a list, maybe Annotated or optional."""
    while get_origin(type_) is Annotated:
        type_ = get_args(type_)[0]
    if get_origin(type_) in (Union, UnionType):
        return any(_is_list(t) for t in get_args(type_))
    return get_origin(type_) is list
