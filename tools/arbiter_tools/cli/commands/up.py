"""`arbiter up`: run the whole system on this machine until Ctrl-C; with --demo, play the demo scenario."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from arbiter.kit.eventloop import DEFAULT_EVENT_LOOP, interrupt_once, run_stoppable
from arbiter.kit.events import PLAY_SITE_USER
from arbiter_tools.devstack.processes import signals_deferred
from arbiter_tools.devstack.replicas import ReplicaSpecError, parse_replicas, replicas_line, replicas_status
from arbiter_tools.devstack.stack import SERVICE_NAMES, WATCHED_SERVICES, ServiceProcess, SystemStack
from arbiter_tools.devstack.supervisor import Supervisor, clear_leftovers

# The demo plays about an hour of competition time; at 40x it takes a minute or two of wall time.
DEMO_TIME_SCALE = 40.0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `up` subcommand."""
    parser = subparsers.add_parser(
        "up", help="run the embedded infrastructure and the five services until Ctrl-C (--demo: and play)",
        description="Start tansu, Redis and PostgreSQL (or use KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, DATABASE_URL "
                    "when reachable), the lag exporter (consumer lag seen from the broker, on kafka-exporter's "
                    "metric names), migrate, start the five services and print every address. With --demo, "
                    "the play-site simulator then plays the demo scenario (round robin, forced double, Swiss with "
                    "home and away on an Italian opening draw, arena, Triple Block game) with a live view and "
                    "prints the final tables.",
    )
    parser.add_argument("--state-dir", type=Path, default=Path(".arbiter"), help="logs and embedded PostgreSQL data")
    parser.add_argument("--time-scale", type=float, default=None,
                        help=f"competition seconds per real second (default 1; {DEMO_TIME_SCALE:g} with --demo)")
    parser.add_argument("--free-ports", action="store_true", help="pick free ports instead of the defaults")
    parser.add_argument("--replicas", action="append", default=[], metavar="N|SERVICE=N",
                        help="replicas per service: N for every service, SERVICE=N for one (repeatable, or "
                             "comma-separated: --replicas 2 --replicas clock=3); topics get at least as many "
                             "partitions as the most replicas, and each service's callers dial every replica")
    parser.add_argument("--watch-servers", action="store_true",
                        help="also start a watch server of pairing and of arena (WATCH_ONLY): processes that serve "
                             "the Watch streams, at a lower CPU priority, so that crowds of watchers take nothing "
                             "from the calls; watchers dial the addresses printed for them")
    parser.add_argument("--exit-when-serving", action="store_true", help="stop once every service is SERVING")
    parser.add_argument("--demo", action="store_true", help="play the demo scenario with a live terminal view")
    parser.add_argument("--exit-when-done", action="store_true", help="with --demo: stop after the final tables")
    parser.add_argument("--seed", type=int, default=1, help="with --demo: seed of the moves and behaviours")
    parser.add_argument("--no-auth", action="store_true",
                        help="serve without service tokens and without Kafka authentication (by default a key is made "
                             "for the run unless AUTH_KEYS is set, and Kafka clients of the embedded broker "
                             "authenticate with this run's passwords)")
    parser.add_argument("--json", action="store_true", help="print the addresses (and the demo report) as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Start everything, print the addresses, play the demo if asked, wait for Ctrl-C, stop everything."""
    started = time.monotonic()
    say = (lambda _line: None) if args.json else print
    scale = args.time_scale if args.time_scale is not None else (DEMO_TIME_SCALE if args.demo else 1.0)
    try:
        counts = parse_replicas(args.replicas, SERVICE_NAMES)
    except ReplicaSpecError as error:
        print(f"arbiter up: {error}", file=sys.stderr)
        return 2
    stack = SystemStack(args.state_dir.resolve(), time_scale=scale, free_ports=args.free_ports, say=say,
                        auth=not args.no_auth, kafka_auth=not args.no_auth, replica_counts=counts)

    supervisor = Supervisor(stack, say)
    interrupt_once()
    code = 0
    interrupted = False
    try:
        clear_leftovers(stack.state_dir, say)
        stack.start_infrastructure()
        stack.start_lag_exporter()
        stack.start_services()
        if args.watch_servers:
            for name in WATCHED_SERVICES:
                stack.start_watch_server(name)
        supervisor.start()
        stack.wait_serving(timeout=60)
        elapsed = time.monotonic() - started
        addresses: dict[str, dict[str, Any]] = {
            name: {"grpc": stack.grpc_target(name), "metrics": s.metrics_url,
                   "replicas": [_addresses(r) for r in stack.replicas_of(name)]}
            for name, s in stack.services.items()
        }
        for name, server in stack.watch_servers.items():
            addresses[name]["watch"] = _addresses(server)
        summary = {
            "kafka": stack.kafka_bootstrap, "redis": stack.redis_url, "database": stack.database_url,
            "services": addresses, "lag_exporter": {"metrics": stack.lag_exporter_url},
            "kafka_partitions": stack.kafka_partitions,
            "seconds_to_serving": round(elapsed, 2),
            "time_scale": scale, "time_origin": stack.time_origin,
        }
        if args.json and not args.demo:
            print(json.dumps(summary))
        else:
            say(f"{'lag':10} metrics {stack.lag_exporter_url} (consumer lag seen from the broker)")
            if max(counts.values()) > 1:
                say(replicas_line(counts, stack.kafka_partitions))
            for name in stack.services:
                for process in stack.processes_of(name):
                    say(f"{process.label:10} grpc {process.grpc_address}  metrics {process.metrics_url}")
            processes = sum(len(stack.processes_of(name)) for name in stack.services)
            say(f"all five services SERVING ({processes} processes) after {elapsed:.1f} s; logs in {stack.log_dir}; "
                "Ctrl-C stops")
            # What `arbiter simulate` (or a script) needs to join this system from another shell.
            env = {"KAFKA_BOOTSTRAP_SERVERS": stack.kafka_bootstrap, "TIME_SCALE": repr(scale),
                   **({"TIME_ORIGIN": stack.time_origin} if stack.time_origin else {}),
                   **{f"{n.upper()}_GRPC_ADDR": stack.grpc_target(n) for n in stack.services}}
            exports = " ".join(f"{k}={v}" for k, v in env.items())
            if stack.auth_signing_key and not stack.environ.get("AUTH_SIGNING_KEY"):
                exports += f' AUTH_SIGNING_KEY="$(cat {stack.state_dir / "auth-playsite-key"})"'
            site_kafka = stack.kafka_env(PLAY_SITE_USER)
            if site_kafka:
                exports += (f" KAFKA_SECURITY_PROTOCOL={site_kafka['KAFKA_SECURITY_PROTOCOL']}"
                            f" KAFKA_SASL_MECHANISM={site_kafka['KAFKA_SASL_MECHANISM']}"
                            f" KAFKA_SASL_USERNAME={PLAY_SITE_USER}"
                            f' KAFKA_SASL_PASSWORD="$(cat {stack.state_dir / f"kafka-{PLAY_SITE_USER}-password"})"')
            say("to simulate from another shell: export " + exports)
        if args.demo:
            from arbiter_tools.simulator.scenario import run_failed

            report = _demo(stack, args, started)
            code = 1 if run_failed(report) else 0
            if args.json:
                print(json.dumps({**summary, "demo": report}))
            if args.exit_when_done:
                return code
            say("the demo is over; the system keeps serving until Ctrl-C")
        if not args.exit_when_serving:
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        # A Ctrl-C pressed again anywhere in the stop, from the first word on, is told the stop is
        # under way; one deferral covers the supervisor and the stack, so no signal slips between them.
        with signals_deferred(say):
            if interrupted:
                say("stopping")
            supervisor.stop()
            stack.stop()
    return code


def _demo(stack: SystemStack, args: argparse.Namespace, started: float) -> dict:
    """Play the demo scenario against `stack` with the in-process play site; print the final tables."""
    from arbiter.kit.timesource import TimeSource
    from arbiter_tools.simulator.run import RunOptions, print_final, quiet_client_logs, run_scenario
    from arbiter_tools.simulator.scenario import Addresses, demo_scenario

    quiet_client_logs()
    # The in-process play site reads its Kafka credentials as any play site does: from the environment.
    os.environ.update(stack.kafka_env(PLAY_SITE_USER))
    origin = datetime.fromisoformat(stack.time_origin) if stack.time_origin else None
    time_source = TimeSource(stack.time_scale, origin)
    addresses = Addresses(
        pairing=stack.grpc_target("pairing"), arena=stack.grpc_target("arena"),
        clock=stack.grpc_target("clock"), rating=stack.grpc_target("rating"),
        auth_signing_key=stack.auth_signing_key,
    )
    # Account ids carry a run tag: embedded PostgreSQL keeps earlier runs' competitions (A-2).
    tag = _base36(int(time.time()) // 10 % 36**3).rjust(3, "0")
    options = RunOptions(seed=args.seed, live=not args.json, prefix=f"{tag}-", timeout=900.0,
                         system_lines=lambda: [replicas_status(_replica_states(stack))])
    out = sys.stderr if args.json else sys.stdout
    report, runner = run_stoppable(DEFAULT_EVENT_LOOP, lambda: run_scenario(
        demo_scenario(), addresses, stack.kafka_bootstrap, time_source, options, out=out))
    print_final(runner, out=out)
    print(f"demo finished in {time.monotonic() - started:.0f} s of wall time (start-up included)", file=out)
    return report


def _replica_states(stack: SystemStack) -> dict[str, list[tuple[str, bool]]]:
    """Each service's replicas by name, and whether its process still runs."""
    return {name: [(r.label, r.process is not None and not r.process.exited()) for r in stack.replicas_of(name)]
            for name in stack.services}


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, rest = divmod(number, 36)
        text = digits[rest] + text
        if not number:
            return text


def _addresses(process: ServiceProcess) -> dict[str, str]:
    """A replica's or a watch server's name and addresses, as --json gives them."""
    return {"name": process.label, "grpc": process.grpc_address, "metrics": process.metrics_url}
