"""Scoped tokens: for every route and a read, a write and a foreign-scope token, what is allowed
and what is refused — generated from the route table, not listed by hand."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import pytest

from smemctl.cli import main as smemctl
from smemd.api.app import ROUTES
from smemd.config import load
from smemd.http.route import Route, allows
from smemd.store.scope import Scope
from tests.conftest import Running, StartDaemon, config_with_tokens
from tests.settling import until_idle
from tests.test_api import call

MINE, THEIRS = "mine", "theirs"
TOKENS = {  # name: (secret, role, namespaces)
    "reader": ("reader-secret-0001", "read", [MINE, "team-*"]),
    "writer": ("writer-secret-0001", "write", [MINE]),
    "foreign": ("foreign-secret-001", "write", [THEIRS]),
    "foreign-admin": ("foreign-admin-sec", "admin", [THEIRS]),
}


def tokens_toml(extra: str = "") -> str:
    return (
        "".join(
            f'[[api.tokens]]\nname = "{name}"\ntoken = "{secret}"\nrole = "{role}"\n'
            f"namespaces = {msgspec.json.encode(spaces).decode()}\n"
            for name, (secret, role, spaces) in TOKENS.items()
        )
        + extra
    )


@pytest.fixture
async def guarded(start_daemon: StartDaemon, short_dir: Path) -> Running:
    running = await start_daemon(
        config_with_tokens(short_dir, 'token = "unscoped-secret-01"\n' + tokens_toml())
    )
    for namespace in (MINE, THEIRS, "team-a", "other"):
        status, body, _ = await call(
            running.unix, "POST", f"http://smemd/ns/{namespace}/document",
            json={"content": f"Alex keeps a diary in {namespace}."},
        )  # fmt: skip
        assert status == 200, body
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    return running


# The body fields that name a namespace: v5's, and the legacy routes' container tag.
NAMESPACE_FIELDS = {"namespace", "container_tag"}


def example(type_: Any) -> Any:
    """The smallest value msgspec accepts for a type: required fields only, a namespace MINE."""
    return msgspec.to_builtins(_value(msgspec.inspect.type_info(type_), "x"))


def _value(info: msgspec.inspect.Type, name: str) -> Any:
    if isinstance(info, msgspec.inspect.StructType):
        wanted = [f for f in info.fields if f.required or f.name in NAMESPACE_FIELDS]
        return {f.encode_name: _value(f.type, f.name) for f in wanted}
    if isinstance(info, msgspec.inspect.StrType):
        return MINE if name in NAMESPACE_FIELDS else "x" * max(1, info.min_length or 1)
    if isinstance(info, msgspec.inspect.IntType):
        return info.ge if info.ge is not None else 1
    if isinstance(info, msgspec.inspect.FloatType):
        return info.ge if info.ge is not None else 0.5
    if isinstance(info, msgspec.inspect.BoolType):
        return False
    if isinstance(info, msgspec.inspect.LiteralType):
        return info.values[0]
    if isinstance(info, msgspec.inspect.ListType):
        return [_value(info.item_type, name)] * max(1, info.min_length or 1)
    if isinstance(info, msgspec.inspect.UnionType):
        return _value(
            next(t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)), name
        )
    return None


def request_for(route: Route) -> tuple[str, dict[str, Any]]:
    """A path in namespace MINE and a body that decodes, for any route in the table."""
    values = {
        "ns": MINE,
        "tag": MINE,
        "type": "memories",
        "node": "node0",
        "action": "boot",
        "card": "0",
    }
    path = re.sub(r"\{(\w+)(?::[^}]*)?\}", lambda m: values.get(m[1], "x"), route.path)
    kwargs: dict[str, Any] = {}
    # A legacy (v3/v4) body names its namespace as a container tag.
    tags = {"containerTag": MINE, "containerTags": [MINE]} if route.namespace_from == "body" else {}
    if route.body is not None:
        kwargs["json"] = example(route.body)
        names = {f.encode_name for f in msgspec.structs.fields(route.body)}
        kwargs["json"].update({k: v for k, v in tags.items() if k in names})
    if route.form is not None:
        form = aiohttp.FormData()
        form.add_field("file", b"Alex keeps bees.", filename="bees.txt", content_type="text/plain")
        names = {f.encode_name for f in msgspec.structs.fields(route.form)}
        if "containerTag" in names and tags:
            form.add_field("containerTag", MINE)
        kwargs["data"] = form
    return path, kwargs


def expected(route: Route, role: str, scope: Scope) -> int | None:
    """The refusal the route owes this token, or None when it must be let through."""
    if route.public:
        return None
    if not allows(role, route.role):  # type: ignore[arg-type]
        return 403
    if route.namespace_from in ("path", "body") and not scope.sees(MINE):
        return 403
    if route.namespace_from == "every" and not scope.is_every:
        return 403
    return None


async def test_every_route_allows_or_refuses_each_token(guarded: Running) -> None:
    wrong = []
    for route in ROUTES:
        for token, (secret, role, namespaces) in TOKENS.items():
            path, kwargs = request_for(route)
            status, body, _ = await call(
                guarded.tcp, route.method, guarded.url(path),
                headers={"Authorization": f"Bearer {secret}"}, **kwargs,
            )  # fmt: skip
            refusal = expected(route, role, Scope(tuple(namespaces)))
            let_through = status not in (401, 403) and status < 500
            if (status != refusal) if refusal is not None else not let_through:
                wrong.append(f"{route.method} {path} as {token}: {status} {body}")
    assert not wrong, "\n".join(wrong)
    assert len(ROUTES) > 40  # the table, not a stub of it


async def test_listings_hold_only_the_tokens_namespaces(guarded: Running) -> None:
    reader = {"Authorization": f"Bearer {TOKENS['reader'][0]}"}
    status, body, _ = await call(guarded.tcp, "GET", guarded.url("/ns?limit=100"), headers=reader)
    assert status == 200
    assert sorted(n["namespace"] for n in body["namespaces"]) == [MINE, "team-a"]
    assert body["pagination"]["totalItems"] == 2
    status, body, _ = await call(guarded.tcp, "GET", guarded.url("/v1/jobs"), headers=reader)
    assert status == 200 and {j["namespace"] for j in body["jobs"]} == {MINE, "team-a"}
    assert sum(body["counts"].values()) == 2
    for route in ("/v1/jobs", "/v1/judgements"):
        status, body, _ = await call(
            guarded.tcp, "GET", guarded.url(f"{route}?namespace={THEIRS}"), headers=reader
        )
        assert status == 403, body
    unscoped = {"Authorization": "Bearer unscoped-secret-01"}
    status, body, _ = await call(guarded.tcp, "GET", guarded.url("/ns"), headers=unscoped)
    assert body["pagination"]["totalItems"] == 4


async def test_a_label_outside_the_tokens_namespaces_is_not_found(guarded: Running) -> None:
    status, listed, _ = await call(guarded.unix, "POST", f"http://smemd/ns/{MINE}/list/memories")
    memory_id = listed["memories"][0]["id"]
    label = {"memoryId": memory_id, "type": "preference"}
    for token, outcome in (("foreign", 404), ("writer", 201)):
        status, body, _ = await call(
            guarded.tcp, "POST", guarded.url("/v1/labels"), json=label,
            headers={"Authorization": f"Bearer {TOKENS[token][0]}"},
        )  # fmt: skip
        assert status == outcome, body
    status, memory, _ = await call(
        guarded.unix, "GET", f"http://smemd/ns/{MINE}/memories/{memory_id}"
    )
    assert memory["type"] == "preference" and memory["typedBy"] == "label"


async def test_smemctl_lists_the_tokens_and_never_their_secrets(
    guarded: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    socket = str(guarded.daemon.config.socket)
    assert await asyncio.to_thread(smemctl, ["--socket", socket, "tokens"]) == 0
    out = capsys.readouterr().out
    assert "reader" in out and "team-*" in out and "unscoped-secret" not in out
    assert all(secret not in out for secret, _, _ in TOKENS.values())
    assert await asyncio.to_thread(smemctl, ["--socket", socket, "--json", "tokens"]) == 0
    listed = msgspec.json.decode(capsys.readouterr().out)["tokens"]
    assert {t["name"]: t["role"] for t in listed} == {
        "token": "write",
        **{name: role for name, (_, role, _) in TOKENS.items()},
    }


def test_a_token_file_is_read_and_bad_tokens_are_config_errors(tmp_path: Path) -> None:
    secret = tmp_path / "agent.token"
    secret.write_text("from-a-file-0001\n")
    config = tmp_path / "smemd.toml"

    def loaded(toml: str) -> Any:
        config.write_text(toml)
        return load(config, env={})

    entry = '[[api.tokens]]\nname = "agent"\nnamespaces = ["a"]\n'
    assert loaded(entry + f'token-file = "{secret}"\n').api.tokens[0].token == "from-a-file-0001"
    for toml, message in (
        (entry, "give exactly one of token and token-file"),
        (entry + 'token = "x y"\n', "can be sent"),
        (entry + f'token-file = "{tmp_path / "missing"}"\n', "cannot read"),
        (
            entry + 'token = "abc"\n' + entry.replace('"agent"', '"b"') + 'token = "abc"\n',
            "same secret",
        ),
        (entry.replace('"agent"', '"token"') + 'token = "abc"\n', "taken"),
        ('[[api.tokens]]\nname = "a"\nnamespaces = ["no spaces"]\ntoken = "abc"\n', "namespaces"),
    ):
        with pytest.raises(Exception, match=message):
            loaded(toml)


async def test_admin_token_alone_guards_only_the_admin_routes(start_daemon: StartDaemon) -> None:
    running = await start_daemon(api__admin_token="admin-secret-0001")
    status, _, _ = await call(running.tcp, "GET", running.url("/v1/status"))
    assert status == 200
    status, _, _ = await call(running.tcp, "GET", running.url("/v1/tokens"))
    assert status == 403
    status, body, _ = await call(
        running.tcp, "GET", running.url("/v1/tokens"),
        headers={"Authorization": "Bearer admin-secret-0001"},
    )  # fmt: skip
    assert status == 200 and [t["name"] for t in body["tokens"]] == ["admin-token"]
