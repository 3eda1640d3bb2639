"""Live changes of one aggregate (an arena, a tournament): a Redis pub/sub channel each, published after commit.

Any replica may serve a Watch stream for changes committed by another one. A stream holds nothing
the calls of the service need: one Redis connection per process (`WatchFeed`) is subscribed to the
channel of every aggregate some stream of the process watches, and hands each change to that
aggregate's audience, which completes it once (one read of the state, however many watch) and
queues it on each stream. A stream whose client reads more slowly than changes arrive is dropped
with RESOURCE_EXHAUSTED when its bounded queue is full, without slowing the others (its client
watches again and gets a fresh snapshot). New streams beyond the limits per aggregate
(WATCH_MAX_WATCHERS) and per process (WATCH_MAX_STREAMS) are refused with RESOURCE_EXHAUSTED and
a time to retry after. When the feed loses Redis every stream ends with UNAVAILABLE (clients watch
again) and the next watch connects anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeVar

import redis.asyncio as aioredis
from google.protobuf.message import DecodeError, Message
from prometheus_client import Counter
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import RedisError

from arbiter.kit.errors import ResourceExhausted, ServiceError, Unavailable
from arbiter.kit.metrics import Metrics, ServiceMetrics, combinations
from arbiter.kit.settings import DEFAULT_WATCH_MAX_QUEUED, DEFAULT_WATCH_MAX_STREAMS, DEFAULT_WATCH_MAX_WATCHERS

log = logging.getLogger(__name__)
# After these the aggregate never changes again: the stream ends.
FINAL_CHANGES = frozenset({"finished", "cancelled"})

MessageT = TypeVar("MessageT", bound=Message)
# Fills in, in place, the changes of one aggregate just heard (their state read once for all its streams).
Complete = Callable[[str, list[MessageT]], Awaitable[None]]

# ARGV: channel, message, channel, message... One command instead of a pipeline of PUBLISH: redis-py
# packs and parses each pipelined command apart, which made announcing results about a twentieth
# of the pairing service's CPU under load (py-spy, 500 results/s).
_PUBLISH_ALL: Final = """
for i = 1, #ARGV, 2 do redis.call('PUBLISH', ARGV[i], ARGV[i + 1]) end
return 1
"""
# Messages per script call: a call blocks Redis while it runs, so a huge batch is cut in slices.
_MESSAGES_PER_CALL: Final = 500
# A refused watch is told to come back after a while in this range (ms): spread, so that the viewers
# of a popular competition refused together do not all come back together.
_RETRY_AFTER_MS: Final = (5_000, 10_000)
# Aggregates whose heard changes are completed at once: each completion reads the state (PostgreSQL,
# Redis), and however many aggregates are watched, their reads never hold more connections than this.
_COMPLETING_AT_ONCE: Final = 2
# Streams handed a change in one turn of the event loop.
_STREAMS_PER_TURN: Final = 20
# The longest a slice of streams waits for the foreground work to end (see Foreground).
_YIELD_SECONDS: Final = 0.005
# The feed pings Redis after this long without a word from it, and gives the connection up when the
# answer takes as long again: a server that vanished without closing the socket is noticed too.
_PING_SECONDS: Final = 10.0
# How long the feed waits for Redis to confirm a subscription before giving the connection up.
_ANSWER_SECONDS: Final = 5.0
# After failing to connect, watches are refused at once for this long instead of each trying again.
_RECONNECT_SECONDS: Final = 1.0


# Why a stream was refused (the setting whose limit it met) or ended early.
REFUSAL_LIMITS: Final = ("max_watchers", "max_streams")
DROP_REASONS: Final = ("behind", "redis", "unreadable")


@dataclass(frozen=True)
class WatchMetrics(ServiceMetrics):
    """Watch streams refused by a limit, and dropped, per process (the streams open: arbiter_grpc_streams_open)."""

    refused: Counter
    dropped: Counter

    @classmethod
    def create(cls, metrics: Metrics) -> WatchMetrics:
        """Register the series on the service's registry."""
        return cls(
            service=metrics.service,
            refused=metrics.counter(
                "arbiter_watch_refused_total",
                "Watch streams refused by a limit (max_watchers: per aggregate, max_streams: per process)",
                ("limit",), known=combinations(REFUSAL_LIMITS),
            ),
            dropped=metrics.counter(
                "arbiter_watch_dropped_total",
                "Watch streams ended early (behind: the client read too slowly, redis: the feed lost Redis,"
                " unreadable: the state sent with a change could not be read)",
                ("reason",), known=combinations(DROP_REASONS),
            ),
        )


