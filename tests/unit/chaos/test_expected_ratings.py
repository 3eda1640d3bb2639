"""The chaos suite's rating oracle (R-1, R-3, T-8, T-18, T-19 by the pure rules) agrees with the rating service."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.rating.ledger import replay_in_order
from arbiter_tools.chaos import Recorded, expected_ratings
from services.rating.games import judge

PLAYERS = ("ann", "bob", "cy", "")
RESULTS = [v for v in common.GameResult.values() if v != common.GAME_RESULT_UNSPECIFIED]
TERMINATIONS = list(common.Termination.values())
SPEEDS = [v for v in common.Speed.values() if v != common.SPEED_UNSPECIFIED]


@st.composite
def finished_games(draw: st.DrawFn) -> ev.GameFinished:
    """A GameFinished as a service publishes it: any result, termination, sat flags, rated flag, bye."""
    n = draw(st.integers(0, 10_000))
    white, black = draw(st.sampled_from(PLAYERS[:3])), draw(st.sampled_from(PLAYERS))
    if white == black:
        black = ""
    event = ev.GameFinished(
        game_id=f"g-{n}", white_id=white, black_id=black, result=draw(st.sampled_from(RESULTS)),
        termination=draw(st.sampled_from(TERMINATIONS)), rated=draw(st.booleans()),
        white_sat=draw(st.booleans()), black_sat=draw(st.booleans()),
        variant=draw(st.sampled_from(("international", "english"))), speed=draw(st.sampled_from(SPEEDS)))
    event.finished_at.FromDatetime(datetime(2026, 12, 7, tzinfo=UTC) + timedelta(seconds=n))
    event.meta.event_id = f"e-{n}"
    return event


@settings(max_examples=200, deadline=None)
@given(st.lists(finished_games(), max_size=12, unique_by=lambda e: e.game_id))
def test_the_oracle_rates_what_the_rating_service_rates(events: list[ev.GameFinished]) -> None:
    """Same games rated, same pools, same replayed states as the service's `judge` decides."""
    pools: dict[tuple[str, int], list] = {}
    for event in events:
        decision = judge(event)
        if decision.game is not None and decision.pool is not None:
            pools.setdefault((decision.pool.variant, decision.pool.speed), []).append(decision.game)
    want = {(variant, speed, player): state for (variant, speed), games in pools.items()
            for player, state in replay_in_order(games).items()}
    assert expected_ratings(Recorded([], [], events, [])) == want
