"""The load benchmark's own arithmetic: host calibration, stolen time, and the target lines."""

from __future__ import annotations

import asyncio
import os
import time

from arbiter_tools.simulator.bench.host import (
    HostTicks,
    busy_percent,
    host_cpu_ticks,
    host_load,
    python_loop_ns,
    socket_round_trip_us,
    stolen_percent,
)
from arbiter_tools.simulator.bench.readings import wait_settled
from arbiter_tools.simulator.bench.report import Report, summary, targets
from arbiter_tools.simulator.bench.stages import burst_medians, of_results_in, rate_while_offered


def _stage(offered: int, achieved: float, through_pairing: float, p99: float) -> dict:
    return {
        "offered_results_per_s": offered, "results_per_s": achieved, "pairing_consumed_per_s": through_pairing,
        "rating_updates_per_s": 2 * achieved, "result_to_next_pairing_ms": {"samples": 10, "p50": p99 / 2, "p99": p99},
        "requested_to_play_site_ms": {"samples": 10, "p50": 1.0, "p99": 2.0},
        "result_to_rating_updated_ms": {"samples": 10, "p50": 3.0, "p99": 4.0}, "cpu_percent": {},
        "bench_process_cpu_percent": 5.0,
    }


def test_stolen_percent_is_the_share_of_steal_ticks_between_two_readings() -> None:
    assert stolen_percent(HostTicks(1_000, 500, 10), HostTicks(3_000, 1_000, 60)) == 2.5
    assert stolen_percent(HostTicks(1_000, 500, 10), HostTicks(1_000, 500, 10)) is None


def test_busy_percent_counts_neither_idle_nor_stolen_ticks_and_scales_to_the_cores() -> None:
    # 2,000 ticks over two CPUs: 400 idle, 100 stolen, so 1,500 ran something: 150% of one core.
    assert busy_percent(HostTicks(1_000, 500, 10), HostTicks(3_000, 900, 110), cpus=2) == 150.0
    assert busy_percent(HostTicks(0, 0, 0), HostTicks(1_000, 1_000, 0), cpus=2) == 0.0
    assert busy_percent(HostTicks(1_000, 500, 10), HostTicks(1_000, 500, 10), cpus=2) is None


def test_host_cpu_ticks_move_forward_and_idle_and_steal_never_exceed_the_total() -> None:
    before = host_cpu_ticks()
    python_loop_ns(iterations=200_000, repeats=1)
    after = host_cpu_ticks()
    assert after.total >= before.total > 0
    assert 0 <= (after.idle - before.idle) + (after.stolen - before.stolen) <= after.total - before.total


def test_host_load_over_busy_work_is_within_the_machine() -> None:
    before = host_cpu_ticks()
    ended = time.monotonic() + 0.3
    while time.monotonic() < ended:
        pass
    load = host_load(before, host_cpu_ticks())
    cores = os.cpu_count() or 1
    assert load["cores"] == cores
    assert load["busy_percent"] is not None and 0 < load["busy_percent"] <= cores * 100
    assert load["stolen_percent"] is not None and 0 <= load["stolen_percent"] <= 100


def test_python_loop_ns_is_a_positive_time_per_step() -> None:
    assert 0 < python_loop_ns(iterations=100_000, repeats=2) < 10_000


def test_socket_round_trip_is_measured_on_one_cpu_and_refused_on_a_cpu_not_ours() -> None:
    cpu = min(os.sched_getaffinity(0))
    allowed = os.sched_getaffinity(0)
    assert 0 < socket_round_trip_us((cpu, cpu), round_trips=200) < 100_000
    assert os.sched_getaffinity(0) == allowed
    assert socket_round_trip_us((cpu, 4096), round_trips=10) is None


def test_targets_take_the_best_rate_through_pairing_and_the_stage_offered_1000() -> None:
    report = Report(stages=[_stage(500, 500.0, 480.0, 90.0), _stage(1000, 990.0, 950.0, 140.0),
                            _stage(2000, 1500.0, 1600.0, 900.0)],
                    firehose=[{"rated_per_s_while_offered": 3000.0}, {"rated_per_s_while_offered": 2900.0},
                              {"rated_per_s_while_offered": None}])
    lines = targets(report)
    assert "measured 1500.0 results/s through pairing" in lines[1]
    assert "rating alone 3000.0 games/s" in lines[1]
    assert "p99 140.0 ms (p50 70.0 ms) with 1000/s offered, 990.0/s achieved" in lines[2]


