"""Swiss pairing time per round (T-13): 20, 64 and 200 entrants, rounds 1..10, median and max.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). Each figure is
one call of `pair_swiss_round` (history -> TRF -> py4swiss -> checks) on tournaments played
with seeded random results, 10% absences (forfeits, T-18/T-19) and every fifth tournament in
home-and-away rounds (T-12). Wall time and the process's CPU time are both shown: on a
shared machine the CPU time is the cost of the pairing itself. Target: 200 entrants, any
round, at most 0.5 s.

    .venv/bin/python tests/bench/bench_swiss.py [--tournaments 3] [--sizes 20,64,200] [--plain-weights]

`--plain-weights` pairs with py4swiss's own bracket matcher, which weighs every pair of a
bracket one by one, instead of ours, which weighs each kind of pair once (same pairings): the
difference is what sharing the weights saves.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import time
from collections import Counter, defaultdict

from py4swiss.engines.dutch.bracket import BracketPairer

from arbiter.competition import swiss
from arbiter.competition.swiss import (
    SwissBye,
    SwissEntrant,
    SwissGame,
    SwissRoundPairing,
    pair_swiss_round,
)
from arbiter.competition.types import ResultKind

ROUNDS = 10


def play(pairing: SwissRoundPairing, rng: random.Random, double: bool, absent: float) -> list[SwissGame | SwissBye]:
    """Random results for a paired round (forfeits when one side is absent, 0-0 when both are)."""
    items: list[SwissGame | SwissBye] = []
    legs = 2 if double else 1
    for white, black in pairing.pairs:
        for leg in range(1, legs + 1):
            w, b = (white, black) if leg == 1 else (black, white)
            w_out, b_out = rng.random() < absent, rng.random() < absent
            if w_out and b_out:
                items.append(SwissGame(pairing.round, w, b, 0, 0, ResultKind.BOTH_ABSENT, leg))
            elif w_out or b_out:
                items.append(SwissGame(pairing.round, w, b, 0 if w_out else 2, 0 if b_out else 2, ResultKind.BUSY_FORFEIT, leg))
            else:
                wp = rng.choice((2, 2, 1, 0, 0))
                items.append(SwissGame(pairing.round, w, b, wp, 2 - wp, ResultKind.NORMAL, leg))
    if pairing.bye is not None:
        items.append(SwissBye(pairing.round, pairing.bye, 2 * legs))
    return items


def main() -> None:
    """Run the benchmark and print one line per (entrants, round)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tournaments", type=int, default=3, help="tournaments per size (default 3)")
    parser.add_argument("--sizes", default="20,64,200", help="entrant counts, comma separated")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--plain-weights", action="store_true",
                        help="py4swiss's own bracket matcher (every pair weighed), for comparison")
    args = parser.parse_args()
    if args.plain_weights:
        swiss._BracketPairer = BracketPairer  # noqa: SLF001 (a benchmark's A/B switch)

    wall: dict[tuple[int, int], list[float]] = defaultdict(list)
    cpu: dict[tuple[int, int], list[float]] = defaultdict(list)
    engines: Counter[str] = Counter()
    digest = hashlib.sha256()
    for n in (int(s) for s in args.sizes.split(",")):
        for t in range(args.tournaments):
            rng = random.Random(f"{args.seed}-{n}-{t}")
            entrants = [SwissEntrant(1000 + i, rng.randint(1000, 2400), f"player {i}") for i in range(n)]
            double = t % 5 == 4
            history: list[list[SwissGame | SwissBye]] = []
            for round_number in range(1, ROUNDS + 1):
                wall_start, cpu_start = time.perf_counter(), time.process_time()
                pairing = pair_swiss_round(entrants, history, round_number, ROUNDS, double=double)
                wall[(n, round_number)].append(time.perf_counter() - wall_start)
                cpu[(n, round_number)].append(time.process_time() - cpu_start)
                engines[pairing.engine] += 1
                digest.update(repr((n, t, round_number, pairing.pairs, pairing.bye)).encode())
                history.append(play(pairing, rng, double, absent=0.1))

    print(f"{'entrants':>8} {'round':>5} {'wall median':>12} {'wall max':>9} {'cpu median':>11} {'cpu max':>8}")
    for (n, round_number), samples in sorted(wall.items()):
        c = cpu[(n, round_number)]
        print(
            f"{n:>8} {round_number:>5} {statistics.median(samples):>11.3f}s {max(samples):>8.3f}s"
            f" {statistics.median(c):>10.3f}s {max(c):>7.3f}s"
        )
    for n in sorted({n for n, _ in wall}):
        every = [s for (m, _), samples in wall.items() if m == n for s in samples]
        every_cpu = [s for (m, _), samples in cpu.items() if m == n for s in samples]
        print(
            f"{n:>8}   all {statistics.median(every):>11.3f}s {max(every):>8.3f}s"
            f" {statistics.median(every_cpu):>10.3f}s {max(every_cpu):>7.3f}s"
        )
    print("pairings by engine:", dict(engines))
    print("digest of every pairing:", digest.hexdigest()[:16], "(equal digests, equal pairings)")


if __name__ == "__main__":
    main()
