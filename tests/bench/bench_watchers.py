"""Watchers never hurt callers: Create, Join and matchmaker latency with and without 1,000 watchers per competition.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). One run:
1. start the infrastructure (KAFKA_BOOTSTRAP_SERVERS / REDIS_URL / DATABASE_URL when given, else
   embedded, on a fresh database), the pairing and arena services as processes (the arena
   pairs by rank: no rating service to wait for) and, by default, a watch server of each
   (WATCH_ONLY, at the niceness `arbiter up --watch-servers` gives it) that serves the streams;
   `--streams-on services` has the services serve them themselves;
2. after an unmeasured round of every phase (`--warmup-calls` calls of each kind), phases, each
   on a fresh tournament T (pairing) and arena A (arena): `none` (nobody watches),
   `reading` (`--watchers` streams of T and as many of A, read as changes come), `idle` (as
   many, never read past their snapshot) and `still` (as many reading, while the joins go to
   another tournament and arena: held streams with nothing to send). The streams are held by a
   process of their own at the lowest CPU priority (a play site's viewers are browsers elsewhere,
   not this machine's cores), and a phase starts once every snapshot is in. The phases take
   turns, `--rounds` times, so that the machine's other load weighs on each alike;
3. during a phase, three callers each make `--calls` calls at `--rate` a second, spaced at random
   (Poisson): CreateTournament (a new creator each), JoinTournament into T and JoinArena into A
   (the matchmaker pairs them as they come). Each call is timed by its caller, and by the service
   (`arbiter_grpc_request_seconds`: the mean is exact). The matchmaker's passes are timed by the
   arena service (`arbiter_arena_pairing_pass_seconds`): their p50/p99 are interpolated within
   the histogram's buckets, their mean exact;
4. prints, per phase side by side, each figure and its ratio to `none`, the CPU of the services,
   of their watch servers and of the viewers (the process holding the streams), the streams open
   at the end of each round (`arbiter_grpc_streams_open` of the processes serving them), dropped
   and refused (`arbiter_watch_dropped_total`, `arbiter_watch_refused_total`).

Every Join into T and A is a change their watchers hear: at the default rate the process serving
T's streams sends each of its 1,000 4 changes a second, the one serving A's 6 (joins and pairings).

    .venv/bin/python tests/bench/bench_watchers.py [--watchers 1000] [--calls 60] [--rounds 2] [--rate 4]
        [--phases none,still,reading,idle] [--streams-on watch-servers|services]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import grpc
import psutil

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc, tournament_pb2_grpc
from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit.events import timestamp
from arbiter_tools.devstack.processes import ManagedProcess, set_niceness
from arbiter_tools.devstack.stack import SystemStack, scratch_stack
from arbiter_tools.simulator.bench.host import cpu_set, pin, process_cpu_seconds
from arbiter_tools.simulator.bench.readings import scrape

SERVICES = ("pairing", "arena")
CALLS = ("CreateTournament", "JoinTournament", "JoinArena")
GRPC_METRIC = "arbiter_grpc_request_seconds"
# Streams per client channel (HTTP/2 connection), as many viewers' connections would spread them.
STREAMS_PER_CHANNEL = 100
PASS_METRIC = "arbiter_arena_pairing_pass_seconds"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def actor(prefix: str) -> cm.Actor:
    return cm.Actor(player_id=f"{prefix}-{uuid.uuid4().hex[:10]}", kind=cm.ACCOUNT_KIND_REGISTERED)


def tournament_settings() -> tp.TournamentSettings:
    return tp.TournamentSettings(
        name="Bench", variant="international",
        time_control=cm.TimeControl(fischer=cm.FischerControl(base_seconds=180, increment_seconds=2)),
        capacity=200, starts_at=timestamp(datetime.now(UTC) + timedelta(days=1)), duration_minutes=120,
    )


def arena_settings() -> ap.ArenaSettings:
    return ap.ArenaSettings(name="Bench", variant="international", duration_minutes=240,
                            time_control=cm.FischerControl(base_seconds=60, increment_seconds=0))


# -- the watchers' process ---------------------------------------------------------------------


async def hold_watchers(pairing: str, tournament_id: str, arena: str, arena_id: str, streams: int, read: bool,
                        cpus: set[int]) -> None:
    """Open `streams` watches of the tournament and of the arena; say "ready" once all snapshots are in."""
    os.nice(19)
    if cpus:
        # Before gRPC starts its threads: they inherit it.
        os.sched_setaffinity(0, cpus)
    channels = [grpc.aio.insecure_channel(address) for address in (pairing, arena)
                for _ in range(max(1, streams // STREAMS_PER_CHANNEL))]
    half = len(channels) // 2
    calls = []
    for n in range(streams):
        calls.append(tournament_pb2_grpc.TournamentServiceStub(channels[n % half]).WatchTournament(
            tp.WatchTournamentRequest(tournament_id=tournament_id)))
        calls.append(arena_pb2_grpc.ArenaServiceStub(channels[half + n % half]).WatchArena(
            ap.WatchArenaRequest(arena_id=arena_id)))
    snapshots = await asyncio.gather(*(call.read() for call in calls), return_exceptions=True)
    opened = sum(1 for s in snapshots if not isinstance(s, BaseException) and s is not grpc.aio.EOF)
    print(f"ready {opened}", flush=True)
    received = 0

    async def drain(call: grpc.aio.UnaryStreamCall) -> None:
        nonlocal received
        try:
            while await call.read() is not grpc.aio.EOF:
                received += 1
        except grpc.aio.AioRpcError:
            pass

    readers = [asyncio.create_task(drain(call)) for call in calls] if read else []
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    print(f"received {received} cpu {time.process_time():.3f}", flush=True)
    for call in calls:
        call.cancel()
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    for channel in channels:
        await channel.close()


# -- the measuring process ---------------------------------------------------------------------


@dataclass
class Phase:
    """What one kind of phase measured, over every round."""

    name: str
    latencies: dict[str, list[float]] = field(default_factory=lambda: {call: [] for call in CALLS})
    # Differences of the services' histograms over the phase: bucket bound -> count, -1 -> sum.
    served: dict[str, dict[float, float]] = field(default_factory=lambda: {call: {} for call in CALLS})
    passes: dict[float, float] = field(default_factory=dict)
    # By process: the services, and their watch servers when they serve the streams.
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    collecting: dict[str, float] = field(default_factory=lambda: dict.fromkeys(SERVICES, 0.0))
    seconds: float = 0.0
    watched: list[int] = field(default_factory=list)
    streams_open: list[float] = field(default_factory=list)
    dropped: float = 0.0
    refused: float = 0.0
    received: int = 0


def histogram(samples: dict[str, float], name: str, **labels: str) -> dict[float, float]:
    """One histogram of a scrape: cumulative counts by upper bound, and its sum under -1."""
    wanted = [f'{key}="{value}"' for key, value in labels.items()]
    buckets = {}
    for key, value in samples.items():
        if not all(part in key for part in wanted):
            continue
        if key.startswith(name + "_bucket{"):
            bound = key.split('le="', 1)[1].split('"', 1)[0]
            buckets[float("inf") if bound == "+Inf" else float(bound)] = value
        elif key.startswith(name + "_sum{"):
            buckets[-1.0] = value
    return buckets


def added(into: dict[float, float], before: dict[float, float], after: dict[float, float]) -> None:
    for bound, value in after.items():
        into[bound] = into.get(bound, 0.0) + value - before.get(bound, 0.0)


def bucket_quantile(buckets: dict[float, float], q: float) -> float:
    """Prometheus's histogram_quantile: linear within the bucket holding the q-th observation."""
    bounds = sorted(b for b in buckets if b >= 0)
    total = buckets[bounds[-1]] if bounds else 0.0
    if total <= 0:
        return float("nan")
    rank, lower, below = q * total, 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * ((rank - below) / (count - below) if count > below else 0.0)
        lower, below = bound, count
    return lower


