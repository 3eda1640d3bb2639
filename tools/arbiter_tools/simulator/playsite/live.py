"""Live games: a requested game hosted and played with random legal moves until the rules, a player or the clock end it.

Each player acts by their behaviour profile: resigning, offering draws, boosting (AR-5),
refuelling (TB-3), dropping away for a while (T-17) or never showing (T-16).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

import grpc

from arbiter.contracts import arena_pb2, clock_pb2
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.draughts import Game
from arbiter.kit import events
from arbiter.kit.trace import chain_start
from arbiter.vocabulary import Side, Termination
from arbiter_tools.simulator.behaviour import Behaviour
from arbiter_tools.simulator.playsite.base import LiveGame, PlaySiteBase, same_chain

log = logging.getLogger(__name__)

# T-17: how long a dropping player stays away (competition seconds); the clock allows 30.
SHORT_ABSENCE_SECONDS = 10.0
LONG_ABSENCE_SECONDS = 40.0
# Real seconds between two refuels of a Triple Block game the clock does not hold yet (NOT_FOUND).
REFUEL_RETRY_SECONDS = 0.05


class LiveGames(PlaySiteBase):
    """Hosts requested and casual games and plays them move by move."""

    def _host(self, request: ev.GameRequested, *, take_seats: bool = True,
              deadline: datetime | None = None) -> LiveGame:
        live = LiveGame(request, self.game_rng(request), deadline=deadline)
        self.games[request.game_id] = live
        live.task = asyncio.create_task(self._run(live, take_seats), name=f"game {request.game_id}")
        return live

    async def play_casual(
        self, white_id: str, black_id: str, *, variant: str = "international", hold_seconds: float | None = None,
        time_control: common.TimeControl | None = None, speed: common.Speed = common.SPEED_BLITZ,
        think_seconds: tuple[float, float] | None = None,
    ) -> LiveGame:
        """Open a casual game (T-18's "already playing", or a Triple Block game) and play it in the background.

        With `hold_seconds` (competition time) the game is agreed drawn when that time has passed.
        """
        self._casual_serial += 1
        game_id = f"casual-{self.config.seed}-{self._casual_serial}-{white_id}-{black_id}"
        request = ev.GameRequested(
            meta=common.EventMeta(trace_id=chain_start(game_id)),
            game_id=game_id, competition=common.CompetitionRef(kind=common.COMPETITION_KIND_CASUAL, id=game_id),
            variant=variant, white_id=white_id, black_id=black_id, speed=speed, rated=False,
            time_control=time_control or common.TimeControl(fischer=common.FischerControl(
                base_seconds=600, increment_seconds=5)),
        )
        self.stats.casual_games += 1
        deadline = self.time_source.now() + timedelta(seconds=hold_seconds) if hold_seconds is not None else None
        live = self._host(request, take_seats=False, deadline=deadline)
        live.pace = think_seconds
        return live

    def _seat(self, player_id: str) -> asyncio.Lock:
        lock = self._seats.get(player_id)
        if lock is None:
            lock = self._seats[player_id] = asyncio.Lock()
        return lock

    async def _run(self, live: LiveGame, take_seats: bool) -> None:
        request = live.request
        # A player sits at one board at a time: the second game of a home-and-away pairing
        # (T-12) waits for the first. Sorted acquisition cannot deadlock.
        locks = [self._seat(p) for p in sorted({request.white_id, request.black_id})] if take_seats else []
        held: list[asyncio.Lock] = []
        try:
            for lock in locks:
                await lock.acquire()
                held.append(lock)
            await self._failure_counted(request, self._play(live))
        finally:
            for lock in held:
                lock.release()
            self.games.pop(request.game_id, None)
            self.finished_ids.add(request.game_id)

    async def _failure_counted(self, request: ev.GameRequested, game: Awaitable[None]) -> None:
        """Run one hosted game's work: a failure is counted and logged, and the other games go on."""
        try:
            await game
        except asyncio.CancelledError:
            raise
        except Exception:
            self.stats.errors += 1
            log.exception("game failed", extra={"game_id": request.game_id})

    async def _play(self, live: LiveGame) -> None:
        request = live.request
        if live.ending is not None and live.ending[0] in ("elsewhere", "stopped"):
            self._count_elsewhere(live)
            return
        live.started_at = self.time_source.now()
        await self._publish(self._started_event(request, events.timestamp(live.started_at)),
                            f"{request.game_id}/started")
        self.stats.started += 1
        # Whoever shows up connects now; the clock tells T-16 (one absent) from T-19 (both absent) by it.
        for player in (request.white_id, request.black_id):
            if self.profiles.of(player) is not Behaviour.NEVER_SHOWS:
                await self._presence(live, player, online=True, serial=0)
        fen = request.opening.fen or None
        game = Game(request.variant, fen)
        players = {Side.WHITE: request.white_id, Side.BLACK: request.black_id}
        correspondence = request.time_control.WhichOneof("kind") == "triple_block"
        pace = live.pace or (
            self.config.correspondence_think_seconds if correspondence else self.config.think_seconds)
        absences: dict[str, int] = {}
        while True:
            if live.end.is_set():
                await self._ended_outside(live)
                return
            outcome = game.outcome()
            if outcome is not None:
                if outcome.termination is Termination.NO_MOVES:
                    result = common.GAME_RESULT_WHITE_WINS if outcome.winner is Side.WHITE \
                        else common.GAME_RESULT_BLACK_WINS
                    await self._finish(live, result, common.TERMINATION_NO_MOVES)
                else:
                    await self._finish(live, common.GAME_RESULT_DRAW, common.TERMINATION_DRAW_RULE)
                return
            if live.plies >= self.config.max_plies or (
                    live.deadline is not None and self.time_source.now() >= live.deadline):
                await self._finish(live, common.GAME_RESULT_DRAW, common.TERMINATION_DRAW_AGREED)
                return
            mover = players[game.position.turn]
            opponent = players[game.position.turn.other]
            behaviour = self.profiles.of(mover)
            if behaviour is Behaviour.NEVER_SHOWS:
                # T-16: the clock decides. The waiting opponent says again that they are here, in
                # case the first word reached the clock before the game did (then T-19 would apply).
                if not await self._pause(live, 5.0) and self.profiles.of(opponent) is not Behaviour.NEVER_SHOWS:
                    await self._presence(live, opponent, online=True, serial=3)
                await self._until_end_or_deadline(live)
                continue
            if mover not in live.moved and behaviour is Behaviour.BOOSTS:
                await self._boost(live, mover)
            think = live.rng.uniform(*pace)
            if correspondence and behaviour is Behaviour.REFUELS and live.rng.random() < self.config.refuel_chance:
                # TB-3: the clock is full when the turn starts; refuel once some of it has been used.
                if await self._pause(live, think / 2):
                    continue
                await self._refuel(live, mover)
                think /= 2
            if await self._pause(live, think):
                continue
            if (behaviour is Behaviour.RESIGNS and live.plies >= self.config.resign_after_ply
                    and live.rng.random() < self.config.resign_chance):
                result = common.GAME_RESULT_BLACK_WINS if mover == request.white_id else common.GAME_RESULT_WHITE_WINS
                await self._finish(live, result, common.TERMINATION_RESIGNATION)
                return
            if (behaviour is Behaviour.OFFERS_DRAWS and live.plies >= self.config.draw_offer_after_ply
                    and live.rng.random() < self.config.draw_offer_chance
                    and self.profiles.of(opponent) is not Behaviour.NEVER_SHOWS
                    and live.rng.random() < self.config.draw_accept_chance):
                await self._finish(live, common.GAME_RESULT_DRAW, common.TERMINATION_DRAW_AGREED)
                return
            move = live.rng.choice(game.legal_moves())
            game.play(move)
            live.plies += 1
            live.moved.add(mover)
            moved = ev.MoveMade(
                meta=same_chain(request),
                game_id=request.game_id, player_id=mover, ply=live.plies, move=move.notation,
                fen_after=game.position.to_fen(), played_at=events.timestamp(self.time_source.now()),
            )
            await self._publish(moved, f"{request.game_id}/m{live.plies}")
            self.stats.moves += 1
            self.stats.move_times.append(time.monotonic())
            if behaviour in (Behaviour.DISCONNECTS_SHORT, Behaviour.DISCONNECTS_LONG) and mover not in absences:
                absences[mover] = 1
                away = SHORT_ABSENCE_SECONDS if behaviour is Behaviour.DISCONNECTS_SHORT else LONG_ABSENCE_SECONDS
                await self._absent(live, mover, away)

    async def _pause(self, live: LiveGame, competition_seconds: float) -> bool:
        """Think for `competition_seconds`; True when the game was ended from outside meanwhile."""
        real = self.time_source.real_seconds(competition_seconds)
        if real <= 0:
            await asyncio.sleep(0)
            return live.end.is_set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.end.wait(), real)
        return live.end.is_set()

    async def _until_end_or_deadline(self, live: LiveGame) -> None:
        """Wait until the game is ended from outside or its hold (`deadline`, competition time) has passed."""
        if live.deadline is None:
            await live.end.wait()
            return
        while not live.end.is_set() and self.time_source.now() < live.deadline:
            await self._pause(live, (live.deadline - self.time_source.now()).total_seconds())

    async def _absent(self, live: LiveGame, player_id: str, competition_seconds: float) -> None:
        """T-17: drop after the first move, come back later (if the game still runs)."""
        await self._presence(live, player_id, online=False, serial=1)
        if await self._pause(live, competition_seconds):
            return
        await self._presence(live, player_id, online=True, serial=2)

    async def _presence(self, live: LiveGame, player_id: str, *, online: bool, serial: int) -> None:
        change = ev.PlayerPresenceChanged(
            meta=same_chain(live.request),
            game_id=live.request.game_id, player_id=player_id, online=online,
            at=events.timestamp(self.time_source.now()),
        )
        await self._publish(change, f"{live.request.game_id}/presence/{player_id}/{serial}")
        self.stats.presence_changes += 1

    async def _boost(self, live: LiveGame, player_id: str) -> None:
        """AR-5: ask the arena for the boost before the own first move."""
        request = live.request
        if (self._arena is None or request.competition.kind != common.COMPETITION_KIND_ARENA
                or not request.boost_allowed or player_id in live.boosted):
            return
        try:
            await self._arena.Boost(arena_pb2.BoostRequest(
                actor=common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED),
                arena_id=request.competition.id, game_id=request.game_id,
            ), timeout=self.config.call_timeout_seconds)
        except grpc.aio.AioRpcError as error:
            self.stats.boost_refusals += 1
            self.stats.last_refusal = f"Boost: {error.code().name}: {error.details()}"
            return
        live.boosted.add(player_id)
        self.stats.boosts += 1
        # As a player sees the halved clock before moving: a first move that reached the clock before
        # the arena's BoostTaken would leave the boost uncharged (AR-5), and the game unboosted.
        if self._clock is not None:
            await self._clock_shows(live, lambda: player_id in live.clock_boosted,
                                    time.monotonic() + self.config.call_timeout_seconds)

    async def _refuel(self, live: LiveGame, player_id: str) -> None:
        """TB-3: move bank time to the clock during the own turn, once the clock knows that turn began.

        A refuel a few competition seconds into the turn is a few real milliseconds at a high time
        scale: the clock may not have applied the opponent's move yet and would refuse it ("it is
        <opponent>'s turn"). So it waits for the ClockState of the last ply. Before the first move
        no ClockState comes; the clock answers NOT_FOUND until it has seen the start, so that is
        tried again.
        """
        if self._clock is None:
            return
        give_up = time.monotonic() + self.config.call_timeout_seconds
        # Without word from the clock it is tried anyway: the clock's answer says why it refuses.
        await self._clock_shows(live, lambda: live.clock_ply >= live.plies, give_up)
        while not live.end.is_set():
            try:
                await self._clock.Refuel(clock_pb2.RefuelRequest(
                    actor=common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED),
                    game_id=live.request.game_id, amount_seconds=0,
                ), timeout=self.config.call_timeout_seconds)
            except grpc.aio.AioRpcError as error:
                if error.code() is grpc.StatusCode.NOT_FOUND and time.monotonic() < give_up:
                    await asyncio.sleep(REFUEL_RETRY_SECONDS)
                    continue
                self.stats.refuel_refusals += 1
                self.stats.last_refusal = f"Refuel: {error.code().name}: {error.details()}"
                return
            self.stats.refuels += 1
            return

    async def _clock_shows(self, live: LiveGame, shown: Callable[[], bool], give_up: float) -> None:
        """Wait until the game's ClockStates make `shown()` true, the game ends or `give_up` (monotonic) passes."""
        news = live.clock_news = live.clock_news or asyncio.Event()
        while True:
            news.clear()  # before the look: a state arriving after it sets the event again
            left = give_up - time.monotonic()
            if shown() or live.end.is_set() or left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(news.wait(), left)

    async def _ended_outside(self, live: LiveGame) -> None:
        assert live.ending is not None
        why, detail = live.ending
        request = live.request
        if why == "flagged":
            self.stats.flagged += 1
            white_lost = detail.loser_id == request.white_id
            result = common.GAME_RESULT_BLACK_WINS if white_lost else common.GAME_RESULT_WHITE_WINS
            termination = detail.reason or common.TERMINATION_TIME
            if detail.loser_never_sat:
                termination = common.TERMINATION_NEVER_SAT
            await self._finish(live, result, termination)
        elif why == "abandoned":
            self.stats.abandoned += 1
            await self._finish(live, common.GAME_RESULT_BOTH_LOSE, common.TERMINATION_BOTH_ABSENT)
        else:
            self._count_elsewhere(live)

    def _count_elsewhere(self, live: LiveGame) -> None:
        if live.ending is not None and live.ending[0] == "elsewhere":
            self.stats.decided_elsewhere += 1
            self.stats.terminations[common.Termination.Name(live.ending[1].termination)] += 1
            for listener in self.on_finished:
                listener(live.ending[1])

    async def _finish(self, live: LiveGame, result: common.GameResult, termination: common.Termination) -> None:
        """Publish the one final word on the game."""
        now = events.timestamp(self.time_source.now())
        started_at = events.timestamp(live.started_at) if live.started_at is not None else now
        finished = self._finished_event(live, result, termination, now, started_at)
        await self._publish(finished, f"{live.request.game_id}/finished")
        self._note_finished(live.request, finished, termination, time.monotonic())
