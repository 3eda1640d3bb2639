"""`arbiter openings`: list an official opening table, or the part a mode draws from (O-5..O-9)."""

from __future__ import annotations

import argparse
import json
import sys

from arbiter.openings.modes import OpeningMode
from arbiter.openings.tables import OpeningError, eligible, load_table

# O-5..O-9: the modes that use the official table.
_TABLE_MODES = [mode.value for mode in OpeningMode if mode.uses_official_table()]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `openings` subcommand."""
    parser = subparsers.add_parser(
        "openings",
        help="list an official three-move opening table (italian, english) (O-5..O-9)",
        description=(
            "List the official three-move openings of a variant: number, moves, class "
            "(PARI, 1N/1B .. 4N). With --mode, only the openings that mode draws from: "
            "PARI plus every level up to k for table_up_to_k (O-5..O-8)."
        ),
    )
    parser.add_argument("variant", metavar="VARIANT", help="italian or english")
    parser.add_argument(
        "--mode",
        choices=_TABLE_MODES,
        default=OpeningMode.TABLE_ALL.value,
        help="opening mode whose eligible openings are listed (default table_all)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the openings; 2 for a variant without an official table."""
    mode = OpeningMode(args.mode)
    try:
        table = load_table(args.variant)
    except OpeningError as error:
        print(f"arbiter openings: {error}", file=sys.stderr)
        return 2
    openings = eligible(table, mode)
    if args.json:
        print(
            json.dumps(
                {
                    "variant": table.variant,
                    "mode": mode.value,
                    "source": table.source,
                    "count": len(openings),
                    "openings": [
                        {
                            "number": o.number,
                            "name": o.name,
                            "moves": list(o.moves),
                            "class": o.class_label,
                            "level": o.level,
                            "favours": None if o.favours is None else o.favours.value,
                            "fen_after": o.fen_after,
                        }
                        for o in openings
                    ],
                },
                indent=2,
            )
        )
        return 0
    print(f"{table.title}")
    print(f"source: {table.source}")
    print(f"mode {mode.value} ({mode.rule}): {len(openings)} openings")
    for o in openings:
        name = f"  {o.name}" if o.name else ""
        print(f"{o.number:>4}  {o.moves_text:<20} {o.class_label:<5}{name}".rstrip())
    return 0
