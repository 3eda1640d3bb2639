"""Faults: a seeded scenario played while services are killed (every one of the five at least
once, whatever the seed), a thousand watchers hold Watch streams and poison records land on every
consumed topic; events redelivered; the broker paused, then killed and started again empty; Redis
flushed, then killed and started again empty; PostgreSQL stormed, then restarted (a cluster of the
test's own, stopped as by a crash); the invariants hold after each, and every competition ends on
time (a tournament by T-15's closes_at, an arena by its ends_at once its last games are over:
`late_competitions`).

Run with `make chaos`. Knobs (environment): CHAOS_SEED (default 7), CHAOS_SCALE ("small", the
default: an 8-entrant Swiss, a 5-entrant round robin and an 8-player arena; "full": the larger
64-entrant Swiss, 12-entrant round robin, 300-player arena and a Triple Block game, which takes
far longer and more memory), CHAOS_KILL_EVERY ("3,6": seconds between kills, uniform),
CHAOS_KILL_TIME_SCALE (default 30), CHAOS_BROKER_PAUSE (seconds of SIGSTOP, default 30; shorten
it for a quick run), CHAOS_STORM_CONNECTIONS (default 300), CHAOS_WATCHERS (Watch streams held
during the kill test and the infrastructure test, default 1000), CHAOS_RESULTS (the figures' JSON file,
default .arbiter/chaos-results.json). The figures (faults injected by kind, events redelivered
in order and out of order, poison records, watchers served, refused and broken, differences
found) are printed at the end and written there.

Each test runs the five services on a tansu, a redis-server and a PostgreSQL database of its
own (the session's PostgreSQL server), so a paused broker or a flushed Redis hurts nobody else.

Identical to an undisturbed run. The scenario is played once undisturbed (`undisturbed`, a
system of its own) and once while a driver SIGKILLs a random service every few seconds, with
the same seed, by a play site that decides each tournament game from the seed and the pairing
(`PlaySiteConfig.results_by_pairing` with `instant_results`: the two players, unordered, and
T-12's leg, never the random tournament or game id). No move is played: each game's decided
result comes 30-90 competition seconds after its start (1-3 real s at 30x, so that kills land
while games are open), and the tournaments' clocks hold 25 minutes (50 real s), far more than a
restarted clock service needs to catch up, so no clock flags a game first (flags follow real
time); no behaviour depends on timing (T-18's busy players are left out). The kills start once
every player has joined (a join retried past the start would find registration closed, T-6).
Then:
- Swiss (T-13: deterministic for the same history): standings identical row by row (points,
  Buchholz, Sonneborn-Berger, wins, games, the tie-break used, the order), every round's
  pairings and colours identical, and every result. The ratings (R-5) of its entrants, who play
  no other game: same games counted, and identical but for Glicko-2's inactivity term, which
  grows the deviation by the fractional rating periods since the player's previous game, a
  real-time span (rating and RD up to about 1e-3 apart in our runs). So what is checked exactly
  (1e-9) is that each stored rating equals the undisturbed run's games replayed by the pure
  rules at this run's finish times; the largest gap to the undisturbed values is reported
  (`rating_max_abs_delta`).
- Round robin: T-14 draws the Berger numbers from the tournament id, which pairing's
  CreateTournament makes at random (`t_<hex>`), so the same seed meets each pair in another round
  with other colours. Every pairing's result, and each entrant's points, wins, games and
  Sonneborn-Berger are identical, and so is the order, except among entrants only the Berger
  number (T-22 (3)) separates. Their ratings are not compared: Glicko-2 applies games one by one
  in finish order, and that order follows the draw. (A tournament id derived from the creator and
  CreateTournament's request_id would make a round robin identical too.)
- Arena: its matchmaker re-pairs whoever is free first, in real time, as lichess's arena does, so
  its pairings differ from run to run by design. Checked instead: the leaderboard equals the
  pure rules' recomputation from its recorded games, no player in two games, no game requested
  twice.
Every run also checks every outcome against the pure rules' recomputation from the games
actually recorded on the topics (`check`). The broker/Redis/PostgreSQL tests play real moves
(the clock flags, players drop), so they check those invariants only. Poison: every consumer
group must set aside each poison record of its topics (`chaos.set_aside_differences`); the
set-aside tables are left out of every "nothing changed" comparison.

Delivered twice. The undisturbed system is then stopped and snapshotted (every table), every
service restarts in consumer groups that committed nothing (every event delivered again, in
order, as an offset rewind would; see `chaos.redeliver_in_order`), then every record of every
consumed topic is published again, same key, value and headers, in a seeded
random order (a replaying proxy: a GameRequested after its GameFinished, a GameStarted after
the next round was paired; the seeded run plays no moves), then poison on every consumed topic.
After each, once every group caught up: no table changed (but the set-aside ones) and no service
published an event with a new id.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg
import grpc
import pytest
from aiokafka import AIOKafkaConsumer

from arbiter.contracts import arena_pb2, arena_pb2_grpc, tournament_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit.timesource import TimeSource
from arbiter_tools import chaos
from arbiter_tools.chaos import FaultCounts, KillDriver, Recorded, Watched, WatcherCrowd
from arbiter_tools.devstack.stack import SystemStack
from arbiter_tools.simulator.behaviour import Behaviour, Profiles
from arbiter_tools.simulator.playsite.base import PlaySiteConfig
from arbiter_tools.simulator.playsite.router import PlaySite
from arbiter_tools.simulator.scenario import (
    Addresses,
    ArenaPlan,
    Population,
    Scenario,
    ScenarioRunner,
    TournamentPlan,
    TripleBlockPlan,
)

SEED = int(os.environ.get("CHAOS_SEED", "7"))
SCALE = os.environ.get("CHAOS_SCALE", "small")
KILL_EVERY = tuple(float(x) for x in os.environ.get("CHAOS_KILL_EVERY", "3,6").split(","))
BROKER_PAUSE = float(os.environ.get("CHAOS_BROKER_PAUSE", "30"))
STORM_CONNECTIONS = int(os.environ.get("CHAOS_STORM_CONNECTIONS", "300"))
WATCHERS = int(os.environ.get("CHAOS_WATCHERS", "1000"))
# Competition minutes a competition may end past its announced end and still be on time: a
# tournament past T-15's deadline (closes_at), an arena past its end once its last games are over
# (an arena game of the scenarios lasts at most 2 x 3 minutes plus increments); plus, in real
# seconds, a killed service's restart on a loaded machine (its timers fire when it is back).
TOURNAMENT_LATE_MINUTES = 5.0
ARENA_LATE_MINUTES = 10.0
RESTART_SECONDS = 20.0
TIME_SCALE = 60.0
KILL_TIME_SCALE = float(os.environ.get("CHAOS_KILL_TIME_SCALE", "30"))
FULL = SCALE == "full"
# Real seconds the simulator may take to play the scenario.
PLAY_TIMEOUT = 1500.0 if FULL else 240.0

pytestmark = pytest.mark.timeout(3600 if FULL else 600)

SERVICES = ("rating", "pairing", "arena", "openings", "clock")


# Competition seconds from a seeded game's start to its decided result (at 30x: 1 to 3 real s).
DECIDE_AFTER = (30.0, 90.0)
# Tournament clocks of the seeded scenario: 25 minutes (50 real s at 30x), so that no restarted
# clock whose consumers still lag can flag a game before its decided result (flags follow real time).
SEEDED_CLOCK = {"base_seconds": 1500, "increment_seconds": 10}


def chaos_scenario(scale: str = SCALE) -> Scenario:
    """The seeded scenario the kill and redelivery tests play (CHAOS_SCALE: "small" or "full")."""
    if scale == "full":
        # T-2: 12 < threshold 13, a round robin; 64 >= 7, a Swiss (T-9: 8 rounds).
        return Scenario("chaos-full", tournaments=(
            TournamentPlan("swiss64", "64-entrant Swiss", 64, **SEEDED_CLOCK),
            TournamentPlan("rr12", "12-entrant round robin", 12, threshold=13, **SEEDED_CLOCK),
        ), arenas=(ArenaPlan("arena300", "300-player arena", 300, duration_minutes=10),),
            triple_blocks=(TripleBlockPlan("tb", "Triple Block game (ICCF)"),), guests=1, computers=1)
    if scale != "small":
        raise ValueError(f"CHAOS_SCALE is small or full, not {scale!r}")
    # T-2: 8 >= threshold 7, a Swiss (T-9: 5 rounds); 5 < 7, a round robin (5 rounds, a bye each).
    return Scenario("chaos", tournaments=(TournamentPlan("swiss8", "8-entrant Swiss", 8, **SEEDED_CLOCK),
                                          TournamentPlan("rr5", "5-entrant round robin", 5, **SEEDED_CLOCK)),
                    arenas=(ArenaPlan("arena8", "8-player arena", 8, duration_minutes=10),), guests=1, computers=1)


def played_scenario() -> Scenario:
    """The broker/Redis/PostgreSQL test's scenario: games played move by move (flags, drops)."""
    return Scenario("chaos-played", tournaments=(TournamentPlan("rr5", "5-entrant round robin", 5),),
                    arenas=(ArenaPlan("arena8", "8-player arena", 8, duration_minutes=10),), guests=1, computers=1)


