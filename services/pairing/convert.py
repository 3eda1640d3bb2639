"""Translation between the contracts (protobuf) and the rule modules' vocabulary; no decisions here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from arbiter.clocks.speed import Speed
from arbiter.competition.standings import StandingRow
from arbiter.competition.tournament_flow import ScoredResult
from arbiter.competition.types import Format
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit.convert import GAME_RESULT_TO_PROTO, SPEED_TO_PROTO, TERMINATION_OF_NAME
from arbiter.kit.db import Row
from arbiter.kit.events import timestamp
from arbiter.openings.modes import OpeningMode

OPENING_MODE: Final = {
    common.OPENING_MODE_UNSPECIFIED: OpeningMode.FREE,
    common.OPENING_MODE_FREE: OpeningMode.FREE,
    common.OPENING_MODE_RANDOM_1: OpeningMode.RANDOM_1,
    common.OPENING_MODE_RANDOM_2: OpeningMode.RANDOM_2,
    common.OPENING_MODE_RANDOM_3: OpeningMode.RANDOM_3,
    common.OPENING_MODE_TABLE_UP_TO_1: OpeningMode.TABLE_UP_TO_1,
    common.OPENING_MODE_TABLE_UP_TO_2: OpeningMode.TABLE_UP_TO_2,
    common.OPENING_MODE_TABLE_UP_TO_3: OpeningMode.TABLE_UP_TO_3,
    common.OPENING_MODE_TABLE_ALL: OpeningMode.TABLE_ALL,
    common.OPENING_MODE_THEMATIC: OpeningMode.THEMATIC,
}
OPENING_MODE_TO_PROTO: Final = {mode: value for value, mode in OPENING_MODE.items() if value}
STATE_TO_PROTO: Final = {
    "scheduled": tp.TOURNAMENT_STATE_SCHEDULED,
    # Between the start time and round 1 the draw is being made: registration is closed.
    "starting": tp.TOURNAMENT_STATE_RUNNING,
    "running": tp.TOURNAMENT_STATE_RUNNING,
    "finished": tp.TOURNAMENT_STATE_FINISHED,
    "cancelled": tp.TOURNAMENT_STATE_CANCELLED,
}


def tournament_message(row: Row, entrants: int) -> tp.Tournament:
    """A Tournament message from a stored row."""
    settings = tp.TournamentSettings()
    settings.ParseFromString(row["settings"])
    message = tp.Tournament(
        id=row["id"], creator_id=row["creator_id"], settings=settings, state=STATE_TO_PROTO[row["state"]],
        format=row["format"] or "", rounds=row["rounds"] or 0, current_round=row["current_round"],
        entrants=entrants, speed=SPEED_TO_PROTO[Speed(row["speed"])], rated_note=row["rated_note"],
        created_at=timestamp(row["created_at"]), cancel_reason=row["cancel_reason"],
        games_per_pairing=row["games_per_pairing"] or 0, closes_at=timestamp(row["closes_at"]),
        notes=[*row["notes"], *row["plan_notes"]], finish_note=row["finish_note"],
    )
    if row["finished_at"] is not None:
        message.finished_at.CopyFrom(timestamp(row["finished_at"]))
    return message


def game_record(row: Row) -> tp.GameRecord:
    """A GameRecord message from a stored game row."""
    record = tp.GameRecord()
    record.game_id, record.white_id, record.black_id = row["game_id"], row["white_id"], row["black_id"]
    record.round, record.board, record.game_in_pairing = row["round"], row["board"], row["leg"]
    record.opened = row["requested"]
    if row["finished"]:
        record.finished = True
        # A GameResult is a StrEnum: its stored value finds it as a key, without a GameResult(...) per row.
        record.result = GAME_RESULT_TO_PROTO[row["result"]]
        record.termination = TERMINATION_OF_NAME[row["termination"]]
        record.white_points = row["white_points"]
        record.black_points = row["black_points"]
        record.rated = bool(row["rated"])
    return record


def tie_break_text(row: StandingRow, fmt: Format) -> str:
    """Which criterion separated a row from the one above, with its rule; empty for the first row."""
    if row.tie_break_used is None:
        return ""
    return f"{row.tie_break_used.label} ({row.tie_break_used.rule(fmt)})"


def standing_rows(rows: Sequence[StandingRow], fmt: Format) -> list[ev.StandingRow]:
    """StandingRow messages: points, BH (Swiss only, T-21/T-22), SB, wins, games, deciding criterion."""
    return [
        ev.StandingRow(
            rank=row.rank, player_id=row.entrant, points=row.points, buchholz=float(row.buchholz or 0),
            sonneborn_berger=row.sonneborn_berger, wins=row.wins, games=row.games,
            tie_break=tie_break_text(row, fmt),
        )
        for row in rows
    ]


def standing_row_json(row: ev.StandingRow) -> dict[str, Any]:
    """A standing row as stored with the finished tournament."""
    return {
        "rank": row.rank, "player_id": row.player_id, "points": row.points, "buchholz": row.buchholz,
        "sonneborn_berger": row.sonneborn_berger, "wins": row.wins, "games": row.games, "tie_break": row.tie_break,
    }


def standing_row_from_json(data: Mapping[str, Any]) -> ev.StandingRow:
    """The StandingRow message of a stored row."""
    return ev.StandingRow(**data)


def competition_ref(tournament_id: str, round_number: int) -> common.CompetitionRef:
    """The reference every round game carries."""
    return common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT, id=tournament_id, round=round_number)


def scored_game_finished(row: Any, game: Any, scored: ScoredResult, termination: common.Termination, event_id: str,
                         at: Any, *, white_sat: bool, black_sat: bool) -> ev.GameFinished:
    """The GameFinished this service publishes for a result it decides itself (T-15, T-18)."""
    message = ev.GameFinished(
        game_id=game["game_id"], competition=competition_ref(row["id"], game["round"]), variant=row["variant"],
        speed=SPEED_TO_PROTO[row["speed"]], white_id=game["white_id"], black_id=game["black_id"],
        result=GAME_RESULT_TO_PROTO[scored.result], termination=termination, white_sat=white_sat, black_sat=black_sat,
        rated=scored.score.rated, finished_at=timestamp(at),
    )
    message.meta.event_id = event_id
    return message
