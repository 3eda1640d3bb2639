"""Rating store: a small batch saved by one statement stores what the COPY path stores; one read answers both questions."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from arbiter.kit.db import create_pool, migrate, migrations_in
from arbiter.rating.ledger import NEW_PLAYER, AppliedGame, GameToRate, PlayerState, apply_game
from services.rating import store
from services.rating.games import Pool

MIGRATIONS = Path(store.__file__).resolve().parent / "migrations"
BLITZ = Pool("international", 3)
RAPID = Pool("russian", 4)
START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    schema = f"rating_store_{uuid.uuid4().hex[:6]}"
    connections = await create_pool(database_url, schema, max_size=2)
    try:
        await migrate(connections, schema, migrations_in(MIGRATIONS, schema))
        yield connections
    finally:
        await connections.close()


def rated_batch(
    prefix: str, count: int
) -> tuple[dict[Pool, list[AppliedGame]], dict[Pool, dict[str, PlayerState]]]:
    """`count` games per pool from new players, and every player's state after them."""
    applied: dict[Pool, list[AppliedGame]] = {}
    states: dict[Pool, dict[str, PlayerState]] = {}
    for pool in (BLITZ, RAPID):
        pool_states = states.setdefault(pool, {})
        for i in range(count):
            white, black = f"{prefix}w{i % 7}", f"{prefix}b{i % 5}"
            game = GameToRate(f"{prefix}{pool.variant}{i:04d}", START + timedelta(seconds=i), white, black,
                              (0.0, 0.5, 1.0)[i % 3])
            result = apply_game(game, pool_states.get(white, NEW_PLAYER), pool_states.get(black, NEW_PLAYER))
            applied.setdefault(pool, []).append(result)
            pool_states[white], pool_states[black] = result.white_after, result.black_after
    return applied, states


async def saved_rows(pool: asyncpg.Pool, prefix: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    games = await pool.fetch(
        "SELECT * FROM rated_games WHERE game_id LIKE $1 || '%' ORDER BY game_id", prefix,
    )
    ratings = await pool.fetch(
        "SELECT * FROM ratings WHERE player_id LIKE $1 || '%' ORDER BY variant, speed, player_id", prefix,
    )
    # rated_at is the commit's clock; everything the service wrote must match.
    return [tuple(v for k, v in row.items() if k != "rated_at") for row in games], [tuple(row) for row in ratings]


# Games per pool, two pools: the largest count is a batch of exactly ONE_STATEMENT_GAMES.
@pytest.mark.parametrize("count", [1, 20, store.ONE_STATEMENT_GAMES // 2])
async def test_one_statement_and_copy_store_the_same_rows(pool: asyncpg.Pool, count: int) -> None:
    applied, states = rated_batch("one", count)
    async with pool.acquire() as connection, connection.transaction():
        await store.save_rated(connection, applied, states)
    # The same games under other ids, saved through COPY by pretending the batch is large.
    copied, copied_states = rated_batch("cpy", count)
    threshold = store.ONE_STATEMENT_GAMES
    try:
        store.ONE_STATEMENT_GAMES = 0
        async with pool.acquire() as connection, connection.transaction():
            await store.save_rated(connection, copied, copied_states)
    finally:
        store.ONE_STATEMENT_GAMES = threshold
    one_games, one_ratings = await saved_rows(pool, "one")
    copy_games, copy_ratings = await saved_rows(pool, "cpy")
    assert len(one_games) == 2 * count and len(one_ratings) == sum(len(s) for s in states.values())
    strip = lambda rows: [tuple(v.replace("cpy", "one") if isinstance(v, str) else v for v in r) for r in rows]  # noqa: E731
    assert one_games == strip(copy_games)
    assert one_ratings == strip(copy_ratings)


async def test_a_second_batch_upserts_the_states_of_players_seen_before(pool: asyncpg.Pool) -> None:
    first, first_states = rated_batch("up", 3)
    async with pool.acquire() as connection, connection.transaction():
        await store.save_rated(connection, first, first_states)
    game = GameToRate("up-later", START + timedelta(hours=1), "upw0", "upb0", 1.0)
    result = apply_game(game, first_states[BLITZ]["upw0"], first_states[BLITZ]["upb0"])
    async with pool.acquire() as connection, connection.transaction():
        await store.save_rated(connection, {BLITZ: [result]}, {BLITZ: {"upw0": result.white_after,
                                                                        "upb0": result.black_after}})
    states = await store.player_states(pool, BLITZ, ["upw0", "upb0", "upw1"])
    assert states["upw0"] == result.white_after and states["upb0"] == result.black_after
    assert states["upw1"] == first_states[BLITZ]["upw1"]


async def test_rated_and_states_answers_which_games_are_rated_and_who_has_a_rating(pool: asyncpg.Pool) -> None:
    applied, states = rated_batch("rs", 4)
    async with pool.acquire() as connection, connection.transaction():
        await store.save_rated(connection, applied, states)
    rated_id = applied[RAPID][2].game.game_id
    async with pool.acquire() as connection:
        rated, found = await store.rated_and_states(
            connection, [rated_id, "rs-never-rated"], {BLITZ: ["rsw0", "rs-newcomer"], RAPID: ["rsb1"]},
        )
    assert rated == {rated_id}
    assert found == {BLITZ: {"rsw0": states[BLITZ]["rsw0"]}, RAPID: {"rsb1": states[RAPID]["rsb1"]}}
