"""The live terminal view and the final tables, drawn from a run's state (no services)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from arbiter.contracts import arena_pb2
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.timesource import TimeSource
from arbiter_tools.simulator.playsite.base import PlaySiteStats
from arbiter_tools.simulator.scenario import PartState, Scenario
from arbiter_tools.simulator.view import final_tables, render

DAY_MS = 86_400_000


@dataclass
class PlaySiteStandIn:
    """What the view reads of a PlaySite."""

    stats: PlaySiteStats
    games: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunnerStandIn:
    """What the view reads of a ScenarioRunner."""

    scenario: Scenario
    parts: list[PartState]
    playsite: PlaySiteStandIn
    time_source: TimeSource
    started_real: float
    refusals: Counter[str] = field(default_factory=Counter)
    attempt_errors: Counter[str] = field(default_factory=Counter)
    wrongly_accepted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def standing(rank: int, player: str, points: int, bh: float, sb: float, wins: int, games: int,
             tie_break: str = "") -> ev.StandingRow:
    return ev.StandingRow(rank=rank, player_id=player, points=points, buchholz=bh, sonneborn_berger=sb,
                          wins=wins, games=games, tie_break=tie_break)


def leader(rank: int, player: str, points: int, wins: int, games: int, streak: int) -> arena_pb2.LeaderboardRow:
    return arena_pb2.LeaderboardRow(rank=rank, player_id=player, points=points, wins=wins, games=games,
                                    streak=streak)


def a_run() -> RunnerStandIn:
    """A Swiss in round 3 of 5, a finished round robin, an arena half way, a Triple Block game, a skipped part."""
    now = time.monotonic()
    stats = PlaySiteStats(finished=38, decided_elsewhere=2, moves=900, refuels=12, refuel_refusals=1,
                          presence_changes=7, boosts=3, boost_refusals=1)
    # 10 results and 50 moves in the last 5 s: 2 games/s and 10 moves/s.
    stats.finish_times.extend([now - 1.0] * 10)
    stats.move_times.extend([now - 1.0] * 50)
    stats.terminations.update({"TERMINATION_RESIGNATION": 5, "TERMINATION_TIME": 2})
    stats.pairing_latencies.extend([0.1, 0.2, 0.3])
    swiss = PartState("swiss8", "8-entrant Swiss", "tournament", status="running", competition_id="t_swiss",
                      format="swiss", round=3, rounds=5, games_done=6, games_total=10, rows=[
                          standing(1, "ann", 6, 12.5, 30.0, 3, 3, "points"),
                          standing(2, "bob", 6, 11.0, 28.0, 3, 3, "buchholz"),
                          *(standing(r, f"p{r}", 4 - r // 3, 9.0, 10.0, 1, 3, "wins") for r in range(3, 8)),
                      ])
    round_robin = PartState("rr4", "4-entrant round robin", "tournament", status="finished",
                            competition_id="t_rr", format="round_robin", round=3, rounds=3, games_done=5,
                            games_total=6, rows=[standing(1, "cat", 5, 0.0, 9.0, 2, 3, "wins"),
                                                 standing(2, "dan", 5, 0.0, 7.5, 1, 3, "head-to-head")],
                            finish_note="closed at its duration (T-15)",
                            detail={"terminations": {"TERMINATION_DRAW_AGREED": 2, "TERMINATION_NO_MOVES": 4}})
    arena = PartState("arena", "arena of 30", "arena", status="running", competition_id="a_1",
                      detail={"progress": 0.5, "games_played": 44},
                      rows=[leader(r, f"a{r}", 30 - r, 10 - r // 3, 12, r % 3) for r in range(1, 26)])
    triple_block = PartState("tb", "Triple Block game", "triple_block", status="running",
                             competition_id="casual-1", detail={"plies": 12, "clock": {
                                 "white_ms": 49 * DAY_MS + DAY_MS // 2, "white_bank_ms": 70 * DAY_MS,
                                 "black_ms": 50 * DAY_MS, "black_bank_ms": 75 * DAY_MS}})
    skipped = PartState("double", "forced double", "tournament", status="skipped: pairing not ready",
                        format="double_round_robin", rounds=6, rows=[standing(1, "eve", 0, 0.0, 0.0, 0, 0)])
    return RunnerStandIn(
        scenario=Scenario("view-test"), parts=[swiss, round_robin, arena, triple_block, skipped],
        playsite=PlaySiteStandIn(stats, games={"g1": object(), "g2": object()}),
        time_source=TimeSource(60.0, datetime(2026, 12, 2, 10, 0, tzinfo=UTC)), started_real=now - 10.0,
        refusals=Counter({"create_tournament": 3, "join_arena": 2}),
    )


def block(screen: str, title: str) -> list[str]:
    """The lines of one part's block: from its title line to the blank line after it."""
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if title in line)
    end = lines.index("", start)
    return lines[start:end]


