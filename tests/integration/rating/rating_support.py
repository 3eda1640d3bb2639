"""Builders the rating tests share (a plain module next to them: pytest runs with --import-mode=importlib)."""

from __future__ import annotations

import uuid
from datetime import datetime

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev


def finished(
    game_id: str, white: str, black: str, result: int, at: datetime, *, variant: str = "international",
    speed: int = cm.SPEED_BLITZ, rated: bool = True, white_sat: bool = True, black_sat: bool = True,
    termination: int = cm.TERMINATION_RESIGNATION, kind: int = cm.COMPETITION_KIND_TOURNAMENT,
    event_id: str | None = None,
) -> ev.GameFinished:
    """A GameFinished from the play site; a fresh event id unless `event_id` names one."""
    event = ev.GameFinished(
        game_id=game_id, variant=variant, speed=speed, white_id=white, black_id=black, result=result,  # type: ignore[arg-type]
        termination=termination, white_sat=white_sat, black_sat=black_sat, rated=rated,  # type: ignore[arg-type]
        competition=cm.CompetitionRef(kind=kind, id="t-1", round=1),  # type: ignore[arg-type]
    )
    event.meta.event_id = event_id or uuid.uuid4().hex
    event.meta.producer = "play-site-test"
    event.finished_at.FromDatetime(at)
    return event
