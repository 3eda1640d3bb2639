"""Capacity model inputs: CPU, PostgreSQL, Redis and Kafka cost per event of each handler path (prints figures).

Prints figures and writes JSON; asserts nothing (DESIGN: bench scripts never assert timings). One run:
1. starts a PostgreSQL of its own (the machine's binaries, `pg_stat_statements` preloaded, one
   role per service so that statements are counted per service), a throwaway redis-server (INFO
   commandstats belong to this run alone), the embedded tansu and the five services; with
   `--cpus` every service process (all its threads and children) is pinned there with
   sched_setaffinity, as `taskset -a -p` does; the infrastructure and this driver are not;
2. stages, each measured between two moments at which every consumer group has committed all it
   was sent: `idle` (what polling costs per second, subtracted from every stage below),
   `joins-tournament` and `joins-arena` (JoinTournament / JoinArena calls, 32 at a time),
   `watches` (joins into a tournament and an arena that `--watchers` streams each watch: every
   join is a change sent to each stream), `results` (round robins of 16 whose games the play
   site answers at once with GameStarted + GameFinished: the tournament result path),
   `played` (round robins of 8 played move by move with no think time: moves and results) and
   `firehose` (rated casual GameFinished straight onto game.finished: the rating path);
3. per stage: the events it drove and how many per second went through (closed loops: the
   throughput of the path on these cores), CPU seconds of every service, PostgreSQL backend
   (per service) and server process, Redis, tansu and this driver (Linux /proc, not wall time:
   the machine is shared), PostgreSQL statements, rows, WAL bytes and blocks per service
   (pg_stat_statements), transactions and database growth, Redis commands by name and bytes in
   and out, Kafka records and bytes by topic; then each divided by the stage's events.

Run it with `--cpus 0` and with `--cpus 0,1` to see how each path's throughput grows with a
second core. The load average and the host's stolen time are printed beside every stage.

    .venv/bin/python tests/bench/bench_capacity.py [--cpus 0,1] [--json-out capacity.json] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import psutil
import redis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from bench_clock_service import Producer, cpu_seconds, started_now
from bench_watchers import actor, arena_settings, tournament_settings

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc, tournament_pb2_grpc
from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit import events
from arbiter.kit.kafka import outbox_publisher
from arbiter.kit.timesource import TimeSource
from arbiter_tools.chaos import commit_at_ends, group_lag, true_ends
from arbiter_tools.chaos.faults import PrivatePostgres
from arbiter_tools.devstack.infra import create_database, with_database, with_user
from arbiter_tools.devstack.stack import SERVICE_NAMES, SystemStack
from arbiter_tools.simulator.behaviour import Behaviour, Profiles
from arbiter_tools.simulator.bench.host import cpu_set, host_cpu_ticks, host_load, pin
from arbiter_tools.simulator.bench.readings import wait_quiet, wait_settled, wait_until
from arbiter_tools.simulator.bench.stages import Target, create_round_robins, firehose_events
from arbiter_tools.simulator.playsite import PlaySite, PlaySiteConfig
from arbiter_tools.simulator.run import quiet_client_logs
from arbiter_tools.simulator.scenario import TOURNAMENT_LEAD_SECONDS

TIME_SCALE = 60.0
FETCH_WAIT_MS = 20
DATABASE = "arbiter_capacity"
# Requests in flight at once in the join stages: enough to keep a service busy (a closed loop).
JOIN_CONCURRENCY = 32


# -- a PostgreSQL of this run ----------------------------------------------------------------------


def start_own_postgres(state: Path) -> PrivatePostgres:
    """A throwaway PostgreSQL server, durable as a deployment's, with pg_stat_statements preloaded."""
    return PrivatePostgres(state, max_connections=300, durable=True, settings={
        "shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "top",
        "pg_stat_statements.max": "5000", "shared_buffers": "256MB", "track_io_timing": "off",
    }).init()


async def prepare_database(server_url: str) -> dict[str, str]:
    """The run's database, pg_stat_statements in it, and one superuser role per service; each service's URL."""
    database_url = await create_database(server_url, DATABASE)
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("CREATE EXTENSION pg_stat_statements")
        for name in SERVICE_NAMES:
            # Superusers: each service creates its own schema and reads its own tables in this throwaway cluster.
            await connection.execute(f'CREATE ROLE "svc_{name}" LOGIN SUPERUSER')
    finally:
        await connection.close()
    return {name: with_user(database_url, f"svc_{name}") for name in SERVICE_NAMES}


# -- one moment of the system ----------------------------------------------------------------------


def pid_cpu_seconds(pids: Iterable[int]) -> dict[int, float]:
    """User + system CPU seconds of each live pid."""
    seconds = {}
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        seconds[pid] = times.user + times.system
    return seconds


@dataclass
class Moment:
    """Counters read at one instant; two of them give a stage's costs."""

    wall: float
    cpu: dict[str, float]
    backends: dict[str, dict[int, float]]
    statements: dict[str, dict[str, float]]
    database: dict[str, float]
    redis_commands: dict[str, float]
    redis_stats: dict[str, float]
    kafka_ends: dict[TopicPartition, int]


