"""AR-6 has one specification, `rank_records`; the ranks Redis computes (Lua and ZCOUNT) are held to it.

The pairing pass reads each waiting player's rank from a Lua script (services/arena/hot.py: a walk
down the board when many wait, one ZCOUNT each when few do) and GetLeaderboard from ZCOUNT per row.
Over many generated leaderboards, on a real Redis, both must give every player the rank the pure
function gives: points, then wins, equal scores sharing a rank.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis.asyncio as aioredis
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.competition.arena import ArenaPlayerRecord, rank_records
from services.arena.hot import HotArena, HotStore

# The snapshot walks the whole board once at least one waiting player in 16 is on it (hot.py).
WALK_FROM_ONE_IN = 16


@dataclass
class Board:
    """A HotStore on the session's Redis, driven from a loop of this test module's own."""

    loop: asyncio.AbstractEventLoop
    hot: HotStore


@pytest.fixture(scope="module")
def board(redis_url: str) -> Iterator[Board]:
    loop = asyncio.new_event_loop()
    client = aioredis.from_url(redis_url)
    try:
        yield Board(loop, HotStore(client))
    finally:
        loop.run_until_complete(client.aclose())
        loop.close()


# Small points and wins, so that many players tie on one or on both.
_records = st.builds(
    lambda points, wins, draws, losses, streak: ArenaPlayerRecord(points, wins, draws, losses, streak),
    st.integers(0, 12), st.integers(0, 4), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3),
)


@st.composite
def leaderboards(draw: st.DrawFn, walk: bool) -> tuple[dict[str, ArenaPlayerRecord], list[str]]:
    """A leaderboard and who waits on it: enough waiting players for the snapshot's walk, or few enough for ZCOUNT."""
    size = draw(st.integers(1, 60) if walk else st.integers(WALK_FROM_ONE_IN + 1, 80))
    records = {f"p{i:02d}": draw(_records) for i in range(size)}
    players = sorted(records)
    smallest_walk = -(-size // WALK_FROM_ONE_IN)
    count = draw(st.integers(smallest_walk, size) if walk else st.integers(1, (size - 1) // WALK_FROM_ONE_IN))
    waiting = draw(st.permutations(players))[:count]
    return records, sorted(waiting)


async def _redis_ranks(hot: HotStore, records: dict[str, ArenaPlayerRecord],
                       waiting: list[str]) -> tuple[dict[str, int], list[tuple[int, str, ArenaPlayerRecord]]]:
    """(rank of each waiting player from the pairing snapshot, every board row from GetLeaderboard's read)."""
    arena_id = f"ranks-{uuid.uuid4().hex[:8]}"
    state = HotArena(records=records, colours={}, playing=frozenset(), waiting=dict.fromkeys(waiting, 1.0),
                     cooldowns={})
    await hot.load(arena_id, state, records)
    try:
        snapshot = await hot.snapshot(arena_id, 2.0)
        assert snapshot is not None
        rows = await hot.board_page(arena_id, 0, len(records))
    finally:
        keys = [key async for key in hot.redis.scan_iter(match=hot.key(arena_id, "*"))]
        await hot.redis.delete(*keys)
    return {w.player_id: w.rank for w in snapshot}, [(r.rank, r.player_id, r.record) for r in rows]


@pytest.mark.parametrize("walk", [True, False], ids=["many-waiting-walk", "few-waiting-zcount"])
@settings(max_examples=150)
@given(data=st.data())
def test_redis_ranks_every_generated_leaderboard_as_the_pure_function_does(
    board: Board, walk: bool, data: st.DataObject
) -> None:
    records, waiting = data.draw(leaderboards(walk))
    spec = rank_records(records)
    rank_of = {row.player_id: row.rank for row in spec}

    snapshot_ranks, rows = board.loop.run_until_complete(_redis_ranks(board.hot, records, waiting))

    assert snapshot_ranks == {player: rank_of[player] for player in waiting}
    # GetLeaderboard: the same ranks, best first; players tied on both points and wins may be listed
    # in another order (Redis lists equal scores by member), never ranked otherwise.
    assert sorted((rank, player) for rank, player, _ in rows) == sorted((r.rank, r.player_id) for r in spec)
    assert [rank for rank, _, _ in rows] == [r.rank for r in spec]
    assert all(record == records[player] for _, player, record in rows)
