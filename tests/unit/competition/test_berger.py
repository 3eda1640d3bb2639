"""Berger tables against FIDE C.05 Annex 1 as printed (T-14), byes (T-8) and home and away (T-10, T-12)."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.competition.berger import (
    BergerError,
    BergerRound,
    Board,
    berger_round,
    berger_table,
    draw_berger_numbers,
    table_size,
)

# FIDE C.05 Annex 1, copied as printed: one string per round, White first.
FIDE_PRINTED = {
    4: [
        "1-4 2-3",
        "4-3 1-2",
        "2-4 3-1",
    ],
    6: [
        "1-6 2-5 3-4",
        "6-4 5-3 1-2",
        "2-6 3-1 4-5",
        "6-5 1-4 2-3",
        "3-6 4-2 5-1",
    ],
    8: [
        "1-8 2-7 3-6 4-5",
        "8-5 6-4 7-3 1-2",
        "2-8 3-1 4-7 5-6",
        "8-6 7-5 1-4 2-3",
        "3-8 4-2 5-1 6-7",
        "8-7 1-6 2-5 3-4",
        "4-8 5-3 6-2 7-1",
    ],
    10: [
        "1-10 2-9 3-8 4-7 5-6",
        "10-6 7-5 8-4 9-3 1-2",
        "2-10 3-1 4-9 5-8 6-7",
        "10-7 8-6 9-5 1-4 2-3",
        "3-10 4-2 5-1 6-9 7-8",
        "10-8 9-7 1-6 2-5 3-4",
        "4-10 5-3 6-2 7-1 8-9",
        "10-9 1-8 2-7 3-6 4-5",
        "5-10 6-4 7-3 8-2 9-1",
    ],
    12: [
        "1-12 2-11 3-10 4-9 5-8 6-7",
        "12-7 8-6 9-5 10-4 11-3 1-2",
        "2-12 3-1 4-11 5-10 6-9 7-8",
        "12-8 9-7 10-6 11-5 1-4 2-3",
        "3-12 4-2 5-1 6-11 7-10 8-9",
        "12-9 10-8 11-7 1-6 2-5 3-4",
        "4-12 5-3 6-2 7-1 8-11 9-10",
        "12-10 11-9 1-8 2-7 3-6 4-5",
        "5-12 6-4 7-3 8-2 9-1 10-11",
        "12-11 1-10 2-9 3-8 4-7 5-6",
        "6-12 7-5 8-4 9-3 10-2 11-1",
    ],
}
# First, second and last rounds of the larger printed tables.
FIDE_PRINTED_PARTIAL = {
    14: {
        1: "1-14 2-13 3-12 4-11 5-10 6-9 7-8",
        2: "14-8 9-7 10-6 11-5 12-4 13-3 1-2",
        13: "7-14 8-6 9-5 10-4 11-3 12-2 13-1",
    },
    16: {
        1: "1-16 2-15 3-14 4-13 5-12 6-11 7-10 8-9",
        2: "16-9 10-8 11-7 12-6 13-5 14-4 15-3 1-2",
        15: "8-16 9-7 10-6 11-5 12-4 13-3 14-2 15-1",
    },
}


def printed(berger: BergerRound) -> str:
    """A round as FIDE prints it, the bye as `k-bye` on board 1."""
    cells = [f"{b.white}-{b.black}" for b in berger.boards]
    if berger.bye is not None:
        cells.insert(0, f"{berger.bye}-bye")
    return " ".join(cells)


def with_bye_number(line: str, size: int) -> str:
    """The printed even table line read for n = size - 1: the highest number is the bye (T-14)."""
    cells = []
    for cell in line.split():
        white, black = cell.split("-")
        if str(size) in (white, black):
            cells.insert(0, f"{black if white == str(size) else white}-bye")
        else:
            cells.append(cell)
    return " ".join(cells)


def oracle(entrants: int) -> list[str]:
    """An independent closed form of the FIDE tables (not the rotation the library uses)."""
    n = table_size(entrants)
    half = n // 2
    lines = []
    for r in range(1, n):
        # n meets p with p White when p <= n/2 (odd rounds), Black otherwise (even rounds).
        p = (r + 1) // 2 if r % 2 else half + r // 2
        boards = [(p, n) if r % 2 else (n, p)]
        for k in range(1, half):
            first = (p - 1 + k) % (n - 1) + 1
            # {i, j} meets in round i + j - 1 (mod n-1).
            partner = (r - first) % (n - 1) + 1
            low, high = sorted((first, partner))
            # Odd sum: the lower number has White; even sum: the higher.
            boards.append((low, high) if (low + high) % 2 else (high, low))
        line = " ".join(f"{w}-{b}" for w, b in boards)
        lines.append(line if n == entrants else with_bye_number(line, n))
    return lines


@pytest.mark.parametrize("size", sorted(FIDE_PRINTED))
def test_even_tables_equal_fide_printed(size: int) -> None:
    assert [printed(r) for r in berger_table(size)] == FIDE_PRINTED[size]


@pytest.mark.parametrize("size", sorted(FIDE_PRINTED))
def test_odd_tables_are_the_next_even_table_with_the_highest_number_as_bye(size: int) -> None:
    expected = [with_bye_number(line, size) for line in FIDE_PRINTED[size]]
    assert [printed(r) for r in berger_table(size - 1)] == expected


@pytest.mark.parametrize("size", sorted(FIDE_PRINTED_PARTIAL))
def test_large_tables_equal_fide_printed_rounds(size: int) -> None:
    table = berger_table(size)
    for number, line in FIDE_PRINTED_PARTIAL[size].items():
        assert printed(table[number - 1]) == line
        assert printed(berger_round(size - 1, number)) == with_bye_number(line, size)


def test_the_oracle_reproduces_every_printed_table() -> None:
    for size, lines in FIDE_PRINTED.items():
        assert oracle(size) == lines
        assert oracle(size - 1) == [with_bye_number(line, size) for line in lines]
    for size, rounds in FIDE_PRINTED_PARTIAL.items():
        for number, line in rounds.items():
            assert oracle(size)[number - 1] == line


@pytest.mark.parametrize("entrants", range(2, 21))
def test_generator_equals_closed_form_for_every_size(entrants: int) -> None:
    assert [printed(r) for r in berger_table(entrants)] == oracle(entrants)


@pytest.mark.parametrize("entrants", range(2, 21))
def test_every_pair_meets_exactly_once_and_everyone_plays_or_rests_each_round(entrants: int) -> None:
    table = berger_table(entrants)
    # T-9: n-1 rounds for even n, n for odd n.
    assert len(table) == (entrants - 1 if entrants % 2 == 0 else entrants)
    assert [r.number for r in table] == list(range(1, len(table) + 1))
    meetings = [frozenset((b.white, b.black)) for r in table for b in r.boards]
    assert sorted(meetings, key=sorted) == sorted(
        (frozenset(p) for p in itertools.combinations(range(1, entrants + 1), 2)), key=sorted
    )
    for r in table:
        seated = [x for b in r.boards for x in (b.white, b.black)] + ([r.bye] if r.bye else [])
        assert sorted(seated) == list(range(1, entrants + 1))


@pytest.mark.parametrize("entrants", range(3, 21, 2))
def test_odd_n_everyone_rests_exactly_once(entrants: int) -> None:
    byes = [r.bye for r in berger_table(entrants)]
    assert sorted(byes) == list(range(1, entrants + 1))
    # The bye is whoever the highest table number meets, e.g. 1, 4, 2, 5, 3 for five.
    if entrants == 5:
        assert byes == [1, 4, 2, 5, 3]


@pytest.mark.parametrize("size", range(4, 21, 2))
def test_colour_balance_as_in_fide_tables(size: int) -> None:
    table = berger_table(size)
    for player in range(1, size + 1):
        colours = "".join(
            "W" if b.white == player else "B"
            for r in table
            for b in r.boards
            if player in (b.white, b.black)
        )
        # The first half of the numbers has one White more, the second half one Black more.
        assert colours.count("W") == (size // 2 if player <= size // 2 else size // 2 - 1)
        # Never three times the same colour in a row; the highest number alternates.
        assert not re.search("WWW|BBB", colours)
        if player == size:
            assert "WW" not in colours and "BB" not in colours


@pytest.mark.parametrize("entrants", range(2, 21))
def test_double_plays_each_pairing_twice_in_the_same_round_with_colours_reversed(entrants: int) -> None:
    for r in berger_table(entrants):
        games = r.games(2)
        assert len(games) == 2 * len(r.boards)
        for first, second in zip(games[::2], games[1::2], strict=True):
            assert second == Board(first.black, first.white)
    # Every entrant has exactly as many Whites as Blacks over the double round robin.
    whites = dict.fromkeys(range(1, entrants + 1), 0)
    blacks = dict(whites)
    for r in berger_table(entrants):
        for g in r.games(2):
            whites[g.white] += 1
            blacks[g.black] += 1
    assert whites == blacks


def test_t10_four_entrants_double_is_three_rounds_six_games_each() -> None:
    table = berger_table(4)
    assert len(table) == 3
    games = [g for r in table for g in r.games(2)]
    for player in range(1, 5):
        assert sum(player in (g.white, g.black) for g in games) == 6
    assert [" ".join(f"{g.white}-{g.black}" for g in r.games(2)) for r in table] == [
        "1-4 4-1 2-3 3-2",
        "4-3 3-4 1-2 2-1",
        "2-4 4-2 3-1 1-3",
    ]


def test_single_games_are_the_boards() -> None:
    r = berger_round(6, 2)
    assert r.games(1) == r.boards == (Board(6, 4), Board(5, 3), Board(1, 2))


@pytest.mark.parametrize("bad", [-1, 0, 1])
def test_sizes_below_two_are_refused(bad: int) -> None:
    with pytest.raises(BergerError):
        berger_table(bad)


def test_round_numbers_outside_the_table_are_refused() -> None:
    with pytest.raises(BergerError, match="rounds 1..5"):
        berger_round(6, 6)
    with pytest.raises(BergerError):
        berger_round(6, 0)
    with pytest.raises(BergerError, match="1 or 2"):
        berger_round(6, 1).games(3)


@given(st.lists(st.text(min_size=1, max_size=6), min_size=2, max_size=20, unique=True), st.integers())
def test_berger_number_draw_is_a_deterministic_permutation(entrants: list[str], seed: int) -> None:
    drawn = draw_berger_numbers(entrants, seed)
    assert sorted(drawn) == sorted(entrants)
    assert sorted(drawn.values()) == list(range(1, len(entrants) + 1))
    # Same seed and set of entrants, any arrival order: same numbers.
    assert draw_berger_numbers(list(reversed(entrants)), seed) == drawn


def test_berger_number_draw_refuses_duplicates() -> None:
    with pytest.raises(BergerError, match="distinct"):
        draw_berger_numbers(["a", "a"], 1)
