"""What a route is beyond its handler: who may call it, which namespace it touches, and the types
of what goes in and out. One table of these registers the routes, authorizes each request, and
generates the OpenAPI document, so the three cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web
from aiohttp.typedefs import Handler

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
Role = Literal["read", "write", "admin"]
ROLES: tuple[Role, ...] = ("read", "write", "admin")  # each may do what the ones before it may
# Where the namespace a request touches is named, and so how a token's namespaces limit it:
NamespaceFrom = Literal[
    "none",  # the daemon and the fleet, not anyone's memories
    "path",  # the `{ns}` of the path: outside the token's namespaces, 403
    "body",  # the body's `namespace`: checked by the handler once decoded, 403 outside
    "listing",  # spans namespaces: the reply holds only the token's, `?namespace=` outside is 403
    "subject",  # ids whose namespace the handler looks up: outside the token's, 404 as unknown
    "every",  # acts on or reports every namespace: a token limited to some is refused, 403
]


@dataclass(frozen=True, kw_only=True)
class Route:
    method: Method
    path: str
    handler: Handler
    summary: str  # one line: what the route does (the OpenAPI summary)
    role: Role = "read"  # the least role that may call it over TCP
    namespace_from: NamespaceFrom = "none"
    body: Any = None  # the JSON body's type, when it takes one
    body_optional: bool = False  # the body may be left out (every field has a default)
    form: Any = None  # a multipart body: the Struct naming its fields
    streamed: str | None = None  # a body of this media type the handler reads as it arrives
    query: Any = None  # a Struct of the query parameters
    reply: Any = None  # the type of a successful reply's JSON
    status: int = 200
    content_type: str = "application/json"
    public: bool = False  # answers without a token (health)
    # Answers whatever Host and Origin a request names (health: it says only that smemd is up,
    # and a load balancer's probe names the balancer's own host).
    from_anywhere: bool = False
    description: str = ""  # more than the summary, when there is more to say
    page: bool = False  # the console's page or asset, not an API route: left out of OpenAPI
    deprecated: bool = False  # a legacy (v3/v4) route, kept for older clients

    def register(self, router: web.UrlDispatcher) -> list[web.AbstractRoute]:
        """Add the route (and HEAD beside a GET, for load balancers); the routes aiohttp made."""
        resource = router.add_resource(self.path)
        made: list[web.AbstractRoute] = [resource.add_route(self.method, self.handler)]
        if self.method == "GET":
            made.append(resource.add_route("HEAD", self.handler))
        return made


def allows(held: Role, needed: Role) -> bool:
    return ROLES.index(held) >= ROLES.index(needed)
