"""The smallest real play site for Arbiter: bots join a tournament and an arena, every game is hosted here.

It imports nothing of Arbiter but the generated contracts and the draughts rules engine; the few
facts of the contract it needs (topics, keys, event ids, the token header, competition time) are
restated below. docs/integration.md is the contract in full; README.md beside this file says how
to run it.

    python examples/minimal_playsite/main.py [--players 6] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import ssl
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError

from arbiter.contracts import arena_pb2, arena_pb2_grpc, tournament_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import tournament_pb2 as tp
from arbiter.draughts import Game
from arbiter.vocabulary import Side, Termination

PRODUCER = "minimal-playsite"
# What the play site publishes, and what it reads; every game topic is keyed by game_id, so all
# the events of one game land on one partition, in order, whoever publishes them.
PUBLISHED = {ev.GameStarted: "game.started", ev.MoveMade: "game.move_made",
             ev.PlayerPresenceChanged: "game.presence_changed", ev.GameFinished: "game.finished"}
CONSUMED = {"game.requested": ev.GameRequested, "clock.flagged": ev.ClockFlagged,
            "game.abandoned": ev.GameAbandoned, "game.finished": ev.GameFinished}
# T-4: a tournament starts 5 minutes after its creation at the earliest.
EARLIEST_START_SECONDS = 300
VARIANT = "international"
BASE_SECONDS, INCREMENT_SECONDS = 180, 2
TOURNAMENT_MINUTES = 240  # T-15: long enough that no game is still open when it closes
ARENA_MINUTES = 10  # AR-1's shortest arena
# Competition seconds a bot thinks per move, and the ply after which a wandering game is agreed drawn.
THINK_SECONDS = (1.0, 3.0)
MAX_PLIES = 200
CALL_TIMEOUT_SECONDS = 10.0
# Trace ids: a call may name its chain in this metadata and every answer names it back; an event's
# chain is its meta's trace_id, copied to this header. A game's events stay in its request's chain.
TRACE_METADATA, TRACE_HEADER = "x-trace-id", "trace-id"
PUBLISH_ATTEMPTS = 8


class CompetitionTime:
    """Competition time as every Arbiter process computes it: origin + (real now - origin) * scale."""

    def __init__(self, scale: float, origin: datetime | None) -> None:
        if scale != 1.0 and origin is None:
            raise SystemExit("TIME_ORIGIN is required when TIME_SCALE is not 1 (copy both from `arbiter up`)")
        self.scale = scale
        self.origin = origin.timestamp() if origin is not None else 0.0

    def now(self) -> datetime:
        """The competition instant now: what every time stamp sent to Arbiter holds."""
        real = time.time()
        return datetime.fromtimestamp(self.origin + (real - self.origin) * self.scale, UTC)

    def real_seconds(self, competition_seconds: float) -> float:
        """How long `competition_seconds` last on the wall clock."""
        return max(0.0, competition_seconds / self.scale)


def kafka_options(env: Mapping[str, str]) -> dict[str, Any]:
    """aiokafka's options from KAFKA_BOOTSTRAP_SERVERS and, when set, KAFKA_SECURITY_PROTOCOL and KAFKA_SASL_*."""
    options: dict[str, Any] = {"bootstrap_servers": env["KAFKA_BOOTSTRAP_SERVERS"]}
    protocol = env.get("KAFKA_SECURITY_PROTOCOL", "")
    if protocol:
        options["security_protocol"] = protocol
    if protocol.endswith("SSL"):
        options["ssl_context"] = ssl.create_default_context()
    for variable, option in (("KAFKA_SASL_MECHANISM", "sasl_mechanism"), ("KAFKA_SASL_USERNAME", "sasl_plain_username"),
                             ("KAFKA_SASL_PASSWORD", "sasl_plain_password")):
        if env.get(variable):
            options[option] = env[variable]
    return options


def registered(player_id: str) -> common.Actor:
    """A bot acts as a registered account: guests and bot accounts may not play competitions (A-1)."""
    return common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED)


@dataclass
class HostedGame:
    """One game played here, and how it was ended from outside, if it was."""

    request: ev.GameRequested
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    # The event that ended it: a ClockFlagged, a GameAbandoned, or someone else's GameFinished.
    ending: Any = None


