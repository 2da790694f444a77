"""What handlers read from a request besides its body: the namespace, query parameters, times."""

from __future__ import annotations

import re
import time
from typing import Any, Protocol

from aiohttp import web

from smemd import instants
from smemd.api.state import STATE
from smemd.engine.core import Engine
from smemd.engine.filters import Filter, FilterError, parse_filter
from smemd.engine.recall import Mode, Query
from smemd.errors import BadRequest, Unavailable
from smemd.protocol.memory import check_namespace


def engine(request: web.Request) -> Engine:
    engine = request.app[STATE].engine
    if engine is None:
        raise Unavailable("memory engine not running", "smemd is starting or stopping")
    return engine


def namespace(request: web.Request) -> str:
    return namespace_named(request.match_info["ns"])


def namespace_named(name: str, path: str = "$.namespace") -> str:
    """A namespace a request names (its path, or a body field at `path`), checked whole."""
    try:
        return check_namespace(name)
    except ValueError as err:
        raise BadRequest("invalid namespace", f"{path}: {err}") from None


def query_int(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query.get(name)
    if text is None:
        return default
    if not re.fullmatch(r"\d{1,9}", text) or not low <= int(text) <= high:
        raise BadRequest(
            "invalid query parameter",
            f"?{name}: expected an integer in {low}..{high}, got {text!r}",
        )
    return int(text)


def query_choice(request: web.Request, name: str, default: str, choices: tuple[str, ...]) -> str:
    value = request.query.get(name, default)
    if value not in choices:
        raise BadRequest(
            "invalid query parameter",
            f"?{name}: expected one of {', '.join(choices)}, got {value!r}",
        )
    return value


def query_list(request: web.Request, name: str, choices: tuple[str, ...]) -> set[str]:
    """`?include=a&include=b` and `?include=a,b` alike."""
    values = {
        v.strip() for raw in request.query.getall(name, []) for v in raw.split(",") if v.strip()
    }
    unknown = values - set(choices)
    if unknown:
        raise BadRequest(
            "invalid query parameter", f"?{name}: unknown {', '.join(sorted(unknown))}"
        )
    return values


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
        half_life_days=engine.config.half_life_days if half_life is None else half_life,
        include_forgotten=include_forgotten, rerank=options.rerank != "none",
    )  # fmt: skip
