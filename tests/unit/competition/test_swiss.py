"""Swiss pairing by the FIDE Dutch system, 2025 edition (T-8, T-12, T-13, T-18..T-20): examples and errors.

Identity with the reference engine is test_swiss_corpus.py's job; these examples show the
rules at work on our own histories, and the guard and the errors around the engine.
"""

from __future__ import annotations

import pytest

from arbiter.competition import swiss
from arbiter.competition.dutch import DutchPairing
from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.swiss import (
    ENGINE,
    NoValidPairing,
    PairingError,
    RuleBreach,
    check_pairing,
    pair_swiss_round,
    pair_trf,
    tournament_to_trf,
)
from arbiter.competition.swiss_model import prepare
from arbiter.vocabulary import ResultKind

BUSY = ResultKind.BUSY_FORFEIT
ABSENT = ResultKind.BOTH_ABSENT


def field(n: int) -> dict[int, Entrant]:
    """n entrants whose numbers are not their ranks: number 10*i, rating falling with i."""
    return {10 * i: Entrant(f"player {i:03}", rating=2400 - 10 * i) for i in range(1, n + 1)}


def game(r: int, white: int, black: int, result: str, kind: str = ResultKind.NORMAL, leg: int = 1) -> PlayedGame[int]:
    """A game from a score string: "1-0", "0-1", "=" (T-7 points) or "0-0"."""
    points = {"1-0": (2, 0), "0-1": (0, 2), "=": (1, 1), "0-0": (0, 0)}[result]
    return PlayedGame(r, white, black, *points, kind=kind, leg=leg)


def played_round(r: int, pairs: list[tuple[int, int]], bye: int | None = None, double: bool = False) -> list:
    """Every pair's white wins (both games in a double round, colours reversed)."""
    items: list = []
    for white, black in pairs:
        items.append(game(r, white, black, "1-0"))
        if double:
            items.append(game(r, black, white, "1-0", leg=2))
    if bye is not None:
        items.append(Bye(r, bye, 4 if double else 2))
    return items


# --- round 1 and the initial order (T-13) -------------------------------------------------


@pytest.mark.parametrize("n", [*range(2, 41), 64, 65, 199, 200])
def test_round_one_is_top_half_against_bottom_half_with_alternating_colours(n: int) -> None:
    # C.04.3: one scoregroup, S1 the top half, S2 the bottom half, paired in order; the bye (odd n)
    # to the lowest ranked ([C5]); the higher-ranked player of board i has white on odd boards
    # (5.2.5 with XXC white1).
    entrants = field(n)
    pairing = pair_swiss_round(entrants, [], 1, 7)
    ranked = list(entrants)
    bye = ranked.pop() if n % 2 else None
    half = len(ranked) // 2
    expected = [
        (ranked[i], ranked[i + half]) if i % 2 == 0 else (ranked[i + half], ranked[i]) for i in range(half)
    ]
    assert pairing.pairs == expected
    assert pairing.bye == bye and pairing.engine == ENGINE


def test_initial_rank_is_rating_then_name() -> None:
    entrants = {
        1: Entrant("Zoe", rating=1500),
        2: Entrant("adam", rating=1500),
        3: Entrant("Max", rating=1800),
        4: Entrant("Bea", rating=1500),
    }
    # Ranks: 3 (1800), then the 1500s by name: adam, Bea, Zoe.
    assert prepare(entrants, [], double=False).start_numbers() == {3: 1, 2: 2, 4: 3, 1: 4}
    assert pair_swiss_round(entrants, [], 1, 3).pairs == [(3, 4), (1, 2)]


def test_same_history_same_pairing() -> None:
    entrants = field(11)
    history = []
    for r in range(1, 4):
        pairing = pair_swiss_round(entrants, history, r, 6)
        history.append(
            [game(r, w, b, ("1-0", "0-1", "=")[(w + b) % 3]) for w, b in pairing.pairs]
            + [Bye(r, pairing.bye)]
        )
    assert pair_swiss_round(entrants, history, 4, 6) == pair_swiss_round(
        dict(reversed(entrants.items())), history, 4, 6
    )