class PlaySite:
    """Hosts the games Arbiter requests for its own competitions and reports them on Kafka."""

    def __init__(self, env: Mapping[str, str], time_source: CompetitionTime, tag: str, seed: int) -> None:
        options = kafka_options(env)
        self.time_source = time_source
        self.seed = seed
        self.producer = AIOKafkaProducer(client_id=PRODUCER, acks="all", **options)
        # A group of its own per run: it hosts only its own competitions' games, all created after it
        # starts, so it reads from the end of every topic. A play site hosting every game keeps one
        # group id for all its replicas (each game is read by one of them) and its committed offsets.
        self.consumer = AIOKafkaConsumer(
            *CONSUMED, group_id=f"{PRODUCER}-{tag}", client_id=PRODUCER, auto_offset_reset="latest",
            fetch_max_wait_ms=int(env.get("KAFKA_FETCH_MAX_WAIT_MS", "500")), **options)
        self.competitions: set[str] = set()
        self.games: dict[str, HostedGame] = {}
        self.requested: dict[str, str] = {}  # game id -> competition id
        self.results: dict[str, str] = {}  # game id -> who decided it (this site, or the publisher)
        self.seats: dict[str, asyncio.Lock] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self._reading: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Connect and read from now on: once this returns, every event published later reaches it."""
        await self.producer.start()
        await self.consumer.start()
        self._reading = asyncio.create_task(self._read())
        # The group assigns partitions in the background; their positions fixed, nothing is missed.
        while not self.consumer.assignment():
            await asyncio.sleep(0.05)
        for partition in self.consumer.assignment():
            await self.consumer.position(partition)

    async def stop(self) -> None:
        """Stop reading and playing; disconnect."""
        for task in [*self.tasks, *([self._reading] if self._reading else [])]:
            task.cancel()
        await asyncio.gather(*self.tasks, *([self._reading] if self._reading else []), return_exceptions=True)
        await self.consumer.stop()
        await self.producer.stop()

    async def _read(self) -> None:
        # Delivery is at least once: a request, a flag or a result may come twice; each is looked up first.
        async for record in self.consumer:
            event = CONSUMED[record.topic].FromString(record.value)
            if isinstance(event, ev.GameRequested):
                self._requested(event)
            elif isinstance(event, ev.GameFinished) and event.meta.producer == PRODUCER:
                continue  # our own result coming back
            elif (game := self.games.get(event.game_id)) is not None and not game.ended.is_set():
                # T-16/T-17 flags and T-19 abandonments from the clock service; T-15 closing draws and
                # T-18 forfeits from the pairing service: the game stops here.
                game.ending = event
                game.ended.set()
            elif isinstance(event, ev.GameFinished) and event.competition.id in self.competitions:
                self.results.setdefault(event.game_id, event.meta.producer)  # never opened here (T-18)

    def _requested(self, request: ev.GameRequested) -> None:
        if request.competition.id not in self.competitions or request.game_id in self.requested:
            return
        self.requested[request.game_id] = request.competition.id
        game = self.games[request.game_id] = HostedGame(request)
        task = asyncio.create_task(self._host(game))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _host(self, game: HostedGame) -> None:
        """Seat both players, then play the game; a player sits at one board at a time."""
        white, black = game.request.white_id, game.request.black_id
        # The two games of a home-and-away pairing (T-10, T-12) are played one after the other.
        first, second = (self.seats.setdefault(player, asyncio.Lock()) for player in sorted((white, black)))
        try:
            async with first, second:
                await self._play(game)
        finally:
            del self.games[game.request.game_id]

    async def _play(self, game: HostedGame) -> None:
        """Open the game whoever is present, play random legal moves, report every move and the result."""
        request, game_id = game.request, game.request.game_id
        if game.ended.is_set():  # decided before it could open (T-15 closed the tournament meanwhile)
            self.results[game_id] = game.ending.meta.producer
            return
        rng = random.Random(f"{self.seed}/{game_id}")
        started_at = self.time_source.now()
        await self.publish(ev.GameStarted(
            meta=same_chain(request),
            game_id=game_id, white_id=request.white_id, black_id=request.black_id, competition=request.competition,
            variant=request.variant, time_control=request.time_control, start_fen=request.opening.fen,
        ), f"{game_id}/started", started_at=started_at)
        for player in (request.white_id, request.black_id):
            # Who connected is what tells the clock T-16 (one absent) from T-19 (both absent).
            await self.publish(ev.PlayerPresenceChanged(meta=same_chain(request), game_id=game_id, player_id=player,
                                                        online=True),
                               f"{game_id}/online/{player}", at=self.time_source.now())
        board = Game(request.variant, request.opening.fen or None)
        players = {Side.WHITE: request.white_id, Side.BLACK: request.black_id}
        moved: set[str] = set()
        plies = 0
        while True:
            outcome = board.outcome()
            if outcome is not None:
                result = (common.GAME_RESULT_DRAW if outcome.winner is None else common.GAME_RESULT_WHITE_WINS
                          if outcome.winner is Side.WHITE else common.GAME_RESULT_BLACK_WINS)
                no_moves = outcome.termination is Termination.NO_MOVES
                termination = common.TERMINATION_NO_MOVES if no_moves else common.TERMINATION_DRAW_RULE
                break
            if plies >= MAX_PLIES:
                result, termination = common.GAME_RESULT_DRAW, common.TERMINATION_DRAW_AGREED
                break
            think = self.time_source.real_seconds(rng.uniform(*THINK_SECONDS))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(game.ended.wait(), think)
            if game.ended.is_set():
                decided = self._ended_outside(game)
                if decided is None:
                    self.results[game_id] = game.ending.meta.producer
                    return
                result, termination = decided
                break
            mover = players[board.position.turn]
            move = board.play(rng.choice(board.legal_moves()))
            plies += 1
            moved.add(mover)
            # The ply numbers the moves (1, 2, ...): the clock ignores one it has applied already.
            await self.publish(ev.MoveMade(meta=same_chain(request), game_id=game_id, player_id=mover, ply=plies,
                                           move=move.notation, fen_after=board.position.to_fen()),
                               f"{game_id}/m{plies}", played_at=self.time_source.now())
        await self.publish(ev.GameFinished(
            meta=same_chain(request),
            game_id=game_id, competition=request.competition, variant=request.variant, speed=request.speed,
            white_id=request.white_id, black_id=request.black_id, result=result, termination=termination,
            white_sat=request.white_id in moved, black_sat=request.black_id in moved, rated=request.rated,
            plies=plies,
        ), f"{game_id}/finished", finished_at=self.time_source.now(), started_at=started_at)
        self.results[game_id] = PRODUCER

    @staticmethod
    def _ended_outside(game: HostedGame) -> tuple[int, int] | None:
        """The (result, termination) to report after a flag or an abandonment; None after someone else's result."""
        ending, request = game.ending, game.request
        if isinstance(ending, ev.ClockFlagged):
            white_lost = ending.loser_id == request.white_id
            termination = common.TERMINATION_NEVER_SAT if ending.loser_never_sat else (
                ending.reason or common.TERMINATION_TIME)
            return (common.GAME_RESULT_BLACK_WINS if white_lost else common.GAME_RESULT_WHITE_WINS), termination
        if isinstance(ending, ev.GameAbandoned):
            return common.GAME_RESULT_BOTH_LOSE, common.TERMINATION_BOTH_ABSENT
        return None

    async def publish(self, event: Any, event_id: str, **stamps: datetime) -> None:
        """Send `event` keyed by its game id, with an id that names it, until the broker takes it."""
        # A fixed id per game and ply: an event sent again (a retry, a restarted site) is one the
        # services have seen, and they drop it.
        event.meta.event_id = event_id
        event.meta.producer = PRODUCER
        event.meta.occurred_at.FromDatetime(self.time_source.now())
        for name, instant in stamps.items():
            getattr(event, name).FromDatetime(instant)
        headers = [("event-id", event_id.encode()), ("event-type", event.DESCRIPTOR.full_name.encode())]
        if event.meta.trace_id:
            headers.append((TRACE_HEADER, event.meta.trace_id.encode()))
        for attempt in range(PUBLISH_ATTEMPTS):
            try:
                await self.producer.send_and_wait(PUBLISHED[type(event)], event.SerializeToString(),
                                                  key=event.game_id.encode(), headers=headers)
                return
            except KafkaError:
                if attempt == PUBLISH_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.2 * 2 ** attempt)


