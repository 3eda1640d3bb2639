"""The benchmark's stages against the running system, and `run_bench`, which runs them in order.

Played games, tournament results at rising rates, a whole round at once, the firehose (the
package's docstring says what each measures).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

import grpc
from aiokafka import AIOKafkaProducer

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit import events
from arbiter.kit.events import timestamp
from arbiter.kit.kafka import outbox_publisher
from arbiter.kit.outbox import OutboxRecord, record_of
from arbiter.kit.timesource import TimeSource
from arbiter_tools.devstack.processes import Niceness, restore_niceness, set_niceness
from arbiter_tools.simulator.behaviour import Behaviour, Profiles
from arbiter_tools.simulator.bench.host import (
    host_cpu_ticks,
    host_load,
    python_loop_ns,
    raw_kafka,
    raw_redis,
    socket_round_trip_us,
    stolen_percent,
)
from arbiter_tools.simulator.bench.readings import (
    CommittedOffsets,
    RatingWatch,
    Reading,
    latency_ms,
    mean_ms,
    wait_quiet,
    wait_settled,
    wait_until,
)
from arbiter_tools.simulator.bench.report import Report, host_words
from arbiter_tools.simulator.playsite.base import PlaySiteConfig
from arbiter_tools.simulator.playsite.router import PlaySite
from arbiter_tools.simulator.scenario import TOURNAMENT_LEAD_SECONDS, channel_to, percentile, registered

log = logging.getLogger(__name__)
_Result = TypeVar("_Result")


# Off the result -> next pairing path, but what the burst and the firehose time: not niced for them.
MEASURED_AFTER_RATES = ("rating",)


# The first second of a firehose stage fills the pipeline: its output rate is not yet the sustained one.
FIREHOSE_WARM_UP_SECONDS = 1.0
# The benchmark's play sites keep nothing they published: no broker is lost there, and at its rates
# the kept events would grow the process with every result it publishes.
BENCH_KEEP_PUBLISHED_SECONDS = 0.0
# The longest the played stage's window is drawn out past `played_seconds` for its first result.
PLAYED_RESULT_WAIT_SECONDS = 90.0


@dataclass(frozen=True)
class BenchConfig:
    """What the benchmark runs and for how long."""

    rates: tuple[int, ...] = (250, 500, 1000, 2000, 4000)
    stage_seconds: float = 8.0
    entrants: int = 16  # round robins (threshold 20): 15 rounds of 8 games each
    tournaments: int = 200
    played_tournaments: int = 12
    played_seconds: float = 20.0
    # Round robins of `entrants` whose first round finishes at once (625 of 16: 5,000 results).
    burst_tournaments: int = 625
    # Whole rounds released one after the other (each once the next is all requested): a burst is
    # short and its rate varies from run to run, so the median of several is the figure
    # (tests/bench/bench_system.py; figures in docs/performance.md).
    burst_rounds: int = 3
    # One rate above the target too: a stage offered exactly the target can only show up to it.
    firehose_rates: tuple[int, ...] = (1000, 5000, 6000)
    # Real ms between two publications of the rate stages' results (one record batch per topic each),
    # as a play site's lingering producer sends them. On tansu every fetch that returns records lists
    # every batch its partition holds: more frequent publications pile up more batches on the most read
    # partitions and raise the stages' latencies (figures: docs/performance.md).
    result_every_ms: int = 20
    # Niceness of the services off the measured path (Target.off_path_pids) during each stage after the
    # played games (0: left alone): on two shared cores the measured path otherwise waits behind their
    # work. The burst and the firehose measure the rating service, which they leave alone
    # (MEASURED_AFTER_RATES). Each service is a scheduling group of its own (its session's autogroup),
    # niced as a whole: niceness of its threads alone does not change a group's share of a core.
    off_path_nice: int = 0
    firehose_seconds: float = 6.0
    # Real seconds to wait for the rating service to drain a firehose stage.
    drain_seconds: float = 60.0
    raw_messages: int = 100_000
    raw_message_bytes: int = 200
    redis_ops: int = 100_000
    seed: int = 1


@dataclass
class Target:
    """The running system: Kafka, Redis, gRPC addresses, /metrics URLs, shared time, consumer groups."""

    kafka: str
    redis_url: str
    pairing: str
    metrics: dict[str, str]
    time_source: TimeSource
    rating: str = ""
    auth_signing_key: str = ""
    # Fetch wait of the benchmark's rating watch, as the play site's: tansu holds a fetch for the whole
    # wait, so the watch sees an update up to one wait after it was published (figures:
    # docs/performance.md).
    watch_fetch_wait_ms: int = 500
    # Per service, each consumer group id and the topics it reads (SystemStack.consumer_groups): the
    # burst reads the services' progress from their committed offsets, not from their /metrics.
    consumer_groups: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    # By service, the processes off the result -> next pairing path (see BenchConfig.off_path_nice).
    off_path_pids: dict[str, int] = field(default_factory=dict)

    def all_consumer_groups(self) -> dict[str, tuple[str, ...]]:
        """Every service's consumer groups, each with the topics it reads."""
        return {group: topics for groups in self.consumer_groups.values() for group, topics in groups.items()}

    def groups_reading(self, topic: str, services: Sequence[str] | None = None) -> list[str]:
        """The consumer groups that read `topic`, of `services` (every service when None)."""
        return [group for service, groups in self.consumer_groups.items()
                if services is None or service in services
                for group, topics in groups.items() if topic in topics]


