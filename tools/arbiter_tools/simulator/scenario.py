"""Scenarios: the population creates and joins competitions over gRPC, then watches them to the end.

Guests and computer accounts try to create and join too: A-1 says they must be refused, and
every refusal (or wrongful acceptance) is counted. A part whose service does not answer
(UNIMPLEMENTED or UNAVAILABLE) is skipped with a note instead of hanging the scenario.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from typing import Any

import grpc

from arbiter.contracts import arena_pb2, arena_pb2_grpc, clock_pb2, clock_pb2_grpc, tournament_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit.auth import Role, signer_for
from arbiter.kit.events import timestamp
from arbiter.kit.grpcclient import open_channel
from arbiter.kit.timesource import TimeSource
from arbiter_tools.simulator.behaviour import NEEDS_CLOCK, Behaviour
from arbiter_tools.simulator.playsite.router import PlaySite

log = logging.getLogger(__name__)

# T-4: a tournament starts 5 minutes after creation at the earliest; the margin absorbs a slow call
# on a loaded machine (90 s of competition time is 1.5 s of wall time at 60x).
TOURNAMENT_LEAD_SECONDS = 390
# gRPC codes that mean "this service is not there yet": the part is skipped, not failed. INTERNAL is
# a real failure (the kit answers UNIMPLEMENTED for a method a service does not implement).
_NOT_READY = (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.UNAVAILABLE)
# Real seconds a call answered UNAVAILABLE is tried again for (channel_to): longer than a service's
# restart by `arbiter up`'s supervisor, or a broker's.
RIDE_OUT_SECONDS = 120.0
# Real seconds the refused accounts wait for the competitions they try to join: one CreateTournament
# or CreateArena call each, slow on a loaded machine but not this slow.
CREATED_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class TournamentPlan:
    """One tournament of a scenario."""

    key: str
    title: str
    entrants: int
    variant: str = "international"
    base_seconds: int = 180
    increment_seconds: int = 2
    home_and_away: bool = False
    opening_mode: common.OpeningMode = common.OPENING_MODE_FREE
    threshold: int = 0
    duration_minutes: int = 480
    rated: bool = True
    # Seat index -> behaviour, so that a scenario shows each one for sure (others are drawn).
    showcase: tuple[tuple[int, Behaviour], ...] = ()


@dataclass(frozen=True)
class ArenaPlan:
    """One arena of a scenario."""

    key: str
    title: str
    players: int
    variant: str = "international"
    base_seconds: int = 180
    increment_seconds: int = 2
    duration_minutes: int = 10
    rated: bool = True
    showcase: tuple[tuple[int, Behaviour], ...] = ()


@dataclass(frozen=True)
class TripleBlockPlan:
    """One casual Triple Block (correspondence) game between two refuelling players."""

    key: str
    title: str
    variant: str = "italian"
    increment_days: int = 1
    bank_days: int = 75
    # Competition seconds per ply: far faster than real correspondence, so that a demo sees the end.
    think_seconds: tuple[float, float] = (10.0, 50.0)


@dataclass(frozen=True)
class Scenario:
    """What a run plays: tournaments, arenas, Triple Block games, and the refused accounts."""

    name: str
    tournaments: tuple[TournamentPlan, ...] = ()
    arenas: tuple[ArenaPlan, ...] = ()
    triple_blocks: tuple[TripleBlockPlan, ...] = ()
    guests: int = 3
    computers: int = 2

    @property
    def bots_needed(self) -> int:
        """Registered accounts the scenario seats (each plays in one competition only, or T-18 forfeits)."""
        busy_partners = 4 * len(self.tournaments)
        return (sum(t.entrants for t in self.tournaments) + sum(a.players for a in self.arenas)
                + 2 * len(self.triple_blocks) + busy_partners)


def demo_scenario() -> Scenario:
    """The README's demo: every format side by side."""
    return Scenario(
        name="demo",
        tournaments=(
            TournamentPlan("rr5", "5-entrant round robin", 5),
            TournamentPlan("double4", "4-entrant forced double (T-10)", 4, variant="english"),
            TournamentPlan("swiss24", "24-entrant Swiss, home and away, Italian opening draw", 24, variant="italian",
                           home_and_away=True, opening_mode=common.OPENING_MODE_TABLE_UP_TO_2,
                           showcase=((5, Behaviour.BUSY), (6, Behaviour.DISCONNECTS_SHORT),
                                     (7, Behaviour.DISCONNECTS_LONG), (8, Behaviour.NEVER_SHOWS),
                                     (9, Behaviour.RESIGNS), (10, Behaviour.OFFERS_DRAWS))),
        ),
        arenas=(ArenaPlan("arena60", "60-player arena", 60, duration_minutes=10,
                          showcase=tuple((seat, Behaviour.BOOSTS) for seat in range(1, 60, 6))),),
        triple_blocks=(TripleBlockPlan("tb", "Triple Block game (ICCF)"),),
    )


