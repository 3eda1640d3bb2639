"""`arbiter berger N`: the FIDE Berger table for N entrants, one round per line, White first (T-14)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from arbiter.competition.berger import BYE, berger_table

# T-2: a round robin has at most 19 entrants, so its table has at most 20 numbers.
MAX_ENTRANTS = 20


def register(subparsers: Any) -> None:
    """Add the `berger` subcommand."""
    parser = subparsers.add_parser(
        "berger",
        help="the Berger round robin table for N entrants (T-14)",
        description="Print the FIDE C.05 Annex 1 Berger table for N entrants, one round per line, "
        "White first. For odd N the entrant meeting the bye number rests (shown as k-bye). "
        "With --double every pairing plays a second game with colours reversed (T-10, T-12).",
    )
    parser.add_argument("entrants", type=int, metavar="N", help=f"number of entrants (2..{MAX_ENTRANTS})")
    parser.add_argument(
        "--double", action="store_true", help="home and away: each game followed by its return game (T-12)"
    )
    parser.add_argument("--json", action="store_true", help='print JSON: {"rounds": [[[white, black], ...], ...]}')
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the table; exit 2 on a size no round robin has."""
    if not 2 <= args.entrants <= MAX_ENTRANTS:
        print(
            f"arbiter berger: {args.entrants} entrants: a round robin has 2..{MAX_ENTRANTS} "
            f"(at most 19 entrants play one, T-2)",
            file=sys.stderr,
        )
        return 2
    games_per_pairing = 2 if args.double else 1
    rounds = []
    for berger_round in berger_table(args.entrants):
        games = [[board.white, board.black] for board in berger_round.games(games_per_pairing)]
        if berger_round.bye is not None:
            # FIDE prints the pair with the bye number on board 1 (T-8: one rest per round).
            games.insert(0, [berger_round.bye, BYE])
        rounds.append(games)
    if args.json:
        print(json.dumps({"rounds": rounds}))
        return 0
    for number, games in enumerate(rounds, start=1):
        cells = [f"{white}-{'bye' if black == BYE else black}" for white, black in games]
        print(f"R{number}: {' '.join(cells)}")
    return 0
