"""A SASL/SCRAM gate in front of the embedded broker: Kafka clients authenticate, each writes only its topics.

tansu's memory storage cannot hold users (its users are made through an authenticated client and
kept in the storage it restarts without), so the embedded stack puts this gate on the address the
clients know and runs tansu behind it, advertising the gate's address, so every connection a client
opens (bootstrap, partition leaders, group coordinators) comes through here. The gate speaks only
the parts of the Kafka protocol it must:

- SaslHandshake and SaslAuthenticate are answered here (SCRAM-SHA-512, RFC 5802/7677); before a
  client has authenticated only ApiVersions passes, anything else closes the connection as Apache
  Kafka does;
- a Produce naming a topic its user may not write is answered here with TOPIC_AUTHORIZATION_FAILED
  for every partition it names (the whole request: nothing of it is written);
- the calls that change users, ACLs, configurations or delete data are the admins' alone;
- everything else is passed to the broker byte for byte, answers returned in request order.

The users file (JSON, written by the stack, mode 0600) holds, per user, the SCRAM salt, iteration
count, stored key and server key (never a password), the topics each user may write, and the admins.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import signal
import struct
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("arbiter.kafkagate")

MECHANISM = "SCRAM-SHA-512"
ITERATIONS = 4096

PRODUCE, API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 0, 18, 17, 36
# DeleteTopics, DeleteRecords, CreateAcls, DeleteAcls, AlterConfigs, AlterReplicaLogDirs,
# DeleteGroups, IncrementalAlterConfigs, AlterPartitionReassignments, OffsetDelete,
# AlterUserScramCredentials, AlterPartition, UpdateFeatures, AlterClientQuotas.
ADMIN_ONLY = frozenset({20, 21, 30, 31, 33, 34, 42, 44, 45, 47, 51, 56, 57, 49})

UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED, TOPIC_AUTHORIZATION_FAILED = 33, 58, 29
ILLEGAL_SASL_STATE = 34


class ProtocolError(ValueError):
    """A frame the gate cannot read: the connection is closed."""


# --- SCRAM -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScramUser:
    """What the gate keeps of a user: enough to check a proof, nothing to make one."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_password(cls, password: str, salt: bytes | None = None, iterations: int = ITERATIONS) -> ScramUser:
        """The SCRAM-SHA-512 credentials of `password` with a fresh salt."""
        salt = salt or secrets.token_bytes(24)
        salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", "sha512")
        return cls(salt, iterations, hashlib.sha512(client_key).digest(), hmac.digest(salted, b"Server Key", "sha512"))

    def as_json(self) -> dict[str, object]:
        """The form the users file keeps."""
        return {"salt": _b64(self.salt), "iterations": self.iterations,
                "stored_key": _b64(self.stored_key), "server_key": _b64(self.server_key)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ScramUser:
        """Read back `as_json`."""
        return cls(base64.b64decode(str(data["salt"])), int(str(data["iterations"])),
                   base64.b64decode(str(data["stored_key"])), base64.b64decode(str(data["server_key"])))


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _scram_attributes(message: str) -> dict[str, str]:
    attributes: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            attributes.setdefault(key, value)
    return attributes


@dataclass
class ScramExchange:
    """The server side of one SCRAM-SHA-512 exchange: client-first, then client-final."""

    users: Mapping[str, ScramUser]
    user: str = ""
    _first_bare: str = ""
    _server_first: str = ""
    _nonce: str = ""

    @property
    def started(self) -> bool:
        """Whether client-first has been answered."""
        return bool(self._server_first)

    def first(self, client_first: bytes) -> bytes:
        """Answer client-first-message with server-first-message; ValueError when it is not one."""
        text = client_first.decode("utf-8")
        gs2, _sep, bare = text.partition(",,")  # no channel binding, no authzid
        if gs2 not in ("n", "y") or not bare:
            raise ValueError("not a SCRAM client-first message")
        attributes = _scram_attributes(bare)
        user = attributes.get("n", "").replace("=2C", ",").replace("=3D", "=")
        if user not in self.users or not attributes.get("r"):
            raise ValueError(f"unknown user {user[:64]!r}")
        self.user = user
        credentials = self.users[user]
        self._nonce = attributes["r"] + secrets.token_urlsafe(18)
        self._first_bare = bare
        self._server_first = f"r={self._nonce},s={_b64(credentials.salt)},i={credentials.iterations}"
        return self._server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        """Check client-final-message's proof; the server-final-message, or ValueError when it fails."""
        text = client_final.decode("utf-8")
        without_proof, _sep, proof_part = text.rpartition(",p=")
        attributes = _scram_attributes(without_proof)
        if not self.user or attributes.get("r") != self._nonce or not proof_part:
            raise ValueError("the exchange is out of order or its nonce is not ours")
        credentials = self.users[self.user]
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        signature = hmac.digest(credentials.stored_key, auth_message, "sha512")
        proof = base64.b64decode(proof_part)
        if len(proof) != len(signature):
            raise ValueError("a proof of the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.sha512(client_key).digest(), credentials.stored_key):
            raise ValueError(f"wrong password for {self.user!r}")
        return f"v={_b64(hmac.digest(credentials.server_key, auth_message, 'sha512'))}".encode()


# --- Kafka wire ------------------------------------------------------------------------------------

class Reader:
    """Reads Kafka's primitive types from a buffer, classic and compact (flexible versions)."""

    def __init__(self, data: bytes, at: int = 0) -> None:
        self.data, self.at = data, at

    def take(self, size: int) -> bytes:
        """`size` raw bytes."""
        if size < 0 or self.at + size > len(self.data):
            raise ProtocolError("a frame shorter than its fields")
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def int16(self) -> int:
        """A signed 16-bit integer."""
        return int(struct.unpack(">h", self.take(2))[0])

    def int32(self) -> int:
        """A signed 32-bit integer."""
        return int(struct.unpack(">i", self.take(4))[0])

    def uvarint(self) -> int:
        """An unsigned varint."""
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise ProtocolError("a varint too long")

    def string(self, compact: bool) -> str | None:
        """A (nullable) string."""
        size = self.uvarint() - 1 if compact else self.int16()
        return None if size < 0 else self.take(size).decode("utf-8", "replace")

    def blob(self, compact: bool) -> bytes | None:
        """(Nullable) bytes."""
        size = self.uvarint() - 1 if compact else self.int32()
        return None if size < 0 else self.take(size)

    def count(self, compact: bool) -> int:
        """An array's length (0 for a null array)."""
        size = self.uvarint() - 1 if compact else self.int32()
        return max(size, 0)

    def tags(self) -> None:
        """Skip a tagged-fields section."""
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _string(text: str | None, compact: bool) -> bytes:
    if text is None:
        return _uvarint(0) if compact else struct.pack(">h", -1)
    raw = text.encode()
    return (_uvarint(len(raw) + 1) if compact else struct.pack(">h", len(raw))) + raw


def _blob(raw: bytes, compact: bool) -> bytes:
    return (_uvarint(len(raw) + 1) if compact else struct.pack(">i", len(raw))) + raw


def _count(size: int, compact: bool) -> bytes:
    return _uvarint(size + 1) if compact else struct.pack(">i", size)


# The first version of each API whose request (and response) header carries tagged fields.
FLEXIBLE_FROM = {PRODUCE: 9, SASL_AUTHENTICATE: 2, SASL_HANDSHAKE: 99}


@dataclass(frozen=True)
class Request:
    """A request's header and where its body starts."""

    api_key: int
    version: int
    correlation_id: int
    body_at: int
    frame: bytes

    @property
    def flexible(self) -> bool:
        """Whether the body (and the answer's header) use compact types and tagged fields."""
        return self.version >= FLEXIBLE_FROM.get(self.api_key, 99)

    def body(self) -> Reader:
        """A reader at the start of the body."""
        return Reader(self.frame, self.body_at)


def parse_request(frame: bytes) -> Request:
    """The header of one request frame (its 4-byte size already removed)."""
    reader = Reader(frame)
    api_key, version, correlation_id = reader.int16(), reader.int16(), reader.int32()
    reader.string(compact=False)  # client id: a classic string even in flexible headers
    request = Request(api_key, version, correlation_id, reader.at, frame)
    if request.flexible:
        reader.tags()
        request = Request(api_key, version, correlation_id, reader.at, frame)
    return request


def answer(request: Request, body: bytes) -> bytes:
    """A whole response frame to `request` (size, header, body)."""
    header = struct.pack(">i", request.correlation_id) + (b"\x00" if request.flexible else b"")
    return struct.pack(">i", len(header) + len(body)) + header + body


@dataclass(frozen=True)
class ProduceRequest:
    """What the gate needs of a Produce: acks (0 expects no answer) and the partitions per topic."""

    acks: int
    partitions: dict[str, list[int]]


def parse_produce(request: Request) -> ProduceRequest:
    """Topics and partitions named by a Produce request, any version up to 11."""
    compact, reader = request.flexible, request.body()
    if request.version >= 3:
        reader.string(compact)  # transactional id
    acks = reader.int16()
    reader.int32()  # timeout
    partitions: dict[str, list[int]] = {}
    for _ in range(reader.count(compact)):
        topic = reader.string(compact) or ""
        indexes = partitions.setdefault(topic, [])
        for _ in range(reader.count(compact)):
            indexes.append(reader.int32())
            reader.blob(compact)
            if compact:
                reader.tags()
        if compact:
            reader.tags()
    return ProduceRequest(acks, partitions)


def produce_refusal(request: Request, produce: ProduceRequest, message: str) -> bytes:
    """The Produce response refusing every partition with TOPIC_AUTHORIZATION_FAILED, in `request`'s version."""
    version, compact = request.version, request.flexible
    body = bytearray(_count(len(produce.partitions), compact))
    for topic, indexes in produce.partitions.items():
        body += _string(topic, compact) + _count(len(indexes), compact)
        for index in indexes:
            body += struct.pack(">ihq", index, TOPIC_AUTHORIZATION_FAILED, -1)
            if version >= 2:
                body += struct.pack(">q", -1)  # log append time
            if version >= 5:
                body += struct.pack(">q", -1)  # log start offset
            if version >= 8:
                body += _count(0, compact) + _string(message, compact)  # record errors, error message
            if compact:
                body += b"\x00"
        if compact:
            body += b"\x00"
    if version >= 1:
        body += struct.pack(">i", 0)  # throttle time
    if compact:
        body += b"\x00"
    return answer(request, bytes(body))


def handshake_answer(request: Request, mechanism: str) -> tuple[bytes, bool]:
    """SaslHandshake's answer and whether the mechanism is the one the gate speaks."""
    ok = mechanism == MECHANISM
    body = struct.pack(">h", 0 if ok else UNSUPPORTED_SASL_MECHANISM) + _count(1, False) + _string(MECHANISM, False)
    return answer(request, body), ok


def authenticate_answer(request: Request, error: int, message: str | None, payload: bytes) -> bytes:
    """SaslAuthenticate's answer, versions 0 to 2."""
    compact = request.flexible
    body = struct.pack(">h", error) + _string(message, compact) + _blob(payload, compact)
    if request.version >= 1:
        body += struct.pack(">q", 0)  # session lifetime: none
    if compact:
        body += b"\x00"
    return answer(request, body)


# --- policy ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Policy:
    """Who the gate lets in and what each may write."""

    users: Mapping[str, ScramUser]
    writes: Mapping[str, frozenset[str]]
    admins: frozenset[str] = frozenset()

    def may_write(self, user: str, topics: Iterable[str]) -> list[str]:
        """The topics of `topics` that `user` may not write (none for an admin)."""
        if user in self.admins:
            return []
        allowed = self.writes.get(user, frozenset())
        return sorted(topic for topic in set(topics) if topic not in allowed)

    def as_json(self) -> dict[str, object]:
        """The users file's content."""
        return {"mechanism": MECHANISM, "users": {name: user.as_json() for name, user in self.users.items()},
                "writes": {name: sorted(topics) for name, topics in self.writes.items()},
                "admins": sorted(self.admins)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Policy:
        """Read back `as_json`."""
        users = data["users"]
        writes = data.get("writes", {})
        admins = data.get("admins", [])
        assert isinstance(users, dict) and isinstance(writes, dict) and isinstance(admins, list)
        return cls({name: ScramUser.from_json(value) for name, value in users.items()},
                   {name: frozenset(topics) for name, topics in writes.items()},
                   frozenset(admins))

    def write(self, path: Path) -> None:
        """Save as the users file, readable by its owner only."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(self.as_json(), handle)

    @classmethod
    def read(cls, path: Path) -> Policy:
        """Load a users file."""
        return cls.from_json(json.loads(path.read_text()))


def policy_for(passwords: Mapping[str, str], producers: Mapping[str, frozenset[str]],
               admins: Iterable[str] = ()) -> Policy:
    """A policy from each user's password and each topic's producers (arbiter.kit.events.PRODUCERS)."""
    writes: dict[str, set[str]] = {user: set() for user in passwords}
    for topic, users in producers.items():
        for user in users:
            writes.setdefault(user, set()).add(topic)
    return Policy({user: ScramUser.from_password(password) for user, password in passwords.items()},
                  {user: frozenset(topics) for user, topics in writes.items()}, frozenset(admins))


# --- the gate --------------------------------------------------------------------------------------

async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    if size < 8 or size > 128 * 1024 * 1024:
        raise ProtocolError(f"a frame of {size} bytes")
    return await reader.readexactly(size)


@dataclass
class Connection:
    """One client connection and its own connection to the broker."""

    policy: Policy
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter]
    broker: tuple[asyncio.StreamReader, asyncio.StreamWriter]
    peer: str
    user: str = ""
    _exchange: ScramExchange | None = None
    # Answers in request order: the broker's (awaited) and the gate's own (already resolved).
    _answers: deque[asyncio.Future[bytes | None]] = field(default_factory=deque)
    _from_broker: deque[asyncio.Future[bytes | None]] = field(default_factory=deque)
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        """Serve the connection until either side closes it."""
        tasks = [asyncio.create_task(self._requests()), asyncio.create_task(self._broker_answers()),
                 asyncio.create_task(self._write_answers())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for _reader, writer in (self.client, self.broker):
                writer.close()
            for future in self._answers:
                future.cancel()

    def _queue_own(self, frame: bytes | None) -> None:
        future: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        future.set_result(frame)
        self._answers.append(future)
        self._ready.set()

    async def _forward(self, request: Request, expects_answer: bool) -> None:
        if expects_answer:
            future: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
            self._answers.append(future)
            self._from_broker.append(future)
            self._ready.set()
        writer = self.broker[1]
        writer.write(struct.pack(">i", len(request.frame)) + request.frame)
        await writer.drain()

    async def _requests(self) -> None:
        reader = self.client[0]
        while True:
            try:
                request = parse_request(await _read_frame(reader))
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if not await self._serve(request):
                # Closing: the answers queued so far are written first, then the writer ends the connection.
                await asyncio.Event().wait()

    async def _serve(self, request: Request) -> bool:
        """Handle one request; False closes the connection (once what is queued is written)."""
        if request.api_key == API_VERSIONS:
            await self._forward(request, True)
            return True
        if not self.user:
            return self._authenticate(request)
        if request.api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            log.warning("%s (%s) asked to authenticate again; closing", self.peer, self.user)
            return self._close_after_answers()
        if request.api_key in ADMIN_ONLY and self.user not in self.policy.admins:
            log.warning("refused %s: API %d is for admins only; closing", self.user, request.api_key)
            return self._close_after_answers()
        if request.api_key == PRODUCE:
            produce = parse_produce(request)
            refused = self.policy.may_write(self.user, produce.partitions)
            if refused:
                log.warning("refused %s: may not write %s", self.user, ", ".join(refused))
                if produce.acks != 0:
                    self._queue_own(produce_refusal(request, produce, f"{self.user} may not write {refused[0]}"))
                return True
            await self._forward(request, produce.acks != 0)
            return True
        await self._forward(request, True)
        return True

    def _authenticate(self, request: Request) -> bool:
        if request.api_key == SASL_HANDSHAKE:
            mechanism = request.body().string(compact=False) or ""
            frame, ok = handshake_answer(request, mechanism)
            self._queue_own(frame)
            if ok:
                self._exchange = ScramExchange(self.policy.users)
                return True
            log.warning("%s asked for SASL mechanism %r; only %s is spoken", self.peer, mechanism[:40], MECHANISM)
            return self._close_after_answers()
        if request.api_key == SASL_AUTHENTICATE and self._exchange is not None:
            payload = request.body().blob(request.flexible) or b""
            exchange = self._exchange
            try:
                if not exchange.started:
                    self._queue_own(authenticate_answer(request, 0, None, exchange.first(payload)))
                    return True
                server_final = exchange.final(payload)
            except (ValueError, UnicodeDecodeError) as error:
                log.warning("authentication of %s failed: %s", self.peer, error)
                self._queue_own(authenticate_answer(request, SASL_AUTHENTICATION_FAILED,
                                                    "Authentication failed during authentication due to invalid "
                                                    "credentials with SASL mechanism SCRAM-SHA-512", b""))
                return self._close_after_answers()
            self.user = exchange.user
            self._queue_own(authenticate_answer(request, 0, None, server_final))
            return True
        log.warning("%s sent API %d before authenticating; closing", self.peer, request.api_key)
        return self._close_after_answers()

    def _close_after_answers(self) -> bool:
        self._queue_own(None)
        return False

    async def _broker_answers(self) -> None:
        reader = self.broker[0]
        while True:
            try:
                frame = await _read_frame(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if not self._from_broker:
                raise ProtocolError("the broker answered a request it was not sent")
            self._from_broker.popleft().set_result(struct.pack(">i", len(frame)) + frame)

    async def _write_answers(self) -> None:
        writer = self.client[1]
        while True:
            while not self._answers:
                self._ready.clear()
                await self._ready.wait()
            frame = await self._answers[0]
            self._answers.popleft()
            if frame is None:
                # Let the client read what it was answered before the connection closes.
                await writer.drain()
                return
            writer.write(frame)
            await writer.drain()


@dataclass
class Gate:
    """Listens for clients and opens one broker connection for each."""

    policy: Policy
    broker_host: str
    broker_port: int
    connections: int = 0

    async def handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        """Serve one client connection."""
        peer = str(client_writer.get_extra_info("peername"))
        try:
            broker = await asyncio.open_connection(self.broker_host, self.broker_port)
        except OSError as error:
            log.warning("the broker at %s:%d is unreachable (%s); closing %s",
                        self.broker_host, self.broker_port, error, peer)
            client_writer.close()
            return
        self.connections += 1
        try:
            await Connection(self.policy, (client_reader, client_writer), broker, peer).run()
        except ProtocolError as error:
            log.warning("closing %s: %s", peer, error)
        finally:
            self.connections -= 1
            with contextlib.suppress(ConnectionError):
                client_writer.close()


async def serve(policy: Policy, listen: tuple[str, int], broker: tuple[str, int]) -> None:
    """Run the gate until cancelled."""
    gate = Gate(policy, *broker)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    server = await asyncio.start_server(gate.handle, *listen)
    log.info("kafka gate on %s:%d in front of %s:%d, %d users", *listen, *broker, len(policy.users))
    async with server:
        await stop.wait()
    log.info("kafka gate stopped")


def _address(text: str) -> tuple[str, int]:
    host, _sep, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> None:
    """`python -m arbiter_tools.devstack.kafkagate --listen H:P --broker H:P --users FILE`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--listen", type=_address, required=True)
    parser.add_argument("--broker", type=_address, required=True)
    parser.add_argument("--users", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    asyncio.run(serve(Policy.read(args.users), args.listen, args.broker))


if __name__ == "__main__":
    main()