class _RetryUnavailable(grpc.aio.UnaryUnaryClientInterceptor):
    """A service being restarted answers UNAVAILABLE for a while: the play site's people wait for it.

    Every call waits for the channel to be ready (not failing fast in the reconnect backoff)
    and is tried again on UNAVAILABLE until `patience` seconds have passed.
    """

    def __init__(self, patience: float = 120.0) -> None:
        self.patience = patience

    async def intercept_unary_unary(self, continuation, client_call_details, request):  # type: ignore[override]
        deadline = time.monotonic() + self.patience
        details = grpc.aio.ClientCallDetails(
            client_call_details.method, client_call_details.timeout or 30.0, client_call_details.metadata,
            client_call_details.credentials, True)
        while True:
            call = await continuation(details, request)
            try:
                await call
            except grpc.aio.AioRpcError as error:
                if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) \
                        and time.monotonic() < deadline:
                    await asyncio.sleep(0.5)
                    continue
            return call


class PatientRunner(ScenarioRunner):
    """The simulator's runner, its gRPC calls retried while a service restarts."""

    def _channel(self, address: str) -> grpc.aio.Channel:
        # Round robin over the replicas the address names, as the kit's channels do (the scale-out run).
        channel = grpc.aio.insecure_channel(address, interceptors=[_RetryUnavailable()], options=[
            ("grpc.initial_reconnect_backoff_ms", 200), ("grpc.min_reconnect_backoff_ms", 200),
            ("grpc.max_reconnect_backoff_ms", 1000),
            ("grpc.service_config", '{"loadBalancingConfig": [{"round_robin": {}}]}')])
        self._channels.append(channel)
        return channel