@dataclass
class Probe:
    """Where the counters are: the service processes, the infrastructure, the run's database."""

    stack: SystemStack
    server_url: str
    postgres: PrivatePostgres

    def processes(self) -> dict[str, psutil.Process]:
        """Each service's process, the infrastructure servers of this run and this driver."""
        found = {name: psutil.Process(service.process.pid) for name, service in self.stack.services.items()
                 if service.process is not None}
        for child in psutil.Process().children(recursive=True):
            try:
                name = child.name()
            except psutil.Error:
                continue
            if name.startswith("tansu"):
                found["tansu"] = child
            elif name.startswith("redis-server"):
                found["redis"] = child
        found["postgres (server)"] = psutil.Process(self.postgres.pid)
        return found

    async def read(self, settled: bool = True) -> Moment:
        """Every counter, now; the topics' true ends only when nothing is being published (`settled`).

        tansu's high watermark is one past the first record of a partition's last batch (see
        `true_ends`), whose search polls until no record comes: while play goes on, the
        watermark is taken, short by at most the batch being written per partition.
        """
        cpu = {name: cpu_seconds([process]) for name, process in self.processes().items()}
        cpu["driver"] = sum(psutil.Process().cpu_times()[:2])
        connection = await asyncpg.connect(self.server_url.rsplit("/", 1)[0] + f"/{DATABASE}")
        try:
            rows = await connection.fetch("SELECT pid, application_name FROM pg_stat_activity "
                                          "WHERE application_name LIKE 'arbiter-%'")
            by_service: dict[str, list[int]] = {}
            for row in rows:
                by_service.setdefault(row["application_name"].removeprefix("arbiter-"), []).append(row["pid"])
            backends = {name: pid_cpu_seconds(pids) for name, pids in by_service.items()}
            statements = {row["rolname"].removeprefix("svc_"): {
                key: value for key, value in row.items() if key != "rolname"} for row in await connection.fetch(
                "SELECT r.rolname, sum(s.calls)::float8 AS calls, sum(s.rows)::float8 AS rows, "
                "sum(s.wal_bytes)::float8 AS wal_bytes, sum(s.wal_records)::float8 AS wal_records, "
                "sum(s.shared_blks_hit + s.shared_blks_read)::float8 AS blocks_touched, "
                "sum(s.shared_blks_dirtied)::float8 AS blocks_dirtied, "
                "sum(s.total_exec_time)::float8 AS exec_ms "
                "FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid "
                "WHERE r.rolname LIKE 'svc_%' GROUP BY r.rolname")}
            database = dict((await connection.fetchrow(
                "SELECT (xact_commit + xact_rollback)::float8 AS transactions, tup_inserted::float8 AS inserted, "
                "tup_updated::float8 AS updated, tup_deleted::float8 AS deleted, tup_fetched::float8 AS fetched, "
                "pg_database_size(datname)::float8 AS size_bytes FROM pg_stat_database WHERE datname = $1",
                DATABASE)).items())
            database["wal_bytes_cluster"] = float(await connection.fetchval(
                "SELECT wal_bytes::float8 FROM pg_stat_wal"))
        finally:
            await connection.close()
        client = redis.Redis.from_url(self.stack.redis_url)
        try:
            info = await asyncio.to_thread(client.info, "all")
        finally:
            client.close()
        commands = {key.removeprefix("cmdstat_"): float(value["calls"]) for key, value in info.items()
                    if key.startswith("cmdstat_")}
        redis_stats = {key: float(info[key]) for key in (
            "total_commands_processed", "total_net_input_bytes", "total_net_output_bytes", "used_memory",
            "keyspace_hits", "keyspace_misses")}
        # A consumer of its own per reading: a long-lived one keeps the topic metadata of its start,
        # and a topic made since (clock.state at the clock's first publication) would go uncounted.
        kafka = AIOKafkaConsumer(bootstrap_servers=self.stack.kafka_bootstrap, enable_auto_commit=False)
        await kafka.start()
        try:
            partitions = [TopicPartition(topic, p) for topic in await kafka.topics() if not topic.startswith("__")
                          for p in sorted(kafka.partitions_for_topic(topic) or ())]
            kafka.assign(partitions)
            ends = await true_ends(kafka, partitions) if settled else await kafka.end_offsets(partitions)
        finally:
            await kafka.stop()
        return Moment(time.monotonic(), cpu, backends, statements, database, commands, redis_stats, ends)