def same_chain(request: ev.GameRequested) -> common.EventMeta:
    """The meta of an event about a requested game: in the request's chain (its trace id)."""
    return common.EventMeta(trace_id=request.meta.trace_id)


async def poll_until(call: Any, done: Any, every: float = 0.5) -> Any:
    """Call `call()` until `done(answer)`; the last answer."""
    while not done(answer := await call()):
        await asyncio.sleep(every)
    return answer


async def run(env: Mapping[str, str], players: int, seed: int, say: Any) -> dict[str, Any]:
    """Create a tournament and an arena, seat the bots, host every game, return the final tables."""
    origin = env.get("TIME_ORIGIN")
    time_source = CompetitionTime(float(env.get("TIME_SCALE") or 1), datetime.fromisoformat(origin) if origin else None)
    tag = f"mp{int(time.time() * 1000) % 36 ** 6:x}"  # embedded PostgreSQL keeps earlier runs' accounts (A-2)
    # The play site's service token (`arbiter auth token`), sent with every call.
    token = env.get("ARBITER_TOKEN", "")
    auth = (("authorization", f"Bearer {token}"),) if token else ()
    site = PlaySite(env, time_source, tag, seed)
    await site.start()
    pairing_channel = grpc.aio.insecure_channel(env.get("PAIRING_GRPC_ADDR", "127.0.0.1:50051"))
    arena_channel = grpc.aio.insecure_channel(env.get("ARENA_GRPC_ADDR", "127.0.0.1:50053"))
    tournaments = tournament_pb2_grpc.TournamentServiceStub(pairing_channel)
    arenas = arena_pb2_grpc.ArenaServiceStub(arena_channel)
    options = {"metadata": auth, "timeout": CALL_TIMEOUT_SECONDS}
    bots = [f"{tag}-bot-{i:02d}" for i in range(1, 2 * players + 1)]
    seated, arena_players = bots[:players], bots[players:]  # one competition each, or T-18 forfeits
    control = common.FischerControl(base_seconds=BASE_SECONDS, increment_seconds=INCREMENT_SECONDS)
    try:
        # A few real seconds of margin: the pairing service checks T-4 against its own "now".
        starts_at = time_source.now() + timedelta(seconds=EARLIEST_START_SECONDS + 3 * time_source.scale)
        settings = tp.TournamentSettings(name=f"{tag} round robin", variant=VARIANT, capacity=players,
                                         time_control=common.TimeControl(fischer=control),
                                         duration_minutes=TOURNAMENT_MINUTES)
        settings.starts_at.FromDatetime(starts_at)
        # Our own trace id for the tournament's creation: every service's log lines about it carry it.
        creating = tournaments.CreateTournament(tp.CreateTournamentRequest(
            actor=registered(seated[0]), settings=settings, request_id=f"{tag}-tournament"),
            metadata=(*auth, (TRACE_METADATA, f"{tag}-tournament")), timeout=CALL_TIMEOUT_SECONDS)
        created = await creating
        trace = dict(await creating.trailing_metadata()).get(TRACE_METADATA, "")
        tournament_id = created.tournament.id
        site.competitions.add(tournament_id)
        for player in seated:  # the creator plays only once they join
            await tournaments.JoinTournament(tp.JoinTournamentRequest(
                actor=registered(player), tournament_id=tournament_id), **options)
        say(f"tournament {tournament_id}: {players} entrants, starts at {starts_at:%H:%M:%S} competition time,"
            f" created in trace {trace}")
        arena = await arenas.CreateArena(arena_pb2.CreateArenaRequest(
            actor=registered(arena_players[0]), request_id=f"{tag}-arena", settings=arena_pb2.ArenaSettings(
                name=f"{tag} arena", variant=VARIANT, time_control=control, duration_minutes=ARENA_MINUTES)),
            **options)
        arena_id = arena.id
        site.competitions.add(arena_id)
        for player in arena_players:
            await arenas.JoinArena(arena_pb2.JoinArenaRequest(actor=registered(player), arena_id=arena_id), **options)
        say(f"arena {arena_id}: {players} players for {ARENA_MINUTES} minutes of competition time")
        tournament, arena = await asyncio.gather(
            poll_until(lambda: tournaments.GetTournament(tp.GetTournamentRequest(tournament_id=tournament_id),
                                                         **options),
                       lambda t: t.state in (tp.TOURNAMENT_STATE_FINISHED, tp.TOURNAMENT_STATE_CANCELLED)),
            # An arena past its end stays RUNNING until its last game's GameFinished is in (AR-1).
            poll_until(lambda: arenas.GetArena(arena_pb2.GetArenaRequest(arena_id=arena_id), **options),
                       lambda a: a.state in (arena_pb2.ARENA_STATE_FINISHED, arena_pb2.ARENA_STATE_CANCELLED)))
        while site.games:  # a flag may have decided a game before this site's own GameFinished went out
            await asyncio.sleep(0.05)
        standings = await tournaments.GetStandings(tp.GetStandingsRequest(tournament_id=tournament_id), **options)
        board: list[arena_pb2.LeaderboardRow] = []
        next_page: str | None = None
        while next_page != "":  # pages of at most 100 rows, until the last one names no next page
            answer = await arenas.GetLeaderboard(arena_pb2.GetLeaderboardRequest(
                arena_id=arena_id, page=common.PageRequest(page_size=100, page_token=next_page or "")), **options)
            board += answer.rows
            next_page = answer.next_page_token
    finally:
        await site.stop()
        await pairing_channel.close()
        await arena_channel.close()
    return {
        "tournament": {"id": tournament_id, "state": tp.TournamentState.Name(tournament.state),
                       "format": standings.format, "final": standings.final, "finish_note": tournament.finish_note,
                       "standings": [{"rank": r.rank, "player": r.player_id, "points": r.points, "wins": r.wins,
                                      "games": r.games, "buchholz": r.buchholz, "sonneborn_berger": r.sonneborn_berger,
                                      "tie_break": r.tie_break} for r in standings.rows]},
        "arena": {"id": arena.id, "state": arena_pb2.ArenaState.Name(arena.state), "games_played": arena.games_played,
                  "leaderboard": [{"rank": r.rank, "player": r.player_id, "points": r.points, "wins": r.wins,
                                   "games": r.games, "streak": r.streak} for r in board]},
        "games": {"requested": len(site.requested), "reported_here": sum(v == PRODUCER for v in site.results.values()),
                  "decided_elsewhere": sum(v != PRODUCER for v in site.results.values()),
                  "without_result": sorted(set(site.requested) - set(site.results))},
    }