def _addresses(stack: SystemStack) -> Addresses:
    # Every replica of each service (one target each, arbiter_tools.devstack.replicas).
    return Addresses(pairing=stack.grpc_target("pairing"), arena=stack.grpc_target("arena"),
                     clock=stack.grpc_target("clock"), rating=stack.grpc_target("rating"))


async def play(stack: SystemStack, seed: int = SEED, timeout: float = PLAY_TIMEOUT, during=None, *,
               seeded: bool = True) -> PatientRunner:
    """Play a scenario with the simulator; `during(runner)` runs alongside (an async fault).

    `seeded`: `chaos_scenario()` with results decided by the seed and the pairing (see the module
    docstring); otherwise `played_scenario()` played move by move.
    """
    scenario = chaos_scenario() if seeded else played_scenario()
    time_source = TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin))
    addresses = _addresses(stack)
    profiles = Profiles(seed=seed)
    if seeded:
        # T-18 depends on when the casual game reaches pairing: timing, not the seed.
        profiles = profiles.without({Behaviour.BUSY})
    playsite = PlaySite(stack.kafka_bootstrap, time_source, profiles, PlaySiteConfig(
        seed=seed, think_seconds=(1.0, 3.0), group_id=f"playsite-chaos-{seed}", player_prefix="c-",
        arena_grpc_addr=addresses.arena, clock_grpc_addr=addresses.clock,
        instant_results=seeded, results_by_pairing=seeded,
        instant_after_seconds=DECIDE_AFTER if seeded else (0.0, 0.0)))
    population = Population.make(scenario.bots_needed, scenario.guests, scenario.computers, prefix="c-")
    runner = PatientRunner(scenario, addresses, playsite, time_source, population=population,
                           say=lambda _line: None, poll_seconds=0.5)
    await playsite.start()
    try:
        if during is None:
            await runner.run(timeout)
        else:
            await asyncio.gather(runner.run(timeout), during(runner))
    finally:
        await playsite.stop()
    return runner


async def caught_up(stack: SystemStack, timeout: float = 180.0) -> None:
    """Every consumer group of every service has committed every record."""
    prefix = chaos.group_prefix(stack)
    await asyncio.gather(*(chaos.wait_caught_up(stack.kafka_bootstrap, name, timeout=timeout, prefix=prefix)
                           for name in SERVICES))


async def check(stack: SystemStack, runner: PatientRunner,
                poison_tags: tuple[str, ...] = ()) -> tuple[list[str], dict[str, Any]]:
    """Every invariant the suite checks, from the recorded events (but the poison) and the services' answers."""
    await asyncio.sleep(2)  # the last results reach the consumers
    try:
        await caught_up(stack)
    except TimeoutError as error:
        return [f"consumers did not catch up: {error}"], {}
    recorded = await Recorded.read(stack.kafka_bootstrap, poison_tags)
    problems = chaos.game_differences(recorded)
    info: dict[str, Any] = {"games_requested": len({e.game_id for e in recorded.requested}),
                            "games_finished": len(recorded.first_finished()),
                            "notes": list(runner.notes)}
    for part in runner.parts:
        if part.status != "finished":
            problems.append(f"{part.kind} {part.key} ended {part.status!r}")
    late, lateness = await late_competitions(stack, runner)
    problems += late
    info["minutes_past_the_end"] = lateness
    for part in runner.parts:
        if part.kind != "tournament" or not part.competition_id:
            continue
        async with grpc.aio.insecure_channel(stack.services["pairing"].grpc_address) as channel:
            stub = tournament_pb2_grpc.TournamentServiceStub(channel)
            standings = await stub.GetStandings(tp.GetStandingsRequest(tournament_id=part.competition_id))
        served = {r.player_id: r.points for r in standings.rows}
        expected = chaos.tournament_points(recorded, part.competition_id)
        expected = {p: expected.get(p, 0) for p in served} | expected
        if served != expected:
            problems.append(f"{part.key} standings points {served} != recomputed from the results {expected}")
        ranks = [r.points for r in standings.rows]
        if ranks != sorted(ranks, reverse=True):
            problems.append(f"{part.key} standings not ordered by points: {ranks}")
        info[f"{part.key}_points"] = served
    for part in runner.parts:
        if part.kind != "arena" or not part.competition_id:
            continue
        rows: list[Any] = []
        async with grpc.aio.insecure_channel(stack.services["arena"].grpc_address) as channel:
            stub = arena_pb2_grpc.ArenaServiceStub(channel)
            token = ""
            while True:  # pages of at most 100 rows
                board = await stub.GetLeaderboard(arena_pb2.GetLeaderboardRequest(
                    arena_id=part.competition_id, page=common.PageRequest(page_size=100, page_token=token)))
                rows += board.rows
                token = board.next_page_token
                if not token or not board.rows:
                    break
        served_rows = {r.player_id: (r.points, r.wins, r.games) for r in rows}
        want = {r.player_id: (r.points, r.wins, r.games)
                for r in chaos.arena_leaderboard(recorded, part.competition_id, part.players)}
        if served_rows != want:
            diff = {p: (served_rows.get(p), want.get(p)) for p in set(served_rows) | set(want)
                    if served_rows.get(p) != want.get(p)}
            problems.append(f"{part.key} leaderboard (served, recomputed) differs: {diff}")
        info[f"{part.key}_games"] = sum(r.games for r in rows) // 2
    problems += await chaos.rating_differences(stack.database_url, recorded)
    return problems, info