def small_scenario() -> Scenario:
    """A quick check: one small round robin and one small arena."""
    return Scenario(
        name="small",
        tournaments=(TournamentPlan("rr5", "5-entrant round robin", 5),),
        arenas=(ArenaPlan("arena8", "8-player arena", 8, duration_minutes=10),),
    )


SCENARIOS: dict[str, Callable[[], Scenario]] = {"demo": demo_scenario, "small": small_scenario}


@dataclass(frozen=True)
class Addresses:
    """Where the services answer (gRPC host:port); empty when not known."""

    pairing: str = ""
    arena: str = ""
    clock: str = ""
    rating: str = ""
    # `id:secret:roles` to sign play-site tokens with when the services require them (AUTH_KEYS); "" when off.
    auth_signing_key: str = ""

    @classmethod
    def from_env(cls, environ: Any = None) -> Addresses:
        """From PAIRING_GRPC_ADDR, ARENA_GRPC_ADDR, CLOCK_GRPC_ADDR, RATING_GRPC_ADDR, AUTH_SIGNING_KEY."""
        env = os.environ if environ is None else environ
        return cls(env.get("PAIRING_GRPC_ADDR", ""), env.get("ARENA_GRPC_ADDR", ""),
                   env.get("CLOCK_GRPC_ADDR", ""), env.get("RATING_GRPC_ADDR", ""),
                   env.get("AUTH_SIGNING_KEY", ""))


def channel_to(address: str, auth_signing_key: str = "", caller: str = "playsite",
               ride_out_seconds: float = RIDE_OUT_SECONDS) -> grpc.aio.Channel:
    """A channel to `address`, signing play-site tokens as `caller` when a signing key is given.

    A call answered UNAVAILABLE (a service restarting, the broker or Redis it needs gone) is tried
    again with backoff for `ride_out_seconds`, as a play site rides out an outage, instead of
    ending the run after the channel's own second of retries.
    """
    return open_channel(address, signer_for(auth_signing_key, Role.PLAY_SITE, caller), ride_out_seconds)


@dataclass(frozen=True)
class Population:
    """The accounts: registered bots, guests and computer accounts (A-1)."""

    bots: tuple[str, ...]
    guests: tuple[str, ...]
    computers: tuple[str, ...]

    @classmethod
    def make(cls, bots: int, guests: int, computers: int, prefix: str = "") -> Population:
        """`bots` registered bots, `guests` guests, `computers` computer accounts."""
        return cls(tuple(f"{prefix}bot-{i:04d}" for i in range(1, bots + 1)),
                   tuple(f"{prefix}guest-{i:02d}" for i in range(1, guests + 1)),
                   tuple(f"{prefix}computer-{i:02d}" for i in range(1, computers + 1)))


def registered(player_id: str) -> common.Actor:
    """The actor of a registered account."""
    return common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED)


