"""Perft speed of our draughts engine beside py-draughts and pydraughts, measured in the same run.

Run: .venv/bin/python tests/bench/bench_perft.py [--variants international,russian] [--deep] [--repeat N]

For every variant it prints, from the initial position:
- ours: `arbiter.draughts.perft` (bitboards; the last ply bulk-counted: the moves of
  each depth-1 position are counted, not played);
- ours-api: the same tree walked through the public API (`Position.legal_moves()`,
  `Position.play`), counting `len(legal_moves())` at depth 1;
- py-draughts 1.10.1: its board API (`legal_moves`, `push`, `pop`) with the same
  bulk count at depth 1, and for international also its internal `turbo.perft`;
  its english board treats captures as optional, so its english counts are wrong
  (shown, not fixed); it has no italian, spanish nor pool;
- pydraughts 0.6.7: `legal_moves`/`push`/`pop` at a shallow depth (about 1k nodes/s).
Each leaf count is compared with the published table (see tests/unit/draughts/test_perft.py).
--deep also walks ours to the deepest published depths that take a few seconds each.
Nothing is asserted; nodes/s vary with the machine's load.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from arbiter.draughts import Position, Variant, perft

# Published leaf counts, duplicates merged (sources in tests/unit/draughts/test_perft.py).
PUBLISHED: dict[str, list[int]] = {
    "international": [9, 81, 658, 4_265, 27_117, 167_140, 1_049_442, 6_483_961, 41_022_423],
    "english": [7, 49, 302, 1_469, 7_361, 36_768, 179_740, 845_931, 3_963_680, 18_391_564],
    "italian": [7, 49, 302, 1_469, 7_361, 36_473, 177_532, 828_783, 3_860_875, 17_761_384],
    "russian": [7, 49, 302, 1_469, 7_482, 37_986, 190_146, 929_899, 4_570_586, 22_444_032],
    "brazilian": [7, 49, 302, 1_469, 7_473, 37_628, 187_302, 907_830, 4_431_766, 21_560_022],
    "pool": [7, 49, 302, 1_469, 7_482, 37_986, 190_146, 929_896, 4_570_534, 22_435_955],
    "spanish": [7, 49, 302, 1_469, 7_361, 36_473, 177_532, 828_783, 3_860_866, 17_743_464],
}
# Depths for the side-by-side run (about a second or two each here).
OURS_DEPTH = {"international": 7, "english": 8, "italian": 8, "russian": 8, "brazilian": 8, "pool": 8, "spanish": 8}
PEER_DEPTH = {"international": 6, "english": 7, "russian": 7, "brazilian": 7}
PYDRAUGHTS_DEPTH = {"international": 3, "english": 3, "italian": 3, "russian": 3, "brazilian": 3}
DEEP_DEPTH = {"international": 8, "english": 9, "italian": 9, "russian": 9, "brazilian": 9, "pool": 9, "spanish": 9}


def timed(repeat: int, fn: Callable[..., int], *args: object) -> tuple[int, float]:
    """(fn(*args), best wall time in seconds) over `repeat` runs."""
    best = float("inf")
    result = 0
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn(*args)
        best = min(best, time.perf_counter() - started)
    return result, best


def line(label: str, depth: int, nodes: int, seconds: float, verdict: str) -> str:
    """One result line."""
    return f"  {label:<11} perft({depth}) = {nodes:>11,}  {seconds:7.2f} s  {rate(nodes, seconds)}  {verdict}"


def api_perft(position: Position, depth: int) -> int:
    """Perft through the public API only."""
    moves = position.legal_moves()
    if depth == 1:
        return len(moves)
    return sum(api_perft(position.play(move), depth - 1) for move in moves)


def py_draughts_board(variant: str) -> object | None:
    """A fresh py-draughts board of `variant`, or None if it has none."""
    try:
        import draughts as pd  # py-draughts
    except ImportError:
        return None
    boards = {
        "international": getattr(pd, "StandardBoard", None),
        "english": getattr(pd, "AmericanBoard", None),
        "russian": getattr(pd, "RussianBoard", None),
        "brazilian": getattr(pd, "BrazilianBoard", None),
    }
    cls = boards.get(variant)
    return cls() if cls is not None else None


def py_draughts_perft(board: object, depth: int) -> int:
    """py-draughts board perft, bulk-counting the last ply like ours."""
    moves = board.legal_moves  # type: ignore[attr-defined]
    if depth == 1:
        return len(moves)
    total = 0
    for move in moves:
        board.push(move)  # type: ignore[attr-defined]
        total += py_draughts_perft(board, depth - 1)
        board.pop()  # type: ignore[attr-defined]
    return total


def pydraughts_perft(board: object, depth: int) -> int:
    """pydraughts perft, bulk-counting the last ply."""
    moves = board.legal_moves()  # type: ignore[attr-defined]
    if depth == 1:
        return len(moves)
    total = 0
    for move in moves:
        board.push(move)  # type: ignore[attr-defined]
        total += pydraughts_perft(board, depth - 1)
        board.pop()  # type: ignore[attr-defined]
    return total


def check(variant: str, depth: int, nodes: int) -> str:
    """'ok', 'WRONG' or '?' against the published table."""
    table = PUBLISHED.get(variant, [])
    if depth > len(table):
        return "?"
    return "ok" if table[depth - 1] == nodes else f"WRONG (published {table[depth - 1]:,})"


def rate(nodes: int, seconds: float) -> str:
    """Thousands of nodes per second."""
    return f"{nodes / seconds / 1000:>7,.0f} kn/s" if seconds > 0 else "      - kn/s"


def main() -> None:
    """Run the side-by-side benchmark and print one block per variant."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default=",".join(v.value for v in Variant))
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs per measurement")
    parser.add_argument("--deep", action="store_true", help="also run ours at the deeper published depths")
    args = parser.parse_args()

    for name in args.variants.split(","):
        variant = Variant(name)
        start = Position.initial(variant)
        print(f"== {variant.value}")
        depth = OURS_DEPTH[name]
        nodes, seconds = timed(args.repeat, perft, start, depth)
        print(line("ours", depth, nodes, seconds, check(name, depth, nodes)))
        nodes, seconds = timed(args.repeat, api_perft, start, depth - 1)
        print(line("ours-api", depth - 1, nodes, seconds, check(name, depth - 1, nodes)))
        if name in PEER_DEPTH and py_draughts_board(name) is not None:
            peer = PEER_DEPTH[name]
            nodes, seconds = timed(args.repeat, lambda n, d: py_draughts_perft(py_draughts_board(n), d), name, peer)
            print(line("py-draughts", peer, nodes, seconds, check(name, peer, nodes)))
            if name == "international":
                from draughts.engines.turbo import perft_from_board

                nodes, seconds = timed(
                    args.repeat, lambda n, d: perft_from_board(py_draughts_board(n), d), name, peer + 1
                )
                verdict = check(name, peer + 1, nodes) + "  (its international-only search core)"
                print(line("py-d turbo", peer + 1, nodes, seconds, verdict))
        else:
            print("  py-draughts (no such variant)")
        if name in PYDRAUGHTS_DEPTH:
            try:
                from draughts.core.variant import Board as PyDraughtsBoard  # pydraughts
            except ImportError:
                print("  pydraughts  (not installed)")
            else:
                pyd_name = "standard" if name == "international" else name
                pyd = PYDRAUGHTS_DEPTH[name]
                nodes, seconds = timed(args.repeat, lambda n, d: pydraughts_perft(PyDraughtsBoard(n), d), pyd_name, pyd)
                print(line("pydraughts", pyd, nodes, seconds, check(name, pyd, nodes)))
        if args.deep:
            deep = DEEP_DEPTH[name]
            nodes, seconds = timed(1, perft, start, deep)
            print(line("ours deep", deep, nodes, seconds, check(name, deep, nodes)))


if __name__ == "__main__":
    main()
