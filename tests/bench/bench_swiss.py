"""Swiss pairing time per round (T-13): our FIDE Dutch engine, and py4swiss beside it when installed.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). Each tournament
is played to the end with seeded random results, 10% absences (forfeits, T-18/T-19) and every
fifth tournament in home-and-away rounds (T-12); every round is paired by our engine through
`pair_swiss_round` (history -> TRF model -> engine -> the C.04.1 guard), in this process. When
py4swiss (the previous engine, the 2017 rules) is installed, the same round is also paired by
it from the exported TRF text, in the same run, for comparison; install it only for that
(`.venv/bin/pip install py4swiss==0.3.1`, CPython 3.11 on x86_64). CPU time is shown beside
wall time: on a shared machine the CPU time is the cost of the pairing itself.

`--corpus N` times instead every round of the reference corpus (tests/data/swiss-corpus) with
at least N entrants, through `pair_trf` (text -> TRF model -> engine -> guard), as `arbiter pair`
pairs it.

Target: 200 entrants, any round: median <= 40 ms, max <= 100 ms.

    .venv/bin/python tests/bench/bench_swiss.py [--tournaments 3] [--sizes 20,64,200] [--no-old] [--repeat 1]
    .venv/bin/python tests/bench/bench_swiss.py --corpus 150
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.swiss import SwissRoundPairing, pair_swiss_round, pair_trf
from arbiter.competition.trf import tournament_to_trf
from arbiter.vocabulary import ResultKind

ROUNDS = 10
CORPUS = Path(__file__).resolve().parents[1] / "data" / "swiss-corpus" / "rounds"


def play(
    pairing: SwissRoundPairing, rng: random.Random, double: bool, absent: float
) -> list[PlayedGame[int] | Bye[int]]:
    """Random results for a paired round (forfeits when one side is absent, 0-0 when both are)."""
    items: list[PlayedGame[int] | Bye[int]] = []
    legs = 2 if double else 1
    for white, black in pairing.pairs:
        for leg in range(1, legs + 1):
            w, b = (white, black) if leg == 1 else (black, white)
            w_out, b_out = rng.random() < absent, rng.random() < absent
            if w_out and b_out:
                items.append(PlayedGame(pairing.round, w, b, 0, 0, ResultKind.BOTH_ABSENT, leg))
            elif w_out or b_out:
                items.append(
                    PlayedGame(pairing.round, w, b, 0 if w_out else 2, 0 if b_out else 2, ResultKind.BUSY_FORFEIT, leg)
                )
            else:
                wp = rng.choice((2, 2, 1, 0, 0))
                items.append(PlayedGame(pairing.round, w, b, wp, 2 - wp, ResultKind.NORMAL, leg))
    if pairing.bye is not None:
        items.append(Bye(pairing.round, pairing.bye, 2 * legs))
    return items


def old_engine() -> Callable[[str], object] | None:
    """py4swiss's Dutch engine on a TRF text, if it is installed."""
    try:
        from py4swiss.engines import DutchEngine
        from py4swiss.trf import TrfParser
    except ImportError:
        return None
    import tempfile
    from pathlib import Path

    def pair(text: str) -> object:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "t.trf"
            path.write_text(text, encoding="utf-8")
            return DutchEngine.generate_pairings(TrfParser.parse(path))

    return pair


