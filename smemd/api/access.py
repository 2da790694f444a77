"""Who is calling: the socket, or the token a TCP request presents, with its role and namespaces.

`[api] token` and `admin-token` are tokens for every namespace (roles write and admin);
`[[api.tokens]]` name their namespaces and role. With no token configured, TCP is open to every
route but the admin ones, as the socket is to all (its file permissions are its access control).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from aiohttp import web

from smemd.config import ApiConfig
from smemd.http.route import Role
from smemd.protocol import TokenInfo
from smemd.store.scope import EVERY, Scope


@dataclass(frozen=True)
class Principal:
    name: str
    role: Role
    scope: Scope


SOCKET = Principal("socket", "admin", EVERY)
ANONYMOUS = Principal("anonymous", "write", EVERY)  # TCP when no token is configured
PUBLIC = Principal("public", "read", Scope(()))  # a public route (health) called without one
PRINCIPAL = web.RequestKey("principal", Principal)


@dataclass(frozen=True)
class _Token:
    secret: bytes
    principal: Principal
    source: str


class Tokens:
    """The configured tokens; a presented one is compared with each in constant time."""

    def __init__(self, api: ApiConfig) -> None:
        unscoped: list[tuple[str, Role, str]] = [
            ("token", "write", api.token),
            ("admin-token", "admin", api.admin_token),
        ]
        self._tokens = [
            _Token(secret.encode(), Principal(name, role, EVERY), f"[api] {name}")
            for name, role, secret in unscoped
            if secret
        ]
        self._tokens += [
            _Token(
                entry.token.encode(),
                Principal(entry.name, entry.role, Scope(tuple(entry.namespaces))),
                "[[api.tokens]] token-file" if entry.token_file else "[[api.tokens]]",
            )
            for entry in api.tokens
        ]

    @property
    def required(self) -> bool:
        """Whether TCP needs a token: `[api] admin-token` alone guards the admin routes only."""
        return any(t.principal.name != "admin-token" for t in self._tokens)

    def find(self, presented: str) -> Principal | None:
        """The token's principal; `presented` holds only token characters (see middleware)."""
        if not presented:
            return None
        given = presented.encode()
        found = None
        for token in self._tokens:  # every one compared: the time says nothing of which matched
            if hmac.compare_digest(given, token.secret):
                found = token.principal
        return found

    def listing(self) -> list[TokenInfo]:
        return [
            TokenInfo(
                name=t.principal.name, role=t.principal.role, source=t.source,
                namespaces=list(t.principal.scope.patterns or ["*"]),
            )
            for t in self._tokens
        ]  # fmt: skip


def principal(request: web.Request) -> Principal:
    """Set by the authorize middleware on every request."""
    return request[PRINCIPAL]
