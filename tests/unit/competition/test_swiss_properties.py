"""Property tests of the Swiss pairing (T-8, T-13, T-18..T-20; FIDE C.04.1 and C.04.3, 2025 edition).

Whole random tournaments are played to the end, and every round is checked here against the
absolute criteria, written again from the history, independently of `swiss_model.violations`:

- every present player is in the round exactly once (T-20), with a bye exactly when the number
  present is odd, and nobody absent is paired;
- no two players meet twice (T-2, T-13: in our service a forfeit counts as a meeting; in a TRF
  only played games do, as FIDE says);
- nobody receives the pairing-allocated bye twice, nor after a round won without playing: a
  forfeit win (T-18) or a full-point bye for an absence (F) (C.04.1 Art. 4, 2025 edition);
- no third equal colour in a row and no colour difference beyond +-2 (C.04.1 Art. 6, 7), except
  for topscorers in the last round (C.04.3 1.8, [C3]) and where the history leaves no colour
  that keeps them (forfeited first games of home-and-away rounds, or a +2 difference after two
  equal colours).

On small fields an exhaustive search also confirms what the engine decides alone: that no
pairing exists when it says so, and that the bye goes to the lowest score possible ([C5]).

Two families: our own tournaments through `pair_swiss_round` (4..200 entrants, home-and-away
rounds, the extra round, forfeits, absences), and TRF tournaments through the engine directly,
with absences entered for the round to pair as H, Z and F. `HYPOTHESIS_PROFILE=long` runs
thousands of tournaments instead of hundreds (add `--timeout=0`).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.competition.dutch import NoValidPairing, pair_round
from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.swiss import SwissRoundPairing, pair_swiss_round
from arbiter.competition.trf import (
    BLACK,
    DRAW,
    LOSS,
    NO_COLOUR,
    WHITE,
    WIN,
    PointSystem,
    TrfEntry,
    TrfPlayer,
    TrfTournament,
)
from arbiter.vocabulary import ResultKind

STATS: Counter[str] = Counter()

_PROFILE_EXAMPLES = settings().max_examples
_LONG = _PROFILE_EXAMPLES >= 1000
SMALL_EXAMPLES = _PROFILE_EXAMPLES if _LONG else 300
LARGE_EXAMPLES = _PROFILE_EXAMPLES // 20 if _LONG else 6
EXHAUSTIVE_UP_TO = 12  # players present; exhaustive search confirms the engine's decisions up to here

OPENED = {ResultKind.NORMAL, ResultKind.NEVER_SAT, ResultKind.CLOSED_DRAW}


@pytest.fixture(scope="module", autouse=True)
def report(pytestconfig: pytest.Config) -> Iterator[None]:
    """Print how often each case came up, after the module."""
    yield
    reporter = pytestconfig.pluginmanager.get_plugin("terminalreporter")
    capture = pytestconfig.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None or not STATS:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        reporter.write_line("Swiss property runs: " + ", ".join(f"{k}={v}" for k, v in sorted(STATS.items())))


# --- the rules, written again ---------------------------------------------------------------


def preference(colours: str) -> tuple[str | None, bool]:
    """C.04.3 1.7: the colour due after these played colours, and whether it is absolute."""
    if not colours:
        return None, False
    difference = colours.count("w") - colours.count("b")
    if abs(difference) > 1:
        return ("b" if difference > 0 else "w"), True
    if len(colours) > 1 and colours[-1] == colours[-2]:
        return ("b" if colours[-1] == "w" else "w"), True
    if difference:
        return ("b" if difference > 0 else "w"), False
    return ("b" if colours[-1] == "w" else "w"), False


def colour_break(colours: str, added: str) -> str | None:
    """Does adding these colours make three in a row or a difference beyond 2 (beyond what it was)?"""
    start = abs(colours.count("w") - colours.count("b"))
    sequence = colours
    for colour in added:
        sequence += colour
        if sequence.endswith(colour * 3):
            return "three in a row"
        if abs(sequence.count("w") - sequence.count("b")) > max(2, start):
            return "difference beyond 2"
    return None


class Record:
    """The history from the test's side: meetings, bye eligibility, colours of opened games, scores."""

    def __init__(self, numbers: list[int]) -> None:
        self.met: set[frozenset[int]] = set()
        self.no_bye: set[int] = set()
        self.colours: dict[int, str] = dict.fromkeys(numbers, "")
        self.score: Counter[int] = Counter(dict.fromkeys(numbers, 0))

    def may_meet(self, a: int, b: int, topscorers: set[int]) -> bool:
        """[C1] and [C3]: not met, and not the same absolute colour preference (topscorers aside)."""
        if frozenset((a, b)) in self.met:
            return False
        (pa, absolute_a), (pb, absolute_b) = preference(self.colours[a]), preference(self.colours[b])
        return not (absolute_a and absolute_b and pa == pb) or bool({a, b} & topscorers)


