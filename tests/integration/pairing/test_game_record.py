"""A stored game row as the GameRecord watchers and GetRound see: every stored result and termination name."""

from __future__ import annotations

import pytest

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit.convert import GAME_RESULT_TO_PROTO
from arbiter.vocabulary import GameResult
from services.pairing.convert import game_record


def _row(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "game_id": "t_1-r2-b3-g1", "white_id": "w", "black_id": "b", "round": 2, "board": 3, "leg": 1,
        "requested": True, "finished": False, "result": None, "termination": None,
        "white_points": None, "black_points": None, "rated": None,
    }
    row.update(changes)
    return row


@pytest.mark.parametrize("result", list(GameResult))
@pytest.mark.parametrize("termination", list(common.Termination.keys()))
def test_a_finished_row_carries_its_result_and_termination_by_their_stored_names(result: GameResult,
                                                                                  termination: str) -> None:
    record = game_record(_row(finished=True, result=result.value, termination=termination,
                              white_points=2, black_points=0, rated=1))

    assert record == tp.GameRecord(
        game_id="t_1-r2-b3-g1", white_id="w", black_id="b", round=2, board=3, game_in_pairing=1, opened=True,
        finished=True, result=GAME_RESULT_TO_PROTO[result], termination=common.Termination.Value(termination),
        white_points=2, black_points=0, rated=True,
    )


def test_an_open_game_has_no_result_whatever_the_row_holds_beside_it() -> None:
    record = game_record(_row(requested=False, result="white_wins", termination="TERMINATION_RESIGNATION"))

    assert record == tp.GameRecord(game_id="t_1-r2-b3-g1", white_id="w", black_id="b", round=2, board=3,
                                   game_in_pairing=1)
    assert not record.finished and record.result == common.GAME_RESULT_UNSPECIFIED


def test_a_name_never_stored_is_an_error_not_a_default() -> None:
    with pytest.raises(KeyError):
        game_record(_row(finished=True, result="white_won", termination="TERMINATION_RESIGNATION",
                         white_points=2, black_points=0, rated=True))
