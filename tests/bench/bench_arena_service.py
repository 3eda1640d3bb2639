"""Arena service: game end -> next GameRequested latency at 500 games/s, and a 5,000-player burst.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). One run:
1. start the infrastructure (KAFKA_BOOTSTRAP_SERVERS / REDIS_URL / DATABASE_URL when given,
   else the embedded tansu, a throwaway redis-server and the machine's or an embedded
   PostgreSQL, on a fresh database) and the arena service's parts in this process: the
   matchmaker (lease, worker, passes) and the GameFinished handler, on real Redis and
   PostgreSQL, with the outbox relay publishing to Kafka, and the garbage collector tuned as
   serve() tunes it;
2. burst: an arena with 5,000 players all waiting; one pairing pass, timed (snapshot from
   Redis, matching, one transaction with 2,500 games and their GameRequested, queue update),
   `--burst-runs` times, each in a fresh arena;
3. steady state: an arena with 10,000 players (the first pass pairs 5,000 games), then
   `--rate` games finish per second for `--seconds`: each GameFinished goes to the service's
   batch handler as the Kafka subscriber would hand it over; the figure is, per player, from
   the moment their GameFinished is handed to the service to the commit of the transaction
   holding their next GameRequested (the event is then in the outbox; the relay publishes it).
   Kafka transport before and after is not included (see bench_rating_service for the broker).
   The first `--warmup` seconds of results are not measured; the tables are analyzed after it,
   as autovacuum keeps them analyzed in a running system. `--no-analyze` measures the young
   database instead (no planner statistics yet): the pairing save's running-games probe then
   walks every running game of the arena, and the figure is far worse (seconds).
Targets: p99 <= 50 ms; the burst <= 200 ms.

`--foreign-games N` measures instead what games that are not the arena's cost the service (the
system benchmark's tournament games all flow through its consumers): N tournament GameStarted +
GameFinished are produced while the service is stopped, then the real service process
(`services.arena.main`) starts and the figures are its CPU (from /proc) per game and the games/s
while it drains them; then its idle CPU; then, with `--foreign-rate R` (0: skip), its CPU while
R such games per second arrive live for `--foreign-seconds` (small fetches, as in the system
benchmark).

    .venv/bin/python tests/bench/bench_arena_service.py [--players 10000] [--rate 500] [--seconds 20]
        [--warmup 3] [--burst-runs 3] [--no-analyze]
    .venv/bin/python tests/bench/bench_arena_service.py --foreign-games 20000 [--foreign-rate 1000]
        [--foreign-seconds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
from aiokafka import AIOKafkaProducer

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.creators import ensure_creator_registry
from arbiter.kit.events import timestamp
from arbiter.kit.kafka import ensure_topics, make_outbox_producer, outbox_publisher
from arbiter.kit.outbox import OutboxRelay
from arbiter.kit.runtime import connect, tune_garbage_collector
from arbiter_tools.devstack.stack import SystemStack, scratch_stack
from arbiter_tools.simulator.bench.host import process_cpu_seconds
from arbiter_tools.simulator.bench.readings import CommittedOffsets
from services.arena.clients import RatingCache
from services.arena.handlers import ResultDesk
from services.arena.hot import HotStore
from services.arena.lifecycle import Lifecycle
from services.arena.main import MIGRATIONS
from services.arena.matchmaker import Matchmaker
from services.arena.metrics import ArenaMetrics
from services.arena.settings import ArenaSettings
from services.arena.watch import WatchHub

RESULTS = (cm.GAME_RESULT_WHITE_WINS, cm.GAME_RESULT_BLACK_WINS, cm.GAME_RESULT_DRAW)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def make_arena(pool: asyncpg.Pool, players: int, now, analyze: bool = True) -> str:
    """An arena running for 8 hours with `players` joined, written straight to PostgreSQL."""
    arena_id = f"a_bench{uuid.uuid4().hex[:6]}"
    settings = ap.ArenaSettings(name="bench", variant="international", duration_minutes=480,
                                time_control=cm.FischerControl(base_seconds=60, increment_seconds=0), rated=True)
    async with pool.acquire() as c, c.transaction():
        await c.execute(
            "INSERT INTO arenas (id, creator_id, name, variant, base_seconds, increment_seconds, speed, rated,"
            " duration_minutes, starts_at, ends_at, state, settings, created_at)"
            " VALUES ($1, $2, 'bench', 'international', 60, 0, 'bullet', true, 480, $3, $4, 'running', $5, $3)",
            arena_id, f"creator-{arena_id}", now, now + timedelta(hours=8), settings.SerializeToString(),
        )
        await c.executemany(
            "INSERT INTO arena_players (arena_id, player_id, joined_at) VALUES ($1, $2, $3)",
            [(arena_id, f"{arena_id}-p{i:05d}", now) for i in range(players)],
        )
    # A running system's tables carry planner statistics (autovacuum analyzes them within a minute of
    # any large change); a fresh bench database has none, and its plans would not be the production ones.
    if analyze:
        await pool.execute("ANALYZE arenas, arena_players, arena_games")
    return arena_id


async def run(args: argparse.Namespace, stack: SystemStack) -> None:
    settings = ArenaSettings(
        kafka_bootstrap_servers=stack.kafka_bootstrap, redis_url=stack.redis_url, database_url=stack.database_url,
        grpc_port=0, metrics_port=0, db_pool_max=10, tick_seconds=0.25, replica_id="bench",
    )
    infra = await connect(settings, "arena", MIGRATIONS)
    await ensure_creator_registry(infra.pool)
    metrics = ArenaMetrics.create(infra.metrics)
    hot = HotStore(infra.redis)
    hub = WatchHub(infra.redis)
    running: dict[str, tuple[str, str]] = {}
    pending: dict[str, float] = {}
    latencies: list[float] = []
    # Only games ending after the warm-up count.
    measured_from = [float("inf")]
    # (moment the game ended, latency): the verbose per-second breakdown.
    timeline: list[tuple[float, float]] = []

    def on_paired(arena_id: str, games: list[tuple[str, str, str]]) -> None:
        now = time.perf_counter()
        for game_id, white, black in games:
            running[game_id] = (white, black)
            for player in (white, black):
                started = pending.pop(player, None)
                if started is not None and started >= measured_from[0]:
                    latencies.append(now - started)
                    timeline.append((started, now - started))

    matchmaker = Matchmaker(infra.pool, hot, infra.outbox, infra.time_source, RatingCache(None, 10.0), hub,
                            Lifecycle(infra.outbox, hot, infra.time_source), metrics, settings, on_paired=on_paired)
    desk = ResultDesk(infra.pool, hot, infra.outbox, infra.time_source, matchmaker, hub)
    stop = asyncio.Event()
    producer = make_outbox_producer(settings, "arena")
    await producer.start()
    relay = OutboxRelay(infra.pool, "arena", outbox_publisher(producer), infra.metrics)
    relay_task = asyncio.create_task(relay.run(stop))
    # As the service runtime does once the service is wired.
    tune_garbage_collector(settings.gc_young_threshold)
    try:
        # -- burst ------------------------------------------------------------------------------
        # Several bursts, each a fresh arena: one sample on a shared machine says little.
        bursts: list[float] = []
        for run_number in range(1, args.burst_runs + 1):
            burst_arena = await make_arena(infra.pool, args.burst, infra.time_source.now(), not args.no_analyze)
            await matchmaker.rebuild(burst_arena)
            waiting = await hot.waiting_count(burst_arena)
            committed: list[float] = []
            matchmaker.on_paired = lambda arena_id, games: committed.append(time.perf_counter())
            started = time.perf_counter()
            games = await matchmaker.pair_once(burst_arena)
            burst = time.perf_counter() - started
            matchmaker.on_paired = on_paired
            left = await hot.waiting_count(burst_arena)
            bursts.append(burst)
            print(f"burst {run_number}: {waiting} waiting players -> {games} games; GameRequested committed after"
                  f" {(committed[0] - started) * 1000:.0f} ms (Redis snapshot, match_waiting, one transaction),"
                  f" queue updated after {burst * 1000:.0f} ms; {left} left waiting")
            await infra.pool.execute("UPDATE arenas SET state = 'finished' WHERE id = $1", burst_arena)
            running.clear()
        print(f"burst: all paired in median {statistics.median(bursts) * 1000:.0f} ms,"
              f" min {min(bursts) * 1000:.0f} ms, max {max(bursts) * 1000:.0f} ms over {len(bursts)} runs")

        # -- steady state -------------------------------------------------------------------------
        arena_id = await make_arena(infra.pool, args.players, infra.time_source.now(), not args.no_analyze)
        started = time.perf_counter()
        owner = asyncio.create_task(matchmaker.run(stop))
        while len(running) < args.players // 2 - 1 and time.perf_counter() - started < 60:
            await asyncio.sleep(0.01)
        print(f"steady: {args.players} players joined; the first pass opened {len(running)} games"
              f" {time.perf_counter() - started:.2f} s after the lease was taken (includes the rebuild)")
        # Steady state only: let the relay publish the first pass's GameRequested events first.
        while await infra.pool.fetchval("SELECT count(*) FROM outbox") and time.perf_counter() - started < 120:
            await asyncio.sleep(0.1)
        print(f"steady: outbox relayed to Kafka {time.perf_counter() - started:.2f} s after the lease was taken")
        queue: asyncio.Queue[ev.GameFinished] = asyncio.Queue()
        rng = random.Random(args.seed)

        async def consume() -> None:
            # As the kit's batch subscriber: whatever is there, up to 500 at a time.
            while True:
                batch = [await queue.get()]
                while not queue.empty() and len(batch) < 500:
                    batch.append(queue.get_nowait())
                try:
                    await desk.on_finished(batch)
                except Exception as error:  # the kit redelivers a failed batch: so does this stand-in
                    print(f"handler failed, retrying the batch: {error!r}")
                    for event in batch:
                        queue.put_nowait(event)
                    await asyncio.sleep(0.5)

        consumer = asyncio.create_task(consume())
        warm = int(args.rate * args.warmup)
        total = warm + int(args.rate * args.seconds)
        measured_sent = 0
        tick = 0.01
        per_tick = args.rate * tick
        sent = 0
        owed = 0.0
        begin = time.perf_counter()
        while sent < total:
            owed += per_tick
            while owed >= 1 and sent < total and running:
                # The oldest running game ends first (games of one arena last about as long).
                game_id = next(iter(running))
                white, black = running.pop(game_id)
                event = ev.GameFinished(
                    game_id=game_id, competition=cm.CompetitionRef(kind=cm.COMPETITION_KIND_ARENA, id=arena_id),
                    white_id=white, black_id=black, result=rng.choice(RESULTS),  # type: ignore[arg-type]
                    termination=cm.TERMINATION_RESIGNATION, finished_at=timestamp(infra.time_source.now()),
                )
                event.meta.event_id = uuid.uuid4().hex
                now = time.perf_counter()
                pending[white] = pending[black] = now
                queue.put_nowait(event)
                sent += 1
                owed -= 1
            if sent >= warm and measured_from[0] == float("inf"):
                # End of the warm-up: statistics as autovacuum keeps them in a running system (see
                # make_arena), now that the table holds finished games too; the measure starts here.
                if not args.no_analyze:
                    await infra.pool.execute("ANALYZE arena_players, arena_games")
                measured_from[0] = time.perf_counter()
                measured_sent = sent
            target = begin + (sent / args.rate)
            # Never a busy loop: with no game running the feeder waits for the service to catch up.
            await asyncio.sleep(max(0.001, min(tick, target - time.perf_counter())))
            if args.verbose and int(time.perf_counter() - begin) != int(time.perf_counter() - begin - tick):
                print(f"  t={time.perf_counter() - begin:.0f}s sent {sent}, running {len(running)},"
                      f" waiting for a game {len(pending)}, handler backlog {queue.qsize()}")
            if time.perf_counter() - begin > 3 * args.seconds + 30:
                print("the service fell too far behind; stopping the feed")
                break
        elapsed = time.perf_counter() - min(measured_from[0], time.perf_counter())
        settle = time.perf_counter()
        while pending and time.perf_counter() - settle < 5:
            await asyncio.sleep(0.05)
        consumer.cancel()
        owner_stop = stop
        owner_stop.set()
        await asyncio.gather(owner, consumer, return_exceptions=True)
        measured = sent - measured_sent
        print(f"steady: {warm} GameFinished of warm-up, then {measured} handed over in {elapsed:.2f} s"
              f" ({measured / max(elapsed, 1e-9):.0f} games/s);"
              f" {len(latencies)} players re-paired, {len(pending)} still waiting at the end")
        if latencies:
            print(f"game end -> next GameRequested (committed): p50 {percentile(latencies, 0.50) * 1000:.1f} ms,"
                  f" p90 {percentile(latencies, 0.90) * 1000:.1f} ms, p99 {percentile(latencies, 0.99) * 1000:.1f} ms,"
                  f" max {max(latencies) * 1000:.1f} ms, mean {statistics.fmean(latencies) * 1000:.1f} ms")
        if args.verbose and timeline:
            by_second: dict[int, list[float]] = {}
            for at, latency in timeline:
                by_second.setdefault(int(at - measured_from[0]), []).append(latency)
            for second, values in sorted(by_second.items()):
                print(f"  second {second:3d}: {len(values):5d} re-paired, p50 {percentile(values, 0.5) * 1000:6.1f} ms,"
                      f" p99 {percentile(values, 0.99) * 1000:6.1f} ms, max {max(values) * 1000:6.1f} ms")
        pairings = metrics.pairings.labels("arena")._value.get()
        print(f"pairings total {pairings:.0f}; cooldown refusals"
              f" {metrics.cooldown_refusals.labels('arena')._value.get():.0f}")
    finally:
        stop.set()
        failed = (await asyncio.gather(relay_task, return_exceptions=True))[0]
        if failed is not None:
            print(f"the outbox relay failed: {failed!r}")
        await producer.stop()
        await infra.close()


def service_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far, from /proc (clock-tick resolution)."""
    return process_cpu_seconds(pid)[1]


