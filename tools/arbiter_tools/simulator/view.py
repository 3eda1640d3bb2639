"""The live terminal view of a scenario (plain ANSI text) and its final tables."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from arbiter.contracts import events_pb2 as ev
from arbiter_tools.simulator.scenario import PartState, ScenarioRunner, percentile

_CLEAR = "\x1b[H\x1b[2J"
_BOLD, _DIM, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"


def bar(fraction: float, width: int = 24) -> str:
    """A progress bar like [#########-------] 42%."""
    fraction = min(1.0, max(0.0, fraction))
    filled = int(round(fraction * width))
    return f"[{'#' * filled}{'-' * (width - filled)}] {fraction * 100:3.0f}%"


def standings_table(part: PartState, limit: int | None = None) -> list[str]:
    """Rank, player, points, BH/SB (T-21: Swiss shows both; T-22: round robin shows SB only), wins, games."""
    rows = part.rows[:limit] if limit else part.rows
    if not rows:
        return []
    if not isinstance(rows[0], ev.StandingRow):
        lines = [f"  {'#':>3} {'player':<12} {'pts':>4} {'wins':>4} {'games':>5} {'streak':>6}"]
        lines += [f"  {r.rank:>3} {r.player_id:<12} {r.points:>4} {r.wins:>4} {r.games:>5} {r.streak:>6}" for r in rows]
        return lines
    swiss = part.format == "swiss"
    head = (f"  {'#':>3} {'player':<12} {'pts':>4} " + (f"{'BH':>6} " if swiss else "")
            + f"{'SB':>6} {'wins':>4} {'games':>5}  tie-break")
    lines = [head]
    for r in rows:
        bh = f"{r.buchholz:>6.1f} " if swiss else ""
        lines.append(f"  {r.rank:>3} {r.player_id:<12} {r.points:>4} {bh}{r.sonneborn_berger:>6.1f} {r.wins:>4} "
                     f"{r.games:>5}  {r.tie_break}")
    return lines


def part_lines(part: PartState, *, final: bool) -> list[str]:
    """The block of one part: title, status, progress bar, standings or leaderboard."""
    lines = [f"{_BOLD}{part.title}{_RESET}  {part.competition_id}  {part.status}"]
    if part.status.startswith(("skipped", "failed")):
        return lines
    if part.kind == "tournament" and part.rounds:
        fraction = part.games_done / part.games_total if part.games_total else 0.0
        if part.status == "finished":
            fraction = 1.0
        lines.append(f"  {part.format} round {part.round}/{part.rounds} x{part.games_per_pairing}  {bar(fraction)}"
                     f"  games {part.games_done}/{part.games_total}")
    elif part.kind == "arena":
        lines.append(f"  {bar(part.detail.get('progress', 1.0 if part.status == 'finished' else 0.0))}"
                     f"  games {part.detail.get('games_played', part.games_done)}")
    elif part.kind == "triple_block" and part.status == "finished":
        lines.append(f"  {part.detail.get('result', '')}; manual refuels {part.detail.get('refuels', 0)} "
                     f"(refused {part.detail.get('refuels_refused', 0)})")
    elif part.kind == "triple_block" and part.status == "running":
        clock = part.detail.get("clock")
        line = f"  plies {part.detail.get('plies', 0)}"
        if clock:
            day = 86_400_000
            line += (f"  white {clock['white_ms'] / day:.2f} d + bank {clock['white_bank_ms'] / day:.2f} d"
                     f"  black {clock['black_ms'] / day:.2f} d + bank {clock['black_bank_ms'] / day:.2f} d")
        lines.append(line)
    limit = (20 if part.kind == "arena" else None) if final else 5
    lines += standings_table(part, limit)
    if limit and len(part.rows) > limit:
        lines.append(f"  ... {len(part.rows) - limit} more")
    if final and part.finish_note:
        lines.append(f"  {_DIM}{part.finish_note}{_RESET}")
    if final and part.detail.get("terminations"):
        lines.append("  endings: " + ", ".join(f"{k.removeprefix('TERMINATION_').lower()} {v}"
                                               for k, v in sorted(part.detail["terminations"].items())))
    return lines


def render(runner: ScenarioRunner, *, final: bool = False, system_lines: Callable[[], list[str]] | None = None) -> str:
    """The whole screen: header, the system's own lines (replicas), each part, play-site rates."""
    stats = runner.playsite.stats
    elapsed = time.monotonic() - runner.started_real
    head = (f"{_BOLD}Arbiter demo{_RESET} scenario {runner.scenario.name}  wall {elapsed:5.1f} s  "
            f"competition time {runner.time_source.now():%H:%M:%S} (x{runner.time_source.scale:g})")
    average = (stats.finished / elapsed) if elapsed > 0 else 0.0
    rates = (f"games/s {stats.rate(stats.finish_times):5.1f} (average {average:.1f})  "
             f"moves/s {stats.rate(stats.move_times):6.1f}  playing {len(runner.playsite.games)}  "
             f"finished {stats.finished + stats.decided_elsewhere}  moves {stats.moves}")
    lines = [head, rates, *(system_lines() if system_lines is not None else ()), ""]
    for part in runner.parts:
        lines += part_lines(part, final=final)
        lines.append("")
    latencies = sorted(stats.pairing_latencies)
    if latencies:
        lines.append(f"result -> next pairing: p50 {percentile(latencies, 50) * 1000:.0f} ms, "
                     f"p99 {percentile(latencies, 99) * 1000:.0f} ms ({len(latencies)} rounds)")
    refused = sum(runner.refusals.values())
    lines.append(f"A-1 refusals (guests, computer accounts): {refused} "
                 + ", ".join(f"{k} {v}" for k, v in sorted(runner.refusals.items()))
                 + (f"; WRONGLY ACCEPTED: {runner.wrongly_accepted}" if runner.wrongly_accepted else ""))
    if runner.attempt_errors:
        lines.append("A-1 attempts answered otherwise (neither refused nor accepted): "
                     + ", ".join(f"{k} {v}" for k, v in sorted(runner.attempt_errors.items())))
    if stats.terminations:
        lines.append("endings: " + ", ".join(f"{k.removeprefix('TERMINATION_').lower()} {v}"
                                             for k, v in sorted(stats.terminations.items())))
    lines.append(f"presence changes {stats.presence_changes}  boosts {stats.boosts} (refused {stats.boost_refusals})"
                 f"  refuels {stats.refuels} (refused {stats.refuel_refusals})  casual games {stats.casual_games}")
    if stats.last_refusal:
        lines.append(f"last refused call: {stats.last_refusal}")
    for note in runner.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


async def live_view(runner: ScenarioRunner, done: Callable[[], bool], out: TextIO = sys.stdout,
                    every: float = 1.0, system_lines: Callable[[], list[str]] | None = None) -> None:
    """Redraw the screen every `every` seconds until `done()`; on a non-terminal print a line every 10 s."""
    tty = out.isatty()
    last_line = 0.0
    while not done():
        if tty:
            out.write(_CLEAR + render(runner, system_lines=system_lines) + "\n")
            out.flush()
        elif time.monotonic() - last_line >= 10:
            last_line = time.monotonic()
            out.write(progress_line(runner) + "\n")
            out.flush()
        await asyncio.sleep(every)


def progress_line(runner: ScenarioRunner) -> str:
    """One line of progress for logs."""
    stats = runner.playsite.stats
    parts = "  ".join(f"{p.key}:{p.status.split(':')[0]}" + (f" r{p.round}/{p.rounds}" if p.rounds else "")
                      for p in runner.parts)
    return f"[{time.monotonic() - runner.started_real:5.0f} s] games {stats.finished} moves {stats.moves}  {parts}"


def final_tables(runner: ScenarioRunner, colour: bool = True) -> str:
    """The final tables, printed once at the end."""
    text = render(runner, final=True)
    if not colour:
        for code in (_BOLD, _DIM, _RESET):
            text = text.replace(code, "")
    return text


def plain(report: dict[str, Any]) -> str:
    """A one-paragraph summary of a report (for logs)."""
    parts = ", ".join(f"{p['key']} {p['status']}" for p in report["parts"])
    return f"scenario {report['scenario']} in {report['wall_seconds']} s: {parts}"
