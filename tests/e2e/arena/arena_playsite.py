"""A stand-in for the play site in the arena e2e tests (until the simulator covers arenas).

It reads game.requested for one arena, opens each game once (GameStarted), lets some players
boost before their first move (ArenaService.Boost; only accepted boosts are recorded), reports
the first move of each side (MoveMade ply 1 and 2) and, after a seeded random scaled delay, a
seeded random result (GameFinished). Everything it sees and sends is recorded so the test can
check the arena against the pure rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import grpc
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from google.protobuf.message import DecodeError

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc
from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.events import timestamp
from arbiter.kit.timesource import TimeSource

RESULTS = ((cm.GAME_RESULT_WHITE_WINS, "1-0"), (cm.GAME_RESULT_BLACK_WINS, "0-1"), (cm.GAME_RESULT_DRAW, "1/2-1/2"))


@dataclass
class PlayedGame:
    """One arena game as the play site saw it."""

    game_id: str
    white: str
    black: str
    requested_at: datetime
    finished_at: datetime | None = None
    result: str = ""
    white_boosted: bool = False
    black_boosted: bool = False


@dataclass
class ArenaPlaySite:
    """Plays every requested game of one arena; `games` records them in request order."""

    bootstrap: str
    arena_id: str
    clock: TimeSource
    arena_addresses: list[str]
    seed: int = 7
    # Scaled seconds a game lasts, drawn uniformly.
    game_seconds: tuple[float, float] = (30.0, 150.0)
    boost_probability: float = 0.25
    games: dict[str, PlayedGame] = field(default_factory=dict)
    requests_seen: int = 0
    undecodable: int = 0
    boost_refusals: list[str] = field(default_factory=list)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def run(self, stop: asyncio.Event) -> None:
        """Consume game.requested and play until `stop`."""
        rng = random.Random(self.seed)
        consumer = AIOKafkaConsumer(events.GAME_REQUESTED.name, bootstrap_servers=self.bootstrap,
                                    group_id=f"arena-playsite-{uuid.uuid4().hex[:8]}", auto_offset_reset="earliest")
        self.producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=0)
        self.channels = [grpc.aio.insecure_channel(a) for a in self.arena_addresses]
        await consumer.start()
        await self.producer.start()
        try:
            while not stop.is_set():
                batch = await consumer.getmany(timeout_ms=100)
                for records in batch.values():
                    for record in records:
                        try:
                            request = ev.GameRequested.FromString(record.value)
                        except DecodeError:
                            # Earlier tests on the session's broker leave poison records on the topic;
                            # a play site sets them aside as the services do, and goes on.
                            self.undecodable += 1
                            continue
                        if request.competition.id != self.arena_id:
                            continue
                        self.requests_seen += 1
                        if request.game_id in self.games:
                            continue  # at-least-once: a game is opened once
                        game = PlayedGame(request.game_id, request.white_id, request.black_id,
                                          request.requested_at.ToDatetime(tzinfo=UTC))
                        self.games[game.game_id] = game
                        plan = (rng.uniform(*self.game_seconds), rng.choice(RESULTS),
                                rng.random() < self.boost_probability, rng.random() < self.boost_probability)
                        task = asyncio.create_task(self._play(request, game, *plan))
                        self._tasks.add(task)
                        task.add_done_callback(self._tasks.discard)
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await consumer.stop()
            await self.producer.stop()
            for channel in self.channels:
                await channel.close()

    async def _send(self, topic: str, event: object, key: str) -> None:
        event.meta.event_id = uuid.uuid4().hex  # type: ignore[attr-defined]
        event.meta.producer = "arena-playsite"  # type: ignore[attr-defined]
        await self.producer.send_and_wait(topic, event.SerializeToString(), key=key.encode())  # type: ignore[attr-defined]

    async def _boost(self, game: PlayedGame, player: str) -> bool:
        request = ap.BoostRequest(actor=cm.Actor(player_id=player, kind=cm.ACCOUNT_KIND_REGISTERED),
                                  arena_id=self.arena_id, game_id=game.game_id)
        for channel in self.channels:
            try:
                await arena_pb2_grpc.ArenaServiceStub(channel).Boost(request, timeout=2)
                return True
            except grpc.aio.AioRpcError as error:
                if error.code() == grpc.StatusCode.UNAVAILABLE:
                    continue  # that replica is down: ask the other
                self.boost_refusals.append(f"{game.game_id} {player}: {error.code().name} {error.details()}")
                return False
        return False

    async def _play(self, request: ev.GameRequested, game: PlayedGame, seconds: float,
                    result: tuple[int, str], white_boost: bool, black_boost: bool) -> None:
        started = ev.GameStarted(game_id=game.game_id, white_id=game.white, black_id=game.black,
                                 started_at=timestamp(self.clock.now()), competition=request.competition,
                                 variant=request.variant, time_control=request.time_control)
        await self._send(events.GAME_STARTED.name, started, game.game_id)
        if white_boost:
            game.white_boosted = await self._boost(game, game.white)
        await self._send(events.MOVE_MADE.name, ev.MoveMade(game_id=game.game_id, player_id=game.white, ply=1,
                                                            played_at=timestamp(self.clock.now())), game.game_id)
        if black_boost:
            game.black_boosted = await self._boost(game, game.black)
        await self._send(events.MOVE_MADE.name, ev.MoveMade(game_id=game.game_id, player_id=game.black, ply=2,
                                                            played_at=timestamp(self.clock.now())), game.game_id)
        await self.clock.sleep(seconds)
        finished_at = self.clock.now()
        game.finished_at, game.result = finished_at, result[1]
        finished = ev.GameFinished(
            game_id=game.game_id, competition=request.competition, variant=request.variant, speed=request.speed,
            white_id=game.white, black_id=game.black, result=result[0],  # type: ignore[arg-type]
            termination=cm.TERMINATION_RESIGNATION, white_sat=True, black_sat=True, rated=request.rated,
            white_boosted=game.white_boosted, black_boosted=game.black_boosted, plies=40,
            finished_at=timestamp(finished_at), started_at=started.started_at,
        )
        await self._send(events.GAME_FINISHED.name, finished, game.game_id)

    async def drain(self, timeout: float) -> None:
        """Wait until every game opened so far has been reported finished."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*list(self._tasks), return_exceptions=True), timeout)
