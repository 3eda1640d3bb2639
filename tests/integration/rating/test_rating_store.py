"""Rating store: a small batch saved by one statement stores what the COPY path stores; one read answers both
questions; the handler tells a redelivered event from a re-sent game by the event id kept with the game."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.rating.ledger import NEW_PLAYER, AppliedGame, GameToRate, PlayerState, apply_game
from services.rating import store
from services.rating.games import Pool
from services.rating.handlers import GameFinishedHandler
from services.rating.metrics import RatingMetrics
from tests.integration.rating.rating_support import finished

BLITZ = Pool("international", 3)
RAPID = Pool("russian", 4)
START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


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


def event_ids(applied: dict[Pool, list[AppliedGame]]) -> dict[str, str]:
    """The id of the GameFinished that rated each game, by game id."""
    return {a.game.game_id: f"ev-{a.game.game_id}" for games in applied.values() for a in games}


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
        await store.save_rated(connection, applied, states, event_ids(applied))
    # The same games under other ids, saved through COPY by pretending the batch is large.
    copied, copied_states = rated_batch("cpy", count)
    threshold = store.ONE_STATEMENT_GAMES
    try:
        store.ONE_STATEMENT_GAMES = 0
        async with pool.acquire() as connection, connection.transaction():
            await store.save_rated(connection, copied, copied_states, event_ids(copied))
    finally:
        store.ONE_STATEMENT_GAMES = threshold
    one_games, one_ratings = await saved_rows(pool, "one")
    copy_games, copy_ratings = await saved_rows(pool, "cpy")
    assert len(one_games) == 2 * count and len(one_ratings) == sum(len(s) for s in states.values())
    strip = lambda rows: [tuple(v.replace("cpy", "one") if isinstance(v, str) else v for v in r) for r in rows]  # noqa: E731 - a local shorthand
    assert one_games == strip(copy_games)
    assert one_ratings == strip(copy_ratings)


async def test_a_second_batch_upserts_the_states_of_players_seen_before(pool: asyncpg.Pool) -> None:
    first, first_states = rated_batch("up", 3)
    async with pool.acquire() as connection, connection.transaction():
        await store.save_rated(connection, first, first_states, event_ids(first))
    game = GameToRate("up-later", START + timedelta(hours=1), "upw0", "upb0", 1.0)
    result = apply_game(game, first_states[BLITZ]["upw0"], first_states[BLITZ]["upb0"])
    async with pool.acquire() as connection, connection.transaction():
        await store.save_rated(connection, {BLITZ: [result]}, {BLITZ: {"upw0": result.white_after,
                                                                        "upb0": result.black_after}},
                               {"up-later": "ev-up-later"})
    states = await store.player_states(pool, BLITZ, ["upw0", "upb0", "upw1"])
    assert states["upw0"] == result.white_after and states["upb0"] == result.black_after
    assert states["upw1"] == first_states[BLITZ]["upw1"]


async def test_rated_and_states_answers_which_games_are_rated_and_who_has_a_rating(pool: asyncpg.Pool) -> None:
    applied, states = rated_batch("rs", 4)
    async with pool.acquire() as connection, connection.transaction():
        await store.save_rated(connection, applied, states, event_ids(applied))
    rated_id = applied[RAPID][2].game.game_id
    async with pool.acquire() as connection:
        stored = await store.rated_and_states(
            connection, [rated_id, "rs-never-rated"],
            {BLITZ: ["rsw0", "rs-newcomer"], RAPID: ["rsb1"], Pool("frisian", 2): ["rsw0"]},
        )
    assert stored.rated == {rated_id: f"ev-{rated_id}"}
    assert stored.states == {BLITZ: {"rsw0": states[BLITZ]["rsw0"]}, RAPID: {"rsb1": states[RAPID]["rsb1"]},
                             Pool("frisian", 2): {}}
    # Each pool's latest rated game in canonical order; a pool never played has none.
    assert stored.latest == {pool: applied[pool][-1].game.key for pool in (BLITZ, RAPID)}


async def test_games_after_reads_each_pool_from_its_own_key(pool: asyncpg.Pool) -> None:
    applied, states = rated_batch("ga", 6)
    async with pool.acquire() as connection, connection.transaction():
        await store.save_rated(connection, applied, states, event_ids(applied))
    async with pool.acquire() as connection:
        after = await store.games_after(connection, {BLITZ: applied[BLITZ][3].game.key,
                                                     RAPID: applied[RAPID][5].game.key})
        assert await store.games_after(connection, {}) == {}
    assert after == {
        BLITZ: [(a.game.key, a.game.white_id, a.game.black_id) for a in applied[BLITZ][4:]],
        RAPID: [],
    }


async def test_the_latest_game_and_the_games_after_a_recent_key_are_read_by_index(pool: asyncpg.Pool) -> None:
    """A seek, not a scan: a lateral key left the planner guessing a third of the pool and it read the table
    whole for every batch, a cost growing with every game ever rated."""
    async with pool.acquire() as connection:
        await connection.execute(
            "INSERT INTO rated_games SELECT 'ix' || lpad(n::text, 6, '0'), 'international', 3,"
            " $1::timestamptz + n * interval '1 second', 'w' || n % 97, 'b' || n % 89, 1,"
            " 1500, 350, 0.06, 0, NULL, 1500, 350, 0.06, 1500, 350, 0.06, 0, NULL, 1500, 350, 0.06"
            " FROM generate_series(1, 20000) AS n", START)
        await connection.execute("ANALYZE rated_games")
        recent = (START + timedelta(seconds=19_990), "ix019990")
        plan = "\n".join(row[0] for row in await connection.fetch(
            "EXPLAIN " + store.games_after_statement(1), BLITZ.variant, BLITZ.speed, *recent))
        assert "rated_games_pool_order" in plan and "Seq Scan" not in plan, plan
        assert len((await store.games_after(connection, {BLITZ: recent}))[BLITZ]) == 10
        stored = await store.rated_and_states(connection, [], {BLITZ: ["w1"]})
        assert stored.latest == {BLITZ: (START + timedelta(seconds=20_000), "ix020000")}


def counted(metrics: RatingMetrics) -> dict[tuple[str, str], float]:
    """The handler's GameFinished counts by (outcome, reason), leaving out the series still at zero."""
    return {(s.labels["outcome"], s.labels["reason"]): s.value for family in metrics.games.collect()
            for s in family.samples if s.name.endswith("_total") and s.value}


