"""Every official opening replays legally with the rules engine to its stated position (O-5..O-9)."""

from __future__ import annotations

import pytest

from arbiter.draughts import Position
from arbiter.openings import Opening, load_table


def _openings(variant: str) -> list[Opening]:
    return list(load_table(variant).openings)


@pytest.mark.parametrize("variant", ["italian", "english"])
def test_all_174_replay_to_their_position(variant: str) -> None:
    for opening in _openings(variant):
        position = Position.initial(variant)
        for text in opening.moves:
            move = position.parse_move(text)
            # Stored in the engine's own notation, so services can compare move strings.
            assert move.notation == text, (opening.number, text)
            position = position.play(move)
        assert position.to_fen() == opening.fen_after, opening.number


@pytest.mark.parametrize("variant", ["italian", "english"])
def test_fen_after_is_the_engine_fen(variant: str) -> None:
    for opening in _openings(variant):
        assert Position.from_fen(variant, opening.fen_after).to_fen() == opening.fen_after


@pytest.mark.parametrize("variant", ["italian", "english"])
def test_the_table_covers_every_sound_three_ply_start(variant: str) -> None:
    # 216 distinct positions after three plies in both variants; the tables keep 174 of them
    # (italian: the FID drops 42 immediate piece losses; english: the ACF list of 174 ballots).
    frontier = {Position.initial(variant).key: Position.initial(variant)}
    for _ply in range(3):
        frontier = {q.key: q for p in frontier.values() for q in (p.play(m) for m in p.legal_moves())}
    assert len(frontier) == 216
    stated = {Position.from_fen(variant, o.fen_after).key for o in _openings(variant)}
    assert stated <= frontier.keys()