def test_later_round_pairs_within_scoregroups() -> None:
    entrants = field(8)
    r1 = pair_swiss_round(entrants, [], 1, 5)
    history = [played_round(1, r1.pairs)]
    r2 = pair_swiss_round(entrants, history, 2, 5)
    winners = {w for w, _ in r1.pairs}
    for white, black in r2.pairs:
        assert (white in winners) == (black in winners)  # [C6]: no floater needed
    assert check_pairing(entrants, history, 2, 5, r2.pairs, r2.bye) == []


# --- forfeits, absences and byes (T-8, T-18, T-19) ----------------------------------------


def test_forfeited_pairs_are_never_paired_again_unlike_fide() -> None:
    entrants = {i: Entrant(f"P{i}", rating=2000 - 100 * i) for i in range(1, 5)}
    history = [[game(1, 1, 3, "0-1", BUSY), game(1, 4, 2, "0-0", ABSENT)]]
    ours = pair_swiss_round(entrants, history, 2, 3)
    assert not {frozenset(p) for p in ours.pairs} & {frozenset((1, 3)), frozenset((2, 4))}
    # The same file without our forbidden pairs (260): FIDE treats forfeits as unplayed, and the
    # Dutch system pairs both forfeited pairs again (3, the one on 2 points, floats down to the
    # best ranked player it may meet, [C7]; 2 and 4 are the same score).
    text = tournament_to_trf(entrants, history, 3)
    assert "260   2   3    1    3" in text and "260   2   3    2    4" in text  # from round 2 to the end
    fide_text = "".join(line + "\n" for line in text.splitlines() if not line.startswith("260"))
    assert {frozenset(p) for p in pair_trf(fide_text).pairs} == {frozenset((1, 3)), frozenset((2, 4))}


def test_the_bye_never_goes_twice() -> None:
    entrants = field(5)
    history = [played_round(1, [(10, 30), (20, 40)], bye=50)]
    pairing = pair_swiss_round(entrants, history, 2, 4)
    assert pairing.bye is not None and pairing.bye != 50
    problems = check_pairing(entrants, history, 2, 4, [(10, 20), (30, 40)], 50)
    assert any("bye to 50" in p and "C.04.1 Art. 4" in p for p in problems), problems


def test_the_bye_goes_to_the_lowest_score() -> None:
    # [C5]: round 1's losers have 0 points; the bye goes to one of them (the lowest ranked, [C4]
    # permitting), even though 40 (a winner, ranked lowest of all) has never had one.
    entrants = field(5)
    history = [played_round(1, [(10, 30), (40, 20)], bye=50)]
    pairing = pair_swiss_round(entrants, history, 2, 4)
    assert pairing.bye in {20, 30}


def test_a_forfeit_winner_never_gets_the_bye() -> None:
    # C.04.1 Art. 4 (2025): a round scored as a win without playing (T-18) rules the bye out.
    entrants = {i: Entrant(f"P{i}", rating=2000 - 100 * i) for i in range(1, 6)}
    history = [[Bye(1, 1), game(1, 2, 3, "1-0", BUSY), game(1, 4, 5, "1-0")]]
    pairing = pair_swiss_round(entrants, history, 2, 4)
    assert pairing.bye not in {1, 2}
    # When everyone left had a bye or a forfeit win, no pairing complies: the tournament ends.
    history = [
        [Bye(1, 1), game(1, 2, 3, "1-0", BUSY), game(1, 4, 5, "1-0", BUSY)],
        [Bye(2, 3), game(2, 2, 4, "="), game(2, 1, 5, "0-1", BUSY)],
    ]
    with pytest.raises(NoValidPairing, match="absolute criteria"):
        pair_swiss_round(entrants, history, 3, 4)


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


def test_no_valid_pairing_raises_with_the_reason() -> None:
    # 4 entrants after a complete round robin: every pair has met (T-13 forbids a fourth round).
    entrants = field(4)
    history = [
        played_round(1, [(10, 30), (20, 40)]),
        played_round(2, [(10, 20), (30, 40)]),
        played_round(3, [(40, 10), (20, 30)]),
    ]
    with pytest.raises(NoValidPairing, match="round 4: no pairing keeps every player to the absolute criteria"):
        pair_swiss_round(entrants, history, 4, 4)
    assert issubclass(NoValidPairing, PairingError)


