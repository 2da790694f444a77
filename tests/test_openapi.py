"""The OpenAPI document: generated from the route table, valid OpenAPI 3.1, served on both
listeners without a token, and saying what each route takes and gives."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_spec_validator import validate

from smemd.api.app import ROUTES
from smemd.api.openapi import document
from smemd.http.route import Route
from smemd.protocol.memory import NAMESPACE_PATTERN
from tests.conftest import Running, StartDaemon
from tests.test_api import TOKEN, call


def operations(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): operation
        for path, methods in doc["paths"].items()
        for method, operation in methods.items()
    }


def test_the_document_is_valid_openapi_3_1() -> None:
    doc = document(ROUTES)
    assert doc["openapi"] == "3.1.0"
    validate(doc)


def test_every_route_is_an_operation_that_says_what_it_does() -> None:
    ops = operations(document(ROUTES))
    for route in ROUTES:
        path = route.path.replace("{type:documents|chunks|memories}", "{type}")
        operation = ops[route.method, path]
        assert operation["summary"].strip(), f"{route.method} {route.path} has no summary"
        assert "Who:" in operation["description"]
        assert str(route.status) in operation["responses"]
        assert "default" in operation["responses"]  # the error shape
    assert len(ops) == len({(r.method, r.path) for r in ROUTES})


def test_a_route_without_a_summary_cannot_be_made() -> None:
    async def handler(request: Any) -> Any: ...

    with pytest.raises(TypeError, match="summary"):
        Route(method="GET", path="/x", handler=handler)  # type: ignore[call-arg]


def test_schemas_come_from_the_types() -> None:
    doc = document(ROUTES)
    ops = operations(doc)
    add = ops["POST", "/ns/{ns}/document"]
    body = add["requestBody"]["content"]["application/json"]["schema"]
    schema = doc["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    assert schema["required"] == ["content"] and schema["additionalProperties"] is False
    assert schema["properties"]["id"]["anyOf"][0]["maxLength"] == 255
    listed = {p["name"]: p for p in ops["POST", "/ns/{ns}/list/{type}"]["parameters"]}
    assert listed["type"]["schema"] == {"enum": ["documents", "chunks", "memories"]}
    # A v3 container tag is a namespace's name, and says so: a client (or a fuzzer) that keeps
    # to the document sends names the daemon takes.
    [tag] = ops["DELETE", "/v3/container-tags/{tag}"]["parameters"]
    assert (
        tag["schema"] == listed["ns"]["schema"] == {"type": "string", "pattern": NAMESPACE_PATTERN}
    )
    assert listed["limit"]["schema"]["maximum"] == 100
    upload = ops["POST", "/ns/{ns}/document/file"]["requestBody"]["content"]
    assert upload["multipart/form-data"]["schema"]["properties"]["file"]["format"] == "binary"
    assert ops["GET", "/v1/metrics"]["responses"]["200"]["content"] == {
        "text/plain": {"schema": {"type": "string"}}
    }
    assert ops["GET", "/v1/health"]["security"] == []


async def test_served_on_both_listeners_without_a_token(start_daemon: StartDaemon) -> None:
    running: Running = await start_daemon(api__token=TOKEN)
    status, over_tcp, response = await call(running.tcp, "GET", running.url("/v1/openapi.json"))
    assert status == 200 and response.content_type == "application/json"
    status, over_socket, _ = await call(running.unix, "GET", "http://smemd/v1/openapi.json")
    assert status == 200 and over_tcp == over_socket
    assert set(over_tcp["paths"]) >= {"/ns/{ns}/search", "/v1/openapi.json", "/v1/tokens"}