async def late_competitions(stack: SystemStack, runner: PatientRunner) -> tuple[list[str], dict[str, float]]:
    """Competitions that finished late, and each one's competition minutes past its announced end.

    A tournament: its finished_at against T-15's deadline (closes_at). An arena: when the runner saw
    it finished (it polls every half second) against its ends_at. Either may be late by its
    allowance and a service's restart (RESTART_SECONDS of real time).
    """
    restart_minutes = RESTART_SECONDS * stack.time_scale / 60
    problems: list[str] = []
    lateness: dict[str, float] = {}
    async with grpc.aio.insecure_channel(stack.services["pairing"].grpc_address) as pairing, \
            grpc.aio.insecure_channel(stack.services["arena"].grpc_address) as arena:
        for part in runner.parts:
            if part.status != "finished" or not part.competition_id:
                continue
            if part.kind == "tournament":
                got = await tournament_pb2_grpc.TournamentServiceStub(pairing).GetTournament(
                    tp.GetTournamentRequest(tournament_id=part.competition_id))
                minutes = (got.finished_at.seconds - got.closes_at.seconds) / 60
                allowed = TOURNAMENT_LATE_MINUTES + restart_minutes
            elif part.kind == "arena":
                got_arena = await arena_pb2_grpc.ArenaServiceStub(arena).GetArena(
                    arena_pb2.GetArenaRequest(arena_id=part.competition_id))
                seen = runner.time_source.timestamp() - (time.monotonic() - part.finished_real) * stack.time_scale
                minutes = (seen - got_arena.ends_at.seconds) / 60
                allowed = ARENA_LATE_MINUTES + restart_minutes
            else:
                continue
            lateness[part.key] = round(minutes, 1)
            if minutes > allowed:
                problems.append(f"{part.kind} {part.key} finished {minutes:.1f} competition minutes past its end "
                                f"(on time: at most {allowed:.0f})")
    return problems, lateness


def watched_competitions(stack: SystemStack, runner: PatientRunner) -> list[Watched]:
    """Every tournament (pairing's WatchTournament) and arena (WatchArena) of the scenario."""
    return [Watched(part.kind, stack.services["pairing" if part.kind == "tournament" else "arena"].grpc_address,
                    part.competition_id)
            for part in runner.parts if part.kind in ("tournament", "arena") and part.competition_id]


# -- the outcome of a seeded run, and what must be identical ---------------------------------------


@dataclass
class Outcome:
    """What a seeded run decided, per tournament key (competition ids differ from run to run)."""

    formats: dict[str, str] = field(default_factory=dict)
    # (rank, player, points, buchholz, sonneborn_berger, wins, games, tie_break), in rank order.
    standings: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    # (round, white, black, leg) of every game requested.
    pairings: dict[str, set[tuple[int, str, str, int]]] = field(default_factory=dict)
    # (lower id, higher id, leg) -> the winner's id, or "draw" / "both lose".
    results: dict[str, dict[tuple[str, str, int], str]] = field(default_factory=dict)
    # (round, white, black, leg) -> the GameFinished of that game.
    games: dict[str, dict[tuple[int, str, str, int], Any]] = field(default_factory=dict)
    # player -> (variant, speed, rating, deviation, volatility, games), tournament entrants only.
    ratings: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    players: dict[str, list[str]] = field(default_factory=dict)
    # Swiss entrants' ratings against the undisturbed run's (see `outcome_differences`).
    rating_deltas: dict[str, float] = field(default_factory=dict)


def _winner(event: Any) -> str:
    return {common.GAME_RESULT_WHITE_WINS: event.white_id, common.GAME_RESULT_BLACK_WINS: event.black_id,
            common.GAME_RESULT_DRAW: "draw"}.get(event.result, "both lose")


async def outcome_of(stack: SystemStack, runner: PatientRunner, poison_tags: tuple[str, ...] = ()) -> Outcome:
    """The standings, pairings, results and ratings of every tournament of a finished run."""
    recorded = await Recorded.read(stack.kafka_bootstrap, poison_tags)
    outcome = Outcome()
    requests = {e.game_id: e for e in recorded.requested}
    finished = recorded.first_finished()
    async with grpc.aio.insecure_channel(stack.services["pairing"].grpc_address) as channel:
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        for part in runner.parts:
            if part.kind != "tournament" or not part.competition_id:
                continue
            standings = await stub.GetStandings(tp.GetStandingsRequest(tournament_id=part.competition_id))
            outcome.formats[part.key] = standings.format
            outcome.players[part.key] = list(part.players)
            outcome.standings[part.key] = [
                (r.rank, r.player_id, r.points, r.buchholz, r.sonneborn_berger, r.wins, r.games, r.tie_break)
                for r in standings.rows]
            games = [e for e in requests.values() if e.competition.id == part.competition_id]
            outcome.pairings[part.key] = {(e.competition.round, e.white_id, e.black_id, e.game_in_pairing or 1)
                                          for e in games}
            outcome.games[part.key] = {
                (e.competition.round, e.white_id, e.black_id, e.game_in_pairing or 1): finished[e.game_id]
                for e in games if e.game_id in finished}
            outcome.results[part.key] = {
                (*sorted((e.white_id, e.black_id)), e.game_in_pairing or 1): _winner(finished[e.game_id])
                for e in games if e.game_id in finished}
    entrants = [p for players in outcome.players.values() for p in players]
    connection = await asyncpg.connect(stack.database_url)
    try:
        rows = await connection.fetch("SELECT variant, speed, player_id, rating, deviation, volatility, games "
                                      "FROM rating.ratings WHERE player_id = ANY($1::text[])", entrants)
    finally:
        await connection.close()
    outcome.ratings = {r["player_id"]: (r["variant"], r["speed"], r["rating"], r["deviation"], r["volatility"],
                                        r["games"]) for r in rows}
    return outcome