class Foreground:
    """The work Watch streams give way to: the calls being served, and what else a service counts in.

    One event loop runs both, so every change sent to a thousand streams is loop time a call
    waits for. The streams of an aggregate are handed a change a slice at a time, each slice once
    nothing counted here is under way or after `_YIELD_SECONDS`: a call meets at most a slice of
    streams at work, and under calls that never stop the streams still get their changes, in
    larger batches.
    """

    def __init__(self) -> None:
        self._working = 0
        self._quiet = asyncio.Event()
        self._quiet.set()

    @property
    def working(self) -> int:
        """Pieces of foreground work under way."""
        return self._working

    @contextlib.contextmanager
    def at_work(self) -> Iterator[None]:
        """Count the work of the `with` block in."""
        self._working += 1
        self._quiet.clear()
        try:
            yield
        finally:
            self._working -= 1
            if not self._working:
                self._quiet.set()

    async def quiet(self) -> None:
        """Return once no foreground work is under way, or after `_YIELD_SECONDS` of waiting for it."""
        if self._working:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._quiet.wait(), _YIELD_SECONDS)


def _retry_after_ms() -> int:
    return random.randint(*_RETRY_AFTER_MS)


def _refusal(message: str) -> ResourceExhausted:
    wait_ms = _retry_after_ms()
    return ResourceExhausted(f"{message}; retry in {math.ceil(wait_ms / 1000)} s", retry_after_ms=wait_ms)


class Listener(Protocol):
    """What the feed hands a channel's messages to."""

    def hear(self, data: bytes) -> None:
        """One message published on the channel; must not block."""

    def lose(self, error: ServiceError, reason: str) -> None:
        """The channel will not be heard any more."""


