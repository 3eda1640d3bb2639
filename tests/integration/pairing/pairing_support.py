"""Helpers of the pairing integration tests: collaborator stand-ins, the service under test, builders.

The three services the pairing service calls are small gRPC stand-ins backed by the pure
libraries (the opening draw) and dicts (ratings, who sat in a game), so these tests do not
depend on those services' progress; the e2e tests run against the real ones.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import openings_pb2, openings_pb2_grpc, rating_pb2, rating_pb2_grpc, tournament_pb2_grpc
from arbiter.kit.db import create_pool, migrate, migrations_in
from arbiter.kit.timesource import TimeSource
from arbiter.openings import draw_opening
from arbiter.openings.modes import OpeningMode
from services.pairing.convert import OPENING_MODE, OPENING_MODE_TO_PROTO
from services.pairing.main import MIGRATIONS
from services.pairing.settings import PairingSettings
from tests.support.playsite import ClockStandIn

TIME_SCALE = 120.0


class OpeningsStandIn(openings_pb2_grpc.OpeningServiceServicer):
    """DrawOpening from the pure library, seeded per (competition, round), remembering Swiss draws (O-10)."""

    def __init__(self) -> None:
        self.drawn: dict[str, list[int]] = {}
        self.calls = 0

    async def DrawOpening(self, request, context):
        self.calls += 1
        mode = OPENING_MODE[request.mode]
        ref = request.competition
        used = self.drawn.setdefault(ref.id, [])
        drawn = draw_opening(request.variant, mode, seed=f"{ref.id}:{ref.round}",
                             exclude=used if request.no_repeat else (),
                             thematic_opening=request.thematic_opening or None)
        if drawn.number is not None and mode is not OpeningMode.THEMATIC:
            used.append(drawn.number)
        return openings_pb2.DrawOpeningResponse(opening=common.Opening(
            variant=drawn.variant, mode=OPENING_MODE_TO_PROTO[mode], number=drawn.number or 0,
            moves=list(drawn.moves), fen=drawn.fen, class_label=drawn.class_label or "", level=drawn.level or 0,
        ))


class RatingsStandIn(rating_pb2_grpc.RatingServiceServicer):
    """Ratings from a dict; everyone else has the R-5 default."""

    def __init__(self) -> None:
        self.ratings: dict[str, float] = {}

    def _one(self, player_id, request):
        return rating_pb2.PlayerRating(player_id=player_id, variant=request.variant, speed=request.speed,
                                       rating=common.Rating(rating=self.ratings.get(player_id, 1500.0),
                                                            deviation=350, volatility=0.06))

    async def GetRating(self, request, context):
        return self._one(request.player_id, request)

    async def GetRatings(self, request, context):
        return rating_pb2.GetRatingsResponse(ratings=[self._one(p, request) for p in request.player_ids])


@dataclass
class PairingUnderTest:
    """The running service and what the tests need to reach it."""

    address: str
    settings: PairingSettings
    clock: TimeSource
    ratings: RatingsStandIn
    openings: OpeningsStandIn
    clocks: ClockStandIn
    stub: tournament_pb2_grpc.TournamentServiceStub
    db: asyncpg.Pool

    def starts_in(self, minutes: float = 5.5) -> datetime:
        """A start time `minutes` of competition time from now (T-4 needs 5 min .. 14 days)."""
        return self.clock.now() + timedelta(minutes=minutes)


def player(prefix: str = "p") -> str:
    """A fresh player id."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def registered(player_id: str) -> common.Actor:
    """A registered account (A-1)."""
    return common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED)


@asynccontextmanager
async def private_pairing_schema(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool on a fresh schema holding pairing's tables, for parts of the service tested on their own."""
    schema = f"pairing_{uuid.uuid4().hex[:8]}"
    pool = await create_pool(database_url, schema, max_size=4)
    try:
        await migrate(pool, schema, migrations_in(MIGRATIONS, "pairing"))
        yield pool
    finally:
        async with pool.acquire() as connection:
            await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await pool.close()


async def insert_round_games(pool: asyncpg.Pool, tag: str, games: list[tuple[str, str, str, bool]]) -> str:
    """A running tournament holding (game id, white, black, decided already) round games; returns its id."""
    now = datetime.now(UTC)
    tournament_id = f"t_{tag}"
    await pool.execute(
        "INSERT INTO tournaments (id, creator_id, name, variant, base_seconds, increment_seconds, speed, threshold,"
        " capacity, minimum_entrants, starts_at, duration_minutes, closes_at, private, rated, opening_mode,"
        " home_and_away, extra_round, settings, state, created_at)"
        " VALUES ($1, 'creator', 'stored', 'international', 180, 2, 'blitz', 12, 64, 2, $2, 60, $2, false, true,"
        " 'none', false, false, ''::bytea, 'running', $2)", tournament_id, now)
    for board, (game_id, white, black, decided) in enumerate(games, start=1):
        await pool.execute(
            "INSERT INTO games (game_id, tournament_id, round, board, leg, white_id, black_id, requested, finished,"
            " result, decided_by) VALUES ($1, $2, 1, $3, 1, $4, $5, true, $6, $7, $8)",
            game_id, tournament_id, board, white, black, decided, "white_wins" if decided else None,
            f"clock.flagged:flag-{game_id}" if decided else None)
    return tournament_id
