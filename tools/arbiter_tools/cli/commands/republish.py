"""`arbiter republish`: the services' events published since a moment, sent again (after a broker lost them).

Each service's outbox relay keeps what it published for OUTBOX_KEEP_PUBLISHED_HOURS in its
schema's `outbox_published` table. This command puts the events published since `--since` (or
in the last `--minutes`) back into each outbox, in their order; the running services' relays
publish them again, and every consumer, deduplicating on the event id, applies only what it had
not. README.md, "Losing the broker", says what it cannot bring back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from datetime import UTC, datetime, timedelta

from arbiter_tools.devstack.republish import OUTBOX_SCHEMAS, republish_all, republished_total


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `republish`."""
    parser = subparsers.add_parser(
        "republish", help="send the services' published events again (after a broker lost them)",
        description="Put the events the services' outboxes published since --since (or in the last --minutes) back"
                    " into their outboxes; the running services publish them again and consumers skip the ones"
                    " they had (README.md, Losing the broker).")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""),
                        help="the services' database (default: $DATABASE_URL)")
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--since", type=_moment, help="an ISO 8601 moment (UTC unless it names its zone), e.g. when "
                                                   "the lost broker started")
    when.add_argument("--minutes", type=float, help="the last this many minutes")
    parser.add_argument("--service", action="append", choices=OUTBOX_SCHEMAS, default=[],
                        help="only this service's outbox (repeatable; default: all five)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def _moment(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def run(args: argparse.Namespace) -> int:
    """Put the chosen published events back into their outboxes and print how many, by service and topic."""
    if not args.database_url:
        print("arbiter republish: no database: give --database-url or set DATABASE_URL", file=sys.stderr)
        return 2
    if args.minutes is not None and args.minutes <= 0:
        print("arbiter republish: --minutes must be positive", file=sys.stderr)
        return 2
    since = args.since or datetime.now(UTC) - timedelta(minutes=args.minutes)
    counts = asyncio.run(republish_all(args.database_url, since, tuple(args.service) or OUTBOX_SCHEMAS))
    total = republished_total(counts)
    if args.json:
        print(json.dumps({"since": since.isoformat(), "events": total,
                          "by_service": {service: dict(topics) for service, topics in counts.items()}}))
        return 0
    print(f"{total} events published since {since.isoformat()} put back to be published again")
    for service, topics in counts.items():
        for topic, count in sorted(topics.items()):
            print(f"  {service:10} {topic:24} {count}")
    return 0
