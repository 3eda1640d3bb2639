"""`arbiter rounds N`: the format, round count and games per pairing a start with N entrants fixes (T-2, T-9..T-12)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from arbiter.competition.formats import DEFAULT_THRESHOLD, FormatError, plan_rounds


def register(subparsers: Any) -> None:
    """Add the `rounds` subcommand."""
    parser = subparsers.add_parser(
        "rounds",
        help="format, rounds and games per pairing for N entrants (T-2, T-9..T-12)",
        description="Show what a tournament start with N entrants fixes: round robin or Swiss, "
        "the number of rounds and the games per pairing, with the SPEC rules that decided.",
    )
    parser.add_argument("entrants", type=int, metavar="N", help="entrants registered at the start (4..200)")
    parser.add_argument(
        "--threshold",
        type=int,
        default=DEFAULT_THRESHOLD,
        metavar="T",
        help=f"round robin below T entrants, Swiss from T on (7..20, default {DEFAULT_THRESHOLD}; T-1, T-2)",
    )
    parser.add_argument("--extra", action="store_true", help="the extra-round switch (T-11)")
    parser.add_argument("--double", action="store_true", help="the home-and-away switch (T-12)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the round plan; exit 2 on entrants or threshold the SPEC does not allow."""
    try:
        plan = plan_rounds(args.entrants, args.threshold, extra_round=args.extra, double=args.double)
    except FormatError as error:
        print(f"arbiter rounds: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {
                    "format": plan.format.value,
                    "rounds": plan.rounds,
                    "games_per_pairing": plan.games_per_pairing,
                    "rules": list(plan.rules),
                }
            )
        )
        return 0
    name = "round robin" if plan.format.value == "round_robin" else "Swiss"
    print(f"format: {name}")
    print(f"rounds: {plan.rounds}")
    print(f"games per pairing: {plan.games_per_pairing}")
    print(f"rules: {', '.join(plan.rules)}")
    for reason in plan.reasons:
        print(f"  {reason}")
    return 0