def test_the_p99_target_line_says_how_busy_the_machine_was_in_its_stage() -> None:
    stage = {**_stage(1000, 990.0, 950.0, 140.0), "host": {"cores": 2, "busy_percent": 190.5, "stolen_percent": 6.0}}
    lines = targets(Report(stages=[stage]))
    assert lines[-1].endswith("990.0/s achieved; machine busy 190.5% of 200, 6.0% stolen by the host")
    assert targets(Report(stages=[_stage(1000, 990.0, 950.0, 140.0)]))[-1].endswith("990.0/s achieved")


def test_targets_fall_back_to_the_last_stage_when_none_was_offered_1000() -> None:
    lines = targets(Report(stages=[_stage(250, 250.0, 250.0, 80.0), _stage(500, 400.0, 390.0, 300.0)]))
    assert "with 500/s offered, 400.0/s achieved" in lines[-1]


def test_summary_prints_the_host_calibration_beside_the_figures() -> None:
    report = Report(machine={"cpus": 2, "time_scale": 60.0, "python_loop_ns": 41.5, "stolen_percent": 1.2,
                             "socket_round_trip_us": {"same_cpu": 14.5, "across_cpus": 70.0}},
                    stages=[_stage(1000, 990.0, 950.0, 140.0)], notes=["broker note"])
    text = summary(report)
    assert text.splitlines()[0].startswith("machine: 2 CPUs; compare runs by: 41.5 ns per Python loop step, "
                                           "a socket round trip 14.5 us on one CPU and 70.0 us across two")
    assert "1.2% of CPU time stolen by the host" in text
    assert "kafka fetch wait" not in text and "kafka fetch min bytes" not in text
    assert text.splitlines()[-1] == "note: broker note"


def test_summary_prints_how_busy_the_machine_was_in_each_stage() -> None:
    stage = {**_stage(1000, 990.0, 950.0, 140.0), "host": {"cores": 2, "busy_percent": 181.5, "stolen_percent": 7.4}}
    lines = summary(Report(machine={"cpus": 2}, stages=[_stage(500, 500.0, 500.0, 60.0), stage])).splitlines()
    # Under its stage's row of the table (and once more on the target line of the 1,000/s stage).
    assert [line.strip() for line in lines if line.strip().startswith("machine busy")] == [
        "machine busy 181.5% of 200, 7.4% stolen by the host"]


def test_summary_prints_each_consumer_process_fetch_wait_and_min_bytes_when_the_run_set_them() -> None:
    waits = {"rating": 100, "pairing": 20, "play site": 20}
    least = {"rating": 65536, "pairing": 1, "play site": 1}
    report = Report(machine={"cpus": 2, "kafka_fetch_wait_ms": waits, "kafka_fetch_min_bytes": least},
                    stages=[_stage(1000, 990.0, 950.0, 140.0)])
    lines = summary(report).splitlines()
    assert f"kafka fetch wait, ms per consumer process: {waits}" in lines
    assert f"kafka fetch min bytes per consumer process: {least}" in lines


def test_summary_says_how_often_the_rate_stages_published_their_results() -> None:
    report = Report(machine={"cpus": 2, "config": {"result_every_ms": 20}}, stages=[_stage(1000, 990.0, 950.0, 140.0)])
    assert ("tournament results at rising offered rates (instant results published every 20 ms, round robins of 16):"
            in summary(report).splitlines())