@dataclass
class PartState:
    """Progress of one part of a scenario, for the live view and the report."""

    key: str
    title: str
    kind: str  # "tournament", "arena", "triple_block"
    status: str = "waiting"
    competition_id: str = ""
    players: list[str] = field(default_factory=list)
    format: str = ""
    round: int = 0
    rounds: int = 0
    games_per_pairing: int = 1
    games_done: int = 0
    games_total: int = 0
    rows: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    finish_note: str = ""
    started_real: float = 0.0
    finished_real: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)
    # A finished tournament's rounds as the pairing service served them (GetPairings), for checks.
    pairings: list[Any] = field(default_factory=list)

    @property
    def done(self) -> bool:
        """Finished, cancelled or skipped."""
        return self.status in ("finished", "cancelled") or self.status.startswith("skipped")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for --json."""
        return {
            "key": self.key, "title": self.title, "kind": self.kind, "status": self.status,
            "id": self.competition_id, "format": self.format, "round": self.round, "rounds": self.rounds,
            "games_per_pairing": self.games_per_pairing, "games_done": self.games_done,
            "games_total": self.games_total, "notes": self.notes, "finish_note": self.finish_note,
            "seconds": round(self.finished_real - self.started_real, 1) if self.finished_real else None,
            "standings": [_row_dict(r) for r in self.rows], **self.detail,
        }


def _row_dict(row: Any) -> dict[str, Any]:
    if isinstance(row, ev.StandingRow):
        return {"rank": row.rank, "player": row.player_id, "points": row.points, "buchholz": row.buchholz,
                "sonneborn_berger": row.sonneborn_berger, "wins": row.wins, "games": row.games,
                "tie_break": row.tie_break}
    return {"rank": row.rank, "player": row.player_id, "points": row.points, "wins": row.wins,
            "games": row.games, "streak": row.streak}


class ScenarioRunner:
    """Plays one scenario against running services, with an in-process play site."""

    def __init__(
        self, scenario: Scenario, addresses: Addresses, playsite: PlaySite, time_source: TimeSource, *,
        population: Population | None = None, say: Callable[[str], None] = print, poll_seconds: float = 1.0,
    ) -> None:
        self.scenario = scenario
        self.addresses = addresses
        self.playsite = playsite
        self.time_source = time_source
        self.population = population or Population.make(scenario.bots_needed, scenario.guests, scenario.computers)
        if len(self.population.bots) < scenario.bots_needed:
            raise ValueError(f"scenario {scenario.name} seats {scenario.bots_needed} bots; "
                             f"the population has {len(self.population.bots)}")
        self.say = say
        self.poll_seconds = poll_seconds
        self.parts: list[PartState] = (
            [PartState(t.key, t.title, "tournament") for t in scenario.tournaments]
            + [PartState(a.key, a.title, "arena") for a in scenario.arenas]
            + [PartState(b.key, b.title, "triple_block") for b in scenario.triple_blocks]
        )
        self.refusals: Counter[str] = Counter()
        # A-1 attempts answered neither PERMISSION_DENIED nor "not ready", by "call:CODE".
        self.attempt_errors: Counter[str] = Counter()
        self.wrongly_accepted: list[str] = []
        self.notes: list[str] = []
        self.clock_ready = False
        self.started_real = time.monotonic()
        self._by_competition: dict[str, PartState] = {}
        self._channels: list[grpc.aio.Channel] = []
        self._free_bots = list(self.population.bots)
        self._tasks: set[asyncio.Task[Any]] = set()
        playsite.on_finished.append(self._count_game)

    def part(self, key: str) -> PartState:
        """The state of the part called `key`."""
        return next(p for p in self.parts if p.key == key)

    def _take(self, count: int) -> list[str]:
        taken, self._free_bots = self._free_bots[:count], self._free_bots[count:]
        return taken

    def _showcase(self, players: list[str], showcase: tuple[tuple[int, Behaviour], ...]) -> None:
        for seat, behaviour in showcase:
            if seat < len(players):
                # Without the clock nobody ends the game of a player who never comes: the round would
                # wait for hours of competition time (the mix lost these behaviours for that reason).
                if behaviour in NEEDS_CLOCK and not self.clock_ready:
                    behaviour = Behaviour.NORMAL
                self.playsite.profiles.assigned[players[seat]] = behaviour

    def _count_game(self, finished: ev.GameFinished) -> None:
        part = self._by_competition.get(finished.competition.id)
        if part is not None:
            part.games_done += 1
            if part.kind == "triple_block":
                part.detail["result"] = (f"{common.GameResult.Name(finished.result).removeprefix('GAME_RESULT_')} by "
                                         f"{common.Termination.Name(finished.termination).removeprefix('TERMINATION_')}"
                                         f" after {finished.plies} plies").lower()

    def _channel(self, address: str) -> grpc.aio.Channel:
        channel = channel_to(address, self.addresses.auth_signing_key)
        self._channels.append(channel)
        return channel

    async def run(self, timeout: float = 600.0) -> None:
        """Play every part to its end (or skip it with a note); `timeout` in real seconds."""
        self.started_real = time.monotonic()
        try:
            self.clock_ready = await self._clock_ready()
            if not self.clock_ready:
                self.notes.append("clock service not ready (GetClock unimplemented or unreachable): no flags, "
                                  "so never-show and 40 s disconnection behaviours are off")
                self.playsite.profiles = self.playsite.profiles.without(NEEDS_CLOCK)
            jobs = [self._tournament(plan, self.part(plan.key)) for plan in self.scenario.tournaments]
            jobs += [self._arena(plan, self.part(plan.key)) for plan in self.scenario.arenas]
            jobs += [self._triple_block(plan, self.part(plan.key)) for plan in self.scenario.triple_blocks]
            jobs.append(self._refused_accounts())
            gathered = asyncio.gather(*jobs)
            # Ctrl-C cancels the gathering; reading its outcome keeps asyncio from warning about it.
            gathered.add_done_callback(lambda f: f.cancelled() or f.exception())
            await asyncio.wait_for(gathered, timeout)
        except TimeoutError:
            self.notes.append(f"stopped after {timeout:.0f} s: parts still running are listed as they stood")
        finally:
            for channel in self._channels:
                await channel.close()
            self._channels.clear()

    # -- accounts that must be refused -------------------------------------------------

    async def _refused_accounts(self) -> None:
        """Guests and computer accounts try to create and join; A-1 refuses every attempt."""
        if not self.addresses.pairing:
            return
        stub = tournament_pb2_grpc.TournamentServiceStub(self._channel(self.addresses.pairing))
        await self._competitions_created()
        kinds = [(p, common.ACCOUNT_KIND_GUEST) for p in self.population.guests]
        kinds += [(p, common.ACCOUNT_KIND_BOT) for p in self.population.computers]
        targets = [p.competition_id for p in self.parts if p.kind == "tournament" and p.competition_id]
        for player, kind in kinds:
            actor = common.Actor(player_id=player, kind=kind)
            attempts: list[tuple[str, Any]] = [("create_tournament", stub.CreateTournament(tp.CreateTournamentRequest(
                actor=actor, settings=self._tournament_settings(TournamentPlan("x", f"{player}'s cup", 8)))))]
            attempts += [("join_tournament", stub.JoinTournament(tp.JoinTournamentRequest(
                actor=actor, tournament_id=target))) for target in targets]
            if self.addresses.arena:
                arena = arena_pb2_grpc.ArenaServiceStub(self._channel(self.addresses.arena))
                attempts.append(("create_arena", arena.CreateArena(arena_pb2.CreateArenaRequest(
                    actor=actor, settings=self._arena_settings(ArenaPlan("x", f"{player}'s arena", 8))))))
                attempts += [("join_arena", arena.JoinArena(arena_pb2.JoinArenaRequest(
                    actor=actor, arena_id=p.competition_id)))
                    for p in self.parts if p.kind == "arena" and p.competition_id]
            for what, call in attempts:
                try:
                    await call
                except grpc.aio.AioRpcError as error:
                    if error.code() == grpc.StatusCode.PERMISSION_DENIED:
                        self.refusals[what] += 1
                    elif error.code() not in _NOT_READY:
                        self.attempt_errors[f"{what}:{error.code().name}"] += 1
                        log.warning("A-1 attempt answered %s, not PERMISSION_DENIED: %s by %s: %s",
                                    error.code().name, what, player, error.details())
                else:
                    self.wrongly_accepted.append(f"{what} by {player} ({common.AccountKind.Name(kind)})")

    async def _competitions_created(self) -> None:
        """Wait until every tournament and arena has an id or gave up on one (at most CREATED_TIMEOUT_SECONDS)."""
        deadline = time.monotonic() + CREATED_TIMEOUT_SECONDS
        while True:
            waiting = [p.key for p in self.parts if p.kind in ("tournament", "arena")
                       and not p.competition_id and not p.status.startswith(("skipped", "failed"))]
            if not waiting:
                return
            if time.monotonic() >= deadline:
                self.notes.append(f"A-1: {', '.join(waiting)} still had no id after {CREATED_TIMEOUT_SECONDS:.0f} s; "
                                  "guests and computer accounts did not try to join them")
                return
            await asyncio.sleep(0.05)

    # -- tournaments -----------------------------------------------------------------------

    def _tournament_settings(self, plan: TournamentPlan) -> tp.TournamentSettings:
        starts_at = self.time_source.now() + timedelta(seconds=TOURNAMENT_LEAD_SECONDS)
        return tp.TournamentSettings(
            name=plan.title, variant=plan.variant,
            time_control=common.TimeControl(fischer=common.FischerControl(
                base_seconds=plan.base_seconds, increment_seconds=plan.increment_seconds)),
            threshold=plan.threshold, capacity=max(plan.entrants, 4), starts_at=timestamp(starts_at),
            duration_minutes=plan.duration_minutes, rated=plan.rated, opening_mode=plan.opening_mode,
            home_and_away=plan.home_and_away,
        )

    async def _tournament(self, plan: TournamentPlan, part: PartState) -> None:
        if not self.addresses.pairing:
            part.status = "skipped: PAIRING_GRPC_ADDR not set"
            return
        stub = tournament_pb2_grpc.TournamentServiceStub(self._channel(self.addresses.pairing))
        players = self._take(plan.entrants)
        part.players = players
        self._showcase(players, plan.showcase)
        part.started_real = time.monotonic()
        creator = players[0]
        settings = self._tournament_settings(plan)
        try:
            created = await stub.CreateTournament(tp.CreateTournamentRequest(
                actor=registered(creator), settings=settings,
                request_id=f"{self.scenario.name}-{plan.key}-{self.playsite.config.seed}"))
        except grpc.aio.AioRpcError as error:
            part.status = _skip_or_fail(error, "TournamentService.CreateTournament")
            return
        tournament = created.tournament
        part.competition_id = tournament.id
        part.notes = list(tournament.notes)
        self._by_competition[tournament.id] = part
        part.status = "registering"
        # the creator only organises until they join like anyone else.
        for player in players:
            await stub.JoinTournament(tp.JoinTournamentRequest(actor=registered(player), tournament_id=tournament.id))
        self._plan_busy(part, settings.starts_at.ToDatetime(tzinfo=UTC).timestamp())
        last_poll = 0.0
        while True:
            tournament = await stub.GetTournament(tp.GetTournamentRequest(tournament_id=tournament.id))
            part.format, part.rounds, part.round = tournament.format, tournament.rounds, tournament.current_round
            part.games_per_pairing = tournament.games_per_pairing or 1
            if tournament.rounds:
                part.games_total = tournament.rounds * (len(players) // 2) * part.games_per_pairing
            if tournament.state == tp.TOURNAMENT_STATE_RUNNING:
                part.status = "running"
            if tournament.state in (tp.TOURNAMENT_STATE_FINISHED, tp.TOURNAMENT_STATE_CANCELLED):
                break
            if tournament.state == tp.TOURNAMENT_STATE_RUNNING and time.monotonic() - last_poll >= 1.0:
                last_poll = time.monotonic()
                standings = await stub.GetStandings(tp.GetStandingsRequest(tournament_id=tournament.id))
                part.rows = list(standings.rows)
            await asyncio.sleep(self.poll_seconds)
        part.notes = list(tournament.notes)
        part.finish_note = tournament.finish_note
        if tournament.state == tp.TOURNAMENT_STATE_CANCELLED:
            part.status = "cancelled"
            part.finish_note = tournament.cancel_reason
        else:
            standings = await stub.GetStandings(tp.GetStandingsRequest(tournament_id=tournament.id))
            part.rows = list(standings.rows)
            part.detail["explanations"] = list(standings.explanations)
            pairings = await stub.GetPairings(tp.GetPairingsRequest(tournament_id=tournament.id))
            terminations = Counter(common.Termination.Name(g.termination) for r in pairings.rounds for g in r.games)
            part.detail["terminations"] = dict(terminations)
            part.pairings = list(pairings.rounds)
            part.detail["openings"] = [f"r{r.round}: {r.opening.name or r.opening.number or 'free'}"
                                       for r in pairings.rounds]
            part.status = "finished"
        part.finished_real = time.monotonic()

    def _plan_busy(self, part: PartState, starts_at: float) -> None:
        """T-18: busy entrants sit in a casual game when round 1 is paired."""
        busy = [p for p in part.players if self.playsite.profiles.of(p) is Behaviour.BUSY]
        for player in busy[:4]:
            partner = self._take(1)
            if not partner:
                return
            # A drawn behaviour could end the casual game before round 1 is paired (a 40 s drop, a
            # flag): then no T-18 forfeit would be shown.
            self.playsite.profiles.assigned[partner[0]] = Behaviour.NORMAL
            task = asyncio.create_task(self._busy_game(player, partner[0], starts_at))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _busy_game(self, player: str, partner: str, starts_at: float) -> None:
        # Open the casual game four minutes before the start (the pairing service must have heard of
        # it when it pairs round 1, even when its consumer lags) and keep it three minutes past it.
        await asyncio.sleep(self.time_source.real_seconds(starts_at - 240 - self.time_source.timestamp()))
        # Slow moves, so that the rules do not end it before the hold does.
        await self.playsite.play_casual(player, partner, hold_seconds=420, think_seconds=(15.0, 30.0))

    # -- arenas ----------------------------------------------------------------------------

    def _arena_settings(self, plan: ArenaPlan) -> arena_pb2.ArenaSettings:
        return arena_pb2.ArenaSettings(
            name=plan.title, variant=plan.variant, duration_minutes=plan.duration_minutes, rated=plan.rated,
            time_control=common.FischerControl(base_seconds=plan.base_seconds,
                                               increment_seconds=plan.increment_seconds),
        )

    async def _arena(self, plan: ArenaPlan, part: PartState) -> None:
        if not self.addresses.arena:
            part.status = "skipped: ARENA_GRPC_ADDR not set"
            return
        stub = arena_pb2_grpc.ArenaServiceStub(self._channel(self.addresses.arena))
        players = self._take(plan.players)
        part.players = players
        self._showcase(players, plan.showcase)
        part.started_real = time.monotonic()
        try:
            arena = await stub.CreateArena(arena_pb2.CreateArenaRequest(
                actor=registered(players[0]), settings=self._arena_settings(plan),
                request_id=f"{self.scenario.name}-{plan.key}-{self.playsite.config.seed}"))
        except grpc.aio.AioRpcError as error:
            part.status = _skip_or_fail(error, "ArenaService.CreateArena")
            return
        part.competition_id = arena.id
        self._by_competition[arena.id] = part
        part.status = "running"
        for player in players:
            await stub.JoinArena(arena_pb2.JoinArenaRequest(actor=registered(player), arena_id=arena.id))
        while True:
            arena = await stub.GetArena(arena_pb2.GetArenaRequest(arena_id=arena.id))
            part.detail["games_played"] = arena.games_played
            board = await stub.GetLeaderboard(arena_pb2.GetLeaderboardRequest(
                arena_id=arena.id, page=common.PageRequest(page_size=10)))
            part.rows = list(board.rows)
            ends = arena.ends_at.ToDatetime(tzinfo=UTC).timestamp() if arena.HasField("ends_at") else 0.0
            begins = arena.starts_at.ToDatetime(tzinfo=UTC).timestamp() if arena.HasField("starts_at") else 0.0
            if ends > begins:
                part.detail["progress"] = min(1.0, max(0.0, (self.time_source.timestamp() - begins) / (ends - begins)))
            if arena.state in (arena_pb2.ARENA_STATE_FINISHED, arena_pb2.ARENA_STATE_CANCELLED):
                break
            await asyncio.sleep(self.poll_seconds)
        part.status = "finished" if arena.state == arena_pb2.ARENA_STATE_FINISHED else "cancelled"
        board = await stub.GetLeaderboard(arena_pb2.GetLeaderboardRequest(
            arena_id=arena.id, page=common.PageRequest(page_size=100)))
        part.rows = list(board.rows)
        part.finished_real = time.monotonic()

    # -- Triple Block ----------------------------------------------------------------------

    async def _clock_ready(self) -> bool:
        """Whether the clock service answers GetClock (NOT_FOUND for an unknown game counts as ready)."""
        if not self.addresses.clock:
            return False
        stub = clock_pb2_grpc.ClockServiceStub(self._channel(self.addresses.clock))
        try:
            await stub.GetClock(clock_pb2.GetClockRequest(game_id="probe-no-such-game"), timeout=5)
        except grpc.aio.AioRpcError as error:
            return error.code() not in (*_NOT_READY, grpc.StatusCode.DEADLINE_EXCEEDED)
        return True

    async def _triple_block(self, plan: TripleBlockPlan, part: PartState) -> None:
        if not self.clock_ready:
            part.status = "skipped: the clock service does not answer (GetClock unimplemented or unreachable)"
            return
        white, black = self._take(2)
        for player in (white, black):
            self.playsite.profiles.assigned[player] = Behaviour.REFUELS
        part.players = [white, black]
        part.started_real = time.monotonic()
        part.status = "running"
        control = common.TimeControl(triple_block=common.TripleBlockControl(
            increment_days=plan.increment_days, bank_days=plan.bank_days))
        live = await self.playsite.play_casual(white, black, variant=plan.variant, time_control=control,
                                               speed=common.SPEED_CORRESPONDENCE, think_seconds=plan.think_seconds)
        part.competition_id = live.request.competition.id
        self._by_competition[part.competition_id] = part
        part.games_total = 1
        states: list[ev.ClockState] = []

        def on_state(state: ev.ClockState) -> None:
            if state.game_id == live.request.game_id:
                states.append(state)

        self.playsite.on_clock_state.append(on_state)
        try:
            while live.task is not None and not live.task.done():
                part.detail["plies"] = live.plies
                if states:
                    last = states[-1]
                    part.detail["clock"] = {
                        "white_ms": last.white_remaining_ms, "black_ms": last.black_remaining_ms,
                        "white_bank_ms": last.white_bank_ms, "black_bank_ms": last.black_bank_ms,
                    }
                await asyncio.sleep(self.poll_seconds)
        finally:
            self.playsite.on_clock_state.remove(on_state)
        if live.task is not None:
            with contextlib.suppress(Exception):
                await live.task
        part.detail["plies"] = live.plies
        part.detail["refuels"] = self.playsite.stats.refuels
        part.detail["refuels_refused"] = self.playsite.stats.refuel_refusals
        part.status = "finished"
        part.finished_real = time.monotonic()

    def report(self) -> dict[str, Any]:
        """Everything the run decided, as plain data."""
        latencies = sorted(self.playsite.stats.pairing_latencies)
        return {
            "scenario": self.scenario.name,
            "wall_seconds": round(time.monotonic() - self.started_real, 1),
            "parts": [p.as_dict() for p in self.parts],
            "refusals": dict(self.refusals),
            "attempt_errors": dict(self.attempt_errors),
            "wrongly_accepted": self.wrongly_accepted,
            "notes": self.notes,
            "playsite": self.playsite.stats.as_dict(),
            "result_to_next_pairing_ms": {
                "samples": len(latencies),
                "p50": round(percentile(latencies, 50) * 1000, 1) if latencies else None,
                "p99": round(percentile(latencies, 99) * 1000, 1) if latencies else None,
            },
        }


def run_failed(report: dict[str, Any]) -> bool:
    """Whether a run failed: a part failed, or a guest or computer account was let in (A-1)."""
    return any(p["status"].startswith("failed") for p in report["parts"]) or bool(report["wrongly_accepted"])


def percentile(sorted_values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of already sorted values."""
    if not sorted_values:
        return 0.0
    index = max(0, min(len(sorted_values) - 1, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[index]


def _skip_or_fail(error: grpc.aio.AioRpcError, call: str) -> str:
    if error.code() in _NOT_READY:
        return f"skipped: {call} answered {error.code().name} ({error.details()}): service not ready"
    return f"failed: {call} answered {error.code().name}: {error.details()}"
