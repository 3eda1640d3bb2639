"""PostgreSQL access of the rating service: pools, rated games and ratings (schema in migrations/)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache

import asyncpg

from arbiter.kit.db import Connection, Executor
from arbiter.rating import Rating
from arbiter.rating.ledger import AppliedGame, GameKey, GameToRate, PlayerState
from services.rating.games import Pool

_SIDES = ("white", "black")
_GAME_COLUMNS = (
    "game_id", "variant", "speed", "finished_at", "white_id", "black_id", "white_score",
    *(f"{side}_{column}" for side in _SIDES for column in (
        "rating_before", "deviation_before", "volatility_before", "games_before", "last_rated_at_before",
        "rating_after", "deviation_after", "volatility_after",
    )),
)
_SELECT_GAMES = "SELECT " + ", ".join(_GAME_COLUMNS) + " FROM rated_games"


@dataclass(frozen=True)
class HistoryRow:
    """One rated game seen from one player's side."""

    game_id: str
    finished_at: datetime
    opponent_id: str
    score: float
    before: PlayerState
    after: PlayerState


async def lock_pools(connection: Connection, pools: Collection[Pool]) -> None:
    """Serialise writers of `pools` across replicas until the transaction ends (a late game may touch any player).

    The locks are taken in one statement in sorted order, so two replicas locking
    overlapping sets of pools never deadlock.
    """
    if pools:
        await connection.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(name, 0)) FROM unnest($1::text[]) AS t(name)",
            sorted(pool.lock_name for pool in pools),
        )


def _applied(row: asyncpg.Record) -> AppliedGame:
    # Positional access in _GAME_COLUMNS order: replays decode thousands of rows per batch.
    (game_id, _variant, _speed, finished_at, white_id, black_id, white_score,
     wr0, wd0, wv0, wg0, wt0, wr1, wd1, wv1, br0, bd0, bv0, bg0, bt0, br1, bd1, bv1) = row
    return AppliedGame(
        GameToRate(game_id, finished_at, white_id, black_id, white_score),
        PlayerState(Rating(wr0, wd0, wv0), wg0, wt0), PlayerState(Rating(wr1, wd1, wv1), wg0 + 1, finished_at),
        PlayerState(Rating(br0, bd0, bv0), bg0, bt0), PlayerState(Rating(br1, bd1, bv1), bg0 + 1, finished_at),
    )


@cache
def games_after_statement(pools: int) -> str:
    """The statement of `games_after` for `pools` pools: (variant, speed, finished_at, game_id) parameters each."""
    branch = (
        "(SELECT array_agg(r.finished_at ORDER BY r.finished_at, r.game_id),"
        " array_agg(r.game_id ORDER BY r.finished_at, r.game_id),"
        " array_agg(r.white_id ORDER BY r.finished_at, r.game_id),"
        " array_agg(r.black_id ORDER BY r.finished_at, r.game_id) FROM rated_games AS r"
        " WHERE r.variant = ${0}::text AND r.speed = ${1}::smallint"
        " AND (r.finished_at, r.game_id) > (${2}::timestamptz, ${3}::text))"
    )
    return " UNION ALL ".join(branch.format(*range(4 * n + 1, 4 * n + 5)) for n in range(pools))


async def games_after(
    connection: Connection, keys: Mapping[Pool, GameKey]
) -> dict[Pool, list[tuple[GameKey, str, str]]]:
    """Who played whom in every rated game of each pool after its key, in canonical order (`ledger.Meeting`s).

    One row of arrays per pool, turned into plain tuples: a backlog makes these thousands of
    games per batch, and arrays decode far cheaper than a record (or an object) per game. Each
    pool is its own branch with its key as plain parameters: from a key joined in (a lateral
    join on unnest) the planner could not see how recent it is, assumed a third of the pool came
    after it and scanned the whole table, a cost growing with every game ever rated.
    """
    if not keys:
        return {}
    pools = list(keys)
    rows = await connection.fetch(games_after_statement(len(pools)),
                                  *(value for pool in pools for value in (pool.variant, pool.speed, *keys[pool])))
    return {
        pool: list(zip(zip(finished, ids, strict=True), whites, blacks, strict=True)) if finished else []
        for pool, (finished, ids, whites, blacks) in zip(pools, rows, strict=True)
    }