def _berger_blocks(rows: list[tuple[Any, ...]]) -> list[frozenset[str]]:
    """Runs of rows that only the Berger number (T-22 (3)) separates, in rank order."""
    blocks: list[set[str]] = []
    for row in rows:
        if blocks and row[7] == "berger_number":
            blocks[-1].add(row[1])
        else:
            blocks.append({row[1]})
    return [frozenset(b) for b in blocks]


def _retimed_ratings(reference: Outcome, disturbed: Outcome, key: str) -> dict[str, tuple[Any, ...]]:
    """The undisturbed run's games of `key` replayed by the pure rules (R-5) at the disturbed run's times."""
    retimed = []
    for pairing, event in reference.games[key].items():
        other = disturbed.games[key].get(pairing)
        if other is None:
            continue  # reported as a pairing difference
        copy = type(event)()
        copy.CopyFrom(event)
        # Only what follows real time: when the game ended, and the id (the canonical order's
        # second key, which holds the random tournament id).
        copy.game_id, copy.competition.id = other.game_id, other.competition.id
        copy.finished_at.CopyFrom(other.finished_at)
        copy.started_at.CopyFrom(other.started_at)
        retimed.append(copy)
    states = chaos.expected_ratings(Recorded([], [], retimed, []))
    return {player: (variant, speed, s.rating.rating, s.rating.rd, s.rating.vol, s.games)
            for (variant, speed, player), s in states.items()}


def _rating_differences(key: str, reference: Outcome, disturbed: Outcome, tolerance: float = 1e-9) -> list[str]:
    """A Swiss entrant's rating: the undisturbed run's, but for R-5's inactivity term.

    Glicko-2 here grows the deviation by the (fractional) rating periods since the player's
    previous game, and those follow real time, so two runs differ in the last decimals. What
    must hold exactly: the disturbed run's stored rating is what the undisturbed run's games give
    at the disturbed run's finish times. The remaining gap is recorded in `rating_deltas`.
    """
    problems: list[str] = []
    retimed = _retimed_ratings(reference, disturbed, key)
    for player in reference.players[key]:
        a, b, want = reference.ratings.get(player), disturbed.ratings.get(player), retimed.get(player)
        if a is None or b is None or want is None or a[:2] != b[:2] or a[5] != b[5]:
            problems.append(f"rating of {player} ({key}): {b}, undisturbed {a}")
            continue
        if (
            b[:2] != want[:2]
            or b[5] != want[5]
            or any(abs(x - y) > tolerance for x, y in zip(b[2:5], want[2:5], strict=True))
        ):
            problems.append(f"rating of {player} ({key}): {b}, the undisturbed games at this run's times give {want}")
        disturbed.rating_deltas[player] = max(abs(x - y) for x, y in zip(a[2:4], b[2:4], strict=True))
    return problems


def outcome_differences(reference: Outcome, disturbed: Outcome) -> list[str]:
    """Where the disturbed run's outcome is not the undisturbed one's (see the module docstring)."""
    problems: list[str] = []
    for key in sorted(set(reference.standings) | set(disturbed.standings)):
        if key not in reference.standings or key not in disturbed.standings:
            problems.append(f"{key}: finished in one run only")
            continue
        fmt = reference.formats[key]
        if disturbed.formats[key] != fmt:
            problems.append(f"{key}: format {disturbed.formats[key]!r}, undisturbed {fmt!r}")
            continue
        want_results, got_results = reference.results[key], disturbed.results[key]
        for pair in sorted(set(want_results) | set(got_results)):
            if want_results.get(pair) != got_results.get(pair):
                problems.append(f"{key} {pair}: result {got_results.get(pair)}, undisturbed {want_results.get(pair)}")
        if fmt == "swiss":
            want, got = reference.standings[key], disturbed.standings[key]
            for index in range(max(len(want), len(got))):
                a = want[index] if index < len(want) else None
                b = got[index] if index < len(got) else None
                if a != b:
                    problems.append(f"{key} standings row {index + 1}: {b}, undisturbed {a}")
            for paired in sorted(reference.pairings[key] ^ disturbed.pairings[key]):
                side = "disturbed run only" if paired in disturbed.pairings[key] else "undisturbed run only"
                problems.append(f"{key} pairing (round, white, black, leg) {paired}: {side}")
            problems += _rating_differences(key, reference, disturbed)
        else:
            # T-14: the Berger draw follows the random tournament id; see the module docstring.
            want_rows = {r[1]: (r[2], r[4], r[5], r[6]) for r in reference.standings[key]}
            got_rows = {r[1]: (r[2], r[4], r[5], r[6]) for r in disturbed.standings[key]}
            for player in sorted(set(want_rows) | set(got_rows)):
                if want_rows.get(player) != got_rows.get(player):
                    problems.append(f"{key} {player} (points, SB, wins, games): {got_rows.get(player)}, "
                                    f"undisturbed {want_rows.get(player)}")
            want_blocks = _berger_blocks(reference.standings[key])
            got_blocks = _berger_blocks(disturbed.standings[key])
            if want_blocks != got_blocks:
                problems.append(f"{key} order (up to T-22 (3)): {[sorted(b) for b in got_blocks]}, "
                                f"undisturbed {[sorted(b) for b in want_blocks]}")
    return problems


