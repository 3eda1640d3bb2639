"""Swiss pairing through py4swiss (T-8, T-13, T-18..T-20): examples, errors and the fallback path."""

from __future__ import annotations

import pytest

from arbiter.competition import swiss
from arbiter.competition.swiss import (
    ENGINE,
    FALLBACK,
    PairingError,
    SwissBye,
    SwissEntrant,
    SwissGame,
    check_pairing,
    first_round,
    pair_swiss_round,
    pair_trf,
    run_engine,
    tournament_to_trf,
)
from arbiter.competition.swiss_fallback import fallback_pairing
from arbiter.competition.swiss_model import PairingState, PlayerState, prepare, violations
from arbiter.competition.trf import parse_trf, render_trf
from arbiter.competition.types import ResultKind

BUSY = ResultKind.BUSY_FORFEIT
ABSENT = ResultKind.BOTH_ABSENT


def field(n: int) -> list[SwissEntrant]:
    """n entrants whose numbers are not their ranks: number 10*i, rating falling with i."""
    return [SwissEntrant(10 * i, 2400 - 10 * i, f"player {i:03}") for i in range(1, n + 1)]


def game(r: int, white: int, black: int, result: str, kind: str = ResultKind.NORMAL, leg: int = 1) -> SwissGame:
    """A game from a score string: "1-0", "0-1", "=" (T-7 points) or "0-0"."""
    points = {"1-0": (2, 0), "0-1": (0, 2), "=": (1, 1), "0-0": (0, 0)}[result]
    return SwissGame(r, white, black, *points, kind=kind, leg=leg)


def played_round(r: int, pairs: list[tuple[int, int]], bye: int | None = None, double: bool = False) -> list:
    """Every pair's white wins (both games in a double round, colours reversed)."""
    items: list = []
    for white, black in pairs:
        items.append(game(r, white, black, "1-0"))
        if double:
            items.append(game(r, black, white, "1-0", leg=2))
    if bye is not None:
        items.append(SwissBye(r, bye, 4 if double else 2))
    return items


# --- round 1 and the initial order (T-13) -------------------------------------------------


def test_round_one_is_top_half_against_bottom_half_with_alternating_colours() -> None:
    pairing = pair_swiss_round(field(8), [], 1, 5, double=False)
    # Ranks 1-5, 6-2, 3-7, 8-4 (C.04.3: board 1's higher-ranked player has white, then alternate).
    assert pairing.pairs == [(10, 50), (60, 20), (30, 70), (80, 40)]
    assert pairing.bye is None and pairing.engine == ENGINE and pairing.notes == ()


def test_odd_field_gives_the_round_one_bye_to_the_lowest_ranked() -> None:
    pairing = pair_swiss_round(field(9), [], 1, 6)
    assert pairing.bye == 90  # T-8
    assert pairing.pairs == [(10, 50), (60, 20), (30, 70), (80, 40)]


def test_initial_rank_is_rating_then_name() -> None:
    entrants = [
        SwissEntrant(1, 1500, "Zoe"),
        SwissEntrant(2, 1500, "adam"),
        SwissEntrant(3, 1800, "Max"),
        SwissEntrant(4, 1500, "Bea"),
    ]
    # Ranks: 3 (1800), then the 1500s by name: adam, Bea, Zoe.
    assert prepare(entrants, [], double=False).start_numbers() == {3: 1, 2: 2, 4: 3, 1: 4}
    assert pair_swiss_round(entrants, [], 1, 3).pairs == [(3, 4), (1, 2)]


@pytest.mark.parametrize("n", [*range(2, 34), 64, 65])
def test_closed_form_round_one_is_what_py4swiss_answers(n: int) -> None:
    prepared = prepare(field(n), [], double=False)
    starts = prepared.start_numbers()
    pairs, bye = first_round(prepared.state(1, 7))
    engine_pairs, engine_bye = run_engine(render_trf(prepared, rounds=7))
    assert [(starts[w], starts[b]) for w, b in pairs] == engine_pairs
    assert (starts[bye] if bye is not None else None) == engine_bye


def test_same_history_same_pairing() -> None:
    entrants = field(11)
    history = []
    for r in range(1, 4):
        pairing = pair_swiss_round(entrants, history, r, 6)
        history.append(
            [game(r, w, b, ("1-0", "0-1", "=")[(w + b) % 3]) for w, b in pairing.pairs]
            + [SwissBye(r, pairing.bye)]
        )
    assert pair_swiss_round(entrants, history, 4, 6) == pair_swiss_round(list(reversed(entrants)), history, 4, 6)


