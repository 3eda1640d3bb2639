"""Rebuilding an arena's Redis keys from PostgreSQL (arena, players, games, results).

Fetch under the arena's row lock, compute with the pure rules (`recompute_records` for
AR-4/AR-5, `next_allowed_meeting` for AR-3), and write Redis before the lock is released,
so that no result or pairing committed meanwhile is overwritten by older values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import asyncpg

from arbiter.competition.arena import next_allowed_meeting, recompute_records
from arbiter.competition.types import Side
from services.arena import store
from services.arena.hot import Colours, HotArena, HotStore


def hot_state(arena: Mapping[str, Any], players: Sequence[Any], games: Sequence[Any], now: datetime) -> HotArena:
    """What Redis must hold for one arena at `now`, from its stored rows."""
    joined = [p["player_id"] for p in players]
    records = recompute_records(store.finished_games_in_scoring_order(games), joined)
    colours: dict[str, Colours] = {}
    playing: set[str] = set()
    met: dict[tuple[str, str], tuple[int, datetime]] = {}
    for game in games:  # request order
        white, black = game["white_id"], game["black_id"]
        colours[white] = colours.get(white, Colours()).after(Side.WHITE)
        colours[black] = colours.get(black, Colours()).after(Side.BLACK)
        if game["result"] is None:
            playing.update((white, black))
            continue
        pair = (min(white, black), max(white, black))
        count, last = met.get(pair, (0, game["finished_at"]))
        met[pair] = (count + 1, max(last, game["finished_at"]))
    cooldowns: dict[str, dict[str, float]] = {}
    for (a, b), (count, last) in met.items():
        # AR-3: k meetings block the pair for 5*k minutes after the last one ended.
        until = next_allowed_meeting(count, last)
        if until > now:
            cooldowns.setdefault(a, {})[b] = until.timestamp()
            cooldowns.setdefault(b, {})[a] = until.timestamp()
    waiting: dict[str, float] = {}
    if arena["state"] == "running" and now < arena["ends_at"]:
        # AR-2: every present player not in a game waits; the wait restarts now.
        waiting = {p["player_id"]: now.timestamp() for p in players if p["active"] and p["player_id"] not in playing}
    return HotArena(records=records, colours=colours, playing=frozenset(playing), waiting=waiting,
                    cooldowns=cooldowns)


async def rebuild_arena(pool: asyncpg.Pool, hot: HotStore, arena_id: str, now: datetime) -> HotArena | None:
    """Rewrite the arena's Redis keys from PostgreSQL; None if there is no such arena."""
    async with pool.acquire() as connection, connection.transaction():
        # FOR UPDATE waits for results and pairings in flight (they hold the row in share or update mode).
        arena = await store.arena(connection, arena_id, "FOR UPDATE")
        if arena is None:
            return None
        players = await store.players(connection, arena_id)
        games = await store.games(connection, arena_id)
        state = hot_state(arena, players, games, now)
        await hot.load(arena_id, state, [p["player_id"] for p in players])
    return state
