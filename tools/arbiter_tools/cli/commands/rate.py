"""`arbiter rate`: a Glicko-2 calculator for one rating period (R-5)."""

from __future__ import annotations

import argparse
import json
import sys

from arbiter.rating.glicko2 import DEFAULT_TAU, Glicko2Error, PeriodGame, Rating, rate
from arbiter.vocabulary import Score

_SCORES = {"win": Score.WIN, "draw": Score.DRAW, "loss": Score.LOSS}


def _game(text: str) -> PeriodGame:
    """Parse OPP_RATING:OPP_RD:win|draw|loss."""
    parts = text.split(":")
    if len(parts) != 3 or parts[2].lower() not in _SCORES:
        raise argparse.ArgumentTypeError(
            f"expected OPP_RATING:OPP_RD:win|draw|loss, e.g. 1400:30:win, not {text!r}"
        )
    try:
        opponent_rating, opponent_rd = float(parts[0]), float(parts[1])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"opponent rating and RD must be numbers in {text!r}"
        ) from None
    return PeriodGame(opponent_rating, opponent_rd, _SCORES[parts[2].lower()].value)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `rate` subcommand."""
    parser = subparsers.add_parser(
        "rate",
        help="Glicko-2: apply one rating period to a rating (R-5)",
        description=(
            "Apply one Glicko-2 rating period (Glickman's definition) to a rating and print "
            "the new rating, deviation and volatility. Without --game only the deviation "
            "grows, as for a period without games."
        ),
    )
    parser.add_argument("--rating", type=float, required=True, help="current rating, e.g. 1500")
    parser.add_argument("--rd", type=float, required=True, help="current deviation, 0 < RD <= 350")
    parser.add_argument("--vol", type=float, required=True, help="current volatility, e.g. 0.06")
    parser.add_argument(
        "--tau", type=float, default=DEFAULT_TAU, help=f"system constant (default {DEFAULT_TAU})"
    )
    parser.add_argument(
        "--game",
        type=_game,
        action="append",
        default=[],
        metavar="OPP_RATING:OPP_RD:RESULT",
        help="a game of the period, RESULT win|draw|loss; repeat for each game",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the rating after the period; 2 on inputs outside the Glicko-2 system."""
    try:
        new = rate(Rating(args.rating, args.rd, args.vol), args.game, tau=args.tau)
    except Glicko2Error as error:
        print(f"arbiter rate: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"rating": new.rating, "rd": new.rd, "vol": new.vol}))
    else:
        provisional = " (provisional)" if new.is_provisional else ""
        print(f"rating  {new.rating:.2f}{provisional}")
        print(f"rd      {new.rd:.2f}")
        print(f"vol     {new.vol:.6f}")
    return 0