def foreign_game(number: int, at) -> tuple[ev.GameStarted, ev.GameFinished]:
    """A tournament game's start and result, as the play site publishes them (none of the arena's business)."""
    game_id = f"t_bench/{number}"
    competition = cm.CompetitionRef(kind=cm.COMPETITION_KIND_TOURNAMENT, id="t_bench")
    started = ev.GameStarted(game_id=game_id, white_id=f"w{number}", black_id=f"b{number}", started_at=at,
                             competition=competition, variant="international")
    started.meta.event_id = f"{game_id}/started"
    finished = ev.GameFinished(
        game_id=game_id, competition=competition, variant="international", white_id=f"w{number}",
        black_id=f"b{number}", termination=cm.TERMINATION_RESIGNATION, rated=True, plies=40,
        result=RESULTS[number % 3], finished_at=at, started_at=at,  # type: ignore[arg-type]
    )
    finished.meta.event_id = f"{game_id}/finished"
    return started, finished


async def send_foreign(producer: AIOKafkaProducer, first: int, count: int) -> None:
    """Publish `count` foreign games from number `first`, waiting for every acknowledgement."""
    at = timestamp(datetime.now(UTC))
    sends = []
    for number in range(first, first + count):
        started, finished = foreign_game(number, at)
        key = started.game_id.encode()
        sends.append(await producer.send(events.GAME_STARTED.name, started.SerializeToString(), key=key))
        sends.append(await producer.send(events.GAME_FINISHED.name, finished.SerializeToString(), key=key))
    await asyncio.gather(*sends)