def test_later_round_pairs_within_score_groups() -> None:
    entrants = field(8)
    r1 = pair_swiss_round(entrants, [], 1, 5)
    history = [played_round(1, r1.pairs)]
    r2 = pair_swiss_round(entrants, history, 2, 5)
    winners = {w for w, _ in r1.pairs}
    for white, black in r2.pairs:
        assert (white in winners) == (black in winners)  # T-2: same score where possible
    assert check_pairing(entrants, history, 2, 5, r2.pairs, r2.bye) == []


# --- forfeits, absences and byes (T-8, T-18, T-19) ----------------------------------------


def test_forfeited_pairs_are_never_paired_again_unlike_fide() -> None:
    entrants = [SwissEntrant(i, 2000 - 100 * i, f"P{i}") for i in range(1, 5)]
    history = [[game(1, 1, 3, "0-1", BUSY), game(1, 4, 2, "0-0", ABSENT)]]
    ours = pair_swiss_round(entrants, history, 2, 3)
    assert ours.pairs == [(3, 2), (1, 4)]
    # The same file without our forbidden pairs (XXP): FIDE treats forfeits as unplayed and
    # the Dutch system pairs both forfeited pairs again.
    text = tournament_to_trf(entrants, history, 3)
    assert "XXP 1 3" in text and "XXP 2 4" in text
    fide_text = "".join(line + "\n" for line in text.splitlines() if not line.startswith("XXP"))
    assert pair_trf(fide_text, strict=True).pairs == [(3, 1), (4, 2)]


def test_no_second_bye_while_others_have_none() -> None:
    entrants = field(5)
    history = [played_round(1, [(10, 30), (20, 40)], bye=50)]
    pairing = pair_swiss_round(entrants, history, 2, 4)
    assert pairing.bye != 50
    problems = check_pairing(entrants, history, 2, 4, [(10, 20), (30, 40)], 50)
    assert any("T-8" in p and "50" in p for p in problems), problems


def test_forfeit_winners_get_the_bye_only_when_nothing_else_is_legal() -> None:
    # After two rounds the only entrants without a bye (2, 4, 5) all won by forfeit (T-18):
    # C.04.1 d would leave nobody for the bye, so it gives way, and says so.
    entrants = [SwissEntrant(i, 2000 - 100 * i, f"P{i}") for i in range(1, 6)]
    history = [
        [SwissBye(1, 1), game(1, 2, 3, "1-0", BUSY), game(1, 4, 5, "1-0", BUSY)],
        [SwissBye(2, 3), game(2, 2, 4, "="), game(2, 1, 5, "0-1", BUSY)],
    ]
    pairing = pair_swiss_round(entrants, history, 3, 4)
    assert pairing.engine == ENGINE and pairing.bye in {2, 4, 5}
    assert len(pairing.notes) == 1 and pairing.notes[0].startswith("C.04.1 d waived")
    assert check_pairing(entrants, history, 3, 4, pairing.pairs, pairing.bye) == []
    # bbpPairings' strict answer for the same file: no valid pairing.
    with pytest.raises(PairingError, match="no legal pairing"):
        pair_trf(tournament_to_trf(entrants, history, 4), strict=True)


def test_double_rounds_pair_the_first_game_and_count_both() -> None:
    entrants = field(7)
    r1 = pair_swiss_round(entrants, [], 1, 5, double=True)
    history = [played_round(1, r1.pairs, r1.bye, double=True)]
    r2 = pair_swiss_round(entrants, history, 2, 5, double=True)
    assert r2.bye != r1.bye
    assert check_pairing(entrants, history, 2, 5, r2.pairs, r2.bye, double=True) == []
    # Two wins are 4 points (T-12), the bye 4 too (T-8).
    state = prepare(entrants, history, double=True).state(2, 5)
    scores = {p.id: p.score for p in state.players}
    assert scores[r1.bye] == 4
    assert sorted(scores.values()) == [2, 2, 2, 2, 2, 2, 4]  # home and away: each side won one game