def mean_ms(buckets: dict[float, float]) -> float:
    count = buckets.get(float("inf"), 0.0)
    return buckets.get(-1.0, 0.0) / count * 1000 if count else float("nan")


def total(samples: dict[str, float], name: str) -> float:
    """Every sample of a series summed, whatever its labels."""
    return sum(value for key, value in samples.items() if key.split("{", 1)[0] == name)


async def paced(count: int, rate: float, call: Callable[[], Awaitable[object]], into: list[float],
                rng: random.Random) -> None:
    """`count` calls at `rate` a second on average, spaced at random; each one's latency in ms into `into`."""
    due = time.perf_counter()
    pending: set[asyncio.Task[None]] = set()

    async def one() -> None:
        began = time.perf_counter()
        await call()
        into.append((time.perf_counter() - began) * 1000)

    for _ in range(count):
        due += rng.expovariate(rate)
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        task = asyncio.create_task(one())
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)


async def run_phase(phase: Phase, args: argparse.Namespace, stack: SystemStack, rng: random.Random) -> None:
    """One round of `phase` on a fresh tournament and arena, its figures added to `phase`."""
    pairing, arena = stack.services["pairing"], stack.services["arena"]
    # Who serves the streams: the services themselves, or their watch servers.
    streams_server = {service: stack.watch_servers.get(service, stack.services[service]) for service in SERVICES}
    async with grpc.aio.insecure_channel(pairing.grpc_address) as pairing_channel, \
            grpc.aio.insecure_channel(arena.grpc_address) as arena_channel:
        tournaments = tournament_pb2_grpc.TournamentServiceStub(pairing_channel)
        arenas = arena_pb2_grpc.ArenaServiceStub(arena_channel)
        tournament = (await tournaments.CreateTournament(tp.CreateTournamentRequest(
            actor=actor("creator"), settings=tournament_settings()))).tournament
        watched_arena = await arenas.CreateArena(ap.CreateArenaRequest(actor=actor("creator"),
                                                                       settings=arena_settings()))
        joined_tournament, joined_arena = tournament, watched_arena
        if phase.name == "still":
            # The watched competitions never change: the joins go to two others.
            joined_tournament = (await tournaments.CreateTournament(tp.CreateTournamentRequest(
                actor=actor("creator"), settings=tournament_settings()))).tournament
            joined_arena = await arenas.CreateArena(ap.CreateArenaRequest(actor=actor("creator"),
                                                                          settings=arena_settings()))
        holder = None
        if phase.name != "none":
            holder = subprocess.Popen(
                [sys.executable, __file__, "--hold", streams_server["pairing"].grpc_address, tournament.id,
                 streams_server["arena"].grpc_address,
                 watched_arena.id, str(args.watchers), "idle" if phase.name == "idle" else "read", args.watch_cpus],
                stdout=subprocess.PIPE, text=True, start_new_session=True,
            )
            assert holder.stdout is not None
            line = await asyncio.to_thread(holder.stdout.readline)
            phase.watched.append(int(line.split()[1]) if line.startswith("ready") else 0)
            # Its session's scheduling group too: with autogroups, a thread's niceness alone weighs
            # nothing against the services, each in a session of its own.
            set_niceness([holder.pid], 19)
        before = {service: scrape(stack.services[service].metrics_url) for service in SERVICES}
        streams_before = {service: scrape(streams_server[service].metrics_url) for service in SERVICES}
        cpu_before = {name: process_cpu_seconds(process.pid)[1] for name, process in measured_processes(stack).items()}
        began = time.perf_counter()
        await asyncio.gather(
            paced(args.calls, args.rate, lambda: tournaments.CreateTournament(tp.CreateTournamentRequest(
                actor=actor("creator"), settings=tournament_settings())), phase.latencies["CreateTournament"], rng),
            paced(args.calls, args.rate, lambda: tournaments.JoinTournament(tp.JoinTournamentRequest(
                actor=actor("entrant"), tournament_id=joined_tournament.id)),
                phase.latencies["JoinTournament"], rng),
            paced(args.calls, args.rate, lambda: arenas.JoinArena(ap.JoinArenaRequest(
                actor=actor("player"), arena_id=joined_arena.id)), phase.latencies["JoinArena"], rng),
        )
        # The last joins' pass.
        await asyncio.sleep(1.0)
        after = {service: scrape(stack.services[service].metrics_url) for service in SERVICES}
        streams_after = {service: scrape(streams_server[service].metrics_url) for service in SERVICES}
        phase.seconds += time.perf_counter() - began
        for name, process in measured_processes(stack).items():
            phase.cpu_seconds[name] = (phase.cpu_seconds.get(name, 0.0) + process_cpu_seconds(process.pid)[1]
                                       - cpu_before[name])
        for service in SERVICES:
            phase.collecting[service] += (total(after[service], "arbiter_gc_pause_seconds_sum")
                                          - total(before[service], "arbiter_gc_pause_seconds_sum"))
        if holder is not None:
            holder.send_signal(signal.SIGTERM)
            out, _ = await asyncio.to_thread(holder.communicate, None, 60)
            said = next((line.split() for line in out.splitlines() if line.startswith("received")), [])
            if said:
                phase.received += int(said[1])
                phase.cpu_seconds["viewers"] = phase.cpu_seconds.get("viewers", 0.0) + float(said[3])
        for call in CALLS:
            service = "arena" if call == "JoinArena" else "pairing"
            added(phase.served[call], histogram(before[service], GRPC_METRIC, method=call),
                  histogram(after[service], GRPC_METRIC, method=call))
        added(phase.passes, histogram(before["arena"], PASS_METRIC), histogram(after["arena"], PASS_METRIC))
        phase.streams_open.append(sum(total(streams_after[s], "arbiter_grpc_streams_open") for s in SERVICES))
        for name in ("dropped", "refused"):
            series = f"arbiter_watch_{name}_total"
            setattr(phase, name, getattr(phase, name)
                    + sum(total(streams_after[s], series) - total(streams_before[s], series) for s in SERVICES))


