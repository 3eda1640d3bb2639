"""The benchmark's report: every figure as written to bench-results.json, and the figures as people read them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Report:
    """Every figure, as written to bench-results.json."""

    machine: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    played: dict[str, Any] = field(default_factory=dict)
    stages: list[dict[str, Any]] = field(default_factory=list)
    burst: dict[str, Any] = field(default_factory=dict)
    firehose: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def host_words(host: dict[str, Any] | None) -> str:
    """A stage's `host_load` as people read it."""
    if not host or host.get("busy_percent") is None:
        return "machine load unknown"
    return (f"machine busy {host['busy_percent']}% of {host['cores'] * 100}, "
            f"{host['stolen_percent']}% stolen by the host")


def _off_path_words(stage: Mapping[str, Any]) -> str:
    nice = stage.get("off_path_nice")
    return f", the services off its path at niceness {nice}" if nice else ""


def summary(report: Report) -> str:
    """The figures as people read them."""
    machine = report.machine
    trips = machine.get("socket_round_trip_us") or {}
    lines = [f"machine: {machine.get('cpus')} CPUs; compare runs by: {machine.get('python_loop_ns')} ns per Python "
             f"loop step, a socket round trip {trips.get('same_cpu')} us on one CPU and {trips.get('across_cpus')} us "
             f"across two, {machine.get('stolen_percent')}% of CPU time stolen by the host during the run; "
             f"time scale x{machine.get('time_scale')}; event loop {machine.get('event_loop')}"]
    if machine.get("kafka_fetch_wait_ms"):
        lines.append(f"kafka fetch wait, ms per consumer process: {machine['kafka_fetch_wait_ms']}")
    if machine.get("kafka_fetch_min_bytes"):
        lines.append(f"kafka fetch min bytes per consumer process: {machine['kafka_fetch_min_bytes']}")
    kafka, redis_rates = report.raw.get("kafka", {}), report.raw.get("redis", {})
    if kafka:
        lines.append(f"raw kafka: produce {kafka['produce_per_s']:,}/s ({kafka['produce_mb_per_s']} MB/s), "
                     f"consume {kafka['consume_per_s']:,}/s ({kafka['bytes']} B records)")
    if redis_rates:
        lines.append(f"raw redis: pipelined {redis_rates['pipelined_ops_per_s']:,} ops/s, "
                     f"one round trip at a time {redis_rates['round_trip_ops_per_s']:,} ops/s")
    if report.played:
        p = report.played
        lines.append(f"played games (random moves, no think time): {p['moves_per_s']} moves/s, "
                     f"{p['results_per_s']} results/s; result -> next pairing {p['result_to_next_pairing_ms']}")
        lines.append(f"  CPU %: {p['cpu_percent']}")
    if report.stages:
        every = (machine.get("config") or {}).get("result_every_ms")
        published = f" published every {every} ms" if every else ""
        lines.append(f"tournament results at rising offered rates (instant results{published}, round robins of 16"
                     f"{_off_path_words(report.stages[0])}):")
        lines.append(f"  {'offered':>8} {'results/s':>9} {'pairing/s':>9} {'rating upd/s':>12} "
                     f"{'next pairing p50/p99 ms':>24} {'of it, delivery p50/p99':>24} "
                     f"{'rating updated p50/p99 ms':>26}  CPU % per service and server (+ play site)")
        for s in report.stages:
            np, ru = s["result_to_next_pairing_ms"], s["result_to_rating_updated_ms"]
            delivery = s.get("requested_to_play_site_ms", {"p50": None, "p99": None})
            lines.append(f"  {s['offered_results_per_s']:>8} {s['results_per_s']:>9} {s['pairing_consumed_per_s']:>9} "
                         f"{s['rating_updates_per_s']:>12} {str(np['p50']) + ' / ' + str(np['p99']):>24} "
                         f"{str(delivery['p50']) + ' / ' + str(delivery['p99']):>24} "
                         f"{str(ru['p50']) + ' / ' + str(ru['p99']):>26}  {s['cpu_percent']} "
                         f"(+ {s.get('bench_process_cpu_percent')})")
            if s.get("gc_percent"):
                lines.append(f"  {'':>8} of that CPU, garbage collection %: {s['gc_percent']}")
            if s.get("host"):
                lines.append(f"  {'':>8} {host_words(s['host'])}")
        lines.append("  (delivery: from the pairing service stamping a request to the play site handling it)")
    if report.burst:
        b = report.burst
        each = b["rounds"]
        lines.append(f"a whole round at once ({b['tournaments']} round robins{_off_path_words(b)}, their games started "
                     f"first and read in {b['started_in_seconds']} s, {b['results']} results built in "
                     f"{b['built_in_seconds']} s and published at {b['published_per_s']}/s; medians of "
                     f"{len(each)} rounds): from the first publication standings took them at "
                     f"{b['standings_per_s']}/s, ratings at {b['rated_per_s']}/s "
                     f"({b['standings_per_s_with_building']}/s and {b['rated_per_s_with_building']}/s "
                     f"from the start of the building); last round: {b['rated_games']} rated, next round requested "
                     f"{b['next_round_requested']} games, CPU % {b['cpu_percent']}, play site CPU "
                     f"{b['bench_process_cpu_percent']}%, game.finished batches "
                     f"{b['game_finished_batches']}; {host_words(b.get('host'))}")
        if len(each) > 1:
            per_round = ", ".join(f"{r['standings_per_s']} / {r['rated_per_s']}" for r in each)
            lines.append(f"  each round, standings / ratings per s: {per_round}")
    if report.firehose:
        lines.append(f"results straight onto game.finished (rating service throughput"
                     f"{_off_path_words(report.firehose[0])}):")
        for f in report.firehose:
            ru = f["result_to_rating_updated_ms"]
            lines.append(f"  offered {f['offered_results_per_s']:>6}/s sent {f['achieved_send_per_s']:>8}/s -> rated "
                         f"{f['rated_per_s_while_offered']}/s while offered ({f['rated_games_per_s']}/s over the stage "
                         f"and its drain), result -> rating updated p50 {ru['p50']} ms p99 {ru['p99']} ms; "
                         f"CPU % {f['cpu_percent']}; {host_words(f.get('host'))}")
    lines += targets(report)
    for note in report.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def targets(report: Report) -> list[str]:
    """The two targets against what was measured."""
    lines = ["targets (2-core machine):"]
    through_pairing = max((min(s["results_per_s"], s["pairing_consumed_per_s"]) for s in report.stages), default=0.0)
    rating_alone = max((f["rated_per_s_while_offered"] or 0.0 for f in report.firehose), default=0.0)
    lines.append(f"  >= 5,000 game results/s through rating and standings: measured {through_pairing} results/s "
                 f"through pairing (standings) and rating while each result brings the next game; rating alone "
                 f"{rating_alone} games/s")
    if report.burst:
        b = report.burst
        host = f"; last round: {host_words(b['host'])}" if b.get("host") else ""
        lines.append(f"    a whole round of {b['results']} results at once: standings {b['standings_per_s']}/s, "
                     f"ratings {b['rated_per_s']}/s from its first publication (medians of "
                     f"{len(b['rounds'])} rounds){host}")
    near = [s for s in report.stages if s["offered_results_per_s"] == 1000] or report.stages[-1:]
    for s in near:
        np = s["result_to_next_pairing_ms"]
        host = f"; {host_words(s['host'])}" if s.get("host") else ""
        lines.append(f"  p99 result -> next pairing <= 100 ms at 1,000 results/s: measured p99 {np['p99']} ms "
                     f"(p50 {np['p50']} ms) with {s['offered_results_per_s']}/s offered, "
                     f"{s['results_per_s']}/s achieved{host}")
    return lines


def write_json(report: Report, path: str) -> None:
    """Write the report as JSON."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(asdict(report), handle, indent=2)