def test_no_legal_pairing_raises_with_the_reason() -> None:
    # 4 entrants after a complete round robin: every pair has met (T-13 forbids a fourth round).
    entrants = field(4)
    history = [
        played_round(1, [(10, 30), (20, 40)]),
        played_round(2, [(10, 20), (30, 40)]),
        played_round(3, [(40, 10), (20, 30)]),
    ]
    with pytest.raises(PairingError, match="no legal pairing"):
        pair_swiss_round(entrants, history, 4, 4)


# --- colours (C.04.1 f/g) -----------------------------------------------------------------

COLOUR_CASE_TRF = """\
XXR 21
XXS W=2.0 D=1.0 PAB=2.0
XXC white1
XXP 1 9
XXP 2 5
XXP 5 9
XXP 6 8
001    1      n5                                2200                            13.0    6     7 w -     7 b L    11 w L    11 b +     8 w 1     8 b =     2 w W     2 b +     9 b +     9 w -     3 b 0     3 w -     5 b 0     5 w 0    12 b -    12 w 1
001    2      n8                                2050                            16.0    4     8 b 1     8 w W     5 b +     5 w -     3 b =     3 w 0     1 b L     1 w -     4 w 1     4 b 1     9 w 1     9 b -     7 w L     7 b =    10 b 1    10 w -
001    3      n5                                2000                            21.0    1     9 w 0     9 b 1     7 w -     7 b 1     2 w =     2 b 1     4 w -     4 b 1     5 w 1     5 b -     1 w 1     1 b -     6 b +     6 w 1    11 b 1    11 w +
001    4      n7                                2000                            12.0    8    10 b -    10 w L     8 b W     8 w +     6 w W     6 b -     3 b -     3 w 0     2 b 0     2 w 0    12 b +    12 w W     9 b 0     9 w +     5 b L     5 w -
001    5      n3                                1950                            18.0    3    11 w 1    11 b =     2 w -     2 b +    12 w W    12 b 1     9 w -     9 b -     3 b 0     3 w +     7 w =     7 b 0     1 w 1     1 b 1     4 w W     4 b -
001    6      n5                                1800                            10.0   10    12 b 0    12 w 1    10 b L    10 w 1     4 b L     4 w -    11 w +    11 b 1     7 w W     7 b -     8 w -     8 b -     3 w -     3 b 0     9 w -     9 b L
001    7      n5                                1550                            20.0    2     1 b -     1 w W     3 b -     3 w 0    11 b 1    11 w -    10 b +    10 w W     6 b L     6 w +     5 b =     5 w 1     2 b W     2 w =     8 b 1     8 w 1
001    8      n10                               1350                            11.0    9     2 w 0     2 b L     4 w L     4 b -     1 b 0     1 w =    12 b W    12 w 1    11 w L    11 b 1     6 b -     6 w -    10 b 1    10 w 1     7 w 0     7 b 0
001    9      n9                                1350                            14.0    5     3 b 1     3 w 0    12 b 0    12 w W    10 b W    10 w 1     5 b +     5 w -     1 w -     1 b -     2 b 0     2 w -     4 w 1     4 b -     6 b -     6 w W
001   10      n3                                1250                             7.0   12     4 w -     4 b W     6 w W     6 b 0     9 w L     9 b 0     7 w -     7 b L    12 w =    12 b =    11 w 0    11 b =     8 w 0     8 b 0     2 w 0     2 b -
001   11      n3                                1150                            13.0    7     5 b 0     5 w =     1 b W     1 w -     7 w 0     7 b +     6 b -     6 w 0     8 b W     8 w 0    10 b 1    10 w =    12 b =    12 w W     3 w 0     3 b -
001   12      n12                               1050                             9.0   11     6 w 1     6 b 0     9 w 1     9 b L     5 b L     5 w 0     8 w L     8 b 0    10 b =    10 w =     4 w -     4 b L    11 w =    11 b L     1 w +     1 b 0
"""


def test_engine_never_grants_a_third_colour_in_a_row() -> None:
    # A home-and-away tournament (T-12) where forfeited first games left entrant 4 with the
    # played colours w b w w b w w b b: difference +1 and two blacks in a row. Stock py4swiss
    # takes the side from the difference and gives black a third time; bbpPairings and FIDE
    # A.6 give white. Our wrapper follows bbpPairings.
    from py4swiss.engines import DutchEngine

    state = parse_trf(COLOUR_CASE_TRF).pairing_state()
    assert state.by_id()[4].colours == "wbwwbwwbb"
    stock = DutchEngine.generate_pairings(swiss._parse_trf_for_engine(COLOUR_CASE_TRF))
    stock_pairs = [(p.white, p.black) for p in stock if p.black]
    assert any("player 4 would get black three times" in p for p in violations(state, stock_pairs, None))
    pairs, bye = run_engine(COLOUR_CASE_TRF)
    assert violations(state, pairs, bye) == []
    assert pair_trf(COLOUR_CASE_TRF).engine == ENGINE