async def kafka_bytes(bootstrap: str, before: Mapping[TopicPartition, int],
                      after: Mapping[TopicPartition, int]) -> dict[str, int]:
    """Bytes of keys, values and headers of the records each topic gained between two moments."""
    remaining = {partition: end - before.get(partition, 0) for partition, end in after.items()
                 if end > before.get(partition, 0)}
    sizes = dict.fromkeys({partition.topic for partition in remaining}, 0)
    if not remaining:
        return sizes
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                max_partition_fetch_bytes=8 << 20, fetch_max_bytes=64 << 20)
    await consumer.start()
    try:
        consumer.assign(list(remaining))
        for partition in remaining:
            consumer.seek(partition, before.get(partition, 0))
        deadline = time.monotonic() + 120
        while any(left > 0 for left in remaining.values()) and time.monotonic() < deadline:
            for partition, records in (await consumer.getmany(timeout_ms=500, max_records=20_000)).items():
                for record in records[:max(0, remaining[partition])]:
                    sizes[partition.topic] += (len(record.key or b"") + len(record.value or b"")
                                               + sum(len(k) + len(v or b"") for k, v in record.headers))
                remaining[partition] -= len(records)
    finally:
        await consumer.stop()
    return sizes


def records_by_topic(before: Mapping[TopicPartition, int], after: Mapping[TopicPartition, int]) -> dict[str, int]:
    """Records each topic gained between two moments."""
    grown: dict[str, int] = {}
    for partition, end in after.items():
        if end > before.get(partition, 0):
            grown[partition.topic] = grown.get(partition.topic, 0) + end - before.get(partition, 0)
    return grown


def difference(after: Mapping[str, float], before: Mapping[str, float]) -> dict[str, float]:
    """after - before per key (a key new in `after` counts from zero)."""
    return {key: value - before.get(key, 0.0) for key, value in after.items()}


@dataclass
class Stage:
    """What one stage drove and what it cost."""

    name: str
    events: dict[str, int]
    unit: str
    seconds: float = 0.0
    throughput: float = 0.0
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    backend_cpu_seconds: dict[str, float] = field(default_factory=dict)
    statements: dict[str, dict[str, float]] = field(default_factory=dict)
    database: dict[str, float] = field(default_factory=dict)
    redis_commands: dict[str, float] = field(default_factory=dict)
    redis_stats: dict[str, float] = field(default_factory=dict)
    kafka_records: dict[str, int] = field(default_factory=dict)
    kafka_bytes: dict[str, int] = field(default_factory=dict)
    host: dict[str, Any] = field(default_factory=dict)
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)
    notes: list[str] = field(default_factory=list)
    # Other events the figures are also given per (the played games' results beside their moves).
    also: tuple[str, ...] = ()


def costs(stage: Stage, before: Moment, after: Moment, idle: Stage | None) -> None:
    """Fill `stage` with the counters' differences, the idle stage's rates taken off where it has them."""
    seconds = after.wall - before.wall
    stage.seconds = round(seconds, 2)
    stage.cpu_seconds = difference(after.cpu, before.cpu)
    stage.backend_cpu_seconds = {
        name: sum(value - before.backends.get(name, {}).get(pid, 0.0) for pid, value in pids.items())
        for name, pids in after.backends.items()}
    stage.statements = {name: difference(values, before.statements.get(name, {}))
                        for name, values in after.statements.items()}
    stage.database = difference(after.database, before.database)
    stage.redis_commands = {name: value for name, value in difference(after.redis_commands,
                                                                      before.redis_commands).items() if value}
    stage.redis_stats = difference(after.redis_stats, before.redis_stats)
    stage.redis_stats["used_memory_after"] = after.redis_stats["used_memory"]
    stage.kafka_records = records_by_topic(before.kafka_ends, after.kafka_ends)
    if idle is None or idle.seconds <= 0:
        return
    share = seconds / idle.seconds
    for table, idle_table in ((stage.cpu_seconds, idle.cpu_seconds),
                              (stage.backend_cpu_seconds, idle.backend_cpu_seconds)):
        for name in table:
            table[name] -= idle_table.get(name, 0.0) * share
    for name, values in stage.statements.items():
        for key in values:
            values[key] -= idle.statements.get(name, {}).get(key, 0.0) * share
    for name in stage.redis_commands:
        stage.redis_commands[name] -= idle.redis_commands.get(name, 0.0) * share
    for key in ("total_commands_processed", "total_net_input_bytes", "total_net_output_bytes"):
        stage.redis_stats[key] -= idle.redis_stats.get(key, 0.0) * share
    stage.database["transactions"] -= idle.database.get("transactions", 0.0) * share


# -- the stages ------------------------------------------------------------------------------------


@dataclass
class Run:
    """The system under measurement and how to measure it."""

    stack: SystemStack
    probe: Probe
    target: Target
    quick: bool
    seconds: float
    idle: Stage | None = None
    stages: list[Stage] = field(default_factory=list)

    async def quiet(self, timeout: float = 120.0) -> bool:
        """Until every consumer group has committed everything (see `wait_quiet`)."""
        return await wait_quiet(self.target.kafka, self.target.all_consumer_groups(), timeout)

    async def measure(self, stage: Stage, drive: Callable[[Run, Stage, Window], Awaitable[None]]) -> Stage:
        """Run `drive`, which opens and closes the window its costs are counted in; the costs, printed."""
        window = Window(self)
        await drive(self, stage, window)
        if window.before is None or window.after is None:
            raise RuntimeError(f"stage {stage.name} never opened or closed its window")
        if not window.drained:
            stage.notes.append("the consumer groups had not committed everything at the stage's end")
        stage.host = window.host
        stage.load_average = os.getloadavg()
        costs(stage, window.before, window.after, self.idle)
        stage.kafka_bytes = await kafka_bytes(self.target.kafka, window.before.kafka_ends, window.after.kafka_ends)
        self.stages.append(stage)
        print(render(stage), flush=True)
        return stage


