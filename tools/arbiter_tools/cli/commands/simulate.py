"""`arbiter simulate`: the play-site simulator against a running system."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime

from arbiter.kit.eventloop import DEFAULT_EVENT_LOOP, run_stoppable
from arbiter.kit.timesource import TimeSource
from arbiter_tools.simulator.run import RunOptions, print_final, quiet_client_logs, run_scenario
from arbiter_tools.simulator.scenario import SCENARIOS, Addresses, run_failed


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `simulate` subcommand."""
    parser = subparsers.add_parser(
        "simulate", help="bots that create, join and play tournaments and arenas on a running system",
        description="Create and join competitions over gRPC with a population of bots (guests and computer "
                    "accounts are refused, A-1), open every GameRequested, play random legal moves at a "
                    "configurable pace and publish the play site's events, then print the final tables. "
                    "Addresses come from PAIRING_GRPC_ADDR, ARENA_GRPC_ADDR, CLOCK_GRPC_ADDR and "
                    "KAFKA_BOOTSTRAP_SERVERS; TIME_SCALE and TIME_ORIGIN must be the services' own; "
                    "AUTH_SIGNING_KEY signs service tokens when the services require them. --prefix also names the "
                    "play site's consumer group (PREFIXplaysite), so that two runs on one system each receive all "
                    "their games. Ctrl-C stops the run (exit code 130).",
    )
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="small", help="what to play")
    parser.add_argument("--bots", type=int, default=0, help="registered bot accounts (default: what it needs)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the moves and the behaviour profiles")
    parser.add_argument("--think", type=float, nargs=2, default=(1.0, 4.0), metavar=("MIN", "MAX"),
                        help="competition seconds between two plies (uniform)")
    parser.add_argument("--timeout", type=float, default=600.0, help="real seconds before giving up")
    parser.add_argument("--prefix", default="", help="prefix of account ids (two runs on one system)")
    parser.add_argument("--kafka", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", ""), help="bootstrap servers")
    parser.add_argument("--pairing-addr", default=os.environ.get("PAIRING_GRPC_ADDR", ""))
    parser.add_argument("--arena-addr", default=os.environ.get("ARENA_GRPC_ADDR", ""))
    parser.add_argument("--clock-addr", default=os.environ.get("CLOCK_GRPC_ADDR", ""))
    parser.add_argument("--time-scale", type=float, default=float(os.environ.get("TIME_SCALE", "1") or 1))
    parser.add_argument("--time-origin", default=os.environ.get("TIME_ORIGIN", ""),
                        help="ISO instant shared with the services (needed with a time scale)")
    parser.add_argument("--no-live", action="store_true", help="no live view, progress lines only at the end")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Play the scenario and print the final tables (or the JSON report)."""
    if not args.kafka:
        print("simulate: set KAFKA_BOOTSTRAP_SERVERS or --kafka", file=sys.stderr)
        return 2
    origin = datetime.fromisoformat(args.time_origin) if args.time_origin else None
    try:
        time_source = TimeSource(args.time_scale, origin)
    except ValueError as error:
        print(f"simulate: {error} (TIME_ORIGIN / --time-origin)", file=sys.stderr)
        return 2
    quiet_client_logs()
    addresses = Addresses(pairing=args.pairing_addr, arena=args.arena_addr, clock=args.clock_addr,
                          auth_signing_key=os.environ.get("AUTH_SIGNING_KEY", ""))
    options = RunOptions(seed=args.seed, think_seconds=tuple(args.think), timeout=args.timeout,
                         live=not (args.json or args.no_live), bots=args.bots, prefix=args.prefix)
    report, runner = run_stoppable(DEFAULT_EVENT_LOOP, lambda: run_scenario(
        SCENARIOS[args.scenario](), addresses, args.kafka, time_source, options))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_final(runner)
    return 1 if run_failed(report) else 0