class WatchFeed:
    """One Redis connection per process, subscribed to every channel a Watch stream of the process listens to.

    A single reader task hands each message to its channel's listener without waiting for anyone.
    Subscriptions are confirmed before `join` returns, so that a change committed after it is heard.
    """

    def __init__(self, connect: Callable[[], AbstractConnection], *, max_streams: int = DEFAULT_WATCH_MAX_STREAMS,
                 metrics: WatchMetrics | None = None, foreground: Foreground | None = None) -> None:
        if max_streams < 1:
            raise ValueError(f"watch limits must be at least 1, not max_streams={max_streams}")
        self.max_streams = max_streams
        self.metrics = metrics
        self.foreground = foreground or Foreground()
        self.streams = 0
        self._connect = connect
        self._connection: AbstractConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._listeners: dict[bytes, Listener] = {}
        # Per channel, one future per SUBSCRIBE sent and not yet confirmed, in order: Redis confirms in order.
        self._acks: dict[bytes, deque[asyncio.Future[bool]]] = {}
        self._connecting = asyncio.Lock()
        self._failed_at = -math.inf
        self._tasks: set[asyncio.Task[Any]] = set()

    def admit(self) -> None:
        """Count one more stream of this process, or refuse it with RESOURCE_EXHAUSTED at the limit."""
        if self.streams >= self.max_streams:
            if self.metrics is not None:
                self.metrics.refused.labels(self.metrics.service, "max_streams").inc()
            raise _refusal(f"this replica serves as many Watch streams as it may ({self.max_streams})")
        self.streams += 1

    def release(self) -> None:
        """One stream of this process ended."""
        self.streams -= 1

    async def join(self, channel: bytes, listener: Listener) -> None:
        """Hand `channel`'s messages to `listener` from now on; returns once Redis confirmed the subscription."""
        connection = await self._connected()
        self._listeners[channel] = listener
        ack: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._acks.setdefault(channel, deque()).append(ack)
        await self._send(connection, "SUBSCRIBE", channel)
        done, _ = await asyncio.wait((ack,), timeout=_ANSWER_SECONDS)
        if not done:
            await self._abandon(connection, TimeoutError(f"no subscription confirmed in {_ANSWER_SECONDS} s"))
        if not done or not ack.result():
            raise Unavailable("the live changes could not be subscribed to (Redis did not answer); try again")

    async def leave(self, channel: bytes, listener: Listener) -> None:
        """Stop handing `channel`'s messages to `listener` and unsubscribe, unless another listener took it over."""
        if self._listeners.get(channel) is not listener:
            return
        del self._listeners[channel]
        connection = self._connection
        if connection is not None:
            await self._send(connection, "UNSUBSCRIBE", channel)

    def in_background(self, work: Awaitable[Any]) -> None:
        """Run `work` without waiting for it (kept referenced until done)."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """End every stream (UNAVAILABLE) and close the connection."""
        connection = self._connection
        if connection is not None:
            await self._abandon(connection, None)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connected(self) -> AbstractConnection:
        if self._connection is not None:
            return self._connection
        async with self._connecting:
            if self._connection is not None:
                return self._connection
            if time.monotonic() - self._failed_at < _RECONNECT_SECONDS:
                raise Unavailable("the live changes cannot be followed now (Redis is unreachable); try again")
            connection = self._connect()
            try:
                await connection.connect()
            except (RedisError, OSError) as error:
                self._failed_at = time.monotonic()
                log.warning("watch feed could not connect to Redis", extra={"error": repr(error)})
                raise Unavailable("the live changes cannot be followed now (Redis is unreachable); try again") from None
            self._connection = connection
            self._reader = asyncio.create_task(self._read(connection), name="watch feed")
            return connection

    async def _send(self, connection: AbstractConnection, *command: str | bytes) -> None:
        if self._connection is not connection or not connection.is_connected:
            raise Unavailable("the live changes are not followed any more (Redis was lost); try again")
        # Shielded: a send cut short by a caller's cancellation would leave half a command on the
        # connection every stream shares.
        sending = asyncio.ensure_future(self._send_now(connection, command))
        if not await asyncio.shield(sending):
            raise Unavailable("the live changes are not followed any more (Redis was lost); try again")

    async def _send_now(self, connection: AbstractConnection, command: tuple[str | bytes, ...]) -> bool:
        try:
            await connection.send_command(*command, check_health=False)
        except (RedisError, OSError) as error:
            await self._abandon(connection, error)
            return False
        return True

    async def _read(self, connection: AbstractConnection) -> None:
        pinged = False
        try:
            while True:
                # Under RESP3 (redis-py's default) what Redis publishes comes as push messages, read only when asked.
                reply = await connection.read_response(timeout=_PING_SECONDS, push_request=True)
                if reply is None:
                    if pinged:
                        raise TimeoutError(f"Redis did not answer a ping in {_PING_SECONDS} s")
                    pinged = True
                    await connection.send_command("PING", check_health=False)
                    continue
                pinged = False
                self._dispatch(reply)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # whatever broke the connection ends every stream; the next watch reconnects
            await self._abandon(connection, error)

    def _dispatch(self, reply: Any) -> None:
        if not isinstance(reply, list) or len(reply) < 3:
            return  # PONG and the like
        kind, channel = reply[0], reply[1]
        if kind == b"message":
            listener = self._listeners.get(channel)
            if listener is not None:
                listener.hear(reply[2])
        elif kind == b"subscribe":
            acks = self._acks.get(channel)
            if acks:
                ack = acks.popleft()
                if not acks:
                    del self._acks[channel]
                if not ack.done():
                    ack.set_result(True)

    async def _abandon(self, connection: AbstractConnection, error: BaseException | None) -> None:
        """Give up `connection` (`error` None: the feed is closing): every listener loses its channel."""
        if self._connection is not connection:
            return
        self._connection = None
        if error is not None:
            log.warning("watch feed lost Redis; its streams end", extra={"error": repr(error),
                                                                        "channels": len(self._listeners)})
        listeners, self._listeners = self._listeners, {}
        acks, self._acks = self._acks, {}
        for pending in acks.values():
            for ack in pending:
                if not ack.done():
                    ack.set_result(False)
        lost = Unavailable("the live changes stopped (this replica lost Redis); watch again for a fresh snapshot")
        for listener in listeners.values():
            listener.lose(lost, "redis")
        reader, self._reader = self._reader, None
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        with contextlib.suppress(RedisError, OSError):
            await connection.disconnect(nowait=True)


class Subscription(Generic[MessageT]):
    """The changes of one aggregate from the moment of subscribing, for a bounded time."""

    def __init__(self, hub: WatchHub[MessageT], key: str, audience: _Audience[MessageT], max_seconds: float) -> None:
        self._hub = hub
        self._key = key
        self._audience = audience
        self._pending: deque[MessageT] = deque()
        self._ready = asyncio.Event()
        self._failure: ServiceError | None = None
        self._closed = False
        self._expired = False
        # One timer for the stream's whole life rather than a timeout armed on every wait: a wait per
        # change sent, times every stream.
        self._timer = asyncio.get_running_loop().call_later(max_seconds, self._expire)

    @property
    def dropped(self) -> bool:
        """Whether the stream has ended with an error (too far behind, or Redis lost)."""
        return self._failure is not None

    async def next(self) -> MessageT | None:
        """The next change, or None when the time limit is reached; raises once the stream was dropped."""
        while True:
            if self._failure is not None:
                # One error may end a thousand streams: each raise starts a traceback of its own.
                raise self._failure.with_traceback(None)
            if self._expired:
                return None
            if self._pending:
                return self._pending.popleft()
            self._ready.clear()
            await self._ready.wait()

    def _expire(self) -> None:
        self._expired = True
        self._ready.set()

    async def close(self) -> None:
        """Stop listening; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._timer.cancel()
        self._hub._release(self._key)
        self._audience.remove(self)

    def deliver(self, changes: list[MessageT]) -> None:
        """Queue changes for the client; drop the stream instead when it is too far behind."""
        if self._failure is not None or self._closed:
            return
        max_queued = self._hub.max_queued
        if len(self._pending) + len(changes) > max_queued:
            self.drop(_refusal(
                f"the watch of {self._hub.noun} {self._key} fell more than {max_queued} changes behind its client "
                f"and was stopped; watch again for a fresh snapshot"
            ), "behind")
            # Off the audience at once: nothing more is kept for a client that is not reading.
            self._audience.remove(self)
            return
        self._pending.extend(changes)
        self._ready.set()

    def drop(self, error: ServiceError, reason: str) -> None:
        """End the stream with `error`, raised by the next `next`."""
        if self._failure is not None:
            return
        self._failure = error
        self._pending.clear()
        self._ready.set()
        metrics = self._hub.feed.metrics if self._hub.feed is not None else None
        if metrics is not None:
            metrics.dropped.labels(metrics.service, reason).inc()