# -- the undisturbed run, shared -----------------------------------------------------------------


@dataclass
class Reference:
    """The seeded scenario played undisturbed on a system of its own."""

    stack: SystemStack
    runner: PatientRunner
    problems: list[str]
    info: dict[str, Any]
    outcome: Outcome
    seconds: float


@pytest.fixture(scope="session")
def undisturbed(session_systems) -> Reference:
    """Play `chaos_scenario()` once without faults (the kill test's reference; then redelivered)."""
    started = time.monotonic()
    stack = session_systems.start(time_scale=KILL_TIME_SCALE)
    runner = asyncio.run(play(stack))
    problems, info = asyncio.run(check(stack, runner))
    outcome = asyncio.run(outcome_of(stack, runner))
    seconds = time.monotonic() - started
    print(f"\n[undisturbed] {seconds:.0f} s, {info}")
    for line in problems:
        print(f"  difference: {line}")
    for key, rows in outcome.standings.items():
        print(f"  {key} ({outcome.formats[key]}): " + ", ".join(f"{r[1]} {r[2]}" for r in rows))
    return Reference(stack, runner, problems, info, outcome, seconds)


async def everyone_joined(stack: SystemStack, runner: PatientRunner) -> None:
    """Return once every tournament and arena of the scenario holds all its players."""
    async with grpc.aio.insecure_channel(stack.services["pairing"].grpc_address) as pairing, \
            grpc.aio.insecure_channel(stack.services["arena"].grpc_address) as arena:
        tournaments = tournament_pb2_grpc.TournamentServiceStub(pairing)
        arenas = arena_pb2_grpc.ArenaServiceStub(arena)
        for part in runner.parts:
            if part.kind == "triple_block":
                continue
            while True:
                if part.competition_id and part.players:
                    if part.kind == "tournament":
                        got = await tournaments.GetTournament(tp.GetTournamentRequest(
                            tournament_id=part.competition_id))
                        joined = got.entrants
                    else:
                        joined = (await arenas.GetArena(arena_pb2.GetArenaRequest(
                            arena_id=part.competition_id))).players
                    if joined >= len(part.players):
                        break
                await asyncio.sleep(0.2)


def _report(name: str, started: float, counts: FaultCounts, problems: list[str], info: dict[str, Any]) -> None:
    print(f"\n[{name}] {time.monotonic() - started:.0f} s, faults {counts.by_kind()}, {info}")
    for line in problems:
        print(f"  difference: {line}")


def test_services_killed_every_few_seconds(own_system, undisturbed, chaos_figures) -> None:
    """SIGKILL a service every few seconds (each of the five at least once) while the scenario plays,
    WATCHERS Watch streams are held on the competitions and poison records land on every consumed
    topic: the invariants hold, every poison record is set aside, and the tournaments end exactly as
    in the undisturbed run of the same seed."""
    started = time.monotonic()
    # 30x: the scenario lasts long enough (about 1.5 min) for a couple of dozen kills.
    stack = own_system(time_scale=KILL_TIME_SCALE)
    driver = KillDriver(stack, every=KILL_EVERY, seed=SEED, wait=False, serving_timeout=90)
    counts = FaultCounts()
    crowds: list[WatcherCrowd] = []
    tag = f"chaos-poison-{SEED}"
    published: dict[str, list[Any]] = {}

    async def kill_once_joined(runner: PatientRunner) -> None:
        # Not before everyone has joined: a CreateTournament retried through a 20 s restart at
        # 30x would ask for a start already in the past (T-4), and a JoinTournament retried past
        # the start would find registration closed (T-6): a smaller field than the undisturbed
        # run's, by the caller's doing. The kills cover the start timers and the games.
        await everyone_joined(stack, runner)
        driver.start()
        crowds.append(WatcherCrowd(watched_competitions(stack, runner), size=WATCHERS, seed=SEED).start())
        published.update(await chaos.poison_every_consumed_topic(stack.kafka_bootstrap, tag, counts))

    try:
        runner = asyncio.run(play(stack, during=kill_once_joined))
    finally:
        driver.stop()
        for crowd in crowds:
            crowd.stop(counts)
    counts.add(driver.counts)
    problems, info = asyncio.run(check(stack, runner, (tag,)))
    problems += asyncio.run(chaos.set_aside_differences(stack.database_url, tag, published, stack.consumer_groups()))
    problems += [f"driver: {e}" for e in driver.errors]
    problems += [f"never killed (every service is, in every run): {name}" for name in driver.unkilled]
    problems += [f"undisturbed run: {p}" for p in undisturbed.problems]
    outcome = asyncio.run(outcome_of(stack, runner, (tag,)))
    compared = outcome_differences(undisturbed.outcome, outcome)
    problems += compared
    info["compared_with_undisturbed"] = {
        key: {"format": fmt, "rows": len(outcome.standings.get(key, ())), "games": len(outcome.results.get(key, ())),
              "ratings": len(outcome.players[key]) if fmt == "swiss" else 0}
        for key, fmt in undisturbed.outcome.formats.items()}
    if outcome.rating_deltas:
        # R-5's inactivity term follows real time: the largest |rating| or |RD| gap to the undisturbed run.
        info["rating_max_abs_delta"] = max(outcome.rating_deltas.values())
    info["kill_log"] = [line for _t, line in driver.log]
    info["seconds"] = round(time.monotonic() - started)
    info["undisturbed_seconds"] = round(undisturbed.seconds)
    chaos_figures.record("kill", counts, problems, **info)
    _report("kill", started, counts, problems, {k: v for k, v in info.items() if k != "kill_log"})
    assert driver.counts.kills > 0 and counts.poison_records > 0 and counts.watch_streams_served > 0
    assert undisturbed.outcome.standings, "the undisturbed run finished no tournament"
    assert not problems, problems