def pairing_exists(players: list[int], record: Record, topscorers: set[int], bye: int | None = None) -> bool:
    """Exhaustive search: is there a pairing of `players` (with `bye` out, if given) keeping [C1]-[C3]?"""

    def match(free: list[int]) -> bool:
        if not free:
            return True
        first, rest = free[0], free[1:]
        return any(record.may_meet(first, b, topscorers) and match([x for x in rest if x != b]) for b in rest)

    if len(players) % 2 == 0:
        return match(players)
    candidates = [bye] if bye is not None else [p for p in players if p not in record.no_bye]
    return any(match([p for p in players if p != c]) for c in candidates)


def check_round(
    pairs: list[tuple[int, int]], bye: int | None, present: list[int], record: Record, topscorers: set[int],
    last: bool, legs: int,
) -> None:
    """Everything the module docstring lists, for one round."""
    seen = Counter(x for pair in pairs for x in pair)
    if bye is not None:
        seen[bye] += 1
    assert sorted(seen) == sorted(present) and set(seen.values()) <= {1}, (seen, present)
    assert (bye is not None) == (len(present) % 2 == 1)
    for white, black in pairs:
        assert frozenset((white, black)) not in record.met, (white, black)
    if bye is not None:
        assert bye not in record.no_bye, bye
        if len(present) <= EXHAUSTIVE_UP_TO:
            # [C5]: nobody eligible with a lower score could have taken the bye.
            lower = [p for p in present if p not in record.no_bye and record.score[p] < record.score[bye]]
            assert not any(pairing_exists(present, record, topscorers, p) for p in lower), (bye, lower)
            STATS["bye: lowest score possible (confirmed)"] += 1
    for white, black in pairs:
        for player, colour in ((white, "w"), (black, "b")):
            added = (colour + ("b" if colour == "w" else "w"))[:legs]
            other = (("b" if colour == "w" else "w") + colour)[:legs]
            if not colour_break(record.colours[player], added):
                continue
            if colour_break(record.colours[player], other):
                STATS["no colour keeps the limits after this history"] += 1
                continue
            assert last and {white, black} & topscorers, (white, black, player, record.colours[player])
            STATS["last round: a topscorer pair breaks a colour limit"] += 1


# --- our tournaments ------------------------------------------------------------------------


def swiss_rounds(n: int, extra: bool) -> int:
    """T-9 rounds (+1 with T-11), never more than n-1 so that a Swiss can avoid rematches."""
    return min(math.ceil(math.log2(n)) + 2 + int(extra), n - 1)


def tournaments(low: int, high: int) -> st.SearchStrategy[dict]:
    """A tournament to simulate: size, switches (T-11, T-12), absence rate and a seed for results."""
    return st.fixed_dictionaries(
        {
            "n": st.integers(low, high),
            "double": st.booleans(),
            "extra": st.booleans(),
            "absence": st.sampled_from([0.0, 0.05, 0.2, 0.5]),
            "seed": st.integers(0, 2**32 - 1),
        }
    )


