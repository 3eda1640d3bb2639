"""PostgreSQL access of the rating service: pools, rated games and ratings (schema in migrations/)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from arbiter.rating import Rating
from services.rating.games import Pool
from arbiter.rating.ledger import AppliedGame, GameKey, GameToRate, PlayerState

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


async def lock_pool(connection: asyncpg.Connection, pool: Pool) -> None:
    """Serialise writers of `pool` across replicas until the transaction ends (a late game may touch any player)."""
    await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", pool.lock_name)


async def rated_game_ids(connection: asyncpg.Connection, game_ids: Collection[str]) -> set[str]:
    """Those of `game_ids` already rated (under whatever event id they came)."""
    if not game_ids:
        return set()
    rows = await connection.fetch("SELECT game_id FROM rated_games WHERE game_id = ANY($1::text[])", list(game_ids))
    return {row["game_id"] for row in rows}


def _applied(row: asyncpg.Record) -> AppliedGame:
    # Positional access in _GAME_COLUMNS order: replays decode thousands of rows per batch.
    (game_id, _variant, _speed, finished_at, white_id, black_id, white_score,
     wr0, wd0, wv0, wg0, wt0, wr1, wd1, wv1, br0, bd0, bv0, bg0, bt0, br1, bd1, bv1) = row
    return AppliedGame(
        GameToRate(game_id, finished_at, white_id, black_id, white_score),
        PlayerState(Rating(wr0, wd0, wv0), wg0, wt0), PlayerState(Rating(wr1, wd1, wv1), wg0 + 1, finished_at),
        PlayerState(Rating(br0, bd0, bv0), bg0, bt0), PlayerState(Rating(br1, bd1, bv1), bg0 + 1, finished_at),
    )


async def games_after(connection: asyncpg.Connection, pool: Pool, key: GameKey) -> list[GameToRate]:
    """Who played whom in every rated game of `pool` after `key` (light rows: what `ledger.reach` needs)."""
    rows = await connection.fetch(
        "SELECT game_id, finished_at, white_id, black_id, white_score FROM rated_games"
        " WHERE variant = $1 AND speed = $2 AND (finished_at, game_id) > ($3, $4)",
        pool.variant, pool.speed, key[0], key[1],
    )
    return [GameToRate(*row) for row in rows]


async def applied_games(connection: asyncpg.Connection, game_ids: Collection[str]) -> list[AppliedGame]:
    """The stored results (both sides before and after) of `game_ids`, in canonical order."""
    if not game_ids:
        return []
    rows = await connection.fetch(
        f"{_SELECT_GAMES} WHERE game_id = ANY($1::text[]) ORDER BY finished_at, game_id", list(game_ids)
    )
    return [_applied(row) for row in rows]


async def player_states(
    connection: asyncpg.Connection | asyncpg.Pool, pool: Pool, player_ids: Collection[str]
) -> dict[str, PlayerState]:
    """The stored states of `player_ids` in `pool`; players never rated there are absent."""
    if not player_ids:
        return {}
    rows = await connection.fetch(
        "SELECT player_id, rating, deviation, volatility, games, last_rated_at FROM ratings"
        " WHERE variant = $1 AND speed = $2 AND player_id = ANY($3::text[])",
        pool.variant, pool.speed, list(player_ids),
    )
    return {
        row["player_id"]: PlayerState(
            Rating(row["rating"], row["deviation"], row["volatility"]), row["games"], row["last_rated_at"]
        )
        for row in rows
    }


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


async def insert_games(connection: asyncpg.Connection, pool: Pool, applied: Sequence[AppliedGame]) -> None:
    """Store newly rated games (the caller checked under the pool lock that none is stored)."""
    if applied:
        await connection.copy_records_to_table(
            "rated_games", records=[_game_values(pool, a) for a in applied], columns=list(_GAME_COLUMNS),
        )


async def rewrite_games(connection: asyncpg.Connection, applied: Sequence[AppliedGame], now: datetime) -> None:
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


async def save_states(connection: asyncpg.Connection, pool: Pool, states: Mapping[str, PlayerState]) -> None:
    """Upsert the players' latest states in `pool`."""
    if not states:
        return
    players = list(states)
    await connection.execute(
        "INSERT INTO ratings (variant, speed, player_id, rating, deviation, volatility, games, last_rated_at)"
        " SELECT $1, $2, * FROM unnest($3::text[], $4::double precision[], $5::double precision[],"
        " $6::double precision[], $7::integer[], $8::timestamptz[])"
        " ON CONFLICT (variant, speed, player_id) DO UPDATE SET rating = EXCLUDED.rating,"
        " deviation = EXCLUDED.deviation, volatility = EXCLUDED.volatility, games = EXCLUDED.games,"
        " last_rated_at = EXCLUDED.last_rated_at",
        pool.variant, pool.speed, players,
        [states[p].rating.rating for p in players], [states[p].rating.rd for p in players],
        [states[p].rating.vol for p in players], [states[p].games for p in players],
        [states[p].last_rated_at for p in players],
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
