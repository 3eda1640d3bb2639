"""Arena matching speed: 100, 1,000, 5,000 and 10,000 waiting players (target: 5,000 in <= 200 ms).

Run: .venv/bin/python tests/bench/bench_arena_matching.py [--repeat N]
Prints median and max wall time (and median CPU time) per size and the pairing
quality, then total pair cost against the reach; asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from arbiter.competition.arena import DEFAULT_REACH, ArenaPairing, WaitingPlayer, match_waiting
from arbiter.competition.arena_matching import _pair_cost_function
from arbiter.vocabulary import Side

SIZES = (100, 1_000, 5_000, 10_000)
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def start_field(size: int, rng: random.Random) -> tuple[list[WaitingPlayer], frozenset[frozenset[str]]]:
    """The first call of an arena: everybody on 0 points (rank 1), no colour history, no cooldowns."""
    players = [
        WaitingPlayer(
            player_id=f"p{i:05d}",
            rank=1,
            rating=int(rng.gauss(1500, 300)),
            waiting_since=NOW - timedelta(seconds=rng.randrange(0, 60)),
        )
        for i in range(size)
    ]
    return players, frozenset()


def waiting_field(size: int, rng: random.Random) -> tuple[list[WaitingPlayer], frozenset[frozenset[str]]]:
    """A mid-arena field: shared ranks for equal scores, spread ratings, some pairs in cooldown."""
    scores = sorted((rng.randrange(0, 40) for _ in range(size)), reverse=True)
    players: list[WaitingPlayer] = []
    rank = 0
    for position, score in enumerate(scores):
        if position == 0 or score != scores[position - 1]:
            rank = position + 1
        players.append(
            WaitingPlayer(
                player_id=f"p{position:05d}",
                rank=rank,
                rating=int(rng.gauss(1500, 300)),
                colour_balance=rng.choice((-2, -1, -1, 0, 0, 0, 1, 1, 2)),
                last_colour=rng.choice((Side.WHITE, Side.BLACK, None)),
                waiting_since=NOW - timedelta(seconds=rng.randrange(0, 60)),
            )
        )
    # Pairs that just played are mostly close in rank: block a third of the
    # near neighbours (1..3 places apart) and a few random pairs (AR-3).
    blocked: set[frozenset[str]] = set()
    for i in range(size):
        for k in (1, 2, 3):
            if i + k < size and rng.random() < 1 / 3:
                blocked.add(frozenset((players[i].player_id, players[i + k].player_id)))
        if rng.random() < 0.2:
            j = rng.randrange(size)
            if j != i:
                blocked.add(frozenset((players[i].player_id, players[j].player_id)))
    rng.shuffle(players)
    return players, frozenset(blocked)


def quality(players: list[WaitingPlayer], pairings: list[ArenaPairing]) -> str:
    """Mean rank and rating distance within pairs, and how many were left over."""
    by_id = {p.player_id: p for p in players}
    rank_gaps = [abs(by_id[x.white].rank - by_id[x.black].rank) for x in pairings]
    rating_gaps = [abs(by_id[x.white].rating - by_id[x.black].rating) for x in pairings]
    left = len(players) - 2 * len(pairings)
    return (
        f"pairs {len(pairings):5d}  left {left:3d}  mean rank gap {statistics.fmean(rank_gaps):5.2f}"
        f"  mean rating gap {statistics.fmean(rating_gaps):6.1f}"
    )


def main() -> None:
    """Time match_waiting for each size and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"arena matching, {args.repeat} runs per size; cooldowns given as a set of frozenset pairs")
    for name, build in (("mid-arena", waiting_field), ("start", start_field)):
        print(f"-- {name}: {build.__doc__}")
        for size in SIZES:
            players, blocked = build(size, random.Random(size))
            times: list[float] = []
            cpu: list[float] = []
            pairings: list[ArenaPairing] = []
            for _ in range(args.repeat):
                start, start_cpu = time.perf_counter(), time.process_time()
                pairings = match_waiting(players, blocked, NOW)
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            # CPU time beside wall time: on a shared machine the wall time
            # includes waiting for a core.
            print(
                f"{size:6d} waiting, {len(blocked):6d} pairs in cooldown:"
                f"  median {statistics.median(times) * 1000:6.1f} ms  max {max(times) * 1000:6.1f} ms"
                f"  (cpu median {statistics.median(cpu) * 1000:6.1f} ms)"
                f"  | {quality(players, pairings)}"
            )
    reach_versus_cost(1_000)


def reach_versus_cost(size: int) -> None:
    """Why DEFAULT_REACH: total pair cost and time as the band widens (mid-arena field)."""
    players, blocked = waiting_field(size, random.Random(size))
    order = sorted(players, key=lambda p: (p.rank, p.rating, p.player_id))
    position = {p.player_id: i for i, p in enumerate(order)}
    cost = _pair_cost_function(order)
    print(f"-- reach vs total pair cost, {size} waiting (default reach {DEFAULT_REACH})")
    for reach in (1, 2, 3, 4, 5, 6, 8):
        start = time.perf_counter()
        pairings = match_waiting(players, blocked, NOW, reach=reach)
        elapsed = time.perf_counter() - start
        total = sum(cost(*sorted((position[x.white], position[x.black]))) for x in pairings)
        print(f"  reach {reach}: {elapsed * 1000:7.1f} ms  pairs {len(pairings)}  total cost {total:9d}")


if __name__ == "__main__":
    main()