def test_the_live_view_shows_rates_progress_and_the_top_of_each_table() -> None:
    screen = render(a_run())  # type: ignore[arg-type]

    head, rates = screen.splitlines()[:2]
    assert "scenario view-test" in head and "(x60)" in head
    # games/s over the last 5 s; the average is the play site's own 38 results over the run's 10 s,
    # while "finished" also counts the 2 decided elsewhere (T-15, T-18).
    assert rates.split() == ["games/s", "2.0", "(average", "3.8)", "moves/s", "10.0", "playing", "2",
                             "finished", "40", "moves", "900"]

    swiss = block(screen, "8-entrant Swiss")
    assert "t_swiss  running" in swiss[0]
    assert swiss[1].split() == ["swiss", "round", "3/5", "x1", "[##############----------]", "60%",
                                "games", "6/10"]
    # T-21: a Swiss shows BH and SB beside the points, in that order.
    assert swiss[2].split() == ["#", "player", "pts", "BH", "SB", "wins", "games", "tie-break"]
    assert swiss[3].split() == ["1", "ann", "6", "12.5", "30.0", "3", "3", "points"]
    assert swiss[4].split() == ["2", "bob", "6", "11.0", "28.0", "3", "3", "buchholz"]
    # The live view keeps the top 5 of the 7 rows.
    assert len(swiss) == 2 + 1 + 5 + 1 and swiss[-1].strip() == "... 2 more"

    # T-22: a round robin shows SB (information only) and no BH; a finished part's bar is full.
    rr = block(screen, "4-entrant round robin")
    assert rr[1].split()[:5] == ["round_robin", "round", "3/3", "x1", "[########################]"]
    assert rr[1].split()[5:] == ["100%", "games", "5/6"]
    assert rr[2].split() == ["#", "player", "pts", "SB", "wins", "games", "tie-break"]
    assert rr[4].split() == ["2", "dan", "5", "7.5", "1", "3", "head-to-head"]
    assert "closed at its duration" not in screen  # notes and endings wait for the final tables

    arena = block(screen, "arena of 30")
    assert arena[1].split() == ["[############------------]", "50%", "games", "44"]
    # An arena ranks on points then wins (AR-4, AR-6): its leaderboard shows the streak, no BH or SB.
    assert arena[2].split() == ["#", "player", "pts", "wins", "games", "streak"]
    assert arena[3].split() == ["1", "a1", "29", "10", "12", "1"]
    assert arena[-1].strip() == "... 20 more"

    tb = block(screen, "Triple Block game")
    assert tb[1].split() == ["plies", "12", "white", "49.50", "d", "+", "bank", "70.00", "d",
                             "black", "50.00", "d", "+", "bank", "75.00", "d"]

    # A skipped part shows its title and why, and none of what it would have played.
    [skipped] = block(screen, "forced double")
    assert "skipped: pairing not ready" in skipped and "eve" not in screen
    assert "result -> next pairing: p50 200 ms, p99 300 ms (3 rounds)" in screen
    assert "A-1 refusals (guests, computer accounts): 5 create_tournament 3, join_arena 2" in screen
    assert "endings: resignation 5, time 2" in screen
    assert "refuels 12 (refused 1)" in screen and "boosts 3 (refused 1)" in screen


def test_the_final_tables_show_every_row_the_notes_and_the_endings() -> None:
    run = a_run()
    run.parts[0].status = "finished"
    run.parts[2].status = "finished"
    run.parts[3].status = "finished"
    run.parts[3].detail.update(result="white_wins by no_moves after 80 plies", refuels=12, refuels_refused=1)
    run.wrongly_accepted.append("join_tournament by guest-01 (ACCOUNT_KIND_GUEST)")

    tables = final_tables(run, colour=False)  # type: ignore[arg-type]

    assert "\x1b[" not in tables
    assert "\x1b[1m" in final_tables(run, colour=True)  # type: ignore[arg-type]
    swiss = block(tables, "8-entrant Swiss")
    assert len(swiss) == 2 + 1 + 7 and "more" not in swiss[-1]  # every row of a tournament
    assert swiss[1].split()[4:6] == ["[########################]", "100%"]
    assert swiss[-1].split() == ["7", "p7", "2", "9.0", "10.0", "1", "3", "wins"]
    rr = block(tables, "4-entrant round robin")
    assert rr[-2].strip() == "closed at its duration (T-15)"
    assert rr[-1].strip() == "endings: draw_agreed 2, no_moves 4"
    # An arena's final table stops at 20 of its 25 players.
    arena = block(tables, "arena of 30")
    assert arena[-2].split()[:2] == ["20", "a20"] and arena[-1].strip() == "... 5 more"
    tb = block(tables, "Triple Block game")
    assert tb[1].strip() == "white_wins by no_moves after 80 plies; manual refuels 12 (refused 1)"
    assert "WRONGLY ACCEPTED: ['join_tournament by guest-01 (ACCOUNT_KIND_GUEST)']" in tables
