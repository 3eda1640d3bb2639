"""`arbiter up`: run the whole system on this machine until Ctrl-C."""

from __future__ import annotations

import argparse
import json
import signal
import time
from pathlib import Path

from arbiter.devstack.stack import SystemStack


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `up` subcommand."""
    parser = subparsers.add_parser(
        "up", help="run the embedded infrastructure and the five services until Ctrl-C",
        description="Start tansu, Redis and PostgreSQL (or use KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, DATABASE_URL "
                    "when reachable), migrate, start the five services and print every address.",
    )
    parser.add_argument("--state-dir", type=Path, default=Path(".arbiter"), help="logs and embedded PostgreSQL data")
    parser.add_argument("--time-scale", type=float, default=1.0, help="competition seconds per real second")
    parser.add_argument("--free-ports", action="store_true", help="pick free ports instead of the defaults")
    parser.add_argument("--exit-when-serving", action="store_true", help="stop once every service is SERVING")
    parser.add_argument("--json", action="store_true", help="print the addresses as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Start everything, print the addresses, wait for Ctrl-C, stop everything."""
    started = time.monotonic()
    say = (lambda _line: None) if args.json else print
    stack = SystemStack(args.state_dir.resolve(), time_scale=args.time_scale, free_ports=args.free_ports, say=say)

    def on_signal(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        stack.start_infrastructure()
        stack.start_services()
        stack.wait_serving(timeout=60)
        elapsed = time.monotonic() - started
        addresses = {
            name: {"grpc": s.grpc_address, "metrics": s.metrics_url} for name, s in stack.services.items()
        }
        if args.json:
            print(json.dumps({
                "kafka": stack.kafka_bootstrap, "redis": stack.redis_url, "database": stack.database_url,
                "services": addresses, "seconds_to_serving": round(elapsed, 2),
            }))
        else:
            for name, where in addresses.items():
                print(f"{name:10} grpc {where['grpc']}  metrics {where['metrics']}")
            print(f"all five services SERVING after {elapsed:.1f} s; logs in {stack.log_dir}; Ctrl-C stops")
        if not args.exit_when_serving:
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        say("stopping")
    finally:
        stack.stop()
    return 0