async def run_foreign(args: argparse.Namespace, stack: SystemStack) -> None:
    """CPU per foreign game of the real arena service process: a backlog, idle, then a live feed."""
    await ensure_topics(stack.kafka_bootstrap, ArenaSettings.model_fields["kafka_partitions"].default)
    producer = AIOKafkaProducer(bootstrap_servers=stack.kafka_bootstrap, linger_ms=5, acks="all")
    offsets = CommittedOffsets(stack.kafka_bootstrap)
    await producer.start()
    await offsets.start()
    group = stack.consumer_group("arena")
    topic = events.GAME_FINISHED.name
    try:
        began = time.perf_counter()
        await send_foreign(producer, 0, args.foreign_games)
        print(f"foreign: {args.foreign_games} tournament GameStarted + GameFinished produced in"
              f" {time.perf_counter() - began:.1f} s, service stopped")
        stack.start_services(["arena"])
        pid = stack.services["arena"].process.pid  # type: ignore[union-attr]
        first: tuple[float, float, int] | None = None
        last = (time.perf_counter(), service_cpu_seconds(pid), 0)
        deadline = time.perf_counter() + 300
        while time.perf_counter() < deadline:
            done = await offsets.total(group, topic)
            sample = (time.perf_counter(), service_cpu_seconds(pid), done)
            if first is None and done > 0:
                first = sample
            last = sample
            if done >= args.foreign_games:
                break
            await asyncio.sleep(0.05)
        # The consumers start before gRPC serves: the drain is sampled from the process start.
        start_wait = await asyncio.to_thread(stack.wait_serving, 60.0, ["arena"])
        print(f"foreign: service (pid {pid}) serving after {start_wait:.1f} s", flush=True)
        if first is None or last[2] <= first[2]:
            print(f"foreign: the service committed {last[2]} of {args.foreign_games} GameFinished; no figure")
            return
        games = last[2] - first[2]
        seconds, cpu = last[0] - first[0], last[1] - first[1]
        print(f"foreign backlog: {games} GameFinished (after the first committed batch) in {seconds:.2f} s ="
              f" {games / seconds:.0f} games/s; service CPU {cpu:.2f} s = {cpu / games * 1e6:.1f} us per game")
        await asyncio.sleep(2)
        idle_from = (time.perf_counter(), service_cpu_seconds(pid))
        await asyncio.sleep(args.idle_seconds)
        idle = (service_cpu_seconds(pid) - idle_from[1]) / (time.perf_counter() - idle_from[0])
        print(f"foreign idle: service CPU {idle * 1000:.1f} ms/s ({idle * 100:.2f}% of a core) over"
              f" {args.idle_seconds:.0f} s with nothing to consume")
        if args.foreign_rate > 0:
            total = int(args.foreign_rate * args.foreign_seconds)
            tick = 0.01
            sent = 0
            begin = time.perf_counter()
            cpu_begin = service_cpu_seconds(pid)
            while sent < total:
                due = min(total, int((time.perf_counter() - begin) * args.foreign_rate))
                if due > sent:
                    await send_foreign(producer, args.foreign_games + sent, due - sent)
                    sent = due
                await asyncio.sleep(tick)
            target = args.foreign_games + total
            settle = time.perf_counter() + 30
            while await offsets.total(group, topic) < target and time.perf_counter() < settle:
                await asyncio.sleep(0.05)
            seconds = time.perf_counter() - begin
            cpu = service_cpu_seconds(pid) - cpu_begin
            net = cpu - idle * seconds
            print(f"foreign live: {total} games at {total / seconds:.0f} games/s over {seconds:.1f} s; service CPU"
                  f" {cpu:.2f} s = {cpu / seconds * 100:.1f}% of a core = {cpu / total * 1e6:.1f} us per game"
                  f" ({net / total * 1e6:.1f} us net of idle)")
    finally:
        await offsets.stop()
        await producer.stop()