def rated_win(game_id: str, event_id: str, white: str, black: str) -> ev.GameFinished:
    """A rated international blitz game white won at START (R-3: both sat), under `event_id`."""
    return finished(game_id, white, black, cm.GAME_RESULT_WHITE_WINS, START, event_id=event_id)


async def test_a_rated_game_tells_a_redelivery_from_a_resend_in_any_order_within_a_batch(pool: asyncpg.Pool) -> None:
    """The game keeps the id of the event that rated it (migration 003): that event again is "redelivered",
    the game under another id "already_rated", even when the other id comes first in the batch; an
    unrated event is told apart by its processed-event row."""
    metrics = RatingMetrics.create(Metrics("rating-dedupe-test"))
    handler = GameFinishedHandler(pool, Outbox("rating", TimeSource()), metrics, TimeSource())
    original = rated_win("dd-g1", "dd-x", "dd-w", "dd-b")
    resent = rated_win("dd-g1", "dd-y", "dd-w", "dd-b")
    friendly = rated_win("dd-g2", "dd-f", "dd-w", "dd-b")
    friendly.rated = False

    assert await handler([original, friendly]) == "handled"
    assert counted(metrics) == {("rated", "rated"): 1, ("ignored", "friendly"): 1}
    assert await pool.fetchval("SELECT event_id FROM rated_games WHERE game_id = 'dd-g1'") == "dd-x"
    # Only the event that rated nothing left a processed-event row.
    assert await pool.fetchval("SELECT array_agg(event_id) FROM processed_events") == ["dd-f"]
    assert await handler([resent, original, friendly, original]) == "duplicate"
    assert counted(metrics) == {("rated", "rated"): 1, ("ignored", "friendly"): 1,
                                ("duplicate", "already_rated"): 1, ("duplicate", "redelivered"): 3}
    assert await pool.fetchval("SELECT count(*) FROM rated_games") == 1
    assert await pool.fetchval("SELECT count(*) FROM outbox") == 2  # the one rating's two RatingUpdated


async def test_a_new_game_twice_in_one_batch_is_rated_by_its_first_event(pool: asyncpg.Pool) -> None:
    metrics = RatingMetrics.create(Metrics("rating-first-test"))
    handler = GameFinishedHandler(pool, Outbox("rating", TimeSource()), metrics, TimeSource())
    first = rated_win("dd-g3", "dd-1", "dd-w3", "dd-b3")
    second = rated_win("dd-g3", "dd-2", "dd-w3", "dd-b3")
    assert await handler([first, second]) == "handled"
    assert await pool.fetchval("SELECT event_id FROM rated_games WHERE game_id = 'dd-g3'") == "dd-1"
    assert await handler([second]) == "duplicate"
    assert counted(metrics) == {("rated", "rated"): 1, ("duplicate", "already_rated"): 2}