# Where a result's way to the next pairing goes, inside the pairing service: (label, histogram series).
GAME_FINISHED_HANDLER = 'arbiter_event_handler_seconds{topic="game.finished"}'


PAIRING_PARTS = (
    ("result age at handling", "arbiter_result_age_seconds"),
    ("game.finished handler", GAME_FINISHED_HANDLER),
    ("wake -> worker step", "arbiter_tournament_step_wait_seconds"),
    ("pairing a round", 'arbiter_pairing_seconds{format="round_robin"}'),
)


# Round robins created and filled at once: few enough that each one's joins land within its T-4 lead
# on a slow or busy host (docs/performance.md, bench_capacity.py's round robins).
ROUND_ROBINS_FILLED_AT_ONCE = 4


async def create_round_robins(target: Target, count: int, entrants: int, prefix: str,
                              concurrency: int = ROUND_ROBINS_FILLED_AT_ONCE) -> list[str]:
    """`count` round robins of `entrants` (threshold 20, T-2), all starting after the T-4 minimum."""
    # The load generator counts a refused call; it does not wait for the service to come back.
    channel = channel_to(target.pairing, target.auth_signing_key, caller="bench", ride_out_seconds=0.0)
    stub = tournament_pb2_grpc.TournamentServiceStub(channel)
    gate = asyncio.Semaphore(concurrency)
    created: list[str] = []

    failures: list[str] = []

    async def one(index: int) -> None:
        try:
            await create(index)
        except grpc.aio.AioRpcError as error:  # one refused tournament must not end the benchmark
            failures.append(f"{error.code().name}: {error.details()}")

    async def create(index: int) -> None:
        players = [f"{prefix}t{index:04d}-p{seat:02d}" for seat in range(entrants)]
        async with gate:
            # T-4 counts from each creation; the joins of all of them must fit in the lead.
            starts_at = target.time_source.now() + timedelta(seconds=TOURNAMENT_LEAD_SECONDS)
            response = await stub.CreateTournament(tp.CreateTournamentRequest(
                actor=registered(players[0]), request_id=f"{prefix}{index}",
                settings=tp.TournamentSettings(
                    name=f"bench {prefix}{index}", variant="international", threshold=20, capacity=entrants,
                    time_control=common.TimeControl(fischer=common.FischerControl(
                        base_seconds=3 * 3600, increment_seconds=0)),
                    starts_at=timestamp(starts_at), duration_minutes=24 * 60, rated=True,
                    opening_mode=common.OPENING_MODE_FREE,
                )))
            for player in players:
                await stub.JoinTournament(tp.JoinTournamentRequest(
                    actor=registered(player), tournament_id=response.tournament.id))
        created.append(response.tournament.id)

    try:
        await asyncio.gather(*(one(i) for i in range(count)))
    finally:
        await channel.close()
    if failures:
        log.warning("tournaments not created", extra={"count": len(failures), "first": failures[0]})
        if not created:
            raise RuntimeError(f"no tournament could be created: {failures[0]}")
    return created


