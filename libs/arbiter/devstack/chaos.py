"""Fault injection for the chaos suite (`make chaos`): kills, pauses, flushes, storms, offset rewinds.

Everything here acts on a running `SystemStack` or on the infrastructure it uses, and counts
what it did in `FaultCounts`, so that a suite can print its figures at the end.

    driver = KillDriver(stack, every=(3.0, 6.0), seed=7)
    driver.start()            # a background thread: SIGKILL a random service, restart it, repeat
    ...                       # play a scenario
    driver.stop()             # every killed service is running again when this returns
    driver.counts.kills       # faults injected

Helpers: `suspend` / `resume` / `paused` (SIGSTOP / SIGCONT of a process group), `flush_redis`,
`connection_storm` (hundreds of PostgreSQL connections held open), `redeliver_in_order` (the
stopped services get consumer groups that committed nothing: every event is delivered again, in
order), `rewind_group` (commit the earliest offsets for a consumer group whose members are
stopped; see `redeliver_in_order` for why the suite does not use it), `replay_shuffled` (a
replaying proxy: every record published again, same key, value and headers, in a seeded random
order: every event delivered again, out of order), `read_topic` (every record of a topic from
the beginning), `group_lag`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import asyncpg
import redis
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from arbiter.devstack.processes import ManagedProcess
from arbiter.devstack.stack import SERVICE_GROUPS, SERVICE_NAMES, SystemStack
from arbiter.kit.events import Topic
from arbiter.kit.kafka import topic_partitions


@dataclass
class FaultCounts:
    """What was injected, for the suite's figures."""

    kills: int = 0
    restarts: int = 0
    pauses: int = 0
    paused_seconds: float = 0.0
    redis_flushes: int = 0
    connection_storms: int = 0
    storm_connections: int = 0
    storm_refused: int = 0
    rewinds: int = 0
    # In order: fresh consumer groups (`redeliver_in_order`) or an offset rewind (`rewind_group`);
    # out of order: a shuffled replay (`replay_shuffled`).
    events_redelivered: int = 0
    replays: int = 0
    events_replayed_out_of_order: int = 0
    killed: dict[str, int] = field(default_factory=dict)

    @property
    def faults(self) -> int:
        """Faults injected, all kinds together."""
        return sum(self.by_kind().values())

    def by_kind(self) -> dict[str, int]:
        """Faults injected per kind (a rewind or a replay counts once, whatever it redelivered)."""
        return {"service_kills": self.kills, "broker_pauses": self.pauses, "redis_flushes": self.redis_flushes,
                "postgres_storms": self.connection_storms, "in_order_redeliveries": self.rewinds,
                "shuffled_replays": self.replays}

    def add(self, other: FaultCounts) -> None:
        """Add `other`'s counts to these."""
        for name, value in asdict(other).items():
            if name == "killed":
                for service, n in value.items():
                    self.killed[service] = self.killed.get(service, 0) + n
            else:
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, Any]:
        """Plain data, with the total."""
        return {"faults": self.faults, "by_kind": self.by_kind(), **asdict(self)}