async def applied_games(connection: Connection, game_ids: Collection[str]) -> list[AppliedGame]:
    """The stored results (both sides before and after) of `game_ids`, in canonical order."""
    if not game_ids:
        return []
    rows = await connection.fetch(
        f"{_SELECT_GAMES} JOIN unnest($1::text[]) AS u(id) ON game_id = u.id ORDER BY finished_at, game_id",
        list(game_ids),
    )
    return [_applied(row) for row in rows]


async def player_states(
    connection: Executor, pool: Pool, player_ids: Collection[str]
) -> dict[str, PlayerState]:
    """The stored states of `player_ids` in `pool`; players never rated there are absent."""
    if not player_ids:
        return {}
    # A join on unnest, not `= ANY`: on a small table the planner picks a hashed ANY over a
    # sequential scan, whose cost grows with the table (tests/bench/bench_rating_handler.py).
    rows = await connection.fetch(
        "SELECT r.player_id, r.rating, r.deviation, r.volatility, r.games, r.last_rated_at"
        " FROM unnest($3::text[]) AS u(player_id)"
        " JOIN ratings AS r ON r.variant = $1 AND r.speed = $2 AND r.player_id = u.player_id",
        pool.variant, pool.speed, list(player_ids),
    )
    return {
        row["player_id"]: PlayerState(
            Rating(row["rating"], row["deviation"], row["volatility"]), row["games"], row["last_rated_at"]
        )
        for row in rows
    }


@dataclass(frozen=True)
class StoredView:
    """What one read under the pools' locks tells a batch (see `rated_and_states`)."""

    # Of the batch's game ids, those already rated, each with the event id that rated it (None
    # for a game rated before event ids were kept).
    rated: dict[str, str | None]
    # The stored states of the candidate players; players never rated in a pool are absent.
    states: dict[Pool, dict[str, PlayerState]]
    # The canonical key of each pool's latest rated game; pools without one are absent.
    latest: dict[Pool, GameKey]


async def rated_and_states(
    connection: Connection, game_ids: Collection[str], players: Mapping[Pool, Collection[str]]
) -> StoredView:
    """Which of `game_ids` are rated, the stored states of `players`, and each of their pools' latest game.

    One round trip, read under the pools' locks. The latest game tells whether a batch holds a
    late game: only then are the games after it read (`games_after`). Each is found by a backward
    scan of the pool's canonical-order index, whatever the table holds. Each state is looked up
    by its key too (a LATERAL with LIMIT 1), as pairing's games: as a join it was planned as a hash
    of the whole ratings table, a cost that grows with the table (figures: docs/performance.md).
    """
    variants: list[str] = []
    speeds: list[int] = []
    ids: list[str] = []
    for pool, pool_players in players.items():
        variants += [pool.variant] * len(pool_players)
        speeds += [pool.speed] * len(pool_players)
        ids += pool_players
    pools = list(players)
    rows = await connection.fetch(
        "SELECT 0 AS kind, r.variant, r.speed, r.player_id, r.rating, r.deviation, r.volatility, r.games,"
        " r.last_rated_at, NULL AS event_id"
        " FROM unnest($1::text[], $2::smallint[], $3::text[]) AS u(variant, speed, player_id) CROSS JOIN LATERAL"
        " (SELECT * FROM ratings AS s WHERE s.variant = u.variant AND s.speed = u.speed AND s.player_id = u.player_id"
        " LIMIT 1) AS r"
        " UNION ALL SELECT 1, NULL, NULL, g.game_id, NULL, NULL, NULL, NULL, NULL, g.event_id"
        " FROM unnest($4::text[]) AS u(game_id) JOIN rated_games AS g ON g.game_id = u.game_id"
        " UNION ALL SELECT 2, p.variant, p.speed, l.game_id, NULL, NULL, NULL, NULL, l.finished_at, NULL"
        " FROM unnest($5::text[], $6::smallint[]) AS p(variant, speed) CROSS JOIN LATERAL"
        " (SELECT r.game_id, r.finished_at FROM rated_games AS r WHERE r.variant = p.variant AND r.speed = p.speed"
        " ORDER BY r.finished_at DESC, r.game_id DESC LIMIT 1) AS l",
        variants, speeds, ids, list(game_ids), [pool.variant for pool in pools], [pool.speed for pool in pools],
    )
    view = StoredView({}, {pool: {} for pool in players}, {})
    # The pools asked for, by their columns: no Pool made and hashed per row (bench_rating_handler.py).
    pool_by_columns = {(pool.variant, pool.speed): pool for pool in pools}
    states_of = {columns: view.states[pool] for columns, pool in pool_by_columns.items()}
    for kind, variant, speed, player_or_game, rating, deviation, volatility, games, at, event_id in rows:
        if kind == 0:
            states_of[variant, speed][player_or_game] = PlayerState(Rating(rating, deviation, volatility), games, at)
        elif kind == 1:
            view.rated[player_or_game] = event_id
        else:
            view.latest[pool_by_columns[variant, speed]] = (at, player_or_game)
    return view