class _Audience(Generic[MessageT]):
    """The streams of one aggregate on this process, and the task that hands them what the feed heard."""

    def __init__(self, hub: WatchHub[MessageT], feed: WatchFeed, key: str, complete: Complete[MessageT] | None) -> None:
        self.hub = hub
        self.feed = feed
        self.key = key
        self.channel = (hub.channel_prefix + key).encode()
        self.complete = complete
        self.streams: dict[Subscription[MessageT], None] = {}
        self.ended = False
        self._heard: deque[bytes] = deque()
        self._wake = asyncio.Event()
        self._joining = asyncio.ensure_future(self._join())
        self._fan_out_task = asyncio.create_task(self._fan_out(), name=f"watch {hub.channel_prefix}{key}")

    async def joined(self) -> None:
        """Wait until the feed listens to the aggregate's channel; UNAVAILABLE if it cannot."""
        if not await asyncio.shield(self._joining):
            raise Unavailable(f"the live changes of {self.hub.noun} {self.key} cannot be followed now "
                              f"(Redis is unreachable); try again")

    def add(self, stream: Subscription[MessageT]) -> None:
        """Hand `stream` every change heard from now on."""
        self.streams[stream] = None

    def remove(self, stream: Subscription[MessageT]) -> None:
        """Stop handing `stream` changes; the last one out ends the audience."""
        self.streams.pop(stream, None)
        if not self.streams:
            self._end()

    def hear(self, data: bytes) -> None:
        """A change published on the aggregate's channel (from the feed's reader: never waits)."""
        if self.ended:
            return
        if len(self._heard) >= self.hub.max_queued:
            # The state reads of the changes cannot keep up: the streams start again from a snapshot.
            self.lose(_refusal(
                f"the changes of {self.hub.noun} {self.key} came faster than this replica could send them; "
                f"watch again for a fresh snapshot"
            ), "behind")
            return
        self._heard.append(data)
        self._wake.set()

    def lose(self, error: ServiceError, reason: str) -> None:
        """End every stream of the aggregate with `error`."""
        for stream in list(self.streams):
            stream.drop(error, reason)
        self.streams.clear()
        self._end()

    def _end(self) -> None:
        if self.ended:
            return
        self.ended = True
        if self.hub._audiences.get(self.key) is self:
            del self.hub._audiences[self.key]
        if self._fan_out_task is not asyncio.current_task():
            self._fan_out_task.cancel()
        self.feed.in_background(self._leave())

    async def _leave(self) -> None:
        # Only once the subscription was confirmed, or the UNSUBSCRIBE could pass the SUBSCRIBE's answer.
        await asyncio.wait((self._joining,))
        with contextlib.suppress(ServiceError):
            await self.feed.leave(self.channel, self)

    async def _join(self) -> bool:
        try:
            await self.feed.join(self.channel, self)
        except ServiceError:
            # Its streams never began: their subscribe raises UNAVAILABLE (see `joined`).
            self.streams.clear()
            self._end()
            return False
        return True

    async def _fan_out(self) -> None:
        message_type = self.hub.message_type
        while not self.ended:
            await self._wake.wait()
            self._wake.clear()
            heard, self._heard = self._heard, deque()
            changes = []
            for data in heard:
                change = message_type()
                try:
                    change.ParseFromString(data)
                except DecodeError:
                    log.warning("unreadable watch message skipped", extra={f"{self.hub.noun}_id": self.key})
                    continue
                changes.append(change)
            if not changes:
                continue
            if self.complete is not None:
                try:
                    async with self.hub._completing:
                        await self.complete(self.key, changes)
                except Exception:  # logged once here rather than once per stream
                    log.exception("reading the state for a watch change failed; its streams end",
                                  extra={f"{self.hub.noun}_id": self.key})
                    self.lose(Unavailable(f"the state of {self.hub.noun} {self.key} could not be read; "
                                          f"watch again"), "unreadable")
                    return
            # A slice at a time, each once the foreground work lets it (see Foreground): a call waits
            # behind a slice of streams writing, never behind a thousand.
            streams = list(self.streams)
            for start in range(0, len(streams), _STREAMS_PER_TURN):
                await self.feed.foreground.quiet()
                if start:
                    await asyncio.sleep(0)
                for stream in streams[start:start + _STREAMS_PER_TURN]:
                    stream.deliver(changes)