class KillDriver:
    """Every `every` seconds (uniform, seeded) SIGKILL a random service of `stack` and restart it.

    Runs in a thread (the stack's calls block). A killed service stays down `down` seconds
    (uniform) before it is started again. With `wait=True` the driver then waits until it is
    SERVING before the next kill; with `wait=False` it does not (a service may be killed again
    while it starts). `stop()` returns when every service serves again.
    """

    def __init__(self, stack: SystemStack, *, every: tuple[float, float] = (3.0, 6.0), seed: int = 1,
                 names: Sequence[str] | None = None, down: tuple[float, float] = (0.0, 1.0),
                 serving_timeout: float = 60.0, wait: bool = True) -> None:
        self.stack = stack
        self.wait = wait
        self.every = every
        self.down = down
        self.rng = random.Random(seed)
        self.names = list(names or [n for n in SERVICE_NAMES if n in stack.services])
        self.serving_timeout = serving_timeout
        self.counts = FaultCounts()
        self.log: list[tuple[float, str]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> KillDriver:
        """Start killing in the background."""
        self._thread = threading.Thread(target=self._loop, name="chaos-kill-driver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop killing; returns when the last killed service is running again."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.serving_timeout + 30)
        try:
            self.stack.wait_serving(timeout=self.serving_timeout, names=self.names)
        except Exception as error:
            self.errors.append(f"not serving after the faults: {type(error).__name__}: {error}")

    def kill_one(self, name: str | None = None) -> str:
        """SIGKILL one service (random unless named), restart it, wait until it serves; return its name."""
        name = name or self.rng.choice(self.names)
        started = time.monotonic()
        self.stack.kill_service(name)
        self.counts.kills += 1
        self.counts.killed[name] = self.counts.killed.get(name, 0) + 1
        time.sleep(self.rng.uniform(*self.down))
        self.stack.start_service(name)
        self.counts.restarts += 1
        if self.wait:
            self.stack.wait_serving(timeout=self.serving_timeout, names=[name])
            self.log.append((time.monotonic(), f"killed {name}, serving again after {time.monotonic() - started:.1f} s"))
        else:
            self.log.append((time.monotonic(), f"killed {name}, restarted"))
        return name

    def _loop(self) -> None:
        while not self._stop.wait(self.rng.uniform(*self.every)):
            try:
                self.kill_one()
            except Exception as error:  # a service that does not come back is a finding, not a crash here
                self.errors.append(f"{type(error).__name__}: {error}")


# -- SIGSTOP / SIGCONT --------------------------------------------------------------------


def suspend(process: ManagedProcess) -> None:
    """SIGSTOP the process group of `process`."""
    os.killpg(process.pid, signal.SIGSTOP)


def resume(process: ManagedProcess) -> None:
    """SIGCONT the process group of `process`."""
    os.killpg(process.pid, signal.SIGCONT)


@contextlib.contextmanager
def paused(process: ManagedProcess, counts: FaultCounts | None = None) -> Iterator[None]:
    """SIGSTOP `process` for the body of the with-block, SIGCONT after (also on errors)."""
    started = time.monotonic()
    suspend(process)
    try:
        yield
    finally:
        resume(process)
        if counts is not None:
            counts.pauses += 1
            counts.paused_seconds += time.monotonic() - started


# -- Redis, PostgreSQL ----------------------------------------------------------------------


def flush_redis(url: str, counts: FaultCounts | None = None) -> None:
    """FLUSHALL: every key of every database of the server at `url` is gone."""
    client = redis.Redis.from_url(url)
    try:
        client.flushall()
    finally:
        client.close()
    if counts is not None:
        counts.redis_flushes += 1


async def connection_storm(database_url: str, connections: int = 300, hold_seconds: float = 3.0,
                           counts: FaultCounts | None = None) -> tuple[int, int]:
    """Open `connections` PostgreSQL connections at once and hold them; return (opened, refused).

    Past the server's max_connections the rest are refused ("too many clients"), and so is
    every service that needs a new connection meanwhile: that is the fault.
    """

    async def one() -> asyncpg.Connection | None:
        try:
            return await asyncpg.connect(database_url, timeout=10)
        except (OSError, asyncpg.PostgresError, asyncio.TimeoutError):
            return None

    opened = [c for c in await asyncio.gather(*(one() for _ in range(connections))) if c is not None]
    try:
        # Keep them busy, not just open.
        await asyncio.gather(*(c.execute("SELECT pg_sleep($1)", hold_seconds) for c in opened),
                             return_exceptions=True)
    finally:
        await asyncio.gather(*(c.close() for c in opened), return_exceptions=True)
    refused = connections - len(opened)
    if counts is not None:
        counts.connection_storms += 1
        counts.storm_connections += len(opened)
        counts.storm_refused += refused
    return len(opened), refused


# -- Kafka ---------------------------------------------------------------------------------


def _topic_names(topics: Iterable[str | Topic]) -> list[str]:
    return [t.name if isinstance(t, Topic) else t for t in topics]


async def rewind_group(bootstrap: str, group_id: str, topics: Iterable[str | Topic],
                       counts: FaultCounts | None = None, timeout: float = 60.0) -> int:
    """Commit the earliest offsets for `group_id` on `topics`; return how many events will be delivered again.

    The group's members must be stopped. The commit comes from members of the group: tansu
    refuses commits from outside (generation -1) even for an empty group. One member per topic:
    tansu can leave a group all of whose members left wedged for the next joiner (a lone member
    subscribed to all four of pairing's topics waited for minutes), and members of one topic
    each have always been handed their partitions within seconds in our runs.
    """
    names = _topic_names(topics)
    members = [AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group_id, enable_auto_commit=False,
                                auto_offset_reset="earliest", max_poll_records=1) for _ in names]
    redelivered = 0
    try:
        for member, name in zip(members, names):
            await member.start()
            member.subscribe([name])
        wanted = [await topic_partitions(member, [name]) for member, name in zip(members, names)]
        deadline = time.monotonic() + timeout
        while any(set(m.assignment()) != set(w) for m, w in zip(members, wanted)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group_id} did not hand every partition of {names} over in {timeout:.0f} s"
                                   " (is the service stopped?)")
            await asyncio.gather(*(m.getmany(timeout_ms=200, max_records=1) for m in members))
        for member, partitions in zip(members, wanted):
            if not partitions:
                continue
            beginning = await member.beginning_offsets(partitions)
            for tp in partitions:
                committed = await member.committed(tp)
                redelivered += max(0, (committed or 0) - beginning[tp])
            await member.commit({tp: OffsetAndMetadata(beginning[tp], "") for tp in partitions})
    finally:
        await asyncio.gather(*(m.stop() for m in members), return_exceptions=True)
    if counts is not None:
        counts.rewinds += 1
        counts.events_redelivered += redelivered
    return redelivered