def report(phases: list[Phase], args: argparse.Namespace) -> None:
    base = phases[0]
    served_by = "their watch servers" if args.streams_on == "watch-servers" else "the services themselves"
    if args.watch_cpus:
        served_by += f" (they and the watchers' holder on CPUs {args.watch_cpus} only)"
    print(f"\nstreams served by {served_by}; {args.watchers} watchers per competition; "
          f"{args.rounds} round(s) of {args.calls} calls of each kind "
          f"at {args.rate}/s per phase; {os.cpu_count()} cores; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; "
          f"host {os.uname().nodename}")
    print(f"{'ms':<30}" + "".join(f"{p.name:>16}" for p in phases)
          + "".join(f"{p.name + '/' + base.name:>16}" for p in phases[1:]))

    def row(label: str, figures: list[float]) -> None:
        print(f"{label:<30}" + "".join(f"{f:>16.1f}" for f in figures)
              + "".join(f"{f / figures[0]:>16.2f}" for f in figures[1:]))

    for call in CALLS:
        for name, q in (("p50", 0.5), ("p99", 0.99)):
            row(f"{call} {name}", [percentile(p.latencies[call], q) for p in phases])
        row(f"{call} served, mean", [mean_ms(p.served[call]) for p in phases])
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        row(f"matchmaker pass {name}", [bucket_quantile(p.passes, q) * 1000 for p in phases])
    row("matchmaker pass mean", [mean_ms(p.passes) for p in phases])
    print(f"{'matchmaker passes':<30}" + "".join(f"{p.passes.get(float('inf'), 0):>16.0f}" for p in phases))
    for process in {name: None for p in phases for name in p.cpu_seconds}:
        print(f"{process + ' CPU, % of a core':<30}"
              + "".join(f"{p.cpu_seconds.get(process, 0.0) / p.seconds * 100:>16.0f}" for p in phases))
    for service in SERVICES:
        print(f"{service + ' in GC, % of the time':<30}"
              + "".join(f"{p.collecting[service] / p.seconds * 100:>16.1f}" for p in phases))
    for p in phases[1:]:
        print(f"  {p.name}: streams held per round {p.watched} ({args.watchers} per competition, two competitions); "
              f"open at each round's end {[int(n) for n in p.streams_open]}; dropped {p.dropped:.0f}, "
              f"refused {p.refused:.0f}; changes the watchers received {p.received}")
    print("(p50/p99: measured by the caller; served, mean: the service's own time for the call, exact; "
          "pass p50/p99 interpolated within the service's histogram buckets, the mean exact)")


