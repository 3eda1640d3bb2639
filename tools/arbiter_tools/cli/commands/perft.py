"""`arbiter perft VARIANT DEPTH`: count the leaf nodes of the move tree (move generator check)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from arbiter.draughts import DraughtsError, Position, Variant, perft


def register(subparsers: Any) -> None:
    """Add the `perft` subcommand."""
    parser = subparsers.add_parser(
        "perft",
        help="count the positions DEPTH plies ahead (draughts move generator check)",
        description="Count the leaf nodes DEPTH plies below the initial position (or --fen) of a "
        "draughts variant. Captures that take the same pieces by two routes count once (the FMJD "
        "convention) unless --routes is given; the last ply is bulk-counted. Variants: "
        + ", ".join(v.value for v in Variant)
        + ".",
    )
    parser.add_argument("variant", metavar="VARIANT", help="draughts variant, e.g. international")
    parser.add_argument("depth", type=int, metavar="DEPTH", help="plies to search (>= 0)")
    parser.add_argument("--fen", help="start from this PDN FEN instead, e.g. 'W:W31-50:B1-20'")
    parser.add_argument(
        "--routes",
        action="store_true",
        help="count every route of a capture, one per order of the pieces taken (the convention of "
        'perft tables published with "duplicates kept")',
    )
    parser.add_argument(
        "--json", action="store_true", help='print JSON: {"nodes": N, "seconds": S, "routes": true|false}'
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the leaf count; exit 2 on an unknown variant, a bad FEN or a negative depth."""
    if args.depth < 0:
        print(f"arbiter perft: depth must be >= 0, got {args.depth}", file=sys.stderr)
        return 2
    try:
        position = Position.from_fen(args.variant, args.fen) if args.fen else Position.initial(args.variant)
    except DraughtsError as error:
        print(f"arbiter perft: {error}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    nodes = perft(position, args.depth, every_route=args.routes)
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps({"nodes": nodes, "seconds": round(seconds, 6), "routes": args.routes}))
    else:
        rate = f", {nodes / seconds:,.0f} nodes/s" if seconds > 0 else ""
        counted = ", every route" if args.routes else ""
        print(f"perft({args.depth}) = {nodes} ({seconds:.3f} s{rate}{counted})")
    return 0