def group_prefix(stack: SystemStack) -> str:
    """What `stack`'s services prepend to their consumer group ids (KAFKA_GROUP_PREFIX)."""
    return stack.consumer_group("")


async def rewind_service(stack: SystemStack, name: str, counts: FaultCounts | None = None) -> int:
    """Rewind every consumer group of service `name` (stopped) to the beginning; return the events redelivered."""
    # Joining a group takes the broker a while (tansu: about 18 s): every group at once.
    found = await asyncio.gather(*(rewind_group(stack.kafka_bootstrap, stack.consumer_group(group), topics, counts)
                                   for group, topics in SERVICE_GROUPS[name].items()))
    return sum(found)


@contextlib.asynccontextmanager
async def _at_true_ends(bootstrap: str, group_id: str,
                        topics: Iterable[str | Topic]) -> AsyncIterator[tuple[AIOKafkaConsumer, dict[TopicPartition, int]]]:
    """A consumer of `group_id` holding every partition of `topics` (no group join), with their true ends."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group_id, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = await topic_partitions(consumer, _topic_names(topics))
        consumer.assign(partitions)
        yield consumer, await true_ends(consumer, partitions)
    finally:
        await consumer.stop()


async def group_lag(bootstrap: str, group_id: str, topics: Iterable[str | Topic]) -> int:
    """Records on `topics` not yet committed by `group_id`."""
    async with _at_true_ends(bootstrap, group_id, topics) as (consumer, ends):
        lag = 0
        for tp, end in ends.items():
            committed = await consumer.committed(tp)
            lag += max(0, end - (committed or 0))
        return lag


async def commit_at_ends(bootstrap: str, group_id: str, topics: Iterable[str | Topic]) -> dict[TopicPartition, int]:
    """Commit `group_id` at the true end of every partition of `topics`: it reads only what comes next.

    Returns those ends. A group that committed nothing reads from the beginning; one placed at the
    end skips the history of a broker that others used before.
    """
    async with _at_true_ends(bootstrap, group_id, topics) as (consumer, ends):
        await consumer.commit({tp: OffsetAndMetadata(end, "") for tp, end in ends.items()})
        return ends


async def redeliver_in_order(stack: SystemStack, tag: str, counts: FaultCounts | None = None) -> int:
    """Every event delivered again, in order: the (stopped) services of `stack` get consumer groups that
    have committed nothing (KAFKA_GROUP_PREFIX + `tag`), so once restarted they read every topic from
    the beginning; return how many events that delivers again.

    Rather than `rewind_group`: tansu can leave a group all of whose members left wedged for the next
    joiner, and a rewind makes every member leave (the pairing service, one consumer for four topics,
    then never became SERVING again). A group that never committed is what a rewind makes, too.
    """
    if "KAFKA_GROUP_PREFIX" in stack.environ:
        raise ValueError("KAFKA_GROUP_PREFIX is set in the stack's environment: its groups cannot be renewed")
    stack.kafka_group_prefix = f"{group_prefix(stack)}{tag}."
    consumer = AIOKafkaConsumer(bootstrap_servers=stack.kafka_bootstrap, enable_auto_commit=False)
    await consumer.start()
    total = 0
    try:
        for groups in SERVICE_GROUPS.values():
            for topics in groups.values():
                partitions = await topic_partitions(consumer, list(topics))
                if partitions:
                    consumer.assign(partitions)
                    total += sum((await true_ends(consumer, partitions)).values())
    finally:
        await consumer.stop()
    if counts is not None:
        counts.rewinds += 1
        counts.events_redelivered += total
    return total


async def wait_caught_up(bootstrap: str, name: str, timeout: float = 120.0, prefix: str = "") -> float:
    """Block until every consumer group of service `name` has committed every record; return the seconds.

    `prefix`: the system's KAFKA_GROUP_PREFIX (`group_prefix(stack)`).
    """
    started = time.monotonic()
    while True:
        lags = [await group_lag(bootstrap, prefix + g, t) for g, t in SERVICE_GROUPS[name].items()]
        if sum(lags) == 0:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{name} still {sum(lags)} records behind after {timeout:.0f} s")
        await asyncio.sleep(0.5)


async def _poll_quiet(consumer: AIOKafkaConsumer, quiet_polls: int = 2, timeout: float = 120.0) -> list[Any]:
    """Poll the assigned partitions until `quiet_polls` polls in a row bring nothing; return the records."""
    out: list[Any] = []
    quiet = 0
    deadline = time.monotonic() + timeout
    while quiet < quiet_polls:
        if time.monotonic() > deadline:
            raise TimeoutError(f"records kept coming for {timeout:.0f} s")
        batches = await consumer.getmany(timeout_ms=300, max_records=5000)
        found = [record for records in batches.values() for record in records]
        out += found
        quiet = 0 if found else quiet + 1
    return out


async def true_ends(consumer: AIOKafkaConsumer, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
    """Each partition's end offset (one past its last record), for `consumer`, which has them assigned.

    tansu's high watermark is one past the *first* record of the partition's last record batch
    (a batch of 5 gives 1, not 5), so `end_offsets` alone hides the rest of that batch: the
    last batch is read to find where it really ends.
    """
    ends = await consumer.end_offsets(list(partitions))
    for tp in partitions:
        consumer.seek(tp, max(0, ends[tp] - 1))
    for record in await _poll_quiet(consumer):
        tp = TopicPartition(record.topic, record.partition)
        ends[tp] = max(ends[tp], record.offset + 1)
    return ends


async def _read_records(bootstrap: str, names: Sequence[str]) -> list[Any]:
    """Every record of the topics `names` from the beginning to their current end, in (partition, offset) order."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        partitions = await topic_partitions(consumer, names)
        if not partitions:
            return []
        consumer.assign(partitions)
        ends = await true_ends(consumer, partitions)
        # seek(), not seek_to_beginning(): that one races the reset assign() starts (to the end, by
        # default), which now and then won and made a whole read come back empty.
        for tp, offset in (await consumer.beginning_offsets(partitions)).items():
            consumer.seek(tp, offset)
        records: list[Any] = []
        deadline = time.monotonic() + 120
        while True:
            records += [r for r in await _poll_quiet(consumer) if r.offset < ends[TopicPartition(r.topic, r.partition)]]
            short = [tp for tp in partitions if await consumer.position(tp) < ends[tp]]
            if not short:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read {sorted(map(str, short))} to the end")
    finally:
        await consumer.stop()
    order = {tp: n for n, tp in enumerate(partitions)}
    records.sort(key=lambda r: (order[TopicPartition(r.topic, r.partition)], r.offset))
    return records


