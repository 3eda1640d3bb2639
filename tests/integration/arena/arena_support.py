"""Builders and probes for the arena tests: actors, results over Kafka, the pure leaderboard from PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg
import redis.asyncio as aioredis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from arbiter.competition.arena import ArenaGame, recompute_leaderboard
from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc
from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.events import timestamp
from arbiter.kit.timesource import TimeSource
from arbiter.vocabulary import GameResult
from services.arena.settings import ArenaSettings
from tests.support.polling import eventually

TIME_SCALE = 60.0
RESULTS = {"1-0": cm.GAME_RESULT_WHITE_WINS, "0-1": cm.GAME_RESULT_BLACK_WINS, "1/2-1/2": cm.GAME_RESULT_DRAW}


def actor(player_id: str, kind: int = cm.ACCOUNT_KIND_REGISTERED) -> cm.Actor:
    """The play site's caller identity."""
    return cm.Actor(player_id=player_id, kind=kind)  # type: ignore[arg-type]


def arena_settings(name: str = "Blitz arena", minutes: int = 60, base: int = 180, increment: int = 2,
                   **extra: Any) -> ap.ArenaSettings:
    """Arena settings with an international blitz clock."""
    return ap.ArenaSettings(name=name, variant="international", duration_minutes=minutes,
                            time_control=cm.FischerControl(base_seconds=base, increment_seconds=increment), **extra)


async def arena_finished(consumer: AIOKafkaConsumer, arena_id: str, timeout: float = 15.0) -> ev.ArenaFinished:
    """The ArenaFinished of `arena_id` that `consumer` reads, skipping other arenas'."""
    async def first() -> ev.ArenaFinished:
        while True:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for record in records:
                    event = ev.ArenaFinished.FromString(record.value)
                    if event.arena_id == arena_id:
                        return event

    return await asyncio.wait_for(first(), timeout)


@dataclass
class ArenaUnderTest:
    """The running service and what the tests talk to it with."""

    stub: arena_pb2_grpc.ArenaServiceStub
    db: asyncpg.Pool
    producer: AIOKafkaProducer
    redis: aioredis.Redis
    clock: TimeSource
    settings: ArenaSettings

    async def create(self, creator: str, **settings: Any) -> ap.Arena:
        """A new arena starting at once."""
        return await self.stub.CreateArena(
            ap.CreateArenaRequest(actor=actor(creator), settings=arena_settings(**settings))
        )

    async def join(self, arena_id: str, *players: str) -> None:
        """Each player joins."""
        for player in players:
            await self.stub.JoinArena(ap.JoinArenaRequest(actor=actor(player), arena_id=arena_id))

    async def games(self, arena_id: str, running: bool | None = None) -> list[asyncpg.Record]:
        """The arena's games in request order (only running / finished ones when asked)."""
        rows = await self.db.fetch("SELECT * FROM arena_games WHERE arena_id = $1 ORDER BY seq", arena_id)
        if running is None:
            return list(rows)
        return [r for r in rows if (r["result"] is None) == running]

    async def wait_running(self, arena_id: str, count: int) -> list[asyncpg.Record]:
        """Wait until `count` games run."""
        return await eventually(lambda: self.games(arena_id, running=True), f"{count} games of {arena_id} running",
                                until=lambda games: len(games) >= count)

    async def finish(self, game: Any, result: str, event_id: str | None = None,
                     boosted: tuple[str, ...] = ()) -> ev.GameFinished:
        """The play site reports a result; `boosted`: the sides it says played with their boost (AR-5)."""
        event = ev.GameFinished(
            game_id=game["game_id"], competition=cm.CompetitionRef(kind=cm.COMPETITION_KIND_ARENA, id=game["arena_id"]),
            variant="international", white_id=game["white_id"], black_id=game["black_id"],
            result=RESULTS[result], termination=cm.TERMINATION_RESIGNATION, white_sat=True, black_sat=True,  # type: ignore[arg-type]
            finished_at=timestamp(self.clock.now()),
            white_boosted="white" in boosted, black_boosted="black" in boosted,
        )
        event.meta.event_id = event_id or uuid.uuid4().hex
        await self.producer.send_and_wait(events.GAME_FINISHED.name, event.SerializeToString(),
                                          key=game["game_id"].encode())
        return event

    async def republish(self, event: ev.GameFinished) -> None:
        """Deliver the same event again (at-least-once)."""
        await self.producer.send_and_wait(events.GAME_FINISHED.name, event.SerializeToString(),
                                          key=event.game_id.encode())

    async def move(self, game_id: str, player: str, ply: int) -> None:
        """The play site reports a move."""
        event = ev.MoveMade(
            game_id=game_id, player_id=player, ply=ply, move="32-28", played_at=timestamp(self.clock.now())
        )
        event.meta.event_id = uuid.uuid4().hex
        await self.producer.send_and_wait(events.MOVE_MADE.name, event.SerializeToString(), key=game_id.encode())

    async def scored(self, arena_id: str) -> int:
        """How many games are scored."""
        return int(await self.db.fetchval(
            "SELECT count(*) FROM arena_games WHERE arena_id = $1 AND result IS NOT NULL", arena_id))

    async def pure_board(self, arena_id: str) -> list[tuple[int, str, int, int, int, int]]:
        """The leaderboard recomputed by the pure rules from the games PostgreSQL recorded."""
        rows = await self.db.fetch(
            "SELECT * FROM arena_games WHERE arena_id = $1 AND result IS NOT NULL ORDER BY scored_seq", arena_id)
        players = [r["player_id"] for r in await self.db.fetch(
            "SELECT player_id FROM arena_players WHERE arena_id = $1", arena_id)]
        games = [ArenaGame(r["white_id"], r["black_id"], GameResult.from_pdn(r["result"]), r["white_boosted"],
                           r["black_boosted"]) for r in rows]
        return [(r.rank, r.player_id, r.points, r.wins, r.games, r.streak)
                for r in recompute_leaderboard(games, players)]

    async def service_board(self, arena_id: str, page_size: int = 7) -> list[tuple[int, str, int, int, int, int]]:
        """The leaderboard as GetLeaderboard pages it, sorted like the pure one (ties by id)."""
        rows: list[ap.LeaderboardRow] = []
        token = ""
        while True:
            reply = await self.stub.GetLeaderboard(ap.GetLeaderboardRequest(
                arena_id=arena_id, page=cm.PageRequest(page_size=page_size, page_token=token)))
            rows.extend(reply.rows)
            token = reply.next_page_token
            if not token:
                break
        assert len(rows) == reply.total_players
        return sorted(((r.rank, r.player_id, r.points, r.wins, r.games, r.streak) for r in rows),
                      key=lambda row: (row[0], row[1]))
