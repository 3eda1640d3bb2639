"""`arbiter moves VARIANT`: list the legal moves of a draughts position."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from arbiter.draughts import DraughtsError, Position, Variant


def register(subparsers: Any) -> None:
    """Add the `moves` subcommand."""
    parser = subparsers.add_parser(
        "moves",
        help="list the legal moves of a draughts position",
        description="List the legal moves of the initial position (or --fen) of a draughts variant, "
        "one per line in standard numeric notation. Variants: " + ", ".join(v.value for v in Variant) + ".",
    )
    parser.add_argument("variant", metavar="VARIANT", help="draughts variant, e.g. english")
    parser.add_argument("--fen", help="the position as a PDN FEN, e.g. 'B:W21-32:B1-12'")
    parser.add_argument(
        "--json",
        action="store_true",
        help='print JSON: {"variant", "fen", "turn", "moves": [{"notation", "path", "captured", "crowns"}, ...]}',
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the moves; exit 2 on an unknown variant or a bad FEN."""
    try:
        position = Position.from_fen(args.variant, args.fen) if args.fen else Position.initial(args.variant)
    except DraughtsError as error:
        print(f"arbiter moves: {error}", file=sys.stderr)
        return 2
    moves = position.legal_moves()
    if args.json:
        print(
            json.dumps(
                {
                    "variant": position.variant.value,
                    "fen": position.to_fen(),
                    "turn": position.turn.value,
                    "moves": [
                        {
                            "notation": m.notation,
                            "path": list(m.path),
                            "captured": list(m.captured),
                            "crowns": m.crowns,
                        }
                        for m in moves
                    ],
                }
            )
        )
        return 0
    for move in moves:
        print(move.notation)
    return 0