async def read_topic(bootstrap: str, topic: Topic) -> list[Any]:
    """Every record of `topic` from the beginning to its current end, decoded, in (partition, offset) order."""
    out: list[Any] = []
    for record in await _read_records(bootstrap, [topic.name]):
        message = topic.message()
        message.ParseFromString(record.value)
        out.append(message)
    return out


async def read_raw(bootstrap: str, topics: Iterable[str | Topic]) -> list[tuple[str, bytes | None, bytes, list[Any]]]:
    """Every record of `topics` from the beginning to their current end: (topic, key, value, headers)."""
    return [(r.topic, r.key, r.value, list(r.headers)) for r in await _read_records(bootstrap, _topic_names(topics))]


async def replay_shuffled(bootstrap: str, topics: Iterable[str | Topic], seed: int,
                          counts: FaultCounts | None = None) -> int:
    """A replaying proxy: every record of `topics` published again, same key, value and headers, in a
    seeded random order across topics and partitions; return how many.

    Consumers see each event a second time, most of them after later events of the same game
    (a GameRequested after its GameFinished, a move after the result): nothing may change twice.
    """
    from aiokafka import AIOKafkaProducer

    records = await read_raw(bootstrap, topics)
    random.Random(seed).shuffle(records)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        sent = [await producer.send(topic, value, key=key, headers=headers) for topic, key, value, headers in records]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()
    if counts is not None:
        counts.replays += 1
        counts.events_replayed_out_of_order += len(records)
    return len(records)