def main() -> None:
    """Start the infrastructure, run the benchmark, print the figures, stop everything."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--burst", type=int, default=5_000, help="players waiting at once in the burst")
    parser.add_argument("--burst-runs", type=int, default=3, help="bursts measured, each in a fresh arena")
    parser.add_argument("--rate", type=float, default=500.0, help="games finishing per second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of results before the measure starts")
    parser.add_argument("--no-analyze", action="store_true", help="no planner statistics (a young database)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--verbose", action="store_true", help="print progress every second")
    parser.add_argument("--foreign-games", type=int, default=0,
                        help="measure only the cost of N non-arena games to the service process (see above)")
    parser.add_argument("--foreign-rate", type=float, default=1000.0, help="foreign games/s of the live feed")
    parser.add_argument("--foreign-seconds", type=float, default=15.0, help="length of the live feed")
    parser.add_argument("--fetch-wait-ms", type=int, default=20,
                        help="KAFKA_FETCH_MAX_WAIT_MS of the service in --foreign-games (`arbiter bench` uses 20)")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="idle CPU measured over this long")
    args = parser.parse_args()

    # The system benchmark's fetch wait (tansu answers a fetch only when it ends): it sets how often
    # an idle consumer polls, so what foreign games and idleness cost depends on it.
    extra_env = {"KAFKA_FETCH_MAX_WAIT_MS": str(args.fetch_wait_ms)} if args.foreign_games else {}
    with scratch_stack("bench-arena-", extra_env=extra_env) as stack:
        asyncio.run(run_foreign(args, stack) if args.foreign_games else run(args, stack))


if __name__ == "__main__":
    main()