async def played_stage(target: Target, config: BenchConfig, say: Callable[[str], None]) -> dict[str, Any]:
    """Real random games with no think time: what the play site and the system sustain."""
    prefix = f"bp{uuid.uuid4().hex[:4]}-"
    profiles = Profiles(seed=config.seed, mix={Behaviour.NORMAL: 1.0})
    playsite = PlaySite(target.kafka, target.time_source, profiles, PlaySiteConfig(
        seed=config.seed, think_seconds=(0.0, 0.0), group_id=f"{prefix}playsite", player_prefix=prefix,
        keep_published_seconds=BENCH_KEEP_PUBLISHED_SECONDS))
    await playsite.start()
    try:
        await create_round_robins(target, config.played_tournaments, 8, prefix)
        real_lead = target.time_source.real_seconds(TOURNAMENT_LEAD_SECONDS) + 1
        say(f"played: {config.played_tournaments} round robins of 8 created; starting in {real_lead:.0f} s")
        await wait_until(lambda: playsite.stats.started > 0, real_lead + 30)
        cpu_before = (await Reading.read(target.metrics)).cpu()
        moves_before, finished_before = playsite.stats.moves, playsite.stats.finished
        started = time.monotonic()
        await asyncio.sleep(config.played_seconds)
        # A rate of results needs one result at least: on a slow or busy host no game may end within
        # a short window (random games of a hundred moves and more), so the window waits for one.
        await wait_until(lambda: playsite.stats.finished > finished_before, PLAYED_RESULT_WAIT_SECONDS)
        elapsed = time.monotonic() - started
        cpu_after = (await Reading.read(target.metrics)).cpu()
        moves = playsite.stats.moves - moves_before
        finished = playsite.stats.finished - finished_before
        latencies = sorted(playsite.stats.pairing_latencies)
    finally:
        await playsite.stop()
    return {
        "tournaments": config.played_tournaments, "seconds": round(elapsed, 1),
        "moves_per_s": round(moves / elapsed, 1), "results_per_s": round(finished / elapsed, 1),
        "result_to_next_pairing_ms": _pct(latencies),
        "cpu_percent": _cpu(cpu_before, cpu_after, elapsed),
    }


