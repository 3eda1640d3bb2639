"""Drawing the opening of a round: table draws, no repeat in a Swiss, random legal moves, thematic (O-1..O-11)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.draughts import Position, Variant
from arbiter.openings import (
    OpeningError,
    draw_opening,
    eligible,
    initial_fen,
    load_table,
    random_opening,
)
from arbiter.openings.modes import OpeningMode as M

SWISS_MAX_ROUNDS = 11  # T-9 maximum of 10 plus the T-11 extra round.


def swiss(variant: str, mode: M, tournament: str, rounds: int = SWISS_MAX_ROUNDS) -> list[int]:
    """The numbers a Swiss draws round by round, excluding what it already drew (O-10)."""
    drawn: list[int] = []
    for round_ in range(1, rounds + 1):
        opening = draw_opening(variant, mode, seed=f"{tournament}:{round_}", exclude=drawn)
        assert opening.number is not None
        drawn.append(opening.number)
    return drawn


def test_ten_thousand_draws_up_to_class_1() -> None:
    # The statistics test: only PARI or level 1, and every eligible opening appears.
    pool = eligible(load_table("italian"), M.TABLE_UP_TO_1)
    counts = Counter(draw_opening("italian", M.TABLE_UP_TO_1, seed=f"stats:{i}").number for i in range(10_000))
    assert set(counts) == {o.number for o in pool}
    assert len(counts) == 83
    levels = {load_table("italian").get(n).class_label for n in counts if n is not None}
    assert levels == {"PARI", "1B", "1N"}
    # Uniform: about 120 each; with these fixed seeds the spread is well inside 60..180.
    assert min(counts.values()) > 60 and max(counts.values()) < 180


def test_english_up_to_class_1_draws_pari_and_best_only() -> None:
    counts = Counter(draw_opening("english", M.TABLE_UP_TO_1, seed=i).class_label for i in range(2_000))
    assert set(counts) == {"PARI", "1B", "1N"}


@pytest.mark.parametrize("variant", ["italian", "english"])
@pytest.mark.parametrize("mode", [M.TABLE_UP_TO_1, M.TABLE_UP_TO_2, M.TABLE_UP_TO_3, M.TABLE_ALL])
def test_a_swiss_of_eleven_rounds_never_repeats(variant: str, mode: M) -> None:
    allowed = {o.number for o in eligible(load_table(variant), mode)}
    for tournament in range(100):
        drawn = swiss(variant, mode, f"t_{tournament}")
        assert len(set(drawn)) == SWISS_MAX_ROUNDS
        assert set(drawn) <= allowed


def test_exhausted_table_is_a_clear_error() -> None:
    every = [o.number for o in eligible(load_table("english"), M.TABLE_UP_TO_1)]
    with pytest.raises(OpeningError, match="all 134 english openings .* already been drawn .*O-10"):
        draw_opening("english", M.TABLE_UP_TO_1, seed="x", exclude=every)
    # One left: it is the one drawn, whatever the seed.
    last = every.pop()
    assert {draw_opening("english", M.TABLE_UP_TO_1, seed=s, exclude=every).number for s in range(20)} == {last}


def test_same_seed_same_opening() -> None:
    # The service seeds with competition id and round: asking again gives the same answer.
    first = draw_opening("italian", M.TABLE_ALL, seed="t_42:3")
    assert draw_opening("italian", M.TABLE_ALL, seed="t_42:3") == first
    numbers = {draw_opening("italian", M.TABLE_ALL, seed=f"t_42:{r}").number for r in range(1, 12)}
    assert len(numbers) > 5


def test_draws_are_pinned() -> None:
    # Golden values: a change here changes the opening of rounds already drawn in production.
    assert draw_opening("italian", M.TABLE_UP_TO_1, seed="t_42:1").number == PINNED["italian"]
    assert draw_opening("english", M.TABLE_ALL, seed=7).number == PINNED["english"]
    assert random_opening("international", 3, seed=b"arena").moves == PINNED["random"]


def test_seed_types_are_distinct() -> None:
    numbers = {
        draw_opening("italian", M.TABLE_ALL, seed=seed).number for seed in (7, "7", b"7")
    }
    assert len(numbers) == 3  # with these seeds; the int, the string and the bytes are tagged apart


def test_drawn_opening_fields() -> None:
    drawn = draw_opening("italian", M.TABLE_UP_TO_2, seed="t")
    assert drawn.opening is not None
    assert drawn.variant == "italian" and drawn.mode is M.TABLE_UP_TO_2
    assert drawn.moves == drawn.opening.moves and drawn.fen == drawn.opening.fen_after
    assert drawn.number == drawn.opening.number
    assert drawn.level is not None and drawn.level <= 2
    assert drawn.class_label == drawn.opening.class_label


def test_thematic_is_the_chosen_opening_every_round() -> None:
    # O-9: no draw, and O-10's no-repeat does not apply.
    rounds = {
        draw_opening("english", M.THEMATIC, seed=r, exclude=[60], thematic_opening=60) for r in range(11)
    }
    assert len(rounds) == 1
    (drawn,) = rounds
    assert drawn.number == 60 and drawn.opening is not None and drawn.opening.name == "Black Hole"
    assert draw_opening("english", M.THEMATIC, thematic_opening=60) == drawn  # no seed needed


def test_free_is_the_initial_position() -> None:
    for variant in Variant:
        drawn = draw_opening(variant.value, M.FREE)
        assert drawn.moves == () and drawn.opening is None and drawn.number is None
        assert drawn.fen == Position.initial(variant).to_fen() == initial_fen(variant.value)


@pytest.mark.parametrize("variant", list(Variant))
@pytest.mark.parametrize("mode", [M.RANDOM_1, M.RANDOM_2, M.RANDOM_3])
def test_random_openings_are_legal_in_every_variant(variant: Variant, mode: M) -> None:
    first_moves: Counter[str] = Counter()
    for i in range(200):
        drawn = draw_opening(variant.value, mode, seed=f"g{i}")
        assert drawn.mode is mode and drawn.opening is None and drawn.number is None
        assert len(drawn.moves) == mode.random_moves
        position = Position.initial(variant)
        for text in drawn.moves:
            position = position.play(text)  # raises if not legal
        assert position.to_fen() == drawn.fen
        first_moves[drawn.moves[0]] += 1
    # O-2: uniform among the legal first moves, so every one of them turns up.
    assert set(first_moves) == {m.notation for m in Position.initial(variant).legal_moves()}


@given(seed=st.one_of(st.integers(), st.text(), st.binary()), plies=st.integers(1, 3))
def test_random_opening_is_deterministic(seed: int | str | bytes, plies: int) -> None:
    assert random_opening("russian", plies, seed=seed) == random_opening("russian", plies, seed=seed)


def test_random_modes_need_a_seed_and_ignore_numbers() -> None:
    with pytest.raises(OpeningError, match="needs a seed"):
        draw_opening("italian", M.RANDOM_2)
    with pytest.raises(OpeningError, match="needs a seed"):
        draw_opening("italian", M.TABLE_UP_TO_1)
    with pytest.raises(OpeningError, match="1, 2 or 3 moves"):
        random_opening("italian", 4, seed=1)


@pytest.mark.parametrize("mode", [M.TABLE_UP_TO_1, M.TABLE_UP_TO_2, M.TABLE_UP_TO_3, M.TABLE_ALL, M.THEMATIC])
def test_table_modes_only_for_italian_and_english(mode: M) -> None:
    number = 1 if mode is M.THEMATIC else None
    with pytest.raises(
        OpeningError,
        match=r"variant russian has no official opening table; table modes are for italian and english \(O-5..O-9\)",
    ):
        draw_opening("russian", mode, seed=1, thematic_opening=number)


def test_thematic_errors() -> None:
    with pytest.raises(OpeningError, match="needs the number of its opening"):
        draw_opening("italian", M.THEMATIC, seed=1)
    with pytest.raises(OpeningError, match="only a thematic tournament chooses"):
        draw_opening("italian", M.TABLE_ALL, seed=1, thematic_opening=5)


def test_bad_seed_type() -> None:
    with pytest.raises(OpeningError, match="a seed is bytes, str or int"):
        draw_opening("italian", M.TABLE_ALL, seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(OpeningError, match="a seed is bytes, str or int"):
        draw_opening("italian", M.TABLE_ALL, seed=True)


def test_unknown_variant() -> None:
    with pytest.raises(OpeningError, match="unknown draughts variant 'hexdame'"):
        draw_opening("hexdame", M.FREE)


PINNED: dict[str, object] = {"italian": 1, "english": 121, "random": ("34-29", "20-25", "29-23")}