def measured_processes(stack: SystemStack) -> dict[str, ManagedProcess]:
    """The processes whose CPU is reported, by label: the services and their watch servers."""
    servers = [*(stack.services[service] for service in SERVICES), *stack.watch_servers.values()]
    return {server.label: server.process for server in servers if server.process is not None}


async def run(args: argparse.Namespace, stack: SystemStack) -> None:
    rng = random.Random(args.seed)
    phases = [Phase(name) for name in args.phases.split(",")]
    if args.warmup_calls:
        # Unmeasured: the first phase run would otherwise pay for the processes' first calls alone.
        warming = argparse.Namespace(**{**vars(args), "calls": args.warmup_calls})
        for phase in phases:
            print(f"warming up, phase {phase.name}...", flush=True)
            await run_phase(Phase(phase.name), warming, stack, rng)
    for number in range(args.rounds):
        for phase in phases:
            print(f"round {number + 1}, phase {phase.name}...", flush=True)
            await run_phase(phase, args, stack, rng)
    report(phases, args)


def main() -> None:
    """Start the infrastructure and services, run the phases, print the figures, stop everything."""
    if len(sys.argv) > 1 and sys.argv[1] == "--hold":
        pairing, tournament_id, arena, arena_id, streams, mode, cpus = sys.argv[2:9]
        asyncio.run(hold_watchers(pairing, tournament_id, arena, arena_id, int(streams), mode == "read",
                                  cpu_set(cpus)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", type=int, default=1000, help="streams per competition (tournament, arena)")
    parser.add_argument("--calls", type=int, default=60,
                        help="calls of each kind per phase and round (a tournament seats 200)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the phases, one after the other")
    parser.add_argument("--warmup-calls", type=int, default=20,
                        help="calls of each kind in an unmeasured round of the phases first (0: none)")
    parser.add_argument("--rate", type=float, default=4.0, help="calls of each kind per second")
    parser.add_argument("--phases", default="none,still,reading,idle")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--watch-cpus", default="", metavar="LIST",
                        help="run the watch servers and the watchers' holder on these CPUs only (e.g. 1, or 2-3), "
                             "as a deployment runs them on machines of their own; the rest may use every CPU")
    parser.add_argument("--streams-on", choices=("watch-servers", "services"), default="watch-servers",
                        help="who serves the streams: a watch server of each service (WATCH_ONLY, as deployed), "
                             "or the services themselves")
    args = parser.parse_args()
    if args.calls > 198:
        parser.error("--calls: a tournament seats 200 at most (T-3)")
    with scratch_stack(
        "bench-watchers-",
        # A per-competition limit above the crowd, so that the phases measure the crowd, not refusals.
        extra_env={"WATCH_MAX_WATCHERS": str(max(args.watchers, 1000)),
                   "WATCH_MAX_STREAMS": str(max(args.watchers, 2000))},
        service_extra_env={"arena": {"RATING_GRPC_ADDR": ""}},
    ) as stack:
        stack.start_services(SERVICES)
        if args.streams_on == "watch-servers":
            for service in SERVICES:
                stack.start_watch_server(service)
        stack.wait_serving(timeout=120, names=SERVICES)
        if args.watch_cpus:
            pin([psutil.Process(server.process.pid) for server in stack.watch_servers.values()
                 if server.process is not None], cpu_set(args.watch_cpus))

        asyncio.run(run(args, stack))


if __name__ == "__main__":
    main()