async def _event_ids(bootstrap: str) -> set[tuple[str, str]]:
    """(topic, event id) of every record of every topic."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        topics = sorted(t for t in await consumer.topics() if not t.startswith("__"))
    finally:
        await consumer.stop()
    records = await chaos.read_raw(bootstrap, topics)
    return {(topic, dict(headers).get("event-id", b"").decode() or repr(value[:64]))
            for topic, _key, value, headers in records}


def _new_events(before: set[tuple[str, str]], after: set[tuple[str, str]]) -> list[str]:
    new = sorted(after - before)
    return [f"{len(new)} events with new ids published, e.g. {new[:5]}"] if new else []


def _step(started: float, line: str) -> None:
    print(f"  [{time.monotonic() - started:5.0f} s] {line}", flush=True)


def _within(seconds: float, what: str, coroutine: Any) -> Any:
    """Run `coroutine`; a step that hangs fails with its name instead of the suite's timeout."""
    async def bounded() -> Any:
        try:
            return await asyncio.wait_for(coroutine, seconds)
        except TimeoutError as error:
            raise TimeoutError(f"{what}: not done in {seconds:.0f} s") from error

    return asyncio.run(bounded())


def test_every_event_delivered_again_changes_nothing(undisturbed, chaos_figures) -> None:
    """Every event delivered again, in order (consumer offsets rewound) and then out of order (every
    record published again, shuffled, then poison on every consumed topic): no table changes but
    the set-aside ones, no new event is published, every poison record is set aside."""
    started = time.monotonic()
    stack = undisturbed.stack
    counts = FaultCounts()
    problems = [f"undisturbed run: {p}" for p in undisturbed.problems]
    info: dict[str, Any] = dict(undisturbed.info)
    print("\n[redelivery]")
    # Stopped cleanly first, so that every committed offset and every row is final.
    for name in SERVICES:
        stack.services[name].process.stop()
    before = _within(60, "snapshot", chaos.snapshot_tables(stack.database_url, SERVICES))
    ids_before = _within(180, "reading every topic", _event_ids(stack.kafka_bootstrap))
    _step(started, f"stopped; {sum(len(v) for v in before.values())} rows in {len(before)} tables, "
                   f"{len(ids_before)} events on the topics")

    def settle_and_compare(what: str) -> None:
        stack.wait_serving(timeout=90, names=SERVICES)
        _within(240, "catching up", caught_up(stack))
        time.sleep(3)  # timers, flag pollers and relays act on what came in
        for name in SERVICES:
            stack.services[name].process.stop()
        after = _within(60, "snapshot", chaos.snapshot_tables(stack.database_url, SERVICES))
        found = chaos.snapshot_differences(before, after)
        found += _new_events(ids_before, _within(180, "reading every topic", _event_ids(stack.kafka_bootstrap)))
        problems.extend(f"{what}: {line}" for line in found)
        _step(started, f"{what}: caught up, stopped, compared: {len(found)} differences")

    # 1. In order: consumer groups that committed nothing, so every topic is read from the beginning.
    in_order = _within(120, "renewing the consumer groups", chaos.redeliver_in_order(stack, "again", counts))
    _step(started, f"in order: {in_order} events to deliver again (fresh consumer groups); restarting")
    for name in SERVICES:
        stack.start_service(name)
    settle_and_compare("in order")

    # 2. Out of order: a replaying proxy publishes every consumed record again, shuffled.
    for name in SERVICES:
        stack.start_service(name)
    stack.wait_serving(timeout=90, names=SERVICES)
    topics = chaos.consumed_topics()
    out_of_order = _within(180, "replaying", chaos.replay_shuffled(stack.kafka_bootstrap, topics, SEED, counts))
    # Poison after the replay (a replay of it would be set aside again, at new offsets): it is set
    # aside and changes nothing else, and its records are no event a service published.
    tag = f"chaos-redelivery-poison-{SEED}"
    published = _within(120, "publishing poison", chaos.poison_every_consumed_topic(stack.kafka_bootstrap, tag, counts))
    ids_before.update((topic, record.event_id or repr(record.value[:64]))
                      for topic, records in published.items() for record in records)
    _step(started, f"out of order: {out_of_order} events published again, shuffled; "
                   f"{sum(len(r) for r in published.values())} poison records")
    settle_and_compare("out of order")
    problems += _within(60, "reading what was set aside", chaos.set_aside_differences(
        stack.database_url, tag, published, stack.consumer_groups()))

    info.update(seconds=round(time.monotonic() - started), redelivered_in_order=in_order,
                redelivered_out_of_order=out_of_order, replayed_topics=topics,
                tables=len(before), rows=sum(len(v) for v in before.values()))
    chaos_figures.record("redelivery", counts, problems, **info)
    _report("redelivery", started, counts, problems, info)
    assert in_order > 0 and out_of_order > 0
    assert not problems, problems


