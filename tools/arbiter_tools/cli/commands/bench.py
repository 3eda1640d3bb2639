"""`arbiter bench`: the load benchmark of the whole system, driven by the play-site simulator."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from datetime import datetime
from pathlib import Path

from arbiter.kit.eventloop import DEFAULT_EVENT_LOOP, EVENT_LOOPS, interrupt_once, run_stoppable

BENCH_TIME_SCALE = 60.0
# Each Kafka hop on tansu waits up to the fetch wait: short enough to keep result -> next pairing on target.
BENCH_FETCH_WAIT_MS = 20
# The services whose consumers are no hop of result -> next pairing: niced in the rate stages.
OFF_PATH_SERVICES = ("clock", "arena", "rating", "openings")
# Those no stage measures poll five times less often, as each tansu poll costs the broker more as it runs
# (rating is measured in every stage, so it polls like the path). Figures: docs/performance.md; bench_system.py.
SLOW_POLL_SERVICES = ("clock", "arena", "openings")
BENCH_OFF_PATH_FETCH_WAIT_MS = 100
# Off the path a fetch waits for a burst's worth of records, except the clock's moves, which must not wait
# (only its life-cycle consumer does: LIFECYCLE_FETCH_MIN_BYTES). Figures: docs/performance.md.
BENCH_OFF_PATH_FETCH_MIN_BYTES = 64 * 1024
FULLER_FETCH_SERVICES = ("arena", "openings")
# Niceness of the off-path services during the stages, set on each one's scheduling group (every service
# runs in a session of its own, which the kernel schedules as one group). Figures: docs/performance.md.
BENCH_OFF_PATH_NICE = 10
EMBEDDED_BROKER_NOTE = (
    "the embedded tansu keeps every produced batch and lists all of a partition's batches on each fetch "
    "that returns records, so its CPU grows from stage to stage at the same load and later stages pay more "
    "(tests/bench/bench_broker_growth.py)"
)


def _milliseconds(text: str) -> int:
    """A whole number of milliseconds, at least 1 and at most 1,000."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of milliseconds: {text!r}") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"must be between 1 and 1000 ms, got {value}")
    return value


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="short stages and fewer tournaments (a smoke run)")
    parser.add_argument("--rates", type=int, nargs="+", help="offered tournament results per second, rising")
    parser.add_argument("--firehose-rates", type=int, nargs="+", help="offered results per second onto game.finished")
    parser.add_argument("--stage-seconds", type=float, help="real seconds per offered rate")
    parser.add_argument("--tournaments", type=int, help="round robins of 16 created for the rate stages")
    parser.add_argument("--burst-tournaments", type=int,
                        help="round robins of 16 whose first round finishes at once (0: no burst stage)")
    parser.add_argument("--time-scale", type=float, default=BENCH_TIME_SCALE, help="competition seconds per second")
    parser.add_argument("--state-dir", type=Path, help="logs and embedded PostgreSQL data (default: a temp dir)")
    parser.add_argument("--json-out", type=Path, default=Path("bench-results.json"), help="where to write JSON")
    parser.add_argument("--fetch-wait-ms", type=int, default=BENCH_FETCH_WAIT_MS,
                        help="KAFKA_FETCH_MAX_WAIT_MS of the services and the simulator (tansu answers a fetch "
                             "only when this wait ends, even when records arrive sooner; Apache Kafka answers "
                             "at once, so production keeps the 500 ms default)")
    parser.add_argument("--off-path-fetch-wait-ms", type=int, default=BENCH_OFF_PATH_FETCH_WAIT_MS,
                        help=f"KAFKA_FETCH_MAX_WAIT_MS of {', '.join(SLOW_POLL_SERVICES)}: no stage times what "
                             "they publish, so they poll less often and leave tansu's CPU to the measured path")
    parser.add_argument("--off-path-fetch-min-bytes", type=int, default=BENCH_OFF_PATH_FETCH_MIN_BYTES,
                        help=f"KAFKA_FETCH_MIN_BYTES of {', '.join(FULLER_FETCH_SERVICES)} and of the "
                             "clock's life-cycle consumer (not its moves'): a fetch waits for this much, or the "
                             "wait, before the broker answers (1 answers at the first record); fewer, fuller "
                             "fetches, each of which tansu pays for")
    parser.add_argument("--off-path-nice", type=int, choices=range(0, 20), metavar="{0..19}",
                        default=BENCH_OFF_PATH_NICE,
                        help=f"niceness of {', '.join(OFF_PATH_SERVICES)} during the rate stages, and of "
                             "those but rating (which they measure) during the burst and the firehose (default "
                             f"{BENCH_OFF_PATH_NICE}; 0 leaves them as they are): where services share a host, "
                             "CPU weights put the measured path first, as this does on the two cores, for each "
                             "service's threads and its scheduling group")
    parser.add_argument("--burst-rounds", type=int, choices=range(1, 16), metavar="{1..15}",
                        help="whole rounds released one after the other in the burst stage (default 3; "
                             "its figures are their medians)")
    parser.add_argument("--result-every-ms", type=_milliseconds,
                        help="real ms between two publications of the rate stages' results, one record batch per "
                             "topic each (default 20; tansu's work grows with the batches a partition holds)")
    parser.add_argument("--event-loop", choices=EVENT_LOOPS, default=DEFAULT_EVENT_LOOP,
                        help="event loop of the services and the load generator (EVENT_LOOP)")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of the table")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `bench` subcommand."""
    parser = subparsers.add_parser(
        "bench", help="load benchmark: raw Kafka/Redis rates, then the system under rising simulated load",
        description="Start the embedded stack and the five services, then drive them with the simulator: raw "
                    "Kafka produce/consume and Redis rates, played games (moves/s), tournament results at "
                    "rising rates (results/s, result -> next pairing, result -> rating updated, CPU per "
                    "service from /metrics), a whole round finishing at once, and a result firehose into the "
                    "rating service. Writes JSON.",
    )
    _add_arguments(parser)
    parser.set_defaults(handler=run)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of tests/bench/bench_system.py."""
    parser = argparse.ArgumentParser(prog="bench_system.py", description="load benchmark of the whole system")
    _add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Start the system, run every stage, print and write the figures."""
    from arbiter.kit.timesource import TimeSource
    from arbiter_tools.devstack.stack import SystemStack
    from arbiter_tools.simulator.bench.report import summary, write_json
    from arbiter_tools.simulator.bench.stages import BenchConfig, Target, run_bench
    from arbiter_tools.simulator.run import quiet_client_logs

    quiet_client_logs()
    config = BenchConfig()
    if args.quick:
        config = replace(config, rates=(250, 1000), stage_seconds=5.0, tournaments=30, played_tournaments=4,
                         played_seconds=5.0, firehose_rates=(1000,), firehose_seconds=2.0, drain_seconds=20.0,
                         raw_messages=10_000, redis_ops=5_000, burst_tournaments=25)
    if args.rates:
        config = replace(config, rates=tuple(args.rates))
    if args.firehose_rates:
        config = replace(config, firehose_rates=tuple(args.firehose_rates))
    if args.stage_seconds:
        config = replace(config, stage_seconds=args.stage_seconds)
    if args.tournaments:
        config = replace(config, tournaments=args.tournaments)
    if args.burst_rounds is not None:
        config = replace(config, burst_rounds=args.burst_rounds)
    if args.result_every_ms is not None:
        config = replace(config, result_every_ms=args.result_every_ms)
    if args.burst_tournaments is not None:
        config = replace(config, burst_tournaments=args.burst_tournaments)
    config = replace(config, off_path_nice=args.off_path_nice)
    out = sys.stderr if args.json else sys.stdout
    say = lambda line: print(line, file=out, flush=True)  # noqa: E731 - progress must show when piped
    with tempfile.TemporaryDirectory(prefix="arbiter-bench-") as scratch:
        state_dir = (args.state_dir or Path(scratch)).resolve()
        fetch_wait = {"KAFKA_FETCH_MAX_WAIT_MS": str(args.fetch_wait_ms)}
        # The in-process play site reads its Kafka settings from the environment too.
        os.environ.update(fetch_wait)
        slow_poll_wait = {"KAFKA_FETCH_MAX_WAIT_MS": str(args.off_path_fetch_wait_ms)}
        fuller_fetches = {"KAFKA_FETCH_MIN_BYTES": str(args.off_path_fetch_min_bytes)}
        slow_poll_env = {name: {**slow_poll_wait, **(fuller_fetches if name in FULLER_FETCH_SERVICES else {})}
                         for name in SLOW_POLL_SERVICES}
        slow_poll_env["clock"]["LIFECYCLE_FETCH_MIN_BYTES"] = str(args.off_path_fetch_min_bytes)
        stack = SystemStack(state_dir, time_scale=args.time_scale, free_ports=True, say=say,
                            database_name=f"arbiter_bench_{int(time.time())}",
                            extra_env={**fetch_wait, "EVENT_LOOP": args.event_loop}, auth=True,
                            service_extra_env=slow_poll_env)
        interrupt_once()
        try:
            stack.start_infrastructure()
            stack.start_services()
            stack.wait_serving(timeout=90)
            say("all five services SERVING; benchmark starts")
            target = Target(
                kafka=stack.kafka_bootstrap, redis_url=stack.redis_url,
                pairing=stack.services["pairing"].grpc_address,
                metrics={name: s.metrics_url for name, s in stack.services.items()},
                time_source=TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin)),
                rating=stack.services["rating"].grpc_address,
                auth_signing_key=stack.auth_signing_key, watch_fetch_wait_ms=args.fetch_wait_ms,
                consumer_groups=stack.consumer_groups(),
                off_path_pids={name: process.pid for name in OFF_PATH_SERVICES
                               if (process := stack.services[name].process) is not None},
            )
            report = run_stoppable(args.event_loop, lambda: run_bench(target, config, say))
            # What each consumer process was given: the services' own settings, the in-process readers' shared ones.
            given = {name: {**fetch_wait, **slow_poll_env.get(name, {})}
                     for name in (*stack.services, "play site", "rating watch")}
            report.machine["kafka_fetch_wait_ms"] = {
                name: int(env["KAFKA_FETCH_MAX_WAIT_MS"]) for name, env in given.items()}
            report.machine["kafka_fetch_min_bytes"] = {
                **{name: int(env.get("KAFKA_FETCH_MIN_BYTES", 1)) for name, env in given.items()},
                "clock life cycle": int(slow_poll_env["clock"]["LIFECYCLE_FETCH_MIN_BYTES"])}
            if stack.kafka_embedded:
                report.notes.append(EMBEDDED_BROKER_NOTE)
        except KeyboardInterrupt:
            say("interrupted")
            return 130
        finally:
            stack.stop()
    write_json(report, str(args.json_out))
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(summary(report))
        print(f"written to {args.json_out}")
    return 0