def play_round(pairing: SwissRoundPairing, rng: random.Random, double: bool, absence: float) -> list:
    """Random results: absent players forfeit (T-18) or lose on time (T-16); both absent is 0-0 (T-19)."""
    items: list[PlayedGame[int] | Bye[int]] = []
    legs = 2 if double else 1
    for white, black in pairing.pairs:
        for leg in range(1, legs + 1):
            w, b = (white, black) if leg == 1 else (black, white)
            w_out, b_out = rng.random() < absence, rng.random() < absence
            if w_out and b_out:
                items.append(PlayedGame(pairing.round, w, b, 0, 0, ResultKind.BOTH_ABSENT, leg))
            elif w_out or b_out:
                kind = rng.choice((ResultKind.BUSY_FORFEIT, ResultKind.NEVER_SAT))
                items.append(PlayedGame(pairing.round, w, b, 0 if w_out else 2, 0 if b_out else 2, kind, leg))
            else:
                roll = rng.random()
                if roll < 0.05:
                    items.append(PlayedGame(pairing.round, w, b, 1, 1, ResultKind.CLOSED_DRAW, leg))
                else:
                    points = 2 if roll < 0.45 else 0 if roll < 0.85 else 1
                    items.append(PlayedGame(pairing.round, w, b, points, 2 - points, ResultKind.NORMAL, leg))
    if pairing.bye is not None:
        items.append(Bye(pairing.round, pairing.bye, 2 * legs))
    return items


def record_round(record: Record, items: list[PlayedGame[int] | Bye[int]]) -> None:
    """Take in one round of our history (legs in order)."""
    for item in sorted(items, key=lambda i: getattr(i, "leg", 1)):
        if isinstance(item, Bye):
            record.no_bye.add(item.entrant)
            record.score[item.entrant] += item.points
            continue
        record.met.add(frozenset((item.white, item.black)))
        record.score[item.white] += item.white_points
        record.score[item.black] += item.black_points
        if item.kind in OPENED:
            record.colours[item.white] += "w"
            record.colours[item.black] += "b"
        if item.kind == ResultKind.BUSY_FORFEIT:
            record.no_bye.add(item.white if item.white_points else item.black)


def run_tournament(spec: dict) -> None:
    """Play one of our tournaments round by round and check every pairing."""
    rng = random.Random(spec["seed"])
    n, double = spec["n"], spec["double"]
    rounds = swiss_rounds(n, spec["extra"])
    numbers = rng.sample(range(1, 100 * n), n)
    # Ratings and names with ties, so that T-13's tie-breaks are exercised.
    entrants = {
        x: Entrant(rating=rng.choice((1500, 1500, rng.randint(900, 2400))), player=f"p{rng.randint(0, n)}")
        for x in numbers
    }
    legs = 2 if double else 1
    history: list[list[PlayedGame[int] | Bye[int]]] = []
    record = Record(numbers)
    STATS["our tournaments"] += 1
    for round_number in range(1, rounds + 1):
        last = round_number == rounds
        games = legs * (round_number - 1)
        topscorers = {p for p in numbers if last and record.score[p] > games} if games else set()
        try:
            pairing = pair_swiss_round(entrants, history, round_number, rounds, double=double)
        except NoValidPairing:
            if n <= EXHAUSTIVE_UP_TO:
                assert not pairing_exists(numbers, record, topscorers), "the engine found no pairing, but one exists"
                STATS["our rounds: no valid pairing (confirmed)"] += 1
            else:
                STATS["our rounds: no valid pairing (large field)"] += 1
            return
        STATS["our rounds"] += 1
        check_round(pairing.pairs, pairing.bye, numbers, record, topscorers, last, legs)
        items = play_round(pairing, rng, double, spec["absence"])
        history.append(items)
        record_round(record, items)


@settings(max_examples=SMALL_EXAMPLES)
@given(tournaments(4, 40))
def test_our_small_and_mid_tournaments(spec: dict) -> None:
    """4..40 entrants: every round keeps the absolute criteria."""
    run_tournament(spec)


@settings(max_examples=LARGE_EXAMPLES)
@given(tournaments(41, 200))
def test_our_large_tournaments(spec: dict) -> None:
    """41..200 entrants: the same, on the field sizes the site sees in big events."""
    run_tournament(spec)


# --- TRF tournaments with absences (H, Z, F) --------------------------------------------------

FIDE_POINTS = PointSystem()