def test_check_pairing_reports_colour_rules_outside_the_last_round_only() -> None:
    entrants = field(6)
    # 10 has white twice (rounds 1 and 2), 20 black twice.
    history = [
        played_round(1, [(10, 40), (50, 20), (30, 60)]),
        played_round(2, [(10, 50), (40, 20), (60, 30)]),
    ]
    pairs = [(10, 20), (30, 40), (50, 60)]  # 10 white again, 20 black again
    problems = check_pairing(entrants, history, 3, 5, pairs, None)
    assert any("player 10 would get white three times in a row" in p for p in problems)
    assert any("player 20 would get black three times in a row" in p for p in problems)
    assert check_pairing(entrants, history, 3, 3, pairs, None) == []  # last round: waived
    assert all("three" not in p for p in check_pairing(entrants, history, 3, 5, [(20, 10), (40, 30), (60, 50)], None))


def test_check_pairing_names_every_broken_rule() -> None:
    entrants = field(5)
    history = [played_round(1, [(10, 30), (20, 40)], bye=50)]
    assert check_pairing(entrants, history, 2, 4, [(10, 30), (20, 40)], 50) == [
        "rematch 10-30: already paired in an earlier round (T-2, T-13, C.04.1 b)",
        "rematch 20-40: already paired in an earlier round (T-2, T-13, C.04.1 b)",
        "bye to 50, who already had 1, while 10 had 0 (T-8, C.04.1 c: nobody gets a second bye while others have none)",
    ]
    assert "player 50 is left out (T-20: nobody is dropped)" in check_pairing(
        entrants, history, 2, 4, [(10, 40), (20, 30)], None
    )
    assert "player 10 is paired 2 times (C.04.1: once per round)" in check_pairing(
        entrants, history, 2, 4, [(10, 40), (10, 30)], 50
    )
    assert "player 99 is not in this round's draw" in check_pairing(
        entrants, history, 2, 4, [(10, 40), (20, 30), (50, 99)], None
    )


# --- the fallback -------------------------------------------------------------------------


def test_fallback_when_the_engine_breaks_a_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    entrants = field(6)
    r1 = pair_swiss_round(entrants, [], 1, 5)
    history = [played_round(1, r1.pairs)]
    starts = prepare(entrants, history, double=False).start_numbers()
    rematch = [(starts[w], starts[b]) for w, b in r1.pairs]
    monkeypatch.setattr(swiss, "run_engine", lambda text, waive_colours=False: (rematch, None))
    pairing = pair_swiss_round(entrants, history, 2, 5)
    assert pairing.engine == FALLBACK
    assert pairing.fallback_reason and "py4swiss broke a rule: rematch" in pairing.fallback_reason
    assert check_pairing(entrants, history, 2, 5, pairing.pairs, pairing.bye) == []


