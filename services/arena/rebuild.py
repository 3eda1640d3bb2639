"""Rebuilding an arena's Redis keys from PostgreSQL (arena, players, games, results).

Fetch under the arena's row lock, compute with the pure rules (`score_results`: the same
computation the results go through, AR-2..AR-5, over every finished game from blank records),
and write Redis before the lock is released, so that no result or pairing committed meanwhile is
overwritten by older values.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from arbiter.competition.arena import ArenaSeat, pairs_players, score_results
from arbiter.kit.db import Row
from arbiter.vocabulary import Side
from services.arena import store
from services.arena.hot import Colours, HotArena, HotStore


def hot_state(arena: Row, players: Sequence[Any], games: Sequence[Any], now: datetime) -> HotArena:
    """What Redis must hold for one arena at `now`, from its stored rows."""
    colours: dict[str, Colours] = {}
    playing: set[str] = set()
    for game in games:  # request order
        white, black = game["white_id"], game["black_id"]
        colours[white] = colours.get(white, Colours()).after(Side.WHITE)
        colours[black] = colours.get(black, Colours()).after(Side.BLACK)
        if game["result"] is None:
            playing.update((white, black))
    outcome = score_results(
        store.scored_again(games), {p["player_id"]: ArenaSeat(active=p["active"]) for p in players}, playing=playing,
        pairing=pairs_players(arena["state"] == "running", arena["ends_at"], now),
    )
    cooldowns: dict[str, dict[str, float]] = {}
    for pair, until in outcome.next_meetings.items():
        # AR-3: only the cooldowns still running are kept.
        if until > now:
            a, b = sorted(pair)
            cooldowns.setdefault(a, {})[b] = until.timestamp()
            cooldowns.setdefault(b, {})[a] = until.timestamp()
    # AR-2: every present player not in a game waits; the wait restarts now.
    waiting = dict.fromkeys(sorted(outcome.requeue), now.timestamp())
    return HotArena(records=outcome.records, colours=colours, playing=frozenset(playing), waiting=waiting,
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