def run_trf_tournament(spec: dict) -> None:
    """A TRF tournament paired by the engine directly, with absences entered for the round to pair."""
    rng = random.Random(spec["seed"])
    n, rounds = spec["n"], spec["rounds"]
    entries: dict[int, list[TrfEntry]] = {p: [] for p in range(1, n + 1)}
    record = Record(list(entries))
    STATS["TRF tournaments"] += 1
    for round_index in range(rounds):
        absent = {p for p in entries if rng.random() < spec["absence"]}
        for player in absent:
            code = rng.choice("HZF")
            outcome = {"H": DRAW, "Z": LOSS, "F": WIN}[code]
            entries[player].append(TrfEntry(None, NO_COLOUR, outcome, played=False, paired=False, code=code))
        tournament = TrfTournament(
            players={p: TrfPlayer(p, f"P{p}", 2400 - p, 0, tuple(e)) for p, e in entries.items()},
            rank_order=tuple(entries),
            rounds=rounds,
            played_rounds=round_index,
            points=FIDE_POINTS,
            first_colour=WHITE if spec["white1"] else BLACK,
        )
        present = sorted(p for p in entries if p not in absent)
        last = round_index == rounds - 1
        topscorers = {p for p in present if last and record.score[p] * 2 > round_index * 10}
        try:
            pairing = pair_round(tournament)
        except NoValidPairing:
            if len(present) <= EXHAUSTIVE_UP_TO:
                assert not pairing_exists(present, record, topscorers), "the engine found no pairing, but one exists"
                STATS["TRF rounds: no valid pairing (confirmed)"] += 1
            return
        STATS["TRF rounds"] += 1
        pairs = list(pairing.pairs)
        check_round(pairs, pairing.bye, present, record, topscorers, last, 1)
        for player in absent:
            record.score[player] += entries[player][-1].points(FIDE_POINTS)
            if entries[player][-1].code == "F":
                record.no_bye.add(player)  # C.04.1 Art. 4: a win's points without playing
        if pairing.bye is not None:
            entries[pairing.bye].append(TrfEntry(None, NO_COLOUR, WIN, played=False, paired=True, code="U"))
            record.no_bye.add(pairing.bye)
            record.score[pairing.bye] += FIDE_POINTS.pairing_bye
        for white, black in pairs:
            roll = rng.random()
            outcome = WIN if roll < 0.4 else LOSS if roll < 0.8 else DRAW
            other = {WIN: LOSS, LOSS: WIN, DRAW: DRAW}[outcome]
            code = {WIN: "1", LOSS: "0", DRAW: "="}
            entries[white].append(TrfEntry(black, WHITE, outcome, True, True, code[outcome]))
            entries[black].append(TrfEntry(white, BLACK, other, True, True, code[other]))
            record.met.add(frozenset((white, black)))
            record.colours[white] += "w"
            record.colours[black] += "b"
            record.score[white] += entries[white][-1].points(FIDE_POINTS)
            record.score[black] += entries[black][-1].points(FIDE_POINTS)


def trf_tournaments(low: int, high: int) -> st.SearchStrategy[dict]:
    """A TRF tournament: size, rounds, absence rate, first colour and a seed."""
    return st.integers(low, high).flatmap(
        lambda n: st.fixed_dictionaries(
            {
                "n": st.just(n),
                "rounds": st.integers(1, max(1, min(n - 1, math.ceil(math.log2(n)) + 3))),
                "absence": st.sampled_from([0.0, 0.03, 0.1, 0.3]),
                "white1": st.booleans(),
                "seed": st.integers(0, 2**32 - 1),
            }
        )
    )


@settings(max_examples=SMALL_EXAMPLES)
@given(trf_tournaments(3, 30))
def test_trf_tournaments_with_absences(spec: dict) -> None:
    """TRF files as other programs write them, F absences included: every round keeps the criteria."""
    run_trf_tournament(spec)


def test_the_exhaustive_search_finds_the_obvious() -> None:
    """4 players after a full round robin cannot be paired; drop two meetings and they can."""
    record = Record([1, 2, 3, 4])
    record.met = {frozenset(p) for p in ((1, 2), (3, 4), (1, 3), (2, 4), (1, 4), (2, 3))}
    assert not pairing_exists([1, 2, 3, 4], record, set())
    record.met -= {frozenset((1, 2)), frozenset((3, 4))}
    assert pairing_exists([1, 2, 3, 4], record, set())