@dataclass
class Window:
    """The two readings a stage's costs lie between, each taken once every consumer group is done."""

    run: Run
    before: Moment | None = None
    after: Moment | None = None
    drained: bool = False
    host: dict[str, Any] = field(default_factory=dict)
    _ticks: Any = None

    async def open(self, settled: bool = True) -> None:
        """The first reading, once the system has read all that came before (`settled`) or now."""
        if settled:
            await self.run.quiet()
        self._ticks = host_cpu_ticks()
        self.before = await self.run.probe.read(settled)

    async def close(self, settled: bool = True) -> None:
        """The second reading, once the system has read all the stage caused (`settled`) or now."""
        self.drained = await self.run.quiet() if settled else True
        self.after = await self.run.probe.read(settled)
        self.host = host_load(self._ticks, host_cpu_ticks())


async def drive_idle(run: Run, stage: Stage, window: Window) -> None:
    """Nothing: the services' polling, timers and readiness checks alone."""
    await window.open()
    await asyncio.sleep(run.seconds)
    await window.close()
    stage.events["seconds"] = round(window.after.wall - window.before.wall) if window.after and window.before else 0


async def closed_loop(count: int, call: Callable[[int], Awaitable[object]]) -> tuple[int, float]:
    """`count` calls, JOIN_CONCURRENCY at a time; how many succeeded and the seconds taken."""
    gate = asyncio.Semaphore(JOIN_CONCURRENCY)
    succeeded = 0

    async def one(index: int) -> None:
        nonlocal succeeded
        async with gate:
            try:
                await call(index)
            except grpc.aio.AioRpcError as error:
                print(f"  call refused: {error.code().name}: {error.details()}", flush=True)
                return
            succeeded += 1

    began = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(count)))
    return succeeded, time.monotonic() - began


async def joins_in_window(stage: Stage, window: Window, joins: int, call: Callable[[int], Awaitable[object]]) -> None:
    """`joins` calls in a closed loop, between the window's two readings."""
    await window.open()
    done, seconds = await closed_loop(joins, call)
    await window.close()
    stage.events.update(joins=done)
    stage.throughput = done / seconds