def _still_running(stack: SystemStack) -> list[str]:
    return [f"service {name} exited with {service.process.returncode()} (did not recover)"
            for name, service in stack.services.items() if service.process is not None and service.process.exited()]


def test_broker_paused_redis_lost_postgres_restarted(own_system, chaos_figures) -> None:
    """Poison on every consumed topic, WATCHERS watchers, Redis flushed, PostgreSQL stormed, Redis killed and
    started again empty, PostgreSQL (a cluster of the system's own) stopped as by a crash and started
    again, the broker SIGSTOPped for CHAOS_BROKER_PAUSE s: the scenario completes, on time."""
    started = time.monotonic()
    stack = own_system(time_scale=TIME_SCALE, private_postgres=True)
    infra = stack.chaos_infra  # type: ignore[attr-defined]
    counts = FaultCounts()
    timeline: list[str] = []
    crowds: list[WatcherCrowd] = []
    tag = f"chaos-infra-poison-{SEED}"
    published: dict[str, list[Any]] = {}

    async def faults(runner: PatientRunner) -> None:
        t0 = time.monotonic()

        def note(line: str) -> None:
            timeline.append(f"{time.monotonic() - t0:.0f} s: {line}")

        await asyncio.sleep(8)  # the competitions are created and running
        crowds.append(WatcherCrowd(watched_competitions(stack, runner), size=WATCHERS, seed=SEED).start())
        published.update(await chaos.poison_every_consumed_topic(stack.kafka_bootstrap, tag, counts))
        note(f"{WATCHERS} watchers; {counts.poison_records} poison records published")
        chaos.flush_redis(stack.redis_url, counts)
        note("redis flushed")
        await asyncio.sleep(3)
        opened, refused = await chaos.connection_storm(stack.database_url, STORM_CONNECTIONS, 4.0, counts)
        note(f"storm of {opened} connections ({refused} refused)")
        await asyncio.sleep(3)
        await asyncio.to_thread(chaos.kill_redis, infra.redis, infra.redis_port, 2.0, counts)
        note("redis killed, started again empty after 2 s")
        await asyncio.sleep(5)
        await asyncio.to_thread(chaos.restart_postgres, infra.postgres, 3.0, "immediate", counts)
        note("postgres stopped (immediate) and started again after 3 s")
        await asyncio.sleep(5)

        def pause() -> None:
            with chaos.paused(infra.tansu, counts):
                time.sleep(BROKER_PAUSE)

        await asyncio.to_thread(pause)
        note(f"broker resumed after {BROKER_PAUSE:.0f} s")

    try:
        runner = asyncio.run(play(stack, timeout=300, during=faults, seeded=False))
    finally:
        for crowd in crowds:
            crowd.stop(counts)
    problems, info = asyncio.run(check(stack, runner, (tag,)))
    problems += asyncio.run(chaos.set_aside_differences(stack.database_url, tag, published, stack.consumer_groups()))
    problems += _still_running(stack)
    info.update(seconds=round(time.monotonic() - started), timeline=timeline)
    chaos_figures.record("broker-redis-postgres", counts, problems, **info)
    _report("broker-redis-postgres", started, counts, problems, info)
    assert counts.redis_kills and counts.postgres_restarts and counts.pauses and counts.poison_records
    assert not problems, problems


def test_broker_killed_and_restarted(own_system, chaos_figures) -> None:
    """The broker (tansu, memory storage) SIGKILLed once every competition is running, and started again
    empty on the same port, the outboxes republished as `arbiter up` does: the services recover by
    themselves, the play site publishes its own events again, and the scenario completes, on time."""
    started = time.monotonic()
    stack = own_system(time_scale=TIME_SCALE)
    counts = FaultCounts()
    timeline: list[str] = []

    async def kill_the_broker(runner: PatientRunner) -> None:
        t0 = time.monotonic()
        await everyone_joined(stack, runner)
        await asyncio.sleep(5)  # games under way
        republished = await asyncio.to_thread(chaos.kill_broker, stack, 3.0, counts)
        timeline.append(f"{time.monotonic() - t0:.0f} s: broker killed, started again empty after 3 s, "
                        f"{republished} published events put back in the outboxes")

    runner = asyncio.run(play(stack, timeout=300, during=kill_the_broker, seeded=False))
    problems, info = asyncio.run(check(stack, runner))
    problems += _still_running(stack)
    site = runner.playsite.stats
    if site.broker_losses != counts.broker_kills:
        problems.append(f"the play site noticed {site.broker_losses} broker losses of {counts.broker_kills}")
    info.update(seconds=round(time.monotonic() - started), timeline=timeline,
                events_republished=counts.events_republished,
                playsite={"broker_losses": site.broker_losses, "republished": site.republished})
    chaos_figures.record("broker-killed", counts, problems, **info)
    _report("broker-killed", started, counts, problems, info)
    assert counts.broker_kills
    assert not problems, problems
