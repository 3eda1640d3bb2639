"""Translation between the contracts (protobuf) and the rules' vocabulary; no decisions here."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from arbiter.clocks.speed import Speed
from arbiter.competition.arena import LeaderboardRow
from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.convert import SPEED_TO_PROTO
from arbiter.kit.db import Row
from arbiter.kit.events import timestamp
from services.arena.hot import BoardRow

STATE_TO_PROTO: Final = {
    "scheduled": ap.ARENA_STATE_SCHEDULED,
    # After the end (AR-1) the games still running finish and count: the arena is still running.
    "running": ap.ARENA_STATE_RUNNING,
    "closing": ap.ARENA_STATE_RUNNING,
    "finished": ap.ARENA_STATE_FINISHED,
    "cancelled": ap.ARENA_STATE_CANCELLED,
}


def arena_message(row: Row, players: int, games_played: int) -> ap.Arena:
    """An Arena message from a stored row."""
    settings = ap.ArenaSettings()
    settings.ParseFromString(row["settings"])
    return ap.Arena(
        id=row["id"], creator_id=row["creator_id"], settings=settings, state=STATE_TO_PROTO[row["state"]],
        speed=SPEED_TO_PROTO[Speed(row["speed"])], starts_at=timestamp(row["starts_at"]),
        ends_at=timestamp(row["ends_at"]), players=players, games_played=games_played,
    )


def board_rows(rows: Sequence[BoardRow]) -> list[ap.LeaderboardRow]:
    """Leaderboard lines for the API."""
    return [
        ap.LeaderboardRow(rank=r.rank, player_id=r.player_id, points=r.record.points, wins=r.record.wins,
                          games=r.record.games, streak=r.record.streak, playing=r.playing)
        for r in rows
    ]


def finished_event(arena_id: str, rows: Sequence[LeaderboardRow], finished_at: datetime,
                   max_bytes: int) -> ev.ArenaFinished:
    """ArenaFinished with every player counted and the top standings that keep it within `max_bytes`.

    An arena takes any number of players; the event must still reach the broker, which refuses a
    message over its limit (the rest of the standings stay readable with GetLeaderboard).
    """
    event = ev.ArenaFinished(arena_id=arena_id, finished_at=timestamp(finished_at), total_players=len(rows))
    size = event.ByteSize()
    kept = []
    for row in standing_rows(rows):
        row_bytes = row.ByteSize()
        # Field 3 of the event: a one-byte tag, the row's length as a varint, then the row.
        size += 1 + _varint_bytes(row_bytes) + row_bytes
        if size > max_bytes:
            break
        kept.append(row)
    event.standings.extend(kept)
    return event


def _varint_bytes(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def standing_rows(rows: Sequence[LeaderboardRow]) -> list[ev.StandingRow]:
    """Final standings for ArenaFinished; `tie_break` says when wins separated equal points (AR-6)."""
    out: list[ev.StandingRow] = []
    for index, row in enumerate(rows):
        above = rows[index - 1] if index else None
        tie_break = "wins (AR-6)" if above is not None and above.points == row.points and above.wins > row.wins else ""
        out.append(ev.StandingRow(rank=row.rank, player_id=row.player_id, points=row.points, wins=row.wins,
                                  games=row.games, tie_break=tie_break))
    return out