def timed(call: Callable[[], object], repeat: int = 1) -> tuple[object, float, float]:
    """The result, and the least wall and CPU seconds of `repeat` calls."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = call()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return result, best_wall, best_cpu


def corpus(least: int) -> None:
    """Time every corpus round with at least `least` entrants, as `arbiter pair` pairs it."""
    index = [line.split("\t") for line in (CORPUS / "index.tsv").read_text().splitlines()[1:]]
    chosen = [row for row in index if int(row[2]) >= least and row[-1] != "exit 1"]
    cpus, walls = [], []
    for row in chosen:
        text = (CORPUS / f"{row[0]}.trf").read_text(encoding="utf-8")
        _, wall, cpu = timed(lambda: pair_trf(text))
        cpus.append(cpu)
        walls.append(wall)
    print(f"corpus rounds with >= {least} entrants: {len(chosen)} (entrants {min(int(r[2]) for r in chosen)}"
          f"..{max(int(r[2]) for r in chosen)}, rounds 1..{max(int(r[3]) for r in chosen)})")
    print(f"  cpu  median {1000 * statistics.median(cpus):.1f} ms   max {1000 * max(cpus):.1f} ms")
    print(f"  wall median {1000 * statistics.median(walls):.1f} ms   max {1000 * max(walls):.1f} ms")


def main() -> None:
    """Run the benchmark and print one line per (entrants, round), then one per size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tournaments", type=int, default=3, help="tournaments per size (default 3)")
    parser.add_argument("--sizes", default="20,64,200", help="entrant counts, comma separated")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--no-old", action="store_true", help="do not run py4swiss beside it")
    parser.add_argument("--repeat", type=int, default=1, metavar="K",
                        help="pair each round K times and keep the least time (a host whose speed wanders)")
    parser.add_argument("--corpus", type=int, metavar="N", help="time the corpus rounds of N entrants or more instead")
    args = parser.parse_args()
    if args.corpus is not None:
        corpus(args.corpus)
        return
    old = None if args.no_old else old_engine()

    samples: dict[tuple[str, int, int], list[tuple[float, float]]] = defaultdict(list)
    digest = hashlib.sha256()
    for n in (int(s) for s in args.sizes.split(",")):
        for t in range(args.tournaments):
            rng = random.Random(f"{args.seed}-{n}-{t}")
            entrants = {1000 + i: Entrant(f"player {i}", rating=rng.randint(1000, 2400)) for i in range(n)}
            double = t % 5 == 4
            history: list[list[PlayedGame[int] | Bye[int]]] = []
            for round_number in range(1, min(ROUNDS, n - 1) + 1):
                try:
                    pairing, wall, cpu = timed(
                        lambda: pair_swiss_round(entrants, history, round_number, ROUNDS, double=double), args.repeat
                    )
                except ValueError as exc:  # NoValidPairing: the tournament ends here (small fields)
                    digest.update(repr((n, t, round_number, str(exc))).encode())
                    break
                samples[("new", n, round_number)].append((wall, cpu))
                digest.update(repr((n, t, round_number, pairing.pairs, pairing.bye)).encode())
                if old is not None and not double:
                    text = tournament_to_trf(entrants, history, ROUNDS)
                    _, wall, cpu = timed(lambda: old(text), args.repeat)
                    samples[("old", n, round_number)].append((wall, cpu))
                history.append(play(pairing, rng, double, absent=0.1))

    engines = ["new"] + (["old"] if old is not None else [])
    header = f"{'entrants':>8} {'round':>5}"
    for engine in engines:
        label = "ours" if engine == "new" else "py4swiss"
        header += f" | {label + ' cpu median':>19} {'max':>7} {'wall median':>11} {'max':>7}"
    print(header)

    def row(n: int, label: str, chosen: Callable[[int], bool]) -> str:
        line = f"{n:>8} {label:>5}"
        for engine in engines:
            picked = [
                s for (e, m, r), values in samples.items() if e == engine and m == n and chosen(r) for s in values
            ]
            if not picked:
                line += f" | {'-':>19} {'-':>7} {'-':>11} {'-':>7}"
                continue
            cpus, walls = [c for _, c in picked], [w for w, _ in picked]
            line += (
                f" | {1000 * statistics.median(cpus):>16.1f} ms {1000 * max(cpus):>4.0f} ms"
                f" {1000 * statistics.median(walls):>8.1f} ms {1000 * max(walls):>4.0f} ms"
            )
        return line

    sizes = sorted({n for _, n, _ in samples})
    for n in sizes:
        for round_number in sorted({r for e, m, r in samples if m == n}):
            print(row(n, str(round_number), lambda r, rn=round_number: r == rn))
    for n in sizes:
        print(row(n, "all", lambda r: True))
    print("py4swiss pairs the single-game tournaments only (it reads one TRF round per round)" if old else
          "py4swiss is not installed: our engine alone")
    print("digest of every pairing:", digest.hexdigest()[:16], "(equal digests, equal pairings)")


if __name__ == "__main__":
    main()