def print_tables(report: dict[str, Any]) -> None:
    """The final standings (T-21, T-22) and the arena leaderboard (AR-4, AR-6), as text."""
    tournament, arena, games = report["tournament"], report["arena"], report["games"]
    state = tournament["state"].removeprefix("TOURNAMENT_STATE_").lower()
    note = f"; {tournament['finish_note']}" if tournament["finish_note"] else ""
    print(f"\ntournament {tournament['id']} ({tournament['format']}): {state}{note}")
    print(f"{'#':>3}  {'player':<18} {'pts':>4} {'BH':>6} {'SB':>6} {'wins':>4} {'games':>5}  tie-break")
    for r in tournament["standings"]:
        print(f"{r['rank']:>3}  {r['player']:<18} {r['points']:>4} {r['buchholz']:>6.1f} {r['sonneborn_berger']:>6.1f}"
              f" {r['wins']:>4} {r['games']:>5}  {r['tie_break']}")
    state = arena["state"].removeprefix("ARENA_STATE_").lower()
    print(f"\narena {arena['id']}: {state}, {arena['games_played']} games")
    print(f"{'#':>3}  {'player':<18} {'pts':>4} {'wins':>4} {'games':>5} {'streak':>6}")
    for r in arena["leaderboard"]:
        print(f"{r['rank']:>3}  {r['player']:<18} {r['points']:>4} {r['wins']:>4} {r['games']:>5} {r['streak']:>6}")
    print(f"\ngames: {games['requested']} requested, {games['reported_here']} reported here, "
          f"{games['decided_elsewhere']} decided elsewhere, {len(games['without_result'])} without a result")


def main(argv: list[str] | None = None) -> int:
    """Run the play site once against the system named by the environment; 1 if a game was left without a result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=6, help="bots per competition (tournament: 4..200)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the bots' moves")
    parser.add_argument("--json", action="store_true", help="print the final tables as one JSON object")
    args = parser.parse_args(argv)
    say = (lambda line: print(line, file=sys.stderr)) if args.json else print
    try:
        report = asyncio.run(run(os.environ, args.players, args.seed, say))
    except grpc.aio.AioRpcError as error:
        print(f"refused: {error.code().name}: {error.details()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    if args.json:
        print(json.dumps(report))
    else:
        print_tables(report)
    return 1 if report["games"]["without_result"] else 0


if __name__ == "__main__":
    sys.exit(main())