# --- the guard: the absolute criteria, checked on every pairing ---------------------------


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
    # the last round: 10 (4 points of 4) and 20... are topscorers, so C.04.1 lets them break it
    assert not any("10" in p for p in check_pairing(entrants, history, 3, 3, pairs, None))


def test_check_pairing_names_every_broken_rule() -> None:
    entrants = field(5)
    history = [played_round(1, [(10, 30), (20, 40)], bye=50)]
    assert check_pairing(entrants, history, 2, 4, [(10, 30), (20, 40)], 50) == [
        "rematch 10-30: already paired in an earlier round (T-2, T-13, C.04.1 Art. 2)",
        "rematch 20-40: already paired in an earlier round (T-2, T-13, C.04.1 Art. 2)",
        "bye to 50, who already had a bye or a win without playing (T-8, T-13, C.04.1 Art. 4)",
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


def test_a_pairing_that_breaks_a_rule_is_never_handed_on(monkeypatch: pytest.MonkeyPatch) -> None:
    entrants = field(6)
    r1 = pair_swiss_round(entrants, [], 1, 5)
    history = [played_round(1, r1.pairs)]
    starts = prepare(entrants, history, double=False).start_numbers()
    rematch = tuple((starts[w], starts[b]) for w, b in r1.pairs)
    monkeypatch.setattr(swiss, "pair_round", lambda model: DutchPairing(2, rematch, None))
    with pytest.raises(RuleBreach, match="rematch"):
        pair_swiss_round(entrants, history, 2, 5)


# --- input errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "round_number", "message"),
    [
        ([], 2, "round 2 cannot be paired from a history of 0 rounds"),
        ([[game(1, 10, 20, "1-0"), game(1, 30, 40, "1-0")]] * 5, 6, "round 6 is past the last round"),
        ([[game(1, 10, 20, "1-0")]], 2, "round 1: entrant 30 has 0 game or bye"),
        ([[game(1, 10, 20, "1-0"), game(1, 30, 99, "1-0")]], 2, "99 is not an entrant"),
        ([[game(1, 10, 20, "1-0"), game(1, 30, 40, "1-0", BUSY, leg=1), Bye(1, 40)]], 2, "entrant 40 has 2"),
        ([[game(1, 10, 20, "="), PlayedGame(1, 30, 40, 2, 2)]], 2, "2-2 is not a possible score for normal"),
        ([[game(1, 10, 20, "="), PlayedGame(1, 30, 40, 1, 1, "resigned")]], 2, "unknown kind 'resigned'"),
        ([[game(1, 10, 20, "="), game(2, 30, 40, "=")]], 2, "history round 1 holds an item of round 2"),
        ([[game(1, 10, 20, "="), game(1, 30, 40, "0-0", BUSY)]], 2, "0-0 is not a possible score for busy_forfeit"),
    ],
)
def test_bad_requests_raise_readable_pairing_errors(history: list, round_number: int, message: str) -> None:
    with pytest.raises(PairingError, match=message):
        pair_swiss_round(field(4), history, round_number, 5)


def test_bye_points_must_follow_t8() -> None:
    with pytest.raises(PairingError, match=r"bye to 30 is worth 4 points \(T-8\), not 2"):
        pair_swiss_round(
            field(3), [[game(1, 10, 20, "1-0"), game(1, 20, 10, "1-0", leg=2), Bye(1, 30, 2)]], 2, 2, double=True
        )


def test_double_round_games_must_share_the_opponent() -> None:
    history = [
        [game(1, 10, 20, "1-0"), game(1, 30, 10, "1-0", leg=2), game(1, 30, 40, "1-0"), game(1, 40, 20, "1-0", leg=2)]
    ]
    with pytest.raises(PairingError, match="both games of a double round are against the same opponent"):
        pair_swiss_round(field(4), history, 2, 3, double=True)


def test_pairing_error_is_a_value_error() -> None:
    assert issubclass(PairingError, ValueError)
    with pytest.raises(ValueError, match="needs at least 2 entrants"):
        pair_swiss_round({1: Entrant("a", rating=1500)}, [], 1, 1)