# Written once with a new game and never rewritten by a replay (migration 003).
_NEW_GAME_COLUMNS = (*_GAME_COLUMNS, "event_id")


def _game_values(pool: Pool, applied: AppliedGame) -> tuple[object, ...]:
    game = applied.game
    values: list[object] = [
        game.game_id, pool.variant, pool.speed, game.finished_at, game.white_id, game.black_id, game.white_score,
    ]
    for before, after in ((applied.white_before, applied.white_after), (applied.black_before, applied.black_after)):
        values += [
            before.rating.rating, before.rating.rd, before.rating.vol, before.games, before.last_rated_at,
            after.rating.rating, after.rating.rd, after.rating.vol,
        ]
    return tuple(values)


async def rewrite_games(connection: Connection, applied: Sequence[AppliedGame], now: datetime) -> None:
    """Overwrite the before/after of games a late game changed, and mark them revised."""
    if not applied:
        return
    mutable = _GAME_COLUMNS[7:]
    columns = list(zip(*(_game_values(Pool("", 0), a)[7:] for a in applied), strict=True))
    types = [
        "timestamptz" if name.endswith("_at_before") else "integer" if name.endswith("games_before")
        else "double precision"
        for name in mutable
    ]
    unnest = ", ".join(f"${i + 2}::{kind}[]" for i, kind in enumerate(types))
    assignments = ", ".join(f"{name} = u.{name}" for name in mutable)
    await connection.execute(
        f"UPDATE rated_games AS g SET {assignments}, revised_at = ${len(mutable) + 2}"
        f" FROM unnest($1::text[], {unnest}) AS u(game_id, {', '.join(mutable)})"
        " WHERE g.game_id = u.game_id",
        [a.game.game_id for a in applied], *(list(column) for column in columns), now,
    )


_STATE_COLUMNS = ["variant", "speed", "player_id", "rating", "deviation", "volatility", "games", "last_rated_at"]


def _state_rows(states: Mapping[Pool, Mapping[str, PlayerState]]) -> list[tuple[object, ...]]:
    return [(pool.variant, pool.speed, player, state.rating.rating, state.rating.rd, state.rating.vol, state.games,
             state.last_rated_at) for pool, pool_states in states.items() for player, state in pool_states.items()]


async def save_states(connection: Connection, states: Mapping[Pool, Mapping[str, PlayerState]]) -> None:
    """Upsert the players' latest states in their pools (in the caller's transaction)."""
    rows = _state_rows(states)
    if not rows:
        return
    await connection.copy_records_to_table("ratings_incoming", records=rows, columns=_STATE_COLUMNS)
    await connection.execute(
        "WITH incoming AS (DELETE FROM ratings_incoming RETURNING *)"
        " INSERT INTO ratings (variant, speed, player_id, rating, deviation, volatility, games, last_rated_at)"
        " SELECT variant, speed, player_id, rating, deviation, volatility, games, last_rated_at FROM incoming"
        " ON CONFLICT (variant, speed, player_id) DO UPDATE SET rating = EXCLUDED.rating,"
        " deviation = EXCLUDED.deviation, volatility = EXCLUDED.volatility, games = EXCLUDED.games,"
        " last_rated_at = EXCLUDED.last_rated_at"
    )


