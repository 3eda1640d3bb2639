"""`arbiter tripleblock`: the Triple Block schedule for a requested duration (TB-5)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, date, datetime

from arbiter.clocks.tripleblock import ScheduleError, schedule_for, schedule_table


def _iso_date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date (YYYY-MM-DD): {text!r}") from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `tripleblock` subcommand."""
    parser = subparsers.add_parser(
        "tripleblock",
        help="Triple Block schedule (increment, bank, length, end) for a duration (TB-5)",
        description=(
            "Compute the ICCF Triple Block schedule the server picks for a requested event "
            "duration: the largest increment (1..9 days) and bank (50 or 75 days) whose "
            "length 2 x (50 + 50 x increment + bank) days fits (TB-5)."
        ),
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--days", type=int, metavar="N", help="requested duration in days (>= 300)")
    what.add_argument(
        "--table", action="store_true", help="print every (increment, bank) combination"
    )
    parser.add_argument(
        "--start",
        type=_iso_date,
        metavar="DATE",
        help="start date, YYYY-MM-DD (default: today, UTC)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the schedule for `--days`, or the whole table; 2 on a duration too short."""
    if args.table:
        rows = schedule_table()
        if args.json:
            print(
                json.dumps(
                    [
                        {"increment_days": inc, "bank_days": bank, "length_days": length}
                        for inc, bank, length in rows
                    ]
                )
            )
        else:
            print(f"{'increment':>9} {'bank':>5} {'length':>7}   (days)")
            for inc, bank, length in rows:
                print(f"{inc:>9} {bank:>5} {length:>7}")
        return 0
    start = args.start or datetime.now(UTC).date()
    try:
        schedule = schedule_for(args.days, start)
    except ScheduleError as error:
        print(f"arbiter tripleblock: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {
                    "increment_days": schedule.increment_days,
                    "bank_days": schedule.bank_days,
                    "length_days": schedule.length_days,
                    "end": schedule.end.isoformat(),
                }
            )
        )
    else:
        per_move = "day" if schedule.increment_days == 1 else "days"
        print(f"increment  {schedule.increment_days} {per_move} per move (first 50 moves)")
        print(f"bank       {schedule.bank_days} days")
        print(f"length     {schedule.length_days} days")
        print(f"start      {schedule.start.isoformat()}")
        print(f"end        {schedule.end.isoformat()}")
    return 0