async def first_round_requested(target: Target, playsite: PlaySite, count: int, entrants: int, prefix: str,
                                share: float, patience: float) -> tuple[list[str], int]:
    """Create `count` round robins and wait (lead time + `patience` s) until `share` of round 1 reached the play site.

    Returns the ids created and round 1's number of games.
    """
    created = await create_round_robins(target, count, entrants, prefix)
    games = len(created) * (entrants // 2)
    real_lead = target.time_source.real_seconds(TOURNAMENT_LEAD_SECONDS) + 1
    await wait_until(lambda: playsite.backlog >= games * share, real_lead + patience)
    return created, games


def nice_off_path(pids: Mapping[str, int], niceness: int, stage: str, say: Callable[[str], None]) -> Niceness:
    """Give the processes `pids` (by service) `niceness` for `stage` (0: left alone); what changed, to put back."""
    niced = set_niceness(list(pids.values()), niceness) if niceness and pids else Niceness()
    if niced:
        say(f"{stage}: the services off the measured path run at niceness {niceness} ({len(pids)} processes: "
            f"{', '.join(pids)}; {len(niced.threads)} threads, {len(niced.autogroups)} scheduling groups)")
    return niced


def niceness_run_at(niced: Niceness, niceness: int) -> int:
    """The niceness a stage's off-path services ran at, for its report: 0 where nothing was niced."""
    return niceness if niced else 0


def put_back(niced: Niceness, niceness: int, stage: str, say: Callable[[str], None]) -> None:
    """Undo `nice_off_path` where allowed, saying what stays niced."""
    if niced and restore_niceness(niced):
        say(f"{stage}: the services off the measured path stay at niceness {niceness} for the rest of the run: "
            "raising a process's priority again takes CAP_SYS_NICE")


def off_path_after_rates(target: Target) -> dict[str, int]:
    """The off-path services that the burst and the firehose do not time (all but MEASURED_AFTER_RATES)."""
    return {name: pid for name, pid in target.off_path_pids.items() if name not in MEASURED_AFTER_RATES}


async def rate_stages(target: Target, config: BenchConfig, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Tournament results at rising offered rates."""
    prefix = f"br{uuid.uuid4().hex[:4]}-"
    playsite = PlaySite(target.kafka, target.time_source, Profiles(seed=config.seed), PlaySiteConfig(
        seed=config.seed, group_id=f"{prefix}playsite", instant_results=True, requests_only=True, result_rate=1.0,
        instant_every_seconds=config.result_every_ms / 1000, player_prefix=prefix,
        keep_published_seconds=BENCH_KEEP_PUBLISHED_SECONDS))
    watch = RatingWatch(target.kafka, target.watch_fetch_wait_ms)
    await playsite.start()
    await watch.start()
    stages = []
    niced = Niceness()
    try:
        started = time.monotonic()
        created, games = await first_round_requested(target, playsite, config.tournaments, config.entrants, prefix,
                                                     share=0.9, patience=60)
        # The first stage starts once every tournament has paired round 1 (a late start pairs it on its
        # timer, read by no consumer) and the services have read everything the setup caused: measured
        # while they still worked off its backlog (round 1 being paired, its requests being read by
        # the clock), the stage's first seconds held its worst latencies.
        await wait_settled(lambda: playsite.stats.requested, games, config.drain_seconds)
        quiet = await wait_quiet(target.kafka, target.all_consumer_groups(), config.drain_seconds)
        say(f"rates: {len(created)} of {config.tournaments} round robins of {config.entrants} created and round 1 "
            f"requested ({playsite.backlog} games waiting) in {time.monotonic() - started:.0f} s; "
            f"{'every service has read the setup' if quiet else 'the services still read the setup'}")
        pairing_only = {name: url for name, url in target.metrics.items() if name == "pairing"}
        part_series = [series for _, series in PAIRING_PARTS]
        niced = nice_off_path(target.off_path_pids, config.off_path_nice, "rates", say)
        for rate in config.rates:
            playsite.result_rate = float(rate)
            before = await Reading.read(target.metrics)
            own_cpu_before = time.process_time()
            finished_before = playsite.stats.finished
            rated_before = watch.count
            sent_before = set(playsite.result_sent)
            ticks = host_cpu_ticks()
            began = time.monotonic()
            await asyncio.sleep(config.stage_seconds)
            ended = time.monotonic()
            elapsed = ended - began
            host = host_load(ticks, host_cpu_ticks())
            after = await Reading.read(target.metrics)
            own_cpu = time.process_time() - own_cpu_before
            finished = playsite.stats.finished - finished_before
            stage_games = [g for g in playsite.result_sent if g not in sent_before]
            await asyncio.sleep(1.0)  # let the last results of the stage reach the rating service
            drained = await Reading.read(pairing_only, infrastructure=False)
            pairing_consumed = (drained.consumed("pairing", events.GAME_FINISHED.name)
                                - before.consumed("pairing", events.GAME_FINISHED.name))
            parts = mean_ms(before.histograms("pairing", part_series), drained.histograms("pairing", part_series))
            stats = playsite.stats
            paired = of_results_in(stats.pairing_latency_times, stats.pairing_latencies, began, ended)
            delivered = [stats.delivery_latencies[i] for i in paired]
            stage = {
                "offered_results_per_s": rate, "seconds": round(elapsed, 1),
                "results_per_s": round(finished / elapsed, 1),
                "pairing_consumed_per_s": round(pairing_consumed / (elapsed + 1.0), 1),
                "rating_updates_per_s": round((watch.count - rated_before) / (elapsed + 1.0), 1),
                "backlog_at_end": playsite.backlog,
                "result_to_next_pairing_ms": _pct(sorted(stats.pairing_latencies[i] for i in paired)),
                "result_to_next_pairing_by_second": by_second(
                    [stats.pairing_latency_times[i] for i in paired], [stats.pairing_latencies[i] for i in paired],
                    began),
                "requested_to_play_site_ms": _pct(sorted(d for d in delivered if d is not None)),
                # The simulated play site runs in this process, on the same two cores as the system.
                "bench_process_cpu_percent": round(own_cpu / elapsed * 100, 1),
                "result_to_rating_updated_ms": latency_ms(playsite.result_sent, watch.first_seen, stage_games),
                "cpu_percent": _cpu(before.cpu(), after.cpu(), elapsed),
                # Wall time each service's event loop spent collecting garbage (part of its CPU above).
                "gc_percent": _cpu(before.collecting(), after.collecting(), elapsed),
                "pairing_parts_mean_ms": {label: parts.get(series) for label, series in PAIRING_PARTS},
                "off_path_nice": niceness_run_at(niced, config.off_path_nice),
                "host": host,
            }
            stages.append(stage)
            say(f"rates: offered {rate}/s -> {stage['results_per_s']}/s results, next pairing "
                f"{stage['result_to_next_pairing_ms']} (of which request -> play site "
                f"{stage['requested_to_play_site_ms']}), rating {stage['result_to_rating_updated_ms']}, "
                f"play site CPU {stage['bench_process_cpu_percent']}%, garbage collection % {stage['gc_percent']}; "
                f"inside pairing, means in ms: "
                f"{stage['pairing_parts_mean_ms']}; {host_words(host)}")
            if playsite.backlog == 0 and finished / elapsed < 0.5 * rate:
                say("rates: the system supplies no more games than this; higher rates are not tried")
                break
    finally:
        playsite.result_rate = 0.0
        put_back(niced, config.off_path_nice, "rates", say)
        await watch.stop()
        await playsite.stop()
    return stages


async def round_burst(target: Target, config: BenchConfig, say: Callable[[str], None]) -> dict[str, Any]:
    """Whole rounds of many round robins finish at once: how fast standings and ratings take the results.

    The round's games are started first (their GameStarted committed by every group that reads
    them, as they would be minutes before a round's last result). Then every result of the round
    is published in one go; measured from then (from the moment the play site hands the first
    event to Kafka, after building them all): when pairing's group has committed them all (it
    commits a batch once it has scored its games and the standings; the last of a round pairs the
    next), when the rating service has published the last of their RatingUpdated, and when the
    next round has reached the play site. The rates counted from the start of the building are
    kept beside them. `burst_rounds` rounds go one after the other, each once the previous one's
    next round has reached the play site; the figures are the medians over the rounds, each
    round's are kept.
    """
    if config.burst_tournaments <= 0 or not target.groups_reading(events.GAME_FINISHED.name, ["pairing"]):
        return {}
    prefix = f"bb{uuid.uuid4().hex[:4]}-"
    playsite = PlaySite(target.kafka, target.time_source, Profiles(seed=config.seed), PlaySiteConfig(
        seed=config.seed, group_id=f"{prefix}playsite", instant_results=True, requests_only=True,
        player_prefix=prefix, keep_published_seconds=BENCH_KEEP_PUBLISHED_SECONDS))
    playsite.holding = True
    watch = RatingWatch(target.kafka, target.watch_fetch_wait_ms)
    committed = CommittedOffsets(target.kafka)
    rounds: list[dict[str, Any]] = []
    async with contextlib.AsyncExitStack() as running:
        # Each is stopped only if it started, in the reverse order.
        for part in (playsite, watch, committed):
            await part.start()
            running.push_async_callback(part.stop)
        created, expected = await first_round_requested(target, playsite, config.burst_tournaments,
                                                        config.entrants, prefix, share=1.0, patience=90)
        say(f"burst: {len(created)} round robins of {config.entrants}; round 1 requested "
            f"({playsite.backlog} of {expected} games)")
        niced = nice_off_path(off_path_after_rates(target), config.off_path_nice, "burst", say)
        running.callback(put_back, niced, config.off_path_nice, "burst", say)
        for number in range(1, max(1, config.burst_rounds) + 1):
            one = await _one_burst(target, config, playsite, watch, committed)
            one["off_path_nice"] = niceness_run_at(niced, config.off_path_nice)
            rounds.append(one)
            say(f"burst, round {number}: its games started and read in {one['started_in_seconds']} s; "
                f"{one['results']} results built in {one['built_in_seconds']} s, published "
                f"at {one['published_per_s']}/s; standings took them at {one['standings_per_s']}/s, ratings at "
                f"{one['rated_per_s']}/s (counting the building: {one['standings_per_s_with_building']}/s and "
                f"{one['rated_per_s_with_building']}/s); next round requested {one['next_round_requested']} games; "
                f"play site CPU {one['bench_process_cpu_percent']}%; {host_words(one['host'])}")
            if one["next_round_requested"] < one["results"]:
                break  # the next round did not all reach the play site in time: nothing whole to release
    return burst_medians(len(created), rounds) if rounds else {}


# The burst's figures given as the median over its rounds (the rest are the last round's).
_BURST_MEDIANS = ("built_in_seconds", "published_per_s", "standings_per_s", "rated_per_s",
                  "standings_per_s_with_building", "rated_per_s_with_building")


def burst_medians(tournaments: int, rounds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The burst's report: the last round's figures, its rates replaced by their medians over `rounds`."""
    result: dict[str, Any] = {"tournaments": tournaments, **rounds[-1]}
    for figure in _BURST_MEDIANS:
        values = [one[figure] for one in rounds if one[figure] is not None]
        result[figure] = round(statistics.median(values), 3 if figure == "built_in_seconds" else 1) if values else None
    result["rounds"] = list(rounds)
    return result


async def _one_burst(target: Target, config: BenchConfig, playsite: PlaySite, watch: RatingWatch,
                     committed: CommittedOffsets) -> dict[str, Any]:
    """Start every held game, then release their results at once and time how standings and ratings take them."""
    started, start_seconds = await _start_held_round(target, playsite, committed, config.drain_seconds)
    # A round's results come minutes after its requests and starts: released while a service still
    # read those (the clock the round's requests, rating the last round's results), the burst would
    # time that leftover work as well.
    quiet = await wait_quiet(target.kafka, target.all_consumer_groups(), config.drain_seconds)
    standings = target.groups_reading(events.GAME_FINISHED.name, ["pairing"])
    before_results = await committed.totals(standings, events.GAME_FINISHED.name)
    before = await Reading.read(target.metrics)
    ticks = host_cpu_ticks()
    read_at = time.monotonic()
    own_cpu_before = time.process_time()
    release = await playsite.release_held()
    games, began, published = release.game_ids, release.publishing, release.published
    deadline = began + config.drain_seconds
    scored_at = await committed.wait_for(standings, events.GAME_FINISHED.name, before_results, len(games),
                                         deadline - time.monotonic())
    while time.monotonic() < deadline:
        if all(g in watch.first_seen for g in games) and playsite.backlog >= len(games):
            break
        await asyncio.sleep(0.1)
    after = await Reading.read(target.metrics)
    window = time.monotonic() - read_at
    host = host_load(ticks, host_cpu_ticks())
    rated = [watch.first_seen[g] for g in games if g in watch.first_seen]

    def per_second(done_at: float | None, count: int, since: float = began) -> float | None:
        return round(count / (done_at - since), 1) if done_at is not None and count else None

    last_rated = max(rated, default=None)
    return {
        "results": len(games),
        "built_in_seconds": round(began - release.building, 3),
        "published_per_s": per_second(published, len(games)),
        "standings_per_s": per_second(scored_at, len(games)),
        "rated_per_s": per_second(last_rated, len(rated)),
        # The same, counted from the start of the play site's building of the events.
        "standings_per_s_with_building": per_second(scored_at, len(games), release.building),
        "rated_per_s_with_building": per_second(last_rated, len(rated), release.building),
        "rated_games": len(rated),
        # Before the release: the round's GameStarted, published at once, until every reader had them all;
        # the release itself started none.
        "started_before_release": started,
        "started_in_seconds": start_seconds,
        "started_with_results": release.started_with_results,
        "released_when_quiet": quiet,
        "next_round_requested": playsite.backlog,
        "cpu_percent": _cpu(before.cpu(), after.cpu(), window),
        # The play site building, publishing and reading, and the rating watch: on the same two cores.
        "bench_process_cpu_percent": round((time.process_time() - own_cpu_before) / window * 100, 1),
        "host": host,
        # How each consumer took them: its game.finished batches and their mean handling time.
        "game_finished_batches": {
            service: _batches(before.histograms(service, [GAME_FINISHED_HANDLER])[GAME_FINISHED_HANDLER],
                              after.histograms(service, [GAME_FINISHED_HANDLER])[GAME_FINISHED_HANDLER])
            for service in ("pairing", "rating") if service in target.metrics
        },
    }


async def _start_held_round(target: Target, playsite: PlaySite, committed: CommittedOffsets,
                            timeout: float) -> tuple[int, float | None]:
    """Start the held round's games and wait until every group reading game.started has them.

    A round's games start together and end minutes later, so its starts are no part of the
    burst of its results. Returns how many games started and the real seconds until every group
    had committed them (None when they did not within `timeout`).
    """
    readers = target.groups_reading(events.GAME_STARTED.name)
    before = await committed.totals(readers, events.GAME_STARTED.name)
    began = time.monotonic()
    started = await playsite.start_held()
    done = await committed.wait_for(readers, events.GAME_STARTED.name, before, started, timeout, every=0.05)
    return started, None if done is None else round(done - began, 3)


def _batches(before: tuple[float, float], after: tuple[float, float]) -> dict[str, Any]:
    """Batches handled between two (sum, count) readings of a handler histogram, and their mean in ms."""
    return {"batches": int(after[1] - before[1]), "mean_ms": mean_ms({"h": before}, {"h": after})["h"]}


def firehose_events(tag: str, players: Sequence[str], first_serial: int, count: int, rng: random.Random,
                    time_source: TimeSource) -> list[tuple[str, OutboxRecord]]:
    """`count` rated casual GameFinished records between `players`, ready to publish."""
    made = []
    for serial in range(first_serial, first_serial + count):
        white, black = rng.sample(players, 2)
        game_id = f"bf{tag}-{serial}"
        now = timestamp(time_source.now())
        event = ev.GameFinished(
            game_id=game_id, variant="international", speed=common.SPEED_BLITZ, white_id=white, black_id=black,
            competition=common.CompetitionRef(kind=common.COMPETITION_KIND_CASUAL, id=game_id),
            result=rng.choice((common.GAME_RESULT_WHITE_WINS, common.GAME_RESULT_BLACK_WINS, common.GAME_RESULT_DRAW)),
            termination=common.TERMINATION_RESIGNATION, white_sat=True, black_sat=True, rated=True,
            plies=40, finished_at=now, started_at=now,
        )
        event.meta.event_id = f"{game_id}/finished"
        events.stamp_meta(event, "bench", now)
        made.append((game_id, record_of(event)))
    return made


def rate_while_offered(sent: dict[str, float], seen: dict[str, float], began: float, ended: float,
                       warm_up: float) -> float | None:
    """Games per second whose rating appeared between `warm_up` seconds after `began` and `ended`.

    What the rating service put out while the load lasted; unlike games over the whole stage,
    it does not charge the last games' latency to the throughput.
    """
    start = began + warm_up
    if ended <= start:
        return None
    rated = sum(1 for game in sent if start <= seen.get(game, -1.0) <= ended)
    return round(rated / (ended - start), 1)


async def firehose(target: Target, config: BenchConfig, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Rated results straight onto game.finished at rising rates; the rating service's sustained rate.

    Each stage's events are built before its clock starts, so the load generator, which shares
    the two cores, spends them on sending, not on building protobufs.
    """
    watch = RatingWatch(target.kafka, target.watch_fetch_wait_ms)
    await watch.start()
    producer = AIOKafkaProducer(bootstrap_servers=target.kafka, linger_ms=5, max_batch_size=256 * 1024)
    await producer.start()
    publish = outbox_publisher(producer)
    rng = random.Random(config.seed)
    tag = uuid.uuid4().hex[:4]
    players = [f"bf{tag}-{i:05d}" for i in range(20_000)]
    results = []
    serial = 0
    niced = nice_off_path(off_path_after_rates(target), config.off_path_nice, "firehose", say)
    try:
        for rate in config.firehose_rates:
            total = int(rate * config.firehose_seconds)
            prepared = firehose_events(tag, players, serial, total, rng, target.time_source)
            serial += total
            sent: dict[str, float] = {}
            cpu_before = (await Reading.read(target.metrics)).cpu()
            updates_before = watch.count
            ticks = host_cpu_ticks()
            began = time.monotonic()
            tick = 0.01
            done = 0
            while done < total:
                due = min(total, int((time.monotonic() - began) * rate) + 1)
                if due > done:
                    # Whole batches per partition: the load generator shares the two cores with the system.
                    await publish([record for _, record in prepared[done:due]])
                    now = time.monotonic()
                    for game_id, _ in prepared[done:due]:
                        sent[game_id] = now
                    done = due
                await asyncio.sleep(tick)
            offered_seconds = time.monotonic() - began
            # B023: the condition is polled here, within this stage's iteration.
            await wait_until(lambda: sum(1 for g in sent if g in watch.first_seen) >= len(sent),  # noqa: B023
                             config.drain_seconds)
            drained = time.monotonic() - began
            cpu_after = (await Reading.read(target.metrics)).cpu()
            host = host_load(ticks, host_cpu_ticks())
            seen = sum(1 for g in sent if g in watch.first_seen)
            stage = {
                "offered_results_per_s": rate, "sent": len(sent),
                "achieved_send_per_s": round(len(sent) / offered_seconds, 1),
                "rated_games": seen, "rated_games_per_s": round(seen / drained, 1),
                "rated_per_s_while_offered": rate_while_offered(
                    sent, watch.first_seen, began, began + offered_seconds, FIREHOSE_WARM_UP_SECONDS),
                "rating_updates": watch.count - updates_before,
                "result_to_rating_updated_ms": latency_ms(sent, watch.first_seen, list(sent)),
                "cpu_percent": _cpu(cpu_before, cpu_after, drained),
                "off_path_nice": niceness_run_at(niced, config.off_path_nice),
                "host": host,
            }
            results.append(stage)
            say(f"firehose: offered {rate}/s -> rating put out {stage['rated_per_s_while_offered']} games/s while "
                f"offered, {stage['rated_games_per_s']} games/s over the stage and its drain, "
                f"latency {stage['result_to_rating_updated_ms']}; {host_words(host)}")
    finally:
        put_back(niced, config.off_path_nice, "firehose", say)
        await producer.stop()
        await watch.stop()
    return results


def of_results_in(taken_at: Sequence[float], latencies: Sequence[float], began: float, ended: float) -> list[int]:
    """Indices of the latency samples whose result was published in [began, ended): a stage's own.

    A sample is taken when the next round's first request arrives, its latency after the result.
    Taken by when they were measured, a stage would count the previous stage's late samples as
    its own and hand its own late ones to the next.
    """
    return [i for i, (at, latency) in enumerate(zip(taken_at, latencies, strict=True))
            if began <= at - latency < ended]


def by_second(times: Sequence[float], values: Sequence[float], began: float) -> list[dict[str, Any]]:
    """Samples grouped by the whole second of the stage they were taken in: count, p50 and max (ms).

    A stage's p99 alone cannot tell a steady tail from one stall; this shows when the slow ones came.
    """
    seconds: dict[int, list[float]] = {}
    for at, value in zip(times, values, strict=True):
        seconds.setdefault(int(at - began), []).append(value)
    timeline = []
    for second in sorted(seconds):
        ordered = sorted(seconds[second])
        timeline.append({"second": second, "samples": len(ordered), "p50": round(percentile(ordered, 50) * 1000, 1),
                         "max": round(ordered[-1] * 1000, 1)})
    return timeline


def _pct(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"samples": 0, "p50": None, "p99": None}
    return {"samples": len(values), "p50": round(percentile(values, 50) * 1000, 1),
            "p99": round(percentile(values, 99) * 1000, 1)}


def _cpu(before: dict[str, float], after: dict[str, float], seconds: float) -> dict[str, float]:
    return {name: round((after[name] - before.get(name, 0.0)) / seconds * 100, 1)
            for name in after if name in before and after[name]}


async def _stage_or_note(name: str, stage: Awaitable[_Result], report: Report, say: Callable[[str], None],
                         failed: _Result) -> _Result:
    """What `stage` measured; if it fails, a note in the report and `failed`, and the next stage still runs."""
    try:
        return await stage
    except (grpc.aio.AioRpcError, OSError, TimeoutError, RuntimeError) as error:
        report.notes.append(f"{name}: {error!r}")
        say(f"{name}: failed: {error!r}")
        return failed


async def run_bench(target: Target, config: BenchConfig, say: Callable[[str], None] = print) -> Report:
    """Every stage, in order; a failing stage is noted and the next one still runs."""
    report = Report(machine={
        "cpus": os.cpu_count(), "time_scale": target.time_source.scale, "python_loop_ns": python_loop_ns(),
        "event_loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
        "socket_round_trip_us": {"same_cpu": socket_round_trip_us((0, 0)),
                                 "across_cpus": socket_round_trip_us((0, 1))},
        "config": asdict(config),
    })
    ticks_before = host_cpu_ticks()
    for name, stage in (
        ("raw kafka", lambda: raw_kafka(target.kafka, config.raw_messages, config.raw_message_bytes)),
        ("raw redis", lambda: raw_redis(target.redis_url, config.redis_ops)),
    ):
        try:
            result = await stage()
        except Exception as error:  # a benchmark reports what failed and carries on
            report.notes.append(f"{name}: {error!r}")
            continue
        report.raw[name.split()[1]] = result
        say(f"{name}: {result}")
    report.played = await _stage_or_note("played", played_stage(target, config, say), report, say, report.played)
    report.stages = await _stage_or_note("rates", rate_stages(target, config, say), report, say, report.stages)
    report.burst = await _stage_or_note("burst", round_burst(target, config, say), report, say, report.burst)
    report.firehose = await _stage_or_note("firehose", firehose(target, config, say), report, say, report.firehose)
    report.machine["stolen_percent"] = stolen_percent(ticks_before, host_cpu_ticks())
    return report