def test_fallback_when_the_engine_crashes(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(text: str, waive_colours: bool = False) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(swiss, "run_engine", crash)
    entrants = field(7)
    history = [played_round(1, [(10, 50), (60, 20), (30, 70)], bye=40)]
    pairing = pair_swiss_round(entrants, history, 2, 5)
    assert pairing.engine == FALLBACK and pairing.fallback_reason == "py4swiss failed: RuntimeError: boom"
    assert pairing.bye != 40
    assert check_pairing(entrants, history, 2, 5, pairing.pairs, pairing.bye) == []


def test_fallback_alone_can_run_a_large_tournament(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(text: str, waive_colours: bool = False) -> None:
        raise RuntimeError("engine unavailable")

    monkeypatch.setattr(swiss, "run_engine", crash)
    entrants = field(61)
    history: list = []
    for r in range(1, 9):
        pairing = pair_swiss_round(entrants, history, r, 8)
        assert pairing.engine == (ENGINE if r == 1 else FALLBACK)
        assert check_pairing(entrants, history, r, 8, pairing.pairs, pairing.bye) == []
        history.append(
            [game(r, w, b, ("1-0", "0-1", "=")[(w * 7 + b * 3 + r) % 3]) for w, b in pairing.pairs]
            + [SwissBye(r, pairing.bye)]
        )


def test_fallback_pairs_score_groups_and_grants_colour_preferences() -> None:
    players = (
        PlayerState(1, rank=1, score=2, colours="w", opponents=frozenset({5})),
        PlayerState(2, rank=2, score=2, colours="b", opponents=frozenset({6})),
        PlayerState(3, rank=3, score=0, colours="w", opponents=frozenset({7})),
        PlayerState(4, rank=4, score=0, colours="b", opponents=frozenset({8})),
        PlayerState(5, rank=5, score=0, colours="b", opponents=frozenset({1})),
        PlayerState(6, rank=6, score=0, colours="w", opponents=frozenset({2})),
        PlayerState(7, rank=7, score=2, colours="b", opponents=frozenset({3})),
        PlayerState(8, rank=8, score=2, colours="w", opponents=frozenset({4})),
    )
    state = PairingState(round=2, last_round=False, double=False, players=players)
    pairs, bye = fallback_pairing(state)
    assert bye is None and violations(state, pairs, bye) == []
    scores = {p.id: p.score for p in players}
    assert all(scores[w] == scores[b] for w, b in pairs)
    colours = {p.id: p.colours for p in players}
    assert all(colours[w] == "b" and colours[b] == "w" for w, b in pairs)  # E.1: both alternate


def test_fallback_proves_impossibility_on_small_fields() -> None:
    players = tuple(PlayerState(i, rank=i, score=0, opponents=frozenset({1, 2, 3, 4} - {i})) for i in range(1, 5))
    state = PairingState(round=4, last_round=True, double=False, players=players)
    with pytest.raises(PairingError, match="no legal pairing exists for round 4"):
        fallback_pairing(state)


# --- input errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "round_number", "message"),
    [
        ([], 2, "round 2 cannot be paired from a history of 0 rounds"),
        ([[game(1, 10, 20, "1-0"), game(1, 30, 40, "1-0")]] * 5, 6, "round 6 is past the last round"),
        ([[game(1, 10, 20, "1-0")]], 2, "round 1: entrant 30 has 0 game or bye"),
        ([[game(1, 10, 20, "1-0"), game(1, 30, 99, "1-0")]], 2, "99 is not an entrant"),
        ([[game(1, 10, 20, "1-0"), game(1, 30, 40, "1-0", BUSY, leg=1), SwissBye(1, 40)]], 2, "entrant 40 has 2"),
        ([[game(1, 10, 20, "="), SwissGame(1, 30, 40, 2, 2)]], 2, "2-2 is not a possible score for normal"),
        ([[game(1, 10, 20, "="), SwissGame(1, 30, 40, 1, 1, "resigned")]], 2, "unknown kind 'resigned'"),
        ([[game(1, 10, 20, "="), game(2, 30, 40, "=")]], 2, "history round 1 holds an item of round 2"),
        ([[game(1, 10, 20, "="), game(1, 30, 40, "0-0", BUSY)]], 2, "0-0 is not a possible score for busy_forfeit"),
    ],
)
def test_bad_requests_raise_readable_pairing_errors(history: list, round_number: int, message: str) -> None:
    with pytest.raises(PairingError, match=message):
        pair_swiss_round(field(4), history, round_number, 5)


def test_bye_points_must_follow_t8() -> None:
    with pytest.raises(PairingError, match=r"bye to 30 is worth 4 points \(T-8\), not 2"):
        pair_swiss_round(field(3), [[game(1, 10, 20, "1-0"), game(1, 20, 10, "1-0", leg=2), SwissBye(1, 30, 2)]], 2, 2, double=True)


def test_double_round_games_must_share_the_opponent() -> None:
    history = [[game(1, 10, 20, "1-0"), game(1, 30, 10, "1-0", leg=2), game(1, 30, 40, "1-0"), game(1, 40, 20, "1-0", leg=2)]]
    with pytest.raises(PairingError, match="both games of a double round are against the same opponent"):
        pair_swiss_round(field(4), history, 2, 3, double=True)


def test_pairing_error_is_a_value_error() -> None:
    assert issubclass(PairingError, ValueError)
    with pytest.raises(ValueError, match="entrant numbers must be unique"):
        pair_swiss_round([SwissEntrant(1, 1500, "a"), SwissEntrant(1, 1500, "b")], [], 1, 1)