async def drive_tournament_joins(run: Run, stage: Stage, window: Window) -> None:
    """JoinTournament into tournaments starting tomorrow (200 seats each, T-3)."""
    joins = 400 if run.quick else 2000
    async with grpc.aio.insecure_channel(run.target.pairing) as channel:
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        tournaments = [(await stub.CreateTournament(tp.CreateTournamentRequest(
            actor=actor("creator"), settings=tournament_settings()))).tournament.id
            for _ in range(joins // 190 + 1)]
        await joins_in_window(stage, window, joins, lambda i: stub.JoinTournament(tp.JoinTournamentRequest(
            actor=actor("entrant"), tournament_id=tournaments[i // 190])))


async def drive_arena_joins(run: Run, stage: Stage, window: Window) -> None:
    """JoinArena into running arenas: the matchmaker pairs the joined (games requested; nobody plays them)."""
    joins = 400 if run.quick else 2000
    async with grpc.aio.insecure_channel(run.stack.services["arena"].grpc_address) as channel:
        stub = arena_pb2_grpc.ArenaServiceStub(channel)
        arenas = [(await stub.CreateArena(ap.CreateArenaRequest(actor=actor("creator"), settings=arena_settings()))).id
                  for _ in range(joins // 200 + 1)]
        await joins_in_window(stage, window, joins, lambda i: stub.JoinArena(ap.JoinArenaRequest(
            actor=actor("player"), arena_id=arenas[i // 200])))


def drive_watched_joins(watchers: int) -> Callable[[Run, Stage, Window], Awaitable[None]]:
    """Joins into one tournament and one arena that `watchers` streams each watch."""

    async def drive(run: Run, stage: Stage, window: Window) -> None:
        joins = 60 if run.quick else 150
        pairing, arena = run.target.pairing, run.stack.services["arena"].grpc_address
        async with grpc.aio.insecure_channel(pairing) as pairing_channel, \
                grpc.aio.insecure_channel(arena) as arena_channel:
            tournaments = tournament_pb2_grpc.TournamentServiceStub(pairing_channel)
            arenas = arena_pb2_grpc.ArenaServiceStub(arena_channel)
            tournament = (await tournaments.CreateTournament(tp.CreateTournamentRequest(
                actor=actor("creator"), settings=tournament_settings()))).tournament
            watched = await arenas.CreateArena(ap.CreateArenaRequest(actor=actor("creator"), settings=arena_settings()))
            # The streams are held by bench_watchers.py's holder, a process of its own (its CPU is not the services').
            holder = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("bench_watchers.py")), "--hold", pairing, tournament.id,
                 arena, watched.id, str(watchers), "read"], stdout=subprocess.PIPE, text=True, start_new_session=True)
            try:
                assert holder.stdout is not None
                line = await asyncio.to_thread(holder.stdout.readline)
                stage.events["streams"] = int(line.split()[1]) if line.startswith("ready") else 0
                await window.open()
                done_t, seconds_t = await closed_loop(joins, lambda _i: tournaments.JoinTournament(
                    tp.JoinTournamentRequest(actor=actor("entrant"), tournament_id=tournament.id)))
                done_a, seconds_a = await closed_loop(joins, lambda _i: arenas.JoinArena(
                    ap.JoinArenaRequest(actor=actor("player"), arena_id=watched.id)))
                # The fan-out of the last changes is written before the window closes.
                await asyncio.sleep(3.0)
                await window.close()
            finally:
                holder.terminate()
                out, _ = await asyncio.to_thread(holder.communicate, None, 60)
        received = [int(text.split()[1]) for text in out.splitlines() if text.startswith("received")]
        stage.events.update(joins=done_t + done_a, tournament_joins=done_t, arena_joins=done_a,
                            changes_received=received[0] if received else 0)
        stage.throughput = (done_t + done_a) / (seconds_t + seconds_a)

    return drive


async def from_now_on(run: Run, playsite: PlaySite) -> None:
    """Start a play site that reads only what is published from now on (a new group reads topics from their start)."""
    topics = [events.GAME_REQUESTED.name] if playsite.config.requests_only else [
        events.GAME_REQUESTED.name, events.CLOCK_FLAGGED.name, events.GAME_ABANDONED.name,
        events.GAME_FINISHED.name, events.CLOCK_STATE.name]
    await commit_at_ends(run.target.kafka, playsite.config.group_id, topics)
    await playsite.start()


async def drive_results(run: Run, stage: Stage, window: Window) -> None:
    """Tournament results: round robins of 16, every game answered at once (GameStarted + GameFinished)."""
    count = 20 if run.quick else 80
    prefix = f"cr{uuid.uuid4().hex[:4]}-"
    playsite = PlaySite(run.target.kafka, run.target.time_source, Profiles(seed=1), PlaySiteConfig(
        seed=1, group_id=f"{prefix}playsite", instant_results=True, requests_only=True, result_rate=0.0,
        instant_every_seconds=0.02, player_prefix=prefix))
    await from_now_on(run, playsite)
    try:
        playsite.holding = True
        created = await create_round_robins(run.target, count, 16, prefix)
        games = len(created) * 8
        real_lead = run.target.time_source.real_seconds(TOURNAMENT_LEAD_SECONDS) + 1
        await wait_until(lambda: playsite.backlog >= games, real_lead + 60)
        await wait_settled(lambda: playsite.stats.requested, games, 60)
        await window.open()
        finished_before = playsite.stats.finished
        began = time.monotonic()
        # From here every requested game is answered at once, whatever the number waiting.
        playsite.holding = False
        await asyncio.sleep(run.seconds)
        results = playsite.stats.finished - finished_before
        elapsed = time.monotonic() - began
        # Held while the window closes: its second reading waits for every consumer to be done.
        playsite.holding = True
        await window.close()
        playsite.holding = False
        await play_out(run, playsite, finished_before + len(created) * 8 * 15, 120)
    finally:
        await playsite.stop()
    await run.quiet()
    stage.events.update(results=results, tournaments=len(created))
    stage.throughput = results / elapsed


async def play_out(run: Run, playsite: PlaySite, games: int, timeout: float) -> None:
    """Let the play site finish the stage's tournaments after its window (up to `timeout` s): games left
    unplayed would be abandoned, and the next rounds paired, during the stages after."""
    await wait_settled(lambda: playsite.stats.finished, games, timeout, still_seconds=10.0)


async def drive_played(run: Run, stage: Stage, window: Window) -> None:
    """Round robins of 8 played move by move, no think time: moves, clocks and results at the play site's pace."""
    count = 6 if run.quick else 16
    prefix = f"cp{uuid.uuid4().hex[:4]}-"
    playsite = PlaySite(run.target.kafka, run.target.time_source, Profiles(seed=1, mix={Behaviour.NORMAL: 1.0}),
                        PlaySiteConfig(seed=1, think_seconds=(0.0, 0.0), group_id=f"{prefix}playsite",
                                       player_prefix=prefix))
    await run.quiet()
    await from_now_on(run, playsite)
    try:
        created = await create_round_robins(run.target, count, 8, prefix)
        real_lead = run.target.time_source.real_seconds(TOURNAMENT_LEAD_SECONDS) + 1
        await wait_until(lambda: playsite.stats.requested >= count * 4, real_lead + 60)
        # Now, not once the consumers are idle: they will not be before every game is over.
        await window.open(settled=False)
        moves_before, finished_before = playsite.stats.moves, playsite.stats.finished
        began = time.monotonic()
        await asyncio.sleep(run.seconds)
        moves, finished = playsite.stats.moves - moves_before, playsite.stats.finished - finished_before
        elapsed = time.monotonic() - began
        await window.close(settled=False)
        await play_out(run, playsite, len(created) * 4 * 7, 120)
    finally:
        await playsite.stop()
    await run.quiet()
    stage.events.update(moves=moves, results=finished)
    stage.throughput = moves / elapsed


async def drive_moves(run: Run, stage: Stage, window: Window) -> None:
    """Moves of running games from a backlog, as fast as the clock takes them (one ClockState each)."""
    games, plies = (1000, 4) if run.quick else (5000, 8)
    tag = uuid.uuid4().hex[:6]
    ids = [f"cm{tag}-{n}" for n in range(games)]
    producer = Producer(run.target.kafka)
    await producer.start()
    try:
        # Competition time, TIME_SCALE times faster than the wall clock: games started at the wall clock's
        # now would be hours old to the clock, and flag at once.
        memory_before = await asyncio.to_thread(redis_used_memory, run.stack.redis_url)
        await producer.send(events.GAME_STARTED.name, started_now(ids, run.target.time_source.now()))
        await window.open()
        # What a live clock holds in Redis: the games are started and read, none has moved yet.
        live = await asyncio.to_thread(redis_used_memory, run.stack.redis_url) - memory_before
        stage.events["redis_bytes_per_live_game"] = round(live / games)
        stamp = run.target.time_source.now()
        moves = []
        for ply in range(1, plies + 1):
            for game_id in ids:
                move = ev.MoveMade(game_id=game_id, player_id=f"{game_id}-{'w' if ply % 2 else 'b'}", ply=ply,
                                   move="x")
                move.played_at.FromDatetime(stamp + timedelta(microseconds=ply * 10))
                moves.append(move)
        began = time.monotonic()
        await producer.send(events.MOVE_MADE.name, moves)
        move_groups = [(group, topics) for group, topics in run.target.all_consumer_groups().items()
                       if events.MOVE_MADE.name in topics]
        await wait_until_async(lambda: lags(run.target.kafka, move_groups), 300)
        elapsed = time.monotonic() - began
        await window.close()
        await producer.send(events.GAME_FINISHED.name, finished_now(ids, run.target.time_source.now()))
    finally:
        await producer.stop()
    # Their ends belong to no stage: the next one starts once they are read.
    await run.quiet()
    stage.events.update(moves=len(moves))
    stage.throughput = len(moves) / elapsed


def redis_used_memory(url: str) -> int:
    """INFO memory's used_memory of the Redis at `url`."""
    client = redis.Redis.from_url(url)
    try:
        return int(client.info("memory")["used_memory"])
    finally:
        client.close()


def finished_now(ids: Iterable[str], now: datetime) -> list[ev.GameFinished]:
    """A drawn GameFinished of each game of `started_now`."""
    finished = []
    for game_id in ids:
        done = ev.GameFinished(game_id=game_id, white_id=f"{game_id}-w", black_id=f"{game_id}-b",
                               result=cm.GAME_RESULT_DRAW)
        done.finished_at.FromDatetime(now)
        finished.append(done)
    return finished


async def lags(bootstrap: str, groups: Iterable[tuple[str, tuple[str, ...]]]) -> int:
    """Records of their topics the groups have not committed."""
    return sum([await group_lag(bootstrap, group, topics) for group, topics in groups])


async def drive_firehose(run: Run, stage: Stage, window: Window) -> None:
    """Rated casual results straight onto game.finished, as fast as the rating service takes them."""
    total = 4000 if run.quick else 20_000
    tag = uuid.uuid4().hex[:4]
    players = [f"cf{tag}-{i:05d}" for i in range(20_000)]
    prepared = [record for _, record in firehose_events(tag, players, 0, total, random.Random(1),
                                                         run.target.time_source)]
    producer = AIOKafkaProducer(bootstrap_servers=run.target.kafka, linger_ms=5, max_batch_size=256 * 1024)
    await producer.start()
    try:
        publish = outbox_publisher(producer)
        await window.open()
        began = time.monotonic()
        for first in range(0, total, 1000):
            await publish(prepared[first:first + 1000])
        rating_groups = list(run.stack.consumer_groups()["rating"].items())
        await wait_until_async(lambda: lags(run.target.kafka, rating_groups), 300)
        elapsed = time.monotonic() - began
        await window.close()
    finally:
        await producer.stop()
    stage.events["results"] = total
    stage.throughput = total / elapsed


async def wait_until_async(lag: Callable[[], Awaitable[int]], timeout: float) -> bool:
    """Poll `lag()` every 50 ms until it is 0, for up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await lag() == 0:
            return True
        await asyncio.sleep(0.05)
    return False


# -- the report ------------------------------------------------------------------------------------


def per_event(stage: Stage, unit: str = "") -> dict[str, Any]:
    """The stage's costs divided by its events of `unit` (its own unit by default)."""
    n = stage.events.get(unit or stage.unit, 0) or 1
    statements = {name: {key: round(value / n, 2) for key, value in values.items()
                         if key in ("calls", "rows", "wal_bytes", "blocks_touched")}
                  for name, values in stage.statements.items() if values.get("calls", 0) / n >= 0.01}
    return {
        "cpu_us": {name: round(value / n * 1e6, 1) for name, value in stage.cpu_seconds.items()},
        "postgres_backend_cpu_us": {name: round(value / n * 1e6, 1)
                                    for name, value in stage.backend_cpu_seconds.items()},
        "postgres_statements": statements,
        "postgres_transactions": round(stage.database.get("transactions", 0.0) / n, 2),
        "postgres_rows_written": round(sum(stage.database.get(k, 0.0) for k in ("inserted", "updated", "deleted"))
                                       / n, 2),
        "postgres_wal_bytes": round(stage.database.get("wal_bytes_cluster", 0.0) / n),
        "postgres_growth_bytes": round(stage.database.get("size_bytes", 0.0) / n),
        "redis_commands": round(stage.redis_stats.get("total_commands_processed", 0.0) / n, 2),
        "redis_by_command": {name: round(value / n, 2) for name, value in
                             sorted(stage.redis_commands.items(), key=lambda item: -item[1]) if value / n >= 0.05},
        "redis_bytes_in": round(stage.redis_stats.get("total_net_input_bytes", 0.0) / n),
        "redis_bytes_out": round(stage.redis_stats.get("total_net_output_bytes", 0.0) / n),
        "kafka_records": {topic: round(count / n, 2) for topic, count in stage.kafka_records.items()},
        "kafka_bytes": {topic: round(size / n) for topic, size in stage.kafka_bytes.items()},
    }


def render(stage: Stage) -> str:
    """A stage's figures as lines of text."""
    figures = per_event(stage)
    load = ", ".join(f"{value:.2f}" for value in stage.load_average)
    lines = [f"== {stage.name}: {stage.events}; {stage.seconds:.1f} s; {stage.throughput:.1f} {stage.unit}/s; "
             f"load average {load}; host busy {stage.host.get('busy_percent')}% of a core, "
             f"stolen {stage.host.get('stolen_percent')}%",
             f"   per {stage.unit.rstrip('s')}: CPU us {figures['cpu_us']}",
             f"   PostgreSQL backend CPU us {figures['postgres_backend_cpu_us']}; "
             f"transactions {figures['postgres_transactions']}, rows written {figures['postgres_rows_written']}, "
             f"WAL {figures['postgres_wal_bytes']} B, growth {figures['postgres_growth_bytes']} B",
             f"   PostgreSQL statements {figures['postgres_statements']}",
             f"   Redis commands {figures['redis_commands']} ({figures['redis_by_command']}), "
             f"in {figures['redis_bytes_in']} B, out {figures['redis_bytes_out']} B; "
             f"used_memory {stage.redis_stats.get('used_memory_after', 0) / 2**20:.1f} MiB",
             f"   Kafka records {figures['kafka_records']}",
             f"   Kafka bytes {figures['kafka_bytes']}"]
    for unit in stage.also:
        other = per_event(stage, unit)
        lines += [f"   per {unit.rstrip('s')}: CPU us {other['cpu_us']}",
                  f"   per {unit.rstrip('s')}: PostgreSQL statements {other['postgres_statements']}; WAL "
                  f"{other['postgres_wal_bytes']} B; Redis commands {other['redis_commands']}",
                  f"   per {unit.rstrip('s')}: Kafka records {other['kafka_records']}",
                  f"   per {unit.rstrip('s')}: Kafka bytes {other['kafka_bytes']}"]
    lines += [f"   note: {note}" for note in stage.notes]
    return "\n".join(lines)


def fan_out(stages: Iterable[Stage]) -> str:
    """CPU per join and watching stream: the watched joins' cost above the same joins unwatched."""
    by_name = {stage.name: stage for stage in stages}
    watched = by_name.get("watches")
    if watched is None or not watched.events.get("streams"):
        return "   fan-out: no streams held"
    per_competition = watched.events["streams"] / 2
    parts = []
    for service, plain, joins in (("pairing", "joins-tournament", "tournament_joins"),
                                  ("arena", "joins-arena", "arena_joins")):
        alone = by_name.get(plain)
        count = watched.events.get(joins, 0)
        if alone is None or not alone.events.get("joins") or not count:
            continue
        unwatched = alone.cpu_seconds.get(service, 0.0) / alone.events["joins"]
        above = watched.cpu_seconds.get(service, 0.0) / count - unwatched
        parts.append(f"{service} {above * 1e6:.0f} us per join above {unwatched * 1e6:.0f} unwatched, "
                     f"{above / per_competition * 1e6:.1f} us per join and stream")
    return f"   fan-out ({per_competition:.0f} streams per competition): " + "; ".join(parts)


# -- putting it together ---------------------------------------------------------------------------


# Each stage: its name, the events its per-event figures divide by, the other events it also gives
# figures per, and its driver.
PLAN: tuple[tuple[str, str, tuple[str, ...], Callable[[Run, Stage, Window], Awaitable[None]] | None], ...] = (
    ("joins-tournament", "joins", (), drive_tournament_joins),
    ("results", "results", (), drive_results),
    ("moves", "moves", (), drive_moves),
    ("played", "moves", ("results",), drive_played),
    ("firehose", "results", (), drive_firehose),
    # Last: the arena games these request are never played, and their clocks' timers run on.
    ("joins-arena", "joins", (), drive_arena_joins),
    ("watches", "joins", (), None),
)


async def measure_all(run: Run, watchers: int, only: set[str]) -> None:
    """Every stage in turn (`only`: the ones named)."""
    run.idle = await run.measure(Stage("idle", {}, "seconds"), drive_idle)
    for name, unit, also, drive in PLAN:
        if only and name not in only:
            continue
        await run.measure(Stage(name, {}, unit, also=also), drive or drive_watched_joins(watchers))
        if name == "watches":
            print(fan_out(run.stages), flush=True)


async def main_async(args: argparse.Namespace, stack: SystemStack, probe: Probe) -> list[Stage]:
    """Run every stage against the started system."""
    target = Target(kafka=stack.kafka_bootstrap, redis_url=stack.redis_url,
                    pairing=stack.services["pairing"].grpc_address,
                    metrics={name: s.metrics_url for name, s in stack.services.items()},
                    time_source=TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin)),
                    rating=stack.services["rating"].grpc_address, consumer_groups=stack.consumer_groups())
    run = Run(stack, probe, target, args.quick, args.seconds or (6.0 if args.quick else 20.0))
    await measure_all(run, args.watchers, set(args.stages.split(",")) if args.stages else set())
    return run.stages


def main() -> int:
    """Start the system (pinned when asked), run the stages, print and write the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", default="", help="CPUs to pin every service process to, e.g. 0 or 0,1")
    parser.add_argument("--seconds", type=float, help="real seconds of the idle, results and played stages")
    parser.add_argument("--watchers", type=int, default=500, help="streams watching the tournament and the arena each")
    parser.add_argument("--stages", default="", help="comma-separated stages to run (default: all)")
    parser.add_argument("--quick", action="store_true", help="smaller stages (a smoke run)")
    parser.add_argument("--json-out", type=Path, default=Path("capacity-results.json"))
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of the text")
    args = parser.parse_args()
    quiet_client_logs()
    environ = {key: value for key, value in os.environ.items()
               if key not in ("DATABASE_URL", "REDIS_URL", "KAFKA_BOOTSTRAP_SERVERS")}
    environ["KAFKA_FETCH_MAX_WAIT_MS"] = str(FETCH_WAIT_MS)
    os.environ["KAFKA_FETCH_MAX_WAIT_MS"] = str(FETCH_WAIT_MS)  # the in-process play site's consumers
    started_at = datetime.now().astimezone().isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory(prefix="bench-capacity-") as scratch:
        state = Path(scratch)
        os.chmod(state, 0o755)
        postgres = start_own_postgres(state / "pg")
        server_url = postgres.url
        stack: SystemStack | None = None
        try:
            urls = asyncio.run(prepare_database(server_url))
            environ["DATABASE_URL"] = with_database(server_url, DATABASE)
            stack = SystemStack(state / "stack", time_scale=TIME_SCALE, free_ports=True, environ=environ,
                                say=lambda line: print("  " + line, flush=True),
                                extra_env={"WATCH_MAX_WATCHERS": str(max(args.watchers, 1000)),
                                           "WATCH_MAX_STREAMS": str(max(2 * args.watchers, 2000))},
                                service_extra_env={name: {"DATABASE_URL": url} for name, url in urls.items()})
            stack.start_infrastructure()
            stack.start_services()
            stack.wait_serving(timeout=180)
            probe = Probe(stack, server_url, postgres)
            if args.cpus:
                cpus = cpu_set(args.cpus)
                services = [psutil.Process(s.process.pid) for s in stack.services.values() if s.process is not None]
                print(f"  pinned {pin(services, cpus)} threads of the five services to CPUs {sorted(cpus)}", flush=True)
            print(f"capacity bench, {started_at}, host {os.uname().nodename}, {os.cpu_count()} CPUs, services on "
                  f"CPUs {args.cpus or 'all'}, time scale {TIME_SCALE:g}, fetch wait {FETCH_WAIT_MS} ms", flush=True)
            stages = asyncio.run(main_async(args, stack, probe))
        finally:
            if stack is not None:
                stack.stop()
            postgres.close()
    report = {"started_at": started_at, "host": os.uname().nodename, "cpus": args.cpus or "all",
              "stages": [{**stage.__dict__, "per_event": per_event(stage)} for stage in stages]}
    args.json_out.write_text(json.dumps(report, indent=2, default=str))
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    print(f"written to {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
