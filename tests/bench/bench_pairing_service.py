"""Pairing service: from the last result of a round to every GameRequested of the next, N concurrent Swiss tournaments.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). One run:
1. start the infrastructure (KAFKA_BOOTSTRAP_SERVERS / REDIS_URL / DATABASE_URL when given, else
   embedded, on a fresh database) and the openings, rating and pairing services as processes;
2. create N tournaments (default 100) of E entrants (default 200: a Swiss of 10 rounds, T-9), fill
   them with Join calls, all starting at the same instant (italian, openings drawn from the table
   up to class 2 by the openings service, O-10);
3. a play-site stand-in opens every requested game (GameStarted) and, as soon as all the games
   of a tournament's round are requested, publishes all their results (GameFinished) at once;
   the figure of that round is from the broker's acknowledgement of its last result to the
   arrival of the last GameRequested of the next round (what a player waits between rounds);
4. after `--rounds` transitions per tournament it stops, and prints p50/p90/p99/max over every
   transition, per round, and the service's own pairing time (decision to commit);
5. from the first result published to the last request, the CPU time each process of the stack
   took (the services, the engine's worker processes, tansu, redis-server, the database's
   backends, this script) and how long the pairing service waited for a core (its threads' run
   queue wait, /proc/PID/task/*/schedstat): on a machine other work loads, what the same waves
   need of an idle one. The load average is printed beside the figures.

All N tournaments end their rounds within moments of each other, so each transition pairs N
rounds at once: the figure is the worst case of a synchronised field, not one tournament alone.

    .venv/bin/python tests/bench/bench_pairing_service.py [--tournaments 100] [--entrants 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
import urllib.request
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg
import grpc
import psutil
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit import events
from arbiter.kit.events import stamp_meta, timestamp
from arbiter.kit.kafka import partition_for_key
from arbiter.kit.timesource import TimeSource
from arbiter_tools.devstack.stack import SystemStack, scratch_stack

SERVICES = ("openings", "rating", "pairing")
RESULTS = (cm.GAME_RESULT_WHITE_WINS, cm.GAME_RESULT_DRAW, cm.GAME_RESULT_BLACK_WINS)


@dataclass
class Round:
    """What the stand-in knows of one round of one tournament."""

    expected: int | None = None
    requests: list[ev.GameRequested] = field(default_factory=list)
    first_request_at: float | None = None
    last_request_at: float | None = None
    results_acked_at: float | None = None
    answered: bool = False


@dataclass(frozen=True)
class CpuReading:
    """CPU seconds and run-queue seconds of each process, by pid, with the group it counts in."""

    cpu: dict[int, float]
    waited: dict[int, float]
    group: dict[int, str]
    # The main thread's alone: a service's event loop.
    loop_waited: dict[int, float]


def _run_queue_seconds(pid: int, *, main_thread_only: bool = False) -> float:
    """Seconds the threads of `pid` (or its main thread) waited for a core (the second field of schedstat)."""
    total = 0
    try:
        for task in [str(pid)] if main_thread_only else os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as stats:
                total += int(stats.read().split()[1])
    except (OSError, IndexError, ValueError):
        pass
    return total / 1e9


def _group_of(process: psutil.Process) -> str:
    """Which part of the stack a child process of this script is."""
    command = " ".join(process.cmdline())
    for name in SERVICES:
        if f"services.{name}.main" in command:
            return name
    if "multiprocessing" in command:
        return "pairing engine workers"
    name = process.name()
    return "tansu" if name.startswith("tansu") else name


async def read_cpu(database_url: str) -> CpuReading:
    """The CPU time so far of this script, its children (services, workers, broker, redis) and the database backends."""
    groups: dict[int, str] = {os.getpid(): "this script"}
    for child in psutil.Process().children(recursive=True):
        try:
            groups[child.pid] = _group_of(child)
        except psutil.Error:
            continue
    connection = await asyncpg.connect(database_url)
    try:
        backends = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
    finally:
        await connection.close()
    groups.update({row["pid"]: "postgresql" for row in backends})
    cpu: dict[int, float] = {}
    for pid in groups:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        cpu[pid] = times.user + times.system
    return CpuReading(cpu, {pid: _run_queue_seconds(pid) for pid in cpu}, groups,
                      {pid: _run_queue_seconds(pid, main_thread_only=True) for pid in cpu})


def print_cpu(before: CpuReading, after: CpuReading, waves: int, tournaments: int, pairing_pid: int) -> None:
    """CPU seconds per wave by group, their sum over the machine's cores, and the pairing service's wait for a core."""
    per_group: dict[str, float] = defaultdict(float)
    for pid, seconds in after.cpu.items():
        per_group[after.group[pid]] += seconds - before.cpu.get(pid, 0.0)
    total = sum(per_group.values())
    cores = os.cpu_count() or 1
    print(f"CPU per wave           ({waves} waves, each the rounds of {tournaments} tournaments ending together;"
          f" CPU seconds from the first result published to the last request, divided by {waves})")
    print("  " + ", ".join(f"{group} {seconds / waves:.2f}" for group, seconds in
                           sorted(per_group.items(), key=lambda item: -item[1])))
    print(f"  all {total / waves:.2f} s of CPU: {total / waves / cores:.2f} s of this machine's {cores} cores")
    pairing = [pid for pid, group in after.group.items() if group in ("pairing", "pairing engine workers")]
    waited = sum(after.waited.get(pid, 0.0) - before.waited.get(pid, 0.0) for pid in pairing)
    loop = after.loop_waited.get(pairing_pid, 0.0) - before.loop_waited.get(pairing_pid, 0.0)
    print(f"  waits for a core (run queue) per wave: the pairing service's event loop {loop / waves:.2f} s; its"
          f" threads and engine workers together {waited / waves:.2f} s (thread-seconds)")


def load_average() -> str:
    """The 1, 5 and 15 minute load averages."""
    return "load average " + ", ".join(f"{value:.2f}" for value in os.getloadavg())


class PlaySite:
    """Reads the tournaments' requests and answers whole rounds at once, timing each transition."""

    def __init__(self, bootstrap: str, rounds_to_play: int, seed: int) -> None:
        self.bootstrap = bootstrap
        self.rounds_to_play = rounds_to_play
        self.rng = random.Random(seed)
        self.rounds: dict[str, dict[int, Round]] = defaultdict(lambda: defaultdict(Round))
        self.tournaments: set[str] = set()
        self.completed: set[str] = set()
        self.producer: AIOKafkaProducer | None = None
        self.done = asyncio.Event()
        # Set when the first results are about to be published: the CPU reading starts there.
        self.answering = asyncio.Event()
        self._answering: set[asyncio.Task[None]] = set()

    async def run(self, ready: asyncio.Event) -> None:
        """Consume game.requested and tournament.round_paired from their current end."""
        self.producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5, max_batch_size=512 << 10)
        await self.producer.start()
        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False,
                                    max_partition_fetch_bytes=16 << 20, fetch_max_bytes=64 << 20)
        await consumer.start()
        try:
            partitions = [TopicPartition(t.name, p) for t in (events.GAME_REQUESTED, events.ROUND_PAIRED)
                          for p in sorted(consumer.partitions_for_topic(t.name) or ())]
            consumer.assign(partitions)
            await consumer.seek_to_end(*partitions)
            for partition in partitions:
                await consumer.position(partition)
            ready.set()
            while not self.done.is_set():
                batches = await consumer.getmany(timeout_ms=50, max_records=10_000)
                now = time.perf_counter()
                for partition, records in batches.items():
                    topic = events.topic_named(partition.topic)
                    for record in records:
                        self._on(topic.decode(record.value), now)
        finally:
            await consumer.stop()
            for task in self._answering:
                task.cancel()
            await asyncio.gather(*self._answering, return_exceptions=True)
            await self.producer.stop()

    def _on(self, event: object, now: float) -> None:
        if isinstance(event, ev.RoundPaired):
            if event.tournament_id in self.tournaments:
                current = self.rounds[event.tournament_id][event.round]
                current.expected = sum(len(line.game_ids) for line in event.pairings)
                self._maybe_answer(event.tournament_id, event.round)
        elif isinstance(event, ev.GameRequested):
            tournament_id, number = event.competition.id, event.competition.round
            if tournament_id not in self.tournaments:
                return
            current = self.rounds[tournament_id][number]
            current.requests.append(event)
            current.first_request_at = current.first_request_at or now
            current.last_request_at = now
            self._maybe_answer(tournament_id, number)

    def _maybe_answer(self, tournament_id: str, number: int) -> None:
        current = self.rounds[tournament_id][number]
        if current.answered or current.expected is None or len(current.requests) < current.expected:
            return
        current.answered = True
        if number > self.rounds_to_play:
            self.completed.add(tournament_id)
            if self.completed >= self.tournaments:
                self.done.set()
            return
        self.answering.set()
        task = asyncio.create_task(self._answer(current))
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def _answer(self, current: Round) -> None:
        """Open every game of the round, then publish every result; note the last acknowledgement."""
        started_at = timestamp(datetime.now(UTC))
        started = []
        for request in current.requests:
            event = ev.GameStarted(game_id=request.game_id, white_id=request.white_id, black_id=request.black_id,
                                   competition=request.competition, variant=request.variant)
            stamp_meta(event, "bench-playsite", started_at)
            started.append((request.game_id.encode(), event.SerializeToString()))
        await self._publish(events.GAME_STARTED.name, started)
        finished_at = timestamp(datetime.now(UTC))
        finished = []
        for request in current.requests:
            result = ev.GameFinished(
                game_id=request.game_id, competition=request.competition, variant=request.variant,
                speed=request.speed, white_id=request.white_id, black_id=request.black_id,
                result=self.rng.choice(RESULTS), termination=cm.TERMINATION_RESIGNATION, white_sat=True,
                black_sat=True, rated=request.rated, plies=60,
            )
            stamp_meta(result, "bench-playsite", finished_at)
            finished.append((request.game_id.encode(), result.SerializeToString()))
        await self._publish(events.GAME_FINISHED.name, finished)
        current.results_acked_at = time.perf_counter()

    async def _publish(self, topic: str, records: list[tuple[bytes, bytes]]) -> None:
        """Publish (key, value) records, each to its key's partition, and wait until the broker acknowledged all.

        One batch per partition: a play site's round costs the measuring script a fraction of a
        `send` per record (partitioner, future and accumulator each time), and the script shares
        the cores with the stack it measures.
        """
        assert self.producer is not None
        partitions = sorted(await self.producer.partitions_for(topic))
        by_partition: dict[int, list[tuple[bytes, bytes]]] = defaultdict(list)
        for key, value in records:
            by_partition[partition_for_key(key, partitions)].append((key, value))
        acknowledged = []
        for partition, items in by_partition.items():
            batch = self.producer.create_batch()
            for key, value in items:
                if batch.append(key=key, value=value, timestamp=None) is None:
                    acknowledged.append(await self.producer.send_batch(batch, topic, partition=partition))
                    batch = self.producer.create_batch()
                    batch.append(key=key, value=value, timestamp=None)
            acknowledged.append(await self.producer.send_batch(batch, topic, partition=partition))
        await asyncio.gather(*acknowledged)


