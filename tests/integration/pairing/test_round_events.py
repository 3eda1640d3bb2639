"""The events a paired round publishes (pure: no broker, Redis or PostgreSQL).

RoundPaired first, then for each game its GameRequested, or its T-18 busy forfeit's GameFinished.
Each request carries the round's shared fields (competition, time control, opening, request time)
and its own game, players and leg.
"""

from __future__ import annotations

from datetime import UTC, datetime

from arbiter.competition.tournament_flow import RoundDraw
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import timestamp
from services.pairing.rounds import RoundToSave, busy_forfeits, round_events

ROW = {"id": "t-events", "variant": "international", "speed": "blitz", "rated": True, "base_seconds": 180,
       "increment_seconds": 2, "games_per_pairing": 2}
OPENING = common.Opening(variant="international", mode=common.OPENING_MODE_FREE, fen="W:W31,32:B1,2")


def test_a_round_publishes_its_pairing_then_a_request_per_game_and_a_forfeit_per_busy_player() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    draw = RoundDraw(3, (("a", "b"), ("c", "d")), "e", "berger")
    planned = draw.games(ROW["id"], ROW["games_per_pairing"])
    forfeits = busy_forfeits(ROW, planned, busy={"d"})
    events = round_events(RoundToSave(ROW, draw, planned, forfeits, OPENING), now)

    paired, *per_game = events
    assert isinstance(paired, ev.RoundPaired) and paired.meta.event_id == "t-events/r3/paired"
    assert paired.bye_id == "e" and [len(line.game_ids) for line in paired.pairings] == [2, 2]
    assert len(per_game) == len(planned) == 4
    for game, event in zip(planned, per_game, strict=True):
        if "d" in (game.white, game.black):
            assert isinstance(event, ev.GameFinished) and event.meta.event_id == f"{game.game_id}/forfeit"
            assert event.termination == common.TERMINATION_BUSY_FORFEIT
            continue
        expected = ev.GameRequested(
            game_id=game.game_id, competition=common.CompetitionRef(
                kind=common.COMPETITION_KIND_TOURNAMENT, id="t-events", round=3),
            variant="international", white_id=game.white, black_id=game.black,
            time_control=common.TimeControl(fischer=common.FischerControl(base_seconds=180, increment_seconds=2)),
            speed=common.SPEED_BLITZ, rated=True, opening=OPENING, game_in_pairing=game.leg,
            requested_at=timestamp(now),
        )
        expected.meta.event_id = f"{game.game_id}/requested"
        assert event == expected
    legs = sorted((e.white_id, e.game_in_pairing) for e in per_game if isinstance(e, ev.GameRequested))
    assert legs == [("a", 1), ("b", 2)], "T-12: the second leg swaps the colours"
