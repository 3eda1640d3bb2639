"""Standings and tie-breaks on hand-made crosstables (T-8, T-12, T-21, T-22) and property checks."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.scoring import score_game
from arbiter.competition.standings import (
    ROUND_ROBIN_ORDER,
    SWISS_ORDER,
    StandingRow,
    StandingsError,
    TieBreak,
    buchholz_cut1,
    compute_standings,
    separating_criterion,
    why_above,
)
from arbiter.competition.types import Format
from arbiter.vocabulary import ResultKind, Side

SWISS, RR = Format.SWISS, Format.ROUND_ROBIN
K = ResultKind


def g(rnd: int, white: str, black: str, score: str, kind: ResultKind = K.NORMAL) -> PlayedGame[str]:
    """`g(1, "a", "b", "2-0")`: one game, points as White-Black."""
    white_points, black_points = (int(x) for x in score.split("-"))
    return PlayedGame(rnd, white, black, white_points, black_points, kind)


def swiss_entrants(names: str) -> list[Entrant]:
    """Entrants with initial ranks in the order given (T-13)."""
    return [Entrant(name, initial_rank=i) for i, name in enumerate(names, start=1)]


def rr_entrants(names: str) -> list[Entrant]:
    """Entrants with Berger numbers in the order given (T-14)."""
    return [Entrant(name, berger_number=i) for i, name in enumerate(names, start=1)]


def table(rows: tuple[StandingRow, ...]) -> list[tuple[object, ...]]:
    """rank, entrant, points, BH, SB, wins, games, h2h, tie-break."""
    return [
        (
            r.rank,
            r.entrant,
            r.points,
            r.buchholz,
            r.sonneborn_berger,
            r.wins,
            r.games,
            r.head_to_head,
            r.tie_break_used,
        )
        for r in rows
    ]


# ---------------------------------------------------------------- Swiss (T-21)


def test_swiss_byes_are_not_opponents_and_not_wins() -> None:
    games = [
        g(1, "A", "B", "2-0"), g(1, "C", "D", "1-1"),
        g(2, "E", "A", "0-2"), g(2, "B", "C", "2-0"),
        g(3, "A", "D", "1-1"), g(3, "C", "E", "0-2"),
    ]  # fmt: skip
    byes = [Bye(1, "E"), Bye(2, "D"), Bye(3, "B")]
    rows = compute_standings(SWISS, swiss_entrants("ABCDE"), games, byes)
    # B's BH: opponents A (5) and C (1), cut 1 -> 5; a bye counted as a 0-point opponent would give 6.
    assert table(rows) == [
        (1, "A", 5, 8, 10.0, 2, 3, None, None),
        (2, "D", 4, 5, 3.0, 0, 2, None, TieBreak.POINTS),
        (3, "B", 4, 5, 1.0, 1, 2, None, TieBreak.SONNEBORN_BERGER),
        (4, "E", 4, 5, 1.0, 1, 2, None, TieBreak.INITIAL_RANK),
        (5, "C", 1, 8, 2.0, 0, 3, None, TieBreak.POINTS),
    ]


def test_swiss_sonneborn_berger_follows_buchholz() -> None:
    games = [
        g(1, "A", "B", "2-0"), g(1, "C", "D", "2-0"),
        g(2, "A", "C", "1-1"), g(2, "D", "B", "2-0"),
    ]  # fmt: skip
    rows = compute_standings(SWISS, swiss_entrants("ABCD"), games)
    # A and C on 3 with BH 3 (A: B 0 cut, C 3; C: D 2 cut, A 3); C beat D (2), A beat B (0).
    assert [(r.entrant, r.points, r.buchholz, r.sonneborn_berger, r.tie_break_used) for r in rows] == [
        ("C", 3, 3, 3.5, None),
        ("A", 3, 3, 1.5, TieBreak.SONNEBORN_BERGER),
        ("D", 2, 3, 0.0, TieBreak.POINTS),
        ("B", 0, 3, 0.0, TieBreak.POINTS),
    ]
    games[-1] = g(2, "D", "B", "0-2")
    rows = compute_standings(SWISS, swiss_entrants("ABCD"), games)
    # Now B has 2 and D 0, and A's win is the better one.
    assert [r.entrant for r in rows[:2]] == ["A", "C"]
    assert (rows[0].sonneborn_berger, rows[1].sonneborn_berger) == (3.5, 1.5)
    assert rows[1].tie_break_used is TieBreak.SONNEBORN_BERGER


def test_swiss_buchholz_cut_separates() -> None:
    # X and Y both 2/2 wins; X's opponents scored more.
    games = [
        g(1, "X", "P", "2-0"), g(1, "Y", "Q", "2-0"), g(1, "R", "S", "2-0"),
        g(2, "X", "R", "2-0"), g(2, "Y", "S", "2-0"), g(2, "P", "Q", "2-0"),
        g(3, "R", "P", "1-1"), g(3, "S", "Q", "2-0"), g(3, "X", "Y", "1-1"),
    ]  # fmt: skip
    rows = compute_standings(SWISS, swiss_entrants("YXPQRS"), games)
    by_id = {r.entrant: r for r in rows}
    # Points: X 5, Y 5, P 3, Q 0, R 3, S 2.
    assert {e: r.points for e, r in by_id.items()} == {"X": 5, "Y": 5, "P": 3, "Q": 0, "R": 3, "S": 2}
    # BH: X met P 3, R 3, Y 5 -> 8; Y met Q 0, S 2, X 5 -> 7.
    assert (by_id["X"].buchholz, by_id["Y"].buchholz) == (8, 7)
    assert [r.entrant for r in rows[:2]] == ["X", "Y"]
    assert rows[1].tie_break_used is TieBreak.BUCHHOLZ_CUT1


def test_swiss_wins_then_initial_rank() -> None:
    games = [
        g(1, "X", "P", "2-0"), g(1, "Y", "Q", "1-1"),
        g(2, "X", "Q", "0-2"), g(2, "Y", "P", "1-1"),
        g(3, "X", "Y", "1-1"), g(3, "P", "Q", "2-0"),
    ]  # fmt: skip
    rows = compute_standings(SWISS, swiss_entrants("XYPQ"), games)
    # Everyone 3 points, BH 6, SB 4.5; Y has no win.
    assert table(rows) == [
        (1, "X", 3, 6, 4.5, 1, 3, None, None),
        (2, "P", 3, 6, 4.5, 1, 3, None, TieBreak.INITIAL_RANK),
        (3, "Q", 3, 6, 4.5, 1, 3, None, TieBreak.INITIAL_RANK),
        (4, "Y", 3, 6, 4.5, 0, 3, None, TieBreak.WINS),
    ]


def test_swiss_double_rounds_bh_once_per_opponent_sb_per_game() -> None:
    games = [
        g(1, "A", "B", "2-0"), g(1, "B", "A", "1-1"), g(1, "C", "D", "1-1"), g(1, "D", "C", "1-1"),
        g(2, "A", "C", "0-2"), g(2, "C", "A", "1-1"), g(2, "B", "D", "2-0"), g(2, "D", "B", "0-2"),
    ]  # fmt: skip
    rows = compute_standings(SWISS, swiss_entrants("ABCD"), games)
    assert table(rows) == [
        (1, "C", 5, 4, 8.0, 1, 4, None, None),
        (2, "B", 5, 4, 6.0, 2, 4, None, TieBreak.SONNEBORN_BERGER),
        (3, "A", 4, 5, 10.0, 1, 4, None, TieBreak.POINTS),
        (4, "D", 2, 5, 5.0, 0, 4, None, TieBreak.POINTS),
    ]


def test_swiss_double_bye_is_worth_four() -> None:
    games = [g(1, "A", "B", "2-0"), g(1, "B", "A", "2-0")]
    rows = compute_standings(SWISS, swiss_entrants("ABC"), games, [Bye(1, "C", 4)])
    assert [(r.entrant, r.points, r.wins, r.games, r.buchholz, r.sonneborn_berger) for r in rows] == [
        ("C", 4, 0, 0, 0, 0.0),
        ("A", 2, 1, 2, 0, 2.0),
        ("B", 2, 1, 2, 0, 2.0),
    ]


def test_swiss_absence_kinds_in_tie_breaks() -> None:
    # T-18: B busy, A wins by forfeit; T-19: C and D both absent; T-16: B never sat, D wins.
    games = [
        g(1, "A", "B", "2-0", K.BUSY_FORFEIT), g(1, "C", "D", "0-0", K.BOTH_ABSENT),
        g(2, "A", "C", "1-1"), g(2, "B", "D", "0-2", K.NEVER_SAT),
    ]  # fmt: skip
    rows = compute_standings(SWISS, swiss_entrants("ABCD"), games)
    assert table(rows) == [
        # A's forfeit win is a win and adds B's 0 to SB; B is an opponent for BH.
        (1, "A", 3, 1, 0.5, 1, 2, None, None),
        (2, "D", 2, 1, 0.0, 1, 2, None, TieBreak.POINTS),
        # C's 0-0 opponent D counts for BH (D 2, A 3 -> 3), adds nothing to SB.
        (3, "C", 1, 3, 1.5, 0, 2, None, TieBreak.POINTS),
        (4, "B", 0, 3, 0.0, 0, 2, None, TieBreak.POINTS),
    ]


def test_t13_initial_rank_orders_a_field_with_no_games() -> None:
    rows = compute_standings(
        SWISS, [Entrant("z", initial_rank=2), Entrant("y", initial_rank=1), Entrant("x", initial_rank=3)], []
    )
    assert [(r.rank, r.entrant, r.tie_break_used) for r in rows] == [
        (1, "y", None), (2, "z", TieBreak.INITIAL_RANK), (3, "x", TieBreak.INITIAL_RANK)
    ]  # fmt: skip


def test_records_from_scored_games() -> None:
    score = score_game(K.BUSY_FORFEIT, Side.BLACK)
    assert PlayedGame.scored(3, "a", "b", score) == PlayedGame(3, "a", "b", 0, 2, K.BUSY_FORFEIT)


def test_buchholz_cut1() -> None:
    assert buchholz_cut1([]) == 0
    assert buchholz_cut1([7]) == 0
    assert buchholz_cut1([3, 1, 5, 1]) == 9


# ------------------------------------------------------------ round robin (T-22)


def four_player_double() -> list[PlayedGame[str]]:
    """A T-10 double round robin on the Berger table for 4."""
    return [
        g(1, "p1", "p4", "2-0"), g(1, "p4", "p1", "1-1"), g(1, "p2", "p3", "1-1"), g(1, "p3", "p2", "1-1"),
        g(2, "p4", "p3", "0-2"), g(2, "p3", "p4", "2-0"), g(2, "p1", "p2", "0-2"), g(2, "p2", "p1", "1-1"),
        g(3, "p2", "p4", "2-0"), g(3, "p4", "p2", "1-1"), g(3, "p3", "p1", "0-2"), g(3, "p1", "p3", "2-0"),
    ]  # fmt: skip


def test_rr_wins_come_before_head_to_head() -> None:
    rows = compute_standings(RR, rr_entrants(["p1", "p2", "p3", "p4"]), four_player_double())
    # p2 scored 3 of 4 against p1 but p1 has more wins: T-22 (1) before (2). SB per game, info only.
    assert table(rows) == [
        (1, "p1", 8, None, 19.0, 3, 6, 1, None),
        (2, "p2", 8, None, 21.0, 2, 6, 3, TieBreak.WINS),
        (3, "p3", 6, None, 12.0, 2, 6, 0, TieBreak.POINTS),
        (4, "p4", 2, None, 8.0, 0, 6, 0, TieBreak.POINTS),
    ]


FIVE_BYES = [Bye(1, "p1"), Bye(2, "p4"), Bye(3, "p2"), Bye(4, "p5"), Bye(5, "p3")]


def test_rr_head_to_head_decides_with_byes() -> None:
    games = [
        g(1, "p2", "p5", "2-0"), g(1, "p3", "p4", "2-0"),
        g(2, "p5", "p3", "2-0"), g(2, "p1", "p2", "2-0"),
        g(3, "p3", "p1", "2-0"), g(3, "p4", "p5", "1-1"),
        g(4, "p1", "p4", "1-1"), g(4, "p2", "p3", "1-1"),
        g(5, "p4", "p2", "0-2"), g(5, "p5", "p1", "0-2"),
    ]  # fmt: skip
    rows = compute_standings(RR, rr_entrants(["p1", "p2", "p3", "p4", "p5"]), games, FIVE_BYES)
    assert table(rows) == [
        (1, "p3", 7, None, 14.5, 2, 4, 3, None),
        (2, "p1", 7, None, 14.0, 2, 4, 2, TieBreak.HEAD_TO_HEAD),
        (3, "p2", 7, None, 12.5, 2, 4, 1, TieBreak.HEAD_TO_HEAD),
        (4, "p5", 5, None, 9.0, 1, 4, 0, TieBreak.POINTS),
        (5, "p4", 4, None, 6.0, 0, 4, 0, TieBreak.POINTS),
    ]


def test_rr_head_to_head_counts_every_player_tied_on_points() -> None:
    # p1, p2, p3 on 7; p3 is ahead on wins. p1-p2 drew each other, but among all three on 7
    # p2 scored 3 (beat p3) and p1 2 (drew both): the mini-table is the whole points group.
    games = [
        g(1, "p2", "p5", "1-1"), g(1, "p3", "p4", "2-0"),
        g(2, "p5", "p3", "0-2"), g(2, "p1", "p2", "1-1"),
        g(3, "p3", "p1", "1-1"), g(3, "p4", "p5", "2-0"),
        g(4, "p1", "p4", "2-0"), g(4, "p2", "p3", "2-0"),
        g(5, "p4", "p2", "1-1"), g(5, "p5", "p1", "1-1"),
    ]  # fmt: skip
    rows = compute_standings(RR, rr_entrants(["p1", "p2", "p3", "p4", "p5"]), games, FIVE_BYES)
    assert [(r.entrant, r.points, r.wins, r.head_to_head, r.tie_break_used) for r in rows] == [
        ("p3", 7, 2, 1, None),
        ("p2", 7, 1, 3, TieBreak.WINS),
        ("p1", 7, 1, 2, TieBreak.HEAD_TO_HEAD),
        ("p4", 5, 1, 0, TieBreak.POINTS),
        ("p5", 4, 0, 0, TieBreak.POINTS),
    ]


def test_rr_berger_number_is_the_last_tie_break() -> None:
    # Three players, a cycle: everybody 4 points (a win and a bye), one win, 2 in the mini-table.
    entrants = [Entrant("x", berger_number=3), Entrant("y", berger_number=1), Entrant("z", berger_number=2)]
    games = [g(1, "z", "x", "2-0"), g(2, "y", "z", "2-0"), g(3, "x", "y", "2-0")]
    byes = [Bye(1, "y"), Bye(2, "x"), Bye(3, "z")]
    rows = compute_standings(RR, entrants, games, byes)
    assert table(rows) == [
        (1, "y", 4, None, 4.0, 1, 2, 2, None),
        (2, "z", 4, None, 4.0, 1, 2, 2, TieBreak.BERGER_NUMBER),
        (3, "x", 4, None, 4.0, 1, 2, 2, TieBreak.BERGER_NUMBER),
    ]


def test_rr_absence_kinds_count_by_their_points() -> None:
    games = [
        g(1, "a", "b", "2-0", K.BUSY_FORFEIT), g(1, "c", "d", "0-0", K.BOTH_ABSENT),
        g(2, "a", "c", "0-2", K.NEVER_SAT), g(2, "b", "d", "1-1", K.CLOSED_DRAW),
        g(3, "a", "d", "1-1"), g(3, "b", "c", "2-0"),
    ]  # fmt: skip
    rows = compute_standings(RR, rr_entrants("abcd"), games)
    # a: 3 pts, 1 win (forfeit); b: 3 pts, 1 win; c: 2, 1 win; d: 2, 0 wins.
    # a-b tied on 3 and 1 win; head-to-head a 2 (the forfeit win), b 0.
    assert [(r.entrant, r.points, r.wins, r.head_to_head, r.tie_break_used) for r in rows] == [
        ("a", 3, 1, 2, None),
        ("b", 3, 1, 0, TieBreak.HEAD_TO_HEAD),
        ("c", 2, 1, 0, TieBreak.POINTS),
        ("d", 2, 0, 0, TieBreak.WINS),
    ]


# ------------------------------------------------------------------ explanations


def test_why_above_names_the_criterion_values_and_rule() -> None:
    rows = compute_standings(RR, rr_entrants(["p1", "p2", "p3", "p4"]), four_player_double())
    assert why_above(RR, rows, "p2", "p1") == (
        "p1 (rank 1) is above p2 (rank 2): level on points; more wins, 3 against 2 (T-22)"
    )
    assert why_above(RR, rows, "p1", "p4") == (
        "p1 (rank 1) is above p4 (rank 4): more points, 8 against 2 (T-7)"
    )
    entrants = [Entrant("x", berger_number=3), Entrant("y", berger_number=1), Entrant("z", berger_number=2)]
    games = [g(1, "z", "x", "2-0"), g(2, "y", "z", "2-0"), g(3, "x", "y", "2-0")]
    rows = compute_standings(RR, entrants, games, [Bye(1, "y"), Bye(2, "x"), Bye(3, "z")])
    assert why_above(RR, rows, "x", "y") == (
        "y (rank 1) is above x (rank 3): level on points, wins, head-to-head among the players "
        "tied on points; lower Berger number, 1 against 3 (T-22)"
    )
    with pytest.raises(StandingsError, match="nobody is not in these standings"):
        why_above(RR, rows, "x", "nobody")


def test_swiss_why_above_sb_half_points() -> None:
    games = [
        g(1, "A", "B", "2-0"), g(1, "C", "D", "2-0"),
        g(2, "A", "C", "1-1"), g(2, "D", "B", "0-2"),
    ]  # fmt: skip
    rows = compute_standings(SWISS, swiss_entrants("ABCD"), games)
    assert why_above(SWISS, rows, "C", "A") == (
        "A (rank 1) is above C (rank 2): level on points, Buchholz Cut 1; "
        "more Sonneborn-Berger, 3.5 against 1.5 (T-21)"
    )


# -------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("fmt", "entrants", "games", "byes", "message"),
    [
        (SWISS, [Entrant("a", initial_rank=1), Entrant("a", initial_rank=2)], [], [], "appears twice"),
        (SWISS, [Entrant("a", initial_rank=1), Entrant("b")], [], [], "b: no initial rank"),
        (SWISS, [Entrant("a", initial_rank=1), Entrant("b", initial_rank=1)], [], [], "the same initial rank"),
        (RR, [Entrant("a", berger_number=1), Entrant("b")], [], [], "no Berger number"),
        (SWISS, swiss_entrants("ab"), [g(1, "a", "x", "2-0")], [], "x is not an entrant"),
        (SWISS, swiss_entrants("ab"), [g(1, "a", "a", "2-0")], [], "play themselves"),
        (SWISS, swiss_entrants("ab"), [g(0, "a", "b", "2-0")], [], "numbered from 1"),
        (SWISS, swiss_entrants("ab"), [g(1, "a", "b", "2-1")], [], "not a possible normal score"),
        (SWISS, swiss_entrants("ab"), [g(1, "a", "b", "1-1", K.BUSY_FORFEIT)], [], "busy_forfeit"),
        (SWISS, swiss_entrants("ab"), [g(1, "a", "b", "1-1", K.BOTH_ABSENT)], [], "both_absent"),
        (SWISS, swiss_entrants("abc"), [g(1, "a", "b", "2-0"), g(1, "a", "c", "2-0")], [], "already has"),
        (SWISS, swiss_entrants("ab"), [g(1, "a", "b", "2-0")] * 3, [], "at most two games"),
        (SWISS, swiss_entrants("ab"), [], [Bye(1, "x")], "x is not an entrant"),
        (SWISS, swiss_entrants("ab"), [], [Bye(1, "a", 3)], r"points, not 3 \(T-8\)"),
        (SWISS, swiss_entrants("ab"), [], [Bye(1, "a"), Bye(1, "a")], "two byes"),
        (SWISS, swiss_entrants("ab"), [g(1, "a", "b", "2-0")], [Bye(1, "a")], "both a game and a bye"),
    ],
)
def test_impossible_input_is_refused(
    fmt: Format, entrants: list[Entrant], games: list[PlayedGame[str]], byes: list[Bye[str]], message: str
) -> None:
    with pytest.raises(StandingsError, match=message):
        compute_standings(fmt, entrants, games, byes)


# --------------------------------------------------------------------- properties


@st.composite
def tournaments(draw: st.DrawFn) -> tuple[Format, list[Entrant], list[PlayedGame[str]], list[Bye[str]]]:
    """Random complete tournaments: random pairings each round, random results of every kind."""
    fmt = draw(st.sampled_from(Format))
    n = draw(st.integers(2, 9))
    rounds = draw(st.integers(0, 5))
    double = draw(st.booleans())
    seed = draw(st.integers(0, 2**32))
    rng = random.Random(seed)
    ids = [f"e{i}" for i in range(n)]
    numbers = list(range(1, n + 1))
    rng.shuffle(numbers)
    entrants = [Entrant(e, initial_rank=k, berger_number=k) for e, k in zip(ids, numbers, strict=True)]
    outcomes = [
        ("2-0", K.NORMAL), ("0-2", K.NORMAL), ("1-1", K.NORMAL), ("2-0", K.NEVER_SAT),
        ("0-2", K.BUSY_FORFEIT), ("0-0", K.BOTH_ABSENT), ("1-1", K.CLOSED_DRAW),
    ]  # fmt: skip
    games, byes = [], []
    for rnd in range(1, rounds + 1):
        order = ids[:]
        rng.shuffle(order)
        if len(order) % 2:
            byes.append(Bye(rnd, order.pop(), 4 if double else 2))
        for white, black in zip(order[::2], order[1::2], strict=True):
            for leg in range(2 if double else 1):
                score, kind = rng.choice(outcomes)
                w, b = (white, black) if leg == 0 else (black, white)
                games.append(g(rnd, w, b, score, kind))
    return fmt, entrants, games, byes


@given(tournaments(), st.randoms(use_true_random=False))
def test_standings_properties(
    case: tuple[Format, list[Entrant], list[PlayedGame[str]], list[Bye[str]]], rnd: random.Random
) -> None:
    fmt, entrants, games, byes = case
    rows = compute_standings(fmt, entrants, games, byes)
    assert [r.rank for r in rows] == list(range(1, len(entrants) + 1))
    assert sorted(r.entrant for r in rows) == sorted(e.player for e in entrants)
    # Points: every game hands out its points, every bye its 2 or 4.
    assert sum(r.points for r in rows) == sum(x.white_points + x.black_points for x in games) + sum(
        b.points for b in byes
    )
    for row in rows:
        assert 0 <= row.wins <= row.games
        assert row.sonneborn_berger * 2 == int(row.sonneborn_berger * 2)
        assert (row.buchholz is None) == (fmt is Format.ROUND_ROBIN)
        assert (row.head_to_head is None) == (fmt is Format.SWISS)
    # The order is the criteria order, and each tie-break names the first criterion that differs.
    order = SWISS_ORDER if fmt is Format.SWISS else ROUND_ROBIN_ORDER
    assert rows[0].tie_break_used is None
    for upper, lower in pairwise(rows):
        criterion = separating_criterion(fmt, upper, lower)
        assert lower.tie_break_used is criterion
        for earlier in order[: order.index(criterion)]:
            assert upper.value(earlier) == lower.value(earlier)
        better = upper.value(criterion), lower.value(criterion)
        if criterion in (TieBreak.BERGER_NUMBER, TieBreak.INITIAL_RANK):
            assert better[0] < better[1]
        else:
            assert better[0] > better[1]
    # Deterministic: the order of the input does not matter.
    shuffled = games[:]
    rnd.shuffle(shuffled)
    assert compute_standings(fmt, list(reversed(entrants)), shuffled, list(reversed(byes))) == rows