def quantile(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of `values`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def pairing_histogram(url: str) -> tuple[float, float]:
    """(count, sum) of arbiter_pairing_seconds from the service's /metrics."""
    count = total = 0.0
    for line in urllib.request.urlopen(url, timeout=10).read().decode().splitlines():
        if line.startswith("arbiter_pairing_seconds_count{"):
            count += float(line.rsplit(" ", 1)[1])
        elif line.startswith("arbiter_pairing_seconds_sum{"):
            total += float(line.rsplit(" ", 1)[1])
    return count, total


async def run(args: argparse.Namespace, stack: SystemStack) -> None:
    clock = TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin))
    channel = grpc.aio.insecure_channel(stack.services["pairing"].grpc_address)
    stub = tournament_pb2_grpc.TournamentServiceStub(channel)
    site = PlaySite(stack.kafka_bootstrap, args.rounds, args.seed)
    ready = asyncio.Event()
    site_task = asyncio.create_task(site.run(ready))
    await ready.wait()

    # Every tournament starts at the same instant, once all the joins had time to land.
    # T-4: never sooner than 5 minutes of competition time after creation.
    starts_at = clock.now() + max(timedelta(minutes=5, seconds=30),
                                  timedelta(seconds=args.join_budget * stack.time_scale))
    settings = {
        "variant": "italian", "capacity": args.entrants, "duration_minutes": 24 * 60, "rated": False,
        "time_control": cm.TimeControl(fischer=cm.FischerControl(base_seconds=180, increment_seconds=2)),
        "opening_mode": cm.OPENING_MODE_TABLE_UP_TO_2, "starts_at": timestamp(starts_at),
    }
    run_id = uuid.uuid4().hex[:6]
    limit = asyncio.Semaphore(64)
    join_started = time.perf_counter()

    async def open_tournament(index: int) -> str:
        async with limit:
            reply = await stub.CreateTournament(tp.CreateTournamentRequest(
                actor=cm.Actor(player_id=f"bench-{run_id}-c{index}", kind=cm.ACCOUNT_KIND_REGISTERED),
                settings=tp.TournamentSettings(name=f"Bench {index}", **settings)))
        tournament_id = reply.tournament.id
        site.tournaments.add(tournament_id)

        async def join(number: int) -> None:
            async with limit:
                await stub.JoinTournament(tp.JoinTournamentRequest(
                    actor=cm.Actor(player_id=f"bench-{run_id}-t{index}-p{number:03d}",
                                   kind=cm.ACCOUNT_KIND_REGISTERED),
                    tournament_id=tournament_id))

        await asyncio.gather(*(join(n) for n in range(args.entrants)))
        return tournament_id

    tournament_ids = await asyncio.gather(*(open_tournament(i) for i in range(args.tournaments)))
    joined = time.perf_counter() - join_started
    joins = args.tournaments * args.entrants
    print(f"setup                  {args.tournaments} tournaments x {args.entrants} entrants: {joins} joins in "
          f"{joined:.1f} s ({joins / joined:.0f}/s)")
    left = (starts_at - clock.now()).total_seconds() / stack.time_scale
    if left < 0:
        print(f"                       the joins outlasted --join-budget by {-left:.1f} s; some started early")
    cpu_before: CpuReading | None = None
    load_before = ""
    try:
        await asyncio.wait_for(site.answering.wait(), args.timeout)
        cpu_before, load_before = await read_cpu(stack.database_url), load_average()
        await asyncio.wait_for(site.done.wait(), args.timeout)
    except TimeoutError:
        print(
            f"incomplete             not every tournament reached round {args.rounds + 1} within {args.timeout:.0f} s"
        )
    cpu_after, load_after = await read_cpu(stack.database_url), load_average()
    site.done.set()
    await site_task
    await channel.close()

    transitions: list[float] = []
    by_round: dict[int, list[float]] = defaultdict(list)
    firsts: list[float] = []
    for tournament_id in tournament_ids:
        rounds = site.rounds[tournament_id]
        for number in range(1, args.rounds + 1):
            this, following = rounds.get(number), rounds.get(number + 1)
            if this is None or following is None or this.results_acked_at is None:
                continue
            if following.last_request_at is None or following.expected != len(following.requests):
                continue
            transitions.append(following.last_request_at - this.results_acked_at)
            firsts.append(following.first_request_at - this.results_acked_at)
            by_round[number].append(transitions[-1])
    count, total = pairing_histogram(stack.services["pairing"].metrics_url)

    print(f"machine                {os.cpu_count()} cores; TIME_SCALE {stack.time_scale:g};"
          f" PAIRING_PROCESSES {args.processes}; PAIRING_CONCURRENCY {args.concurrency}")
    if not transitions:
        print("no complete transition measured")
        return
    print(f"last result -> every GameRequested of the next round, {len(transitions)} transitions"
          f" ({args.tournaments} tournaments x {args.rounds} rounds, {args.entrants // 2} games per round each):")
    print(f"  p50 {quantile(transitions, 0.5):7.2f} s   p90 {quantile(transitions, 0.9):7.2f} s   "
          f"p99 {quantile(transitions, 0.99):7.2f} s   max {max(transitions):7.2f} s   "
          f"mean {statistics.fmean(transitions):.2f} s")
    print(f"  (first GameRequested of the next round: p50 {quantile(firsts, 0.5):.2f} s, "
          f"p99 {quantile(firsts, 0.99):.2f} s)")
    for number, values in sorted(by_round.items()):
        print(
            f"  round {number} -> {number + 1}: p50 {quantile(values, 0.5):7.2f} s"
            f"   p99 {quantile(values, 0.99):7.2f} s"
            f"   ({len(values)} tournaments)"
        )
    print(f"machine load           at the first result: {load_before}; at the last request: {load_after}")
    if cpu_before is not None:
        process = stack.services["pairing"].process
        print_cpu(cpu_before, cpu_after, args.rounds, args.tournaments, process.pid if process is not None else 0)
    if count:
        print(f"service pairing time   {count:.0f} rounds paired, mean {total / count:.2f} s from decision to commit"
              f" (arbiter_pairing_seconds; opening draw, engine, save)")


def main() -> None:
    """Start the stack, run the benchmark, print the figures, stop everything."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tournaments", type=int, default=100)
    parser.add_argument("--entrants", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="transitions measured per tournament (1 -> 2, ...)")
    parser.add_argument("--processes", type=int, default=2, help="PAIRING_PROCESSES of the service (engine workers)")
    parser.add_argument("--concurrency", type=int, default=8, help="PAIRING_CONCURRENCY of the service")
    parser.add_argument("--join-budget", type=float, default=120.0,
                        help="real seconds the joins may take before every tournament starts")
    parser.add_argument("--time-scale", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()

    extra = {"PAIRING_PROCESSES": str(args.processes), "PAIRING_CONCURRENCY": str(args.concurrency),
             "DB_POOL_MAX": "20"}
    with scratch_stack("bench-pairing-", time_scale=args.time_scale, extra_env=extra) as stack:
        stack.start_services(SERVICES)
        stack.wait_serving(timeout=120, names=SERVICES)
        asyncio.run(run(args, stack))


if __name__ == "__main__":
    main()