def consumed_topics() -> list[str]:
    """Every topic some service consumes (SERVICE_GROUPS), sorted."""
    return sorted({t for groups in SERVICE_GROUPS.values() for topics in groups.values() for t in topics})


# -- invariants from the recorded events -------------------------------------------------------


@dataclass
class Recorded:
    """What the system published, read back from the topics."""

    requested: list[Any]
    started: list[Any]
    finished: list[Any]
    round_paired: list[Any]
    flagged: list[Any] = field(default_factory=list)
    abandoned: list[Any] = field(default_factory=list)

    @classmethod
    async def read(cls, bootstrap: str) -> Recorded:
        """Every GameRequested, GameStarted, GameFinished and RoundPaired ever published on `bootstrap`."""
        from arbiter.kit import events

        return cls(await read_topic(bootstrap, events.GAME_REQUESTED), await read_topic(bootstrap, events.GAME_STARTED),
                   await read_topic(bootstrap, events.GAME_FINISHED), await read_topic(bootstrap, events.ROUND_PAIRED),
                   await read_topic(bootstrap, events.CLOCK_FLAGGED), await read_topic(bootstrap, events.GAME_ABANDONED))

    def first_finished(self) -> dict[str, Any]:
        """The first GameFinished of each game id."""
        out: dict[str, Any] = {}
        for event in self.finished:
            out.setdefault(event.game_id, event)
        return out


def _content(message: Any) -> bytes:
    copy = type(message)()
    copy.CopyFrom(message)
    copy.ClearField("meta")
    return copy.SerializeToString(deterministic=True)


def _seconds(ts: Any) -> float:
    return ts.seconds + ts.nanos / 1e9