class WatchHub(Generic[MessageT]):
    """Publishes and subscribes to one kind of change message, a channel per aggregate.

    A service subclasses it naming `channel_prefix`, `message_type` and `noun` (how people call an
    aggregate: "arena", "tournament"), and adds a `publish` that builds its own change messages.
    A hub without a feed only publishes.
    """

    channel_prefix: str
    message_type: type[MessageT]
    noun: str

    def __init__(self, redis: aioredis.Redis, feed: WatchFeed | None = None, *,
                 max_queued: int = DEFAULT_WATCH_MAX_QUEUED, max_watchers: int = DEFAULT_WATCH_MAX_WATCHERS) -> None:
        if max_queued < 1 or max_watchers < 1:
            raise ValueError(f"watch limits must be at least 1, not max_queued={max_queued}, "
                             f"max_watchers={max_watchers}")
        self.redis = redis
        self.feed = feed
        self.max_queued = max_queued
        self.max_watchers = max_watchers
        self._watchers: dict[str, int] = {}
        self._audiences: dict[str, _Audience[MessageT]] = {}
        self._completing = asyncio.Semaphore(_COMPLETING_AT_ONCE)
        self._publish_all = redis.register_script(_PUBLISH_ALL)

    async def publish_message(self, key: str, message: MessageT) -> None:
        """Announce a committed change; best effort (watchers re-read the state they are sent)."""
        try:
            await self.redis.publish(self.channel_prefix + key, message.SerializeToString())
        except (RedisError, OSError) as error:
            log.warning("watch publish failed", extra={f"{self.noun}_id": key, "error": repr(error)})

    async def publish_messages(self, messages: Iterable[tuple[str, MessageT]]) -> None:
        """Announce many committed changes, (aggregate id, message) each, in one script call; best effort."""
        args = [part for key, message in messages
                for part in (self.channel_prefix + key, message.SerializeToString())]
        per_call = 2 * _MESSAGES_PER_CALL
        try:
            for start in range(0, len(args), per_call):
                await self._publish_all(args=args[start:start + per_call])
        except (RedisError, OSError) as error:
            log.warning("watch publish failed", extra={"changes": len(args) // 2, "error": repr(error)})

    async def subscribe(self, key: str, max_seconds: float,
                        complete: Complete[MessageT] | None = None) -> Subscription[MessageT]:
        """Start listening to one aggregate's changes (returns once subscribed).

        `complete` fills in the changes heard before they are queued on the streams, once for all
        the aggregate's streams of this process; the first stream of the aggregate sets it.
        """
        feed = self.feed
        if feed is None:
            raise RuntimeError(f"this {self.noun} hub only publishes: it was made without a WatchFeed")
        watchers = self._watchers.get(key, 0)
        if watchers >= self.max_watchers:
            if feed.metrics is not None:
                feed.metrics.refused.labels(feed.metrics.service, "max_watchers").inc()
            raise _refusal(f"{self.noun} {key} has as many live watches as one replica serves ({watchers})")
        feed.admit()
        # Counted before the first await, so that concurrent calls cannot all pass the bounds.
        self._watchers[key] = watchers + 1
        audience = self._audiences.get(key)
        if audience is None:
            audience = self._audiences[key] = _Audience(self, feed, key, complete)
        subscription = Subscription(self, key, audience, max_seconds)
        audience.add(subscription)
        try:
            await audience.joined()
        except BaseException:
            await subscription.close()
            raise
        return subscription

    def watchers(self, key: str) -> int:
        """Live watches of one aggregate on this replica."""
        return self._watchers.get(key, 0)

    def _release(self, key: str) -> None:
        remaining = self._watchers.get(key, 0) - 1
        if remaining > 0:
            self._watchers[key] = remaining
        else:
            self._watchers.pop(key, None)
        if self.feed is not None:
            self.feed.release()