def test_the_rate_while_offered_counts_only_games_rated_inside_the_window() -> None:
    sent = {"early": 0.1, "inside-1": 0.5, "inside-2": 1.0, "late": 2.0, "never": 2.5}
    seen = {"early": 0.9, "inside-1": 1.0, "inside-2": 3.0, "late": 3.5}
    # window [1.0, 3.0]: inside-1 and inside-2, over two seconds
    assert rate_while_offered(sent, seen, began=0.0, ended=3.0, warm_up=1.0) == 1.0
    assert rate_while_offered(sent, seen, began=0.0, ended=1.0, warm_up=1.0) is None
    assert rate_while_offered(sent, {}, began=0.0, ended=3.0, warm_up=1.0) == 0.0


def _burst_round(standings: float | None, rated: float) -> dict:
    return {
        "results": 5000, "built_in_seconds": 0.1, "published_per_s": 80000.0, "standings_per_s": standings,
        "rated_per_s": rated, "standings_per_s_with_building": standings, "rated_per_s_with_building": rated,
        "rated_games": 5000, "next_round_requested": 5000, "cpu_percent": {}, "game_finished_batches": {},
        "started_before_release": 5000, "started_in_seconds": 0.3, "started_with_results": 0,
        "bench_process_cpu_percent": 24.5,
    }


def test_a_stage_keeps_the_latency_samples_of_its_own_results_whenever_they_were_measured() -> None:
    # The stage ran from 100.0 to 115.0: (taken at, latency) of five rounds.
    taken_at = [100.2, 100.9, 114.8, 115.6, 116.1]
    latencies = [0.5, 0.6, 0.3, 0.9, 0.9]
    # Results at 99.7 (the stage before), 100.3, 114.5, 114.7 (measured after the window) and 115.2 (after).
    assert of_results_in(taken_at, latencies, 100.0, 115.0) == [1, 2, 3]
    assert of_results_in(taken_at, latencies, 99.0, 100.0) == [0]
    assert of_results_in([], [], 100.0, 115.0) == []


def test_the_burst_gives_the_median_of_its_rounds_and_keeps_each() -> None:
    rounds = [_burst_round(4700.0, 6000.0), _burst_round(5300.0, 4500.0), _burst_round(5100.0, 5400.0)]
    burst = burst_medians(625, rounds)
    assert burst["standings_per_s"] == 5100.0 and burst["rated_per_s"] == 5400.0
    assert burst["tournaments"] == 625 and burst["rounds"] == rounds and burst["next_round_requested"] == 5000
    text = summary(Report(machine={"cpus": 2}, burst=burst)).splitlines()
    assert "  each round, standings / ratings per s: 4700.0 / 6000.0, 5300.0 / 4500.0, 5100.0 / 5400.0" in text
    assert any("medians of 3 rounds" in line and "their games started first and read in 0.3 s" in line
               and "play site CPU 24.5%" in line for line in text)


def test_a_round_that_never_finished_scoring_leaves_the_median_to_the_others() -> None:
    burst = burst_medians(625, [_burst_round(None, 5000.0), _burst_round(5200.0, 5000.0)])
    assert burst["standings_per_s"] == 5200.0
    assert burst_medians(625, [_burst_round(None, 5000.0)])["standings_per_s"] is None


def test_wait_settled_ends_at_the_goal_or_once_the_count_stops_growing() -> None:
    looks = [0]

    def growing() -> int:
        """A counter that grows on every look, then stops at 40."""
        looks[0] += 1
        return min(looks[0], 40)

    async def scenario() -> tuple[bool, int, bool, float, bool]:
        reached = await wait_settled(growing, 10, timeout=3600)
        looks_at_goal = looks[0]
        started = time.monotonic()
        # Only the still time can end this wait (the timeout is an hour): wait_for keeps a fault from hanging.
        stalled = await asyncio.wait_for(wait_settled(growing, 100, timeout=3600, still_seconds=0.2), 60)
        at_stall = time.monotonic() - started
        return reached, looks_at_goal, stalled, at_stall, await wait_settled(lambda: 3, 5, timeout=0.1)

    reached, looks_at_goal, stalled, at_stall, timed_out = asyncio.run(scenario())
    # Ended at the goal: a few looks past 10, not the 40 and the still time of a stall.
    assert reached and looks_at_goal <= 12
    assert not stalled and at_stall >= 0.2  # stopped at 40 and waited the still time after it
    assert not timed_out
