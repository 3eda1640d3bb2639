"""The load benchmark (`arbiter bench`): every stage runs against the real system and the JSON holds its figures.

Figures are not judged here (they are the machine's, see README "Load benchmark"); what is checked
is that each stage really drove the system: results flowed, pairings and ratings came back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_runs_every_stage_and_writes_the_report_it_prints(tmp_path, database_url) -> None:
    env = {**os.environ, "DATABASE_URL": database_url}
    # The bench starts its own broker and Redis, as on a fresh machine.
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    env.pop("REDIS_URL", None)
    out = tmp_path / "bench.json"
    done = subprocess.run(
        # A faster competition clock shortens each stage's wait for its tournaments to start. At x240 the
        # 390 s lead (T-4) was 1.6 real seconds, and on a slow host (64 ns per loop step) every round robin
        # of the rates stage missed some of its 16 joins, so the stage had none: x120 leaves 3.3 s.
        [sys.executable, "-m", "arbiter_tools.cli.main", "bench", "--quick", "--rates", "150", "--stage-seconds", "3",
         "--tournaments", "12", "--burst-tournaments", "6", "--firehose-rates", "300", "--time-scale", "120",
         "--result-every-ms", "30", "--burst-rounds", "2",
         "--state-dir", str(tmp_path / "state"), "--json-out", str(out), "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=400,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    printed = json.loads(done.stdout)
    assert json.loads(out.read_text()) == printed
    machine = printed["machine"]
    assert machine["cpus"] == os.cpu_count() and machine["python_loop_ns"] > 0
    assert machine["stolen_percent"] is not None and machine["socket_round_trip_us"]["same_cpu"] > 0
    assert printed["raw"]["kafka"]["consume_per_s"] > 0 and printed["raw"]["redis"]["round_trip_ops_per_s"] > 0
    assert printed["played"]["moves_per_s"] > 0 and printed["played"]["results_per_s"] > 0
    assert len(printed["stages"]) == 1, printed["notes"]  # a stage that failed says why in the notes
    [stage] = printed["stages"]
    assert stage["offered_results_per_s"] == 150 and stage["results_per_s"] > 0
    assert stage["pairing_consumed_per_s"] > 0 and stage["rating_updates_per_s"] > 0
    assert stage["result_to_next_pairing_ms"]["samples"] > 0 and stage["result_to_rating_updated_ms"]["samples"] > 0
    assert set(stage["cpu_percent"]) >= {"pairing", "rating", "clock", "arena", "openings", "tansu"}
    # The four services off the measured path ran at the default niceness during the rate stage.
    assert stage["off_path_nice"] == machine["config"]["off_path_nice"] == 10
    assert "services off the measured path run at niceness 10 (4 processes" in done.stderr
    assert ("stay at niceness" in done.stderr) is (os.geteuid() != 0)
    # Every service times its collections (arbiter_gc_pause_seconds); one that collected none since it
    # started has no series yet and is left out (on uvloop a short stage may leave every one out).
    assert isinstance(stage["gc_percent"], dict)
    assert set(stage["gc_percent"]) <= {"pairing", "rating", "clock", "arena", "openings"}
    assert all(0 <= share <= 100 for share in stage["gc_percent"].values())
    burst = printed["burst"]
    # 6 round robins of 16: a first round of 48 games, all scored, rated and followed by round 2.
    assert burst["results"] == 48 and burst["standings_per_s"] and burst["rated_per_s"]
    # Counted from the start of the building, the same work took longer.
    assert burst["built_in_seconds"] > 0
    assert burst["standings_per_s_with_building"] <= burst["standings_per_s"]
    assert burst["rated_per_s_with_building"] <= burst["rated_per_s"]
    assert burst["next_round_requested"] == 48
    # The burst and the firehose measure rating too: only clock, arena and openings were niced for them.
    assert burst["off_path_nice"] == 10
    for stage_name in ("burst", "firehose"):
        assert (f"{stage_name}: the services off the measured path run at niceness 10 (3 processes: clock, arena, "
                "openings") in done.stderr
    # Two rounds one after the other, each whole; the figures are their medians.
    assert [r["results"] for r in burst["rounds"]] == [48, 48]
    assert all(r["next_round_requested"] == 48 and r["rated_games"] == 48 for r in burst["rounds"])
    # Each round's games were all started, and read by the clock and pairing, before their results went
    # out; the release started none again.
    assert all(r["started_before_release"] == 48 and r["started_in_seconds"] is not None
               and r["started_with_results"] == 0 for r in burst["rounds"])
    # The play site built and published the results and read the next round within the window.
    assert all(r["bench_process_cpu_percent"] > 0 for r in burst["rounds"])
    assert burst["standings_per_s"] == round((burst["rounds"][0]["standings_per_s"]
                                              + burst["rounds"][1]["standings_per_s"]) / 2, 1)
    [firehose] = printed["firehose"]
    assert firehose["offered_results_per_s"] == 300 and firehose["rated_games_per_s"] > 0
    assert firehose["off_path_nice"] == 10
    assert firehose["rated_per_s_while_offered"] is not None and firehose["rated_per_s_while_offered"] >= 0
    # How busy the whole machine was, and how much the host stole, beside each stage's own figures.
    for measured in (stage, *burst["rounds"], firehose):
        host = measured["host"]
        assert host["cores"] == os.cpu_count()
        assert 0 < host["busy_percent"] <= host["cores"] * 100 and 0 <= host["stolen_percent"] <= 100
    assert printed["machine"]["event_loop"] == "uvloop"
    assert machine["config"]["result_every_ms"] == 30
    # The rating watch polls as the play site does, not at aiokafka's 500 ms (a rating seen late); so
    # does the rating service, whose updates every stage times; what no stage times polls less often.
    waits = machine["kafka_fetch_wait_ms"]
    assert waits["rating watch"] == waits["play site"] == waits["pairing"] == waits["rating"] == 20
    assert waits["clock"] == waits["arena"] == waits["openings"] == 100
    # Off the measured path a fetch waits for 64 KiB or the whole wait; on it, and for the clock's moves,
    # it answers at the first record.
    least = machine["kafka_fetch_min_bytes"]
    assert least["arena"] == least["openings"] == least["clock life cycle"] == 64 * 1024
    assert least["pairing"] == least["rating"] == least["clock"] == least["play site"] == least["rating watch"] == 1
    # A stage that failed leaves a note of its own; the only note is the embedded broker's.
    assert [note for note in printed["notes"] if not note.startswith("the embedded tansu")] == []