# Up to this many games a batch is saved by one statement of array parameters instead of five round
# trips (two COPYs of two each and the ratings upsert): under load every round trip waits for a busy
# PostgreSQL, and the system's batches are mostly a few dozen games. Above it, COPY's cheaper
# encoding per row wins over the round trips.
ONE_STATEMENT_GAMES = 256


def _column_type(name: str) -> str:
    if name == "speed":
        return "smallint"
    if name.endswith("_at") or name.endswith("_at_before"):
        return "timestamptz"
    if name.endswith("games_before") or name == "games":
        return "integer"
    if name.endswith("_id") or name == "variant":
        return "text"
    return "double precision"


@cache
def _save_statement() -> str:
    games = ", ".join(f"${i + 1}::{_column_type(name)}[]" for i, name in enumerate(_NEW_GAME_COLUMNS))
    offset = len(_NEW_GAME_COLUMNS)
    states = ", ".join(f"${offset + i + 1}::{_column_type(name)}[]" for i, name in enumerate(_STATE_COLUMNS))
    return (
        f"WITH games AS (INSERT INTO rated_games ({', '.join(_NEW_GAME_COLUMNS)}) SELECT * FROM unnest({games}))"
        f" INSERT INTO ratings ({', '.join(_STATE_COLUMNS)}) SELECT * FROM unnest({states})"
        " ON CONFLICT (variant, speed, player_id) DO UPDATE SET rating = EXCLUDED.rating,"
        " deviation = EXCLUDED.deviation, volatility = EXCLUDED.volatility, games = EXCLUDED.games,"
        " last_rated_at = EXCLUDED.last_rated_at"
    )


async def save_rated(
    connection: Connection, applied: Mapping[Pool, Sequence[AppliedGame]],
    states: Mapping[Pool, Mapping[str, PlayerState]], event_ids: Mapping[str, str],
) -> None:
    """Store newly rated games, each with the event that rated it (`event_ids` by game id), and upsert
    their players' states; one round trip when the batch is small."""
    games = [(*_game_values(pool, a), event_ids[a.game.game_id])
             for pool, pool_games in applied.items() for a in pool_games]
    if len(games) > ONE_STATEMENT_GAMES:
        # The caller checked under the pools' locks that none of these games is stored.
        await connection.copy_records_to_table("rated_games", records=games, columns=list(_NEW_GAME_COLUMNS))
        await save_states(connection, states)
        return
    if not games:
        await save_states(connection, states)
        return
    # Never empty: a rated game moves both of its players.
    rows = _state_rows(states)
    await connection.execute(
        _save_statement(),
        *(list(column) for column in zip(*games, strict=True)),
        *(list(column) for column in zip(*rows, strict=True)),
    )


async def history(
    connection: asyncpg.Pool, pool: Pool, player_id: str, before: GameKey | None, limit: int
) -> list[HistoryRow]:
    """Up to `limit` rated games of `player_id` in `pool`, newest first, strictly before `before`."""
    after_cursor = "" if before is None else " AND (finished_at, game_id) < ($4, $5)"
    args: list[object] = [player_id, pool.variant, pool.speed]
    if before is not None:
        args += [before[0], before[1]]
    limit_arg = f"${len(args) + 1}"
    branch = (
        f"({_SELECT_GAMES} WHERE {{side}}_id = $1 AND variant = $2 AND speed = $3{after_cursor}"
        f" ORDER BY finished_at DESC, game_id DESC LIMIT {limit_arg})"
    )
    rows = await connection.fetch(
        f"SELECT * FROM ({branch.format(side='white')} UNION ALL {branch.format(side='black')}) AS h"
        f" ORDER BY finished_at DESC, game_id DESC LIMIT {limit_arg}",
        *args, limit,
    )
    result = []
    for row in rows:
        applied = _applied(row)
        white = applied.game.white_id == player_id
        result.append(HistoryRow(
            game_id=applied.game.game_id,
            finished_at=applied.game.finished_at,
            opponent_id=applied.game.black_id if white else applied.game.white_id,
            score=applied.game.white_score if white else 1.0 - applied.game.white_score,
            before=applied.white_before if white else applied.black_before,
            after=applied.white_after if white else applied.black_after,
        ))
    return result
