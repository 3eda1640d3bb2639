"""The source opening tables kept as test data (tests/data/openings) replay legally with this engine."""

from __future__ import annotations

import json
from pathlib import Path

from arbiter.draughts import Position

# The federations' tables as published, kept beside the tests: the runtime reads its own copy in libs/.
_DATA = Path(__file__).resolve().parents[2] / "data" / "openings"



def _openings(name: str) -> list[dict]:
    return json.loads((_DATA / name).read_text())["openings"]


def test_italian_fid_table_replays_to_its_positions() -> None:
    openings = _openings("italian_fid.json")
    assert len(openings) == 174
    for opening in openings:
        for text in (opening["moves"], opening["moves_as_in_source"]):  # "17x10" and "17-10"
            position = Position.initial("italian")
            for move in text.split():
                position = position.play(move)
            after = opening["position_after"]
            turn = "B" if after["to_move"] == "black" else "W"
            fen = f"{turn}:W{','.join(map(str, after['white']))}:B{','.join(map(str, after['black']))}"
            assert position == Position.from_fen("italian", fen), opening["number"]


def test_english_ballots_replay_to_their_fens() -> None:
    openings = _openings("english_3move.json")
    assert len(openings) == 174
    for opening in openings:
        for text in (opening["moves"], opening["moves_zero_padded"]):
            position = Position.initial("english")
            for move in text.split():
                position = position.play(move)
            assert position == Position.from_fen("english", opening["fen_after"]), opening["number"]