def game_differences(recorded: Recorded) -> list[str]:
    """No game requested twice, no player in two games, every requested game finished, one result per game."""
    from arbiter.contracts import common_pb2 as common

    problems: list[str] = []
    contents: dict[str, set[bytes]] = {}
    for event in recorded.requested:
        contents.setdefault(event.game_id, set()).add(_content(event))
    for game_id, variants in sorted(contents.items()):
        if len(variants) > 1:
            problems.append(f"game {game_id} requested {len(variants)} times with different content")
    requests = {e.game_id: e for e in recorded.requested}
    boards: dict[tuple[str, int, frozenset[str]], set[str]] = {}
    for event in requests.values():
        if event.competition.kind == common.COMPETITION_KIND_TOURNAMENT:
            key = (event.competition.id, event.competition.round, frozenset((event.white_id, event.black_id)))
            boards.setdefault(key, set()).add(event.game_id)
    for (competition, round_, players), ids in sorted(boards.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if len(ids) > 1:  # a home-and-away pairing would be 2: the chaos scenarios have none
            problems.append(f"tournament {competition} round {round_}: {sorted(players)} requested as {sorted(ids)}")
    results: dict[str, set[tuple[int, int]]] = {}
    for event in recorded.finished:
        results.setdefault(event.game_id, set()).add((event.result, event.termination))
    for game_id, outcomes in sorted(results.items()):
        if len(outcomes) > 1:
            problems.append(f"game {game_id} finished {len(outcomes)} ways: {sorted(outcomes)}")
    finished = recorded.first_finished()
    # The clock's word and the play site's word on one game must agree (both are final words).
    for flag in recorded.flagged:
        end = finished.get(flag.game_id)
        if end is None:
            continue
        loser_won = (end.result == common.GAME_RESULT_WHITE_WINS and flag.loser_id == end.white_id) or (
            end.result == common.GAME_RESULT_BLACK_WINS and flag.loser_id == end.black_id)
        if loser_won or end.result == common.GAME_RESULT_DRAW:
            problems.append(f"game {flag.game_id}: clock.flagged says {flag.loser_id} lost, game.finished says "
                            f"{common.GameResult.Name(end.result)} by {common.Termination.Name(end.termination)}")
    for gone in recorded.abandoned:
        end = finished.get(gone.game_id)
        if end is not None and end.result != common.GAME_RESULT_BOTH_LOSE:
            problems.append(f"game {gone.game_id}: game.abandoned, but game.finished says "
                            f"{common.GameResult.Name(end.result)} by {common.Termination.Name(end.termination)}")
    flags: dict[str, list[Any]] = {}
    for flag in recorded.flagged:
        flags.setdefault(flag.game_id, []).append(flag)
    per_player: dict[str, list[tuple[float, float, str]]] = {}
    for game_id, request in requests.items():
        if request.competition.kind == common.COMPETITION_KIND_CASUAL:
            continue  # T-18's casual games overlap on purpose
        end = finished.get(game_id)
        if end is None:
            problems.append(f"game {game_id} ({request.white_id} - {request.black_id}) requested, never finished")
            continue
        # The game is over at its first final word: a flag or a double absence may come before the result.
        over = min([_seconds(end.finished_at)] + [_seconds(f.flagged_at) for f in flags.get(game_id, ())]
                   + [_seconds(a.abandoned_at) for a in recorded.abandoned if a.game_id == game_id])
        span = (_seconds(request.requested_at), over, game_id)
        for player in (request.white_id, request.black_id):
            per_player.setdefault(player, []).append(span)
    for player, spans in sorted(per_player.items()):
        spans.sort()
        for before, after in zip(spans, spans[1:]):
            if after[0] < before[1]:
                problems.append(f"{player} in two games at once: {before[2]} (until {before[1]:.1f}) and "
                                f"{after[2]} (requested {after[0]:.1f})")
    return problems


_POINTS = {1: (2, 0), 2: (0, 2), 3: (1, 1), 4: (0, 0)}  # GAME_RESULT_WHITE_WINS, BLACK_WINS, DRAW, BOTH_LOSE


def tournament_points(recorded: Recorded, tournament_id: str) -> dict[str, int]:
    """Points per entrant from the recorded results and byes (T-7, T-8)."""
    points: dict[str, int] = {}
    for game_id, event in recorded.first_finished().items():
        if event.competition.id != tournament_id:
            continue
        white, black = _POINTS.get(event.result, (0, 0))
        points[event.white_id] = points.get(event.white_id, 0) + white
        points[event.black_id] = points.get(event.black_id, 0) + black
    byes = {e.round: e.bye_id for e in recorded.round_paired if e.tournament_id == tournament_id and e.bye_id}
    for entrant in byes.values():
        points[entrant] = points.get(entrant, 0) + 2
    return points


def arena_leaderboard(recorded: Recorded, arena_id: str, players: Iterable[str] = ()) -> list[Any]:
    """The arena leaderboard recomputed by the pure rules from the recorded results in finish order."""
    from arbiter.competition.arena_scoring import ArenaGame, ArenaResult, recompute_leaderboard

    by_result = {1: ArenaResult.WHITE_WON, 2: ArenaResult.BLACK_WON, 3: ArenaResult.DRAW, 4: ArenaResult.BOTH_LOST}
    games = sorted((e for e in recorded.first_finished().values() if e.competition.id == arena_id),
                   key=lambda e: (_seconds(e.finished_at), e.game_id))
    return recompute_leaderboard([ArenaGame(e.white_id, e.black_id, by_result[e.result], e.white_boosted,
                                            e.black_boosted) for e in games], players)


def expected_ratings(recorded: Recorded) -> dict[tuple[str, int, str], Any]:
    """(variant, speed, player) -> PlayerState: every rated game replayed in canonical order (R-5)."""
    from arbiter.rating.ledger import replay_in_order
    from services.rating.games import judge

    pools: dict[tuple[str, int], list[Any]] = {}
    for event in recorded.first_finished().values():
        verdict = judge(event)
        if verdict.game is not None and verdict.pool is not None:
            pools.setdefault((verdict.pool.variant, verdict.pool.speed), []).append(verdict.game)
    out: dict[tuple[str, int, str], Any] = {}
    for (variant, speed), games in pools.items():
        for player, state in replay_in_order(games).items():
            out[(variant, speed, player)] = state
    return out


async def rating_differences(database_url: str, recorded: Recorded, tolerance: float = 1e-6) -> list[str]:
    """The rating service's `ratings` table against `expected_ratings`."""
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch("SELECT variant, speed, player_id, rating, deviation, volatility, games "
                                      "FROM rating.ratings")
    finally:
        await connection.close()
    stored = {(r["variant"], r["speed"], r["player_id"]): r for r in rows}
    expected = expected_ratings(recorded)
    problems = [f"rating of {key} stored, no rated game recorded" for key in sorted(set(stored) - set(expected))]
    problems += [f"rating of {key} missing" for key in sorted(set(expected) - set(stored))]
    for key in sorted(set(stored) & set(expected)):
        row, state = stored[key], expected[key]
        got = (row["rating"], row["deviation"], row["volatility"], row["games"])
        want = (state.rating.rating, state.rating.rd, state.rating.vol, state.games)
        if got[3] != want[3] or any(abs(a - b) > tolerance for a, b in zip(got[:3], want[:3])):
            problems.append(f"rating of {key}: stored {got}, replay {want}")
    return problems


async def snapshot_tables(database_url: str, schemas: Iterable[str],
                          skip: Iterable[str] = ("outbox",)) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of `schemas` (but `skip`), sorted: what "nothing changed" compares."""
    skipped = set(skip)
    connection = await asyncpg.connect(database_url)
    try:
        tables = await connection.fetch(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema = ANY($1::text[]) AND table_type = 'BASE TABLE'", list(schemas))
        out: dict[str, list[tuple[Any, ...]]] = {}
        for row in tables:
            if row["table_name"] in skipped:
                continue
            name = f'"{row["table_schema"]}"."{row["table_name"]}"'
            records = await connection.fetch(f"SELECT * FROM {name}")
            out[name] = sorted((tuple(r.values()) for r in records), key=repr)
        return out
    finally:
        await connection.close()


def snapshot_differences(before: dict[str, list[tuple[Any, ...]]],
                         after: dict[str, list[tuple[Any, ...]]]) -> list[str]:
    """Tables whose rows differ between two snapshots, with a sample of what differs."""
    problems: list[str] = []
    for table in sorted(set(before) | set(after)):
        old, new = before.get(table, []), after.get(table, [])
        if old != new:
            gone = [r for r in old if r not in new][:3]
            came = [r for r in new if r not in old][:3]
            problems.append(f"{table}: {len(old)} rows before, {len(new)} after; gone {gone}; new {came}")
    return problems


__all__ = [
    "SERVICE_GROUPS", "FaultCounts", "KillDriver", "Recorded", "arena_leaderboard", "connection_storm",
    "consumed_topics", "expected_ratings", "flush_redis", "game_differences", "group_lag", "group_prefix", "paused",
    "rating_differences", "read_raw", "read_topic", "redeliver_in_order", "replay_shuffled", "resume", "rewind_group",
    "rewind_service", "snapshot_differences", "snapshot_tables",
    "suspend", "tournament_points", "wait_caught_up",
]
