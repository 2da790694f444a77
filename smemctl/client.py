"""HTTP to smemd over its Unix socket, or over TCP with a token, with the standard library only
so the CLI starts fast."""

from __future__ import annotations

import contextlib
import http.client
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TypeVar
from urllib.parse import urlsplit

import msgspec

from smemd.protocol import ErrorBody

T = TypeVar("T")
DOWNLOAD_BLOCK = 1 << 16


class Sink(Protocol):
    def write(self, block: bytes, /) -> object: ...


class NotRunning(Exception):
    """No daemon answers on the socket."""


class CallFailed(Exception):
    """The daemon answered with an error, or could not be reached for another reason."""


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.socket_path))
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class Client:
    """smemd on its socket, or at `url` (http://host:port) with `token` when one is given."""

    def __init__(
        self, socket_path: Path, timeout: float = 30.0, *, url: str | None = None,
        token: str | None = None,
    ) -> None:  # fmt: skip
        self.socket_path = socket_path
        self.timeout = timeout
        self.url = url
        self.token = token
        self.where = url or str(socket_path)

    def waiting(self, seconds: float) -> Client:
        """The same daemon, waiting at least `seconds` for each reply: for a command whose
        work grows with the store (a backup, an export), which the default wait would cut."""
        return Client(self.socket_path, max(self.timeout, seconds), url=self.url, token=self.token)

    def _connection(self) -> http.client.HTTPConnection:
        if self.url is None:
            return UnixConnection(self.socket_path, self.timeout)
        parts = urlsplit(self.url)
        if parts.scheme != "http" or not parts.hostname:
            raise CallFailed(f"{self.url}: give smemd's address as http://host:port")
        return http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=self.timeout)

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> bytes:
        """Send one request (with `headers` besides); return the body of a 2xx reply, raise for
        anything else."""
        payload = msgspec.json.encode(body) if body is not None else None
        headers = dict(headers or {})
        if payload is not None:
            headers["Content-Type"] = "application/json"
        with self._talking() as conn:
            response = self._send(conn, method, path, payload, headers)
            data = response.read()
        if not 200 <= response.status < 300:
            raise CallFailed(_error_text(response.status, data))
        return data

    def download(
        self, path: str, into: Callable[[http.client.HTTPResponse], Sink], *, gzip: bool = False
    ) -> int:
        """GET `path` and write its 2xx body, as it comes (a body of any size, in constant
        memory), to the sink `into` makes of the response (its headers say how the body is
        encoded); asked `gzip`'d in transit when `gzip`. The bytes written. Raise for anything
        but a 2xx reply."""
        written = 0
        with self._talking() as conn:
            headers = {"Accept-Encoding": "gzip" if gzip else "identity"}
            response = self._send(conn, "GET", path, None, headers)
            if not 200 <= response.status < 300:
                raise CallFailed(_error_text(response.status, response.read()))
            sink = into(response)
            while block := response.read(DOWNLOAD_BLOCK):
                try:
                    sink.write(block)
                except OSError as err:  # the local side's fault, not smemd's
                    raise CallFailed(f"writing what smemd sent: {err}") from err
                written += len(block)
        return written

    def upload(self, path: str, body: BinaryIO, content_type: str, size: int | None) -> bytes:
        """POST a body read from `body` as it is sent (a file of any size; chunked when its
        `size` is not known); return a 2xx reply's body, raise for anything else."""
        headers = {"Content-Type": content_type}
        if size is not None:
            headers["Content-Length"] = str(size)
        with self._talking() as conn:
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            conn.request("POST", path, body=body, headers=headers, encode_chunked=size is None)
            response = conn.getresponse()
            data = response.read()
        if not 200 <= response.status < 300:
            raise CallFailed(_error_text(response.status, data))
        return data

    def _send(
        self, conn: http.client.HTTPConnection, method: str, path: str, payload: bytes | None,
        headers: dict[str, str],
    ) -> http.client.HTTPResponse:  # fmt: skip
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        conn.request(method, path, body=payload, headers=headers)
        return conn.getresponse()

    @contextlib.contextmanager
    def _talking(self) -> Iterator[http.client.HTTPConnection]:
        """A connection to smemd, its failures said as NotRunning or CallFailed."""
        conn = self._connection()
        try:
            yield conn
        except FileNotFoundError:
            raise NotRunning(f"smemd is not running (no socket at {self.socket_path})") from None
        except ConnectionRefusedError:
            raise NotRunning(f"smemd is not running ({self.where} refuses connections)") from None
        except PermissionError:
            raise CallFailed(
                f"permission denied on {self.socket_path} (is your user in the socket's group?)"
            ) from None
        except TimeoutError:
            raise CallFailed(f"smemd did not answer within {self.timeout:g} s") from None
        except (OSError, http.client.HTTPException) as err:
            raise CallFailed(f"talking to smemd at {self.where}: {err}") from err
        finally:
            conn.close()

    def get(self, path: str, type_: type[T]) -> tuple[T, bytes]:
        raw = self.call("GET", path)
        return msgspec.json.decode(raw, type=type_), raw

    def post(
        self, path: str, body: Any, type_: type[T], headers: dict[str, str] | None = None
    ) -> tuple[T, bytes]:
        raw = self.call("POST", path, body, headers)
        return msgspec.json.decode(raw, type=type_), raw

    def send(self, method: str, path: str, body: Any, type_: type[T]) -> tuple[T, bytes]:
        raw = self.call(method, path, body)
        return msgspec.json.decode(raw, type=type_), raw


def _error_text(status: int, data: bytes) -> str:
    try:
        error = msgspec.json.decode(data, type=ErrorBody)
    except msgspec.MsgspecError:
        return f"error {status}: {data[:200].decode(errors='replace')}"
    return f"error {status}: {error.error}" + (f": {error.details}" if error.details else "")
