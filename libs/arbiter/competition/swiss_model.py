"""Vocabulary and absolute rules of the Swiss pairing (T-8, T-13, T-18..T-20; FIDE C.04.1, 2025 edition).

Pure: standard library only. `arbiter.competition.swiss` is the public entry point and
re-exports the names a caller needs; this module holds what the engine wrapper, the TRF
writer and the rule check share.

Decisions on results that are not played games:

- Rematches. FIDE (C.04.1 Art. 2) only forbids playing the same opponent twice, and TRF
  tools therefore let a forfeited pair meet again. The SPEC wins over FIDE: T-2/T-13 say
  "never the same opponent twice", and the standings count every pairing as an opponent for
  Buchholz (see `scoring.py`). So once two entrants have been paired they are never paired
  again, whatever happened: a played game, a game one side never sat at (T-16/T-17), a busy
  forfeit (T-18) or a double absence (T-19). In TRF the pairs that met only through a
  forfeit are written as forbidden pairs (XXP), which every engine honours, so the exported
  file reproduces our pairings.
- Colours. Only games that were opened count (FIDE 1.6 counts played games): a forfeit or
  a double absence leaves the colour history untouched, as in TRF (`+`/`-` are unplayed).
- Byes. C.04.1 Art. 4 (T-8, T-13): nobody receives the pairing-allocated bye who already had
  one, or who already scored a win's points in a round without playing (a busy forfeit won,
  T-18; in TRF also a full-point bye `F`). When every candidate is excluded, no pairing exists.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.scoring import BYE_POINTS_PER_GAME
from arbiter.vocabulary import ResultKind

__all__ = [
    "PLAYED_KINDS",
    "PLAYED_TOKENS",
    "Leg",
    "NumberedEntrants",
    "PairingError",
    "PairingState",
    "PlayerState",
    "PreparedTournament",
    "SwissRound",
    "SwissRoundPairing",
    "colour_preference",
    "initial_order",
    "prepare",
    "violations",
]

WHITE: Final = "w"
BLACK: Final = "b"

# Kinds in which the game was opened: they count for colours (FIDE 1.6) and are "played" in TRF.
PLAYED_KINDS: Final = frozenset({ResultKind.NORMAL, ResultKind.NEVER_SAT, ResultKind.CLOSED_DRAW})
_SCORES: Final[dict[str, frozenset[tuple[int, int]]]] = {
    ResultKind.NORMAL: frozenset({(2, 0), (1, 1), (0, 2)}),  # T-7
    ResultKind.NEVER_SAT: frozenset({(2, 0), (0, 2)}),  # T-16: lost on time
    ResultKind.CLOSED_DRAW: frozenset({(1, 1)}),  # T-15
    ResultKind.BUSY_FORFEIT: frozenset({(2, 0), (0, 2)}),  # T-18
    ResultKind.BOTH_ABSENT: frozenset({(0, 0)}),  # T-19
}
# TRF result characters per kind and points (TRF-16: 1/=/0 played, W/D/L lasted under one
# move, +/- forfeits).
_TOKENS: Final[dict[tuple[str, int], str]] = {
    (ResultKind.NORMAL, 2): "1",
    (ResultKind.NORMAL, 1): "=",
    (ResultKind.NORMAL, 0): "0",
    (ResultKind.CLOSED_DRAW, 1): "=",
    (ResultKind.NEVER_SAT, 2): "W",
    (ResultKind.NEVER_SAT, 0): "L",
    (ResultKind.BUSY_FORFEIT, 2): "+",
    (ResultKind.BUSY_FORFEIT, 0): "-",
    (ResultKind.BOTH_ABSENT, 0): "-",
}
BYE_TOKEN: Final = "U"
# The result characters of a game that was opened (TRF-16): it counts for colours (FIDE 1.6).
PLAYED_TOKENS: Final = "1=0WDL"


class PairingError(ValueError):
    """A Swiss round that cannot be paired, or a history that cannot be paired from."""


# One past round: its games (two per pairing in double rounds) and its bye, in any order, the
# entrants named by their numbers.
SwissRound: TypeAlias = Sequence[PlayedGame[int] | Bye[int]]
# The entrants by number: the engine's handle on each, as a TRF file's starting numbers are.
NumberedEntrants: TypeAlias = Mapping[int, Entrant]


@dataclass(frozen=True, slots=True)
class SwissRoundPairing:
    """The pairing of one round: (white, black) of the first game per board, in board order, and the bye.

    In double rounds (T-12) the second game of each pair reverses the colours. `engine` names
    the system that paired it.
    """

    round: int
    pairs: list[tuple[int, int]]
    bye: int | None
    engine: str


@dataclass(frozen=True, slots=True)
class PlayerState:
    """What the absolute rules need to know about one player before the round is paired."""

    id: int
    rank: int
    score: int
    colours: str = ""  # colours of played games, oldest first ("w"/"b")
    opponents: frozenset[int] = frozenset()
    bye_eligible: bool = True  # C.04.1 Art. 4
    topscorer: bool = False  # C.04.3 1.8: only when the last round is paired


@dataclass(frozen=True, slots=True)
class PairingState:
    """Everyone to pair in one round, and the pairs that may not meet besides earlier opponents."""

    round: int
    last_round: bool
    players: tuple[PlayerState, ...]
    forbidden: frozenset[frozenset[int]] = frozenset()

    def by_id(self) -> dict[int, PlayerState]:
        """Players keyed by id."""
        return {p.id: p for p in self.players}

    def may_meet(self, a: PlayerState, b: PlayerState) -> bool:
        """May these two be paired at all (no rematch, no forbidden pair)?"""
        met = b.id in a.opponents or a.id in b.opponents
        return not met and frozenset((a.id, b.id)) not in self.forbidden


@dataclass(frozen=True, slots=True)
class Leg:
    """One player's entry for one TRF round: opponent (None for the bye), colour, TRF result, points."""

    opponent: int | None
    colour: str  # "w", "b" or "-"
    token: str
    points: int

    @property
    def played(self) -> bool:
        """Was the game opened (it counts for colours)?"""
        return self.token in PLAYED_TOKENS


def colour_preference(colours: str) -> tuple[str | None, bool]:
    """The colour a player is due after these played colours, and whether it is absolute (C.04.3 1.7)."""
    if not colours:
        return None, False
    difference = colours.count(WHITE) - colours.count(BLACK)
    repeated = len(colours) >= 2 and colours[-1] == colours[-2]
    if abs(difference) > 1:
        return (BLACK if difference > 0 else WHITE), True
    if repeated:
        return (BLACK if colours[-1] == WHITE else WHITE), True
    if difference:
        return (BLACK if difference > 0 else WHITE), False
    return (WHITE if colours[-1] == BLACK else BLACK), False


def violations(state: PairingState, pairs: Iterable[tuple[int, int]], bye: int | None) -> list[str]:
    """The absolute criteria (C.04.1, T-8, T-13, T-20) this pairing breaks; empty when it complies.

    Colours: two players with the same absolute preference may not meet ([C3]), and the colours
    given may not make three in a row or a difference beyond +-2 (C.04.1 Art. 6, 7), unless a
    topscorer is in the pair in the last round.
    """
    problems: list[str] = []
    players = state.by_id()
    pairs = list(pairs)
    seen: dict[int, int] = defaultdict(int)
    for white, black in pairs:
        if white == black:
            problems.append(f"player {white} is paired with themself")
        seen[white] += 1
        seen[black] += 1
    if bye is not None:
        seen[bye] += 1
    for number in sorted(seen):
        if number not in players:
            problems.append(f"player {number} is not in this round's draw")
        elif seen[number] > 1:
            problems.append(f"player {number} is paired {seen[number]} times (C.04.1: once per round)")
    for number in sorted(players):
        if number not in seen:
            problems.append(f"player {number} is left out (T-20: nobody is dropped)")
    if len(players) % 2 == 1 and bye is None:
        problems.append(f"{len(players)} players and no bye (T-8)")
    if len(players) % 2 == 0 and bye is not None:
        problems.append(f"bye to {bye} with an even number of players (T-8)")
    if problems:
        return problems

    for white, black in pairs:
        a, b = players[white], players[black]
        if b.id in a.opponents or a.id in b.opponents:
            problems.append(f"rematch {white}-{black}: already paired in an earlier round (T-2, T-13, C.04.1 Art. 2)")
        elif not state.may_meet(a, b):
            problems.append(f"{white}-{black} is a forbidden pair")
        pa, absolute_a = colour_preference(a.colours)
        pb, absolute_b = colour_preference(b.colours)
        exempt = state.last_round and (a.topscorer or b.topscorer)
        if absolute_a and absolute_b and pa == pb and not exempt:
            problems.append(f"{white}-{black}: both have an absolute preference for {pa} ([C3], C.04.1 Art. 6, 7)")
        elif not exempt:
            problems += _colour_problems(a, WHITE) + _colour_problems(b, BLACK)
    if bye is not None and not players[bye].bye_eligible:
        problems.append(
            f"bye to {bye}, who already had a bye or a win without playing (T-8, T-13, C.04.1 Art. 4)"
        )
    return problems


def _colour_problems(player: PlayerState, colour: str) -> list[str]:
    """Three equal colours in a row or a difference beyond +-2 (C.04.1 Art. 6, 7), when the other colour
    would avoid both: after unplayed rounds a history can leave no colour that keeps them."""
    problem = _colour_break(player.colours, colour)
    other = BLACK if colour == WHITE else WHITE
    if problem and _colour_break(player.colours, other) is None:
        return [f"player {player.id} {problem}"]
    return []


def _colour_break(colours: str, colour: str) -> str | None:
    """What giving `colour` after `colours` breaks, or None."""
    sequence = colours + colour
    difference = sequence.count(WHITE) - sequence.count(BLACK)
    name = "white" if colour == WHITE else "black"
    if sequence[-3:] == colour * 3:
        return f"would get {name} three times in a row (T-13, C.04.1 Art. 7)"
    if abs(difference) > 2:
        return f"would reach a colour difference of {difference:+d} (T-13, C.04.1 Art. 6)"
    return None


@dataclass(frozen=True, slots=True)
class PreparedTournament:
    """A validated history, ready for TRF: entrants in initial order and each one's TRF legs."""

    # (number, entrant) in initial rank order: rating desc, then name (T-13)
    entrants: tuple[tuple[int, Entrant], ...]
    legs: Mapping[int, tuple[Leg, ...]]
    double: bool
    rounds_played: int
    # Pairs that met only through a forfeit or a double absence, with the round they met in: not a
    # game in TRF terms, so the TRF must forbid them explicitly from the next round on.
    unplayed_pairs: Mapping[frozenset[int], int] = field(default_factory=dict)

    @property
    def legs_per_round(self) -> int:
        """Games per pairing and round: 2 when rounds are double (T-12)."""
        return 2 if self.double else 1

    def start_numbers(self) -> dict[int, int]:
        """TRF starting number (1..n, the initial rank) of each entrant number."""
        return {number: i for i, (number, _) in enumerate(self.entrants, start=1)}

    def state(self, round_number: int, total_rounds: int) -> PairingState:
        """The pairing state before `round_number`, in entrant numbers (T-13's stricter rematch rule)."""
        ranks = self.start_numbers()
        last = round_number == total_rounds
        # 1.8: more than half the maximum score of the rounds played (win 2 per game, T-7)
        threshold = BYE_POINTS_PER_GAME * len(next(iter(self.legs.values()), ())) / 2
        players = []
        for number, _ in self.entrants:
            legs = self.legs[number]
            score = sum(leg.points for leg in legs)
            players.append(
                PlayerState(
                    id=number,
                    rank=ranks[number],
                    score=score,
                    colours="".join(leg.colour for leg in legs if leg.played),
                    opponents=frozenset(leg.opponent for leg in legs if leg.opponent is not None),
                    bye_eligible=not any(leg.token in (BYE_TOKEN, "+") for leg in legs),
                    topscorer=last and score > threshold,
                )
            )
        return PairingState(round=round_number, last_round=last, players=tuple(players))


def initial_order(entrants: NumberedEntrants) -> tuple[tuple[int, Entrant], ...]:
    """(number, entrant) by initial rank: rating descending, then name, then number (T-13)."""
    return tuple(sorted(entrants.items(), key=lambda item: (
        -item[1].rating, item[1].player.casefold(), item[1].player, item[0])))


def prepare(entrants: NumberedEntrants, history: Sequence[SwissRound], *, double: bool) -> PreparedTournament:
    """Validate a history against the entrants and turn it into TRF legs; PairingError says what is wrong."""
    numbers = list(entrants)
    if len(numbers) < 2:
        raise PairingError(f"a Swiss round needs at least 2 entrants, got {len(numbers)}")
    known = set(numbers)
    legs_per_round = 2 if double else 1
    leg_numbers = (1, 2) if double else (1,)
    legs: dict[int, list[Leg]] = {n: [] for n in numbers}
    unplayed: dict[frozenset[int], int] = {}
    played: set[frozenset[int]] = set()

    for round_number, items in enumerate(history, start=1):
        entries: dict[int, list[tuple[int, int, Leg]]] = {}
        for order, item in enumerate(items):
            if item.round != round_number:
                raise PairingError(
                    f"history round {round_number} holds an item of round {item.round}: {item}"
                )
            if isinstance(item, Bye):
                if item.entrant not in known:
                    raise PairingError(f"round {round_number}: bye to {item.entrant}, who is not an entrant")
                expected = BYE_POINTS_PER_GAME * legs_per_round
                if item.points != expected:
                    raise PairingError(
                        f"round {round_number}: bye to {item.entrant} is worth {expected} points (T-8),"
                        f" not {item.points}"
                    )
                entries.setdefault(item.entrant, []).extend(
                    (leg, order, Leg(None, "-", BYE_TOKEN, BYE_POINTS_PER_GAME)) for leg in leg_numbers)
                continue
            _check_game(item, known, leg_numbers)
            white, black, kind, leg_number = item.white, item.black, item.kind, item.leg
            white_points, black_points = item.white_points, item.black_points
            white_leg = (leg_number, order, Leg(black, WHITE, _TOKENS[(kind, white_points)], white_points))
            black_leg = (leg_number, order, Leg(white, BLACK, _TOKENS[(kind, black_points)], black_points))
            if white in entries:
                entries[white].append(white_leg)
            else:
                entries[white] = [white_leg]
            if black in entries:
                entries[black].append(black_leg)
            else:
                entries[black] = [black_leg]
            if kind in PLAYED_KINDS:
                played.add(frozenset((white, black)))
            else:
                unplayed.setdefault(frozenset((white, black)), round_number)

        for number in numbers:
            found = entries.get(number, [])
            if len(found) > 1:
                found.sort(key=lambda e: (e[0], e[1]))
            if len(found) != legs_per_round:
                what = "games or bye" if double else "game or bye"
                raise PairingError(
                    f"round {round_number}: entrant {number} has {len(found)} {what},"
                    f" expected {legs_per_round}"
                    " (T-6, T-20: every entrant is in every round)"
                )
            if double and found[0][2].opponent != found[1][2].opponent:
                raise PairingError(
                    f"round {round_number}: entrant {number} meets {found[0][2].opponent}"
                    f" and {found[1][2].opponent};"
                    " both games of a double round are against the same opponent (T-12)"
                )
            legs[number].extend([entry[2] for entry in found] if double else (found[0][2],))

    return PreparedTournament(
        entrants=initial_order(entrants),
        legs={n: tuple(v) for n, v in legs.items()},
        double=double,
        rounds_played=len(history),
        unplayed_pairs={pair: met for pair, met in unplayed.items() if pair not in played},
    )


def _check_game(game: PlayedGame[int], known: set[int], leg_numbers: tuple[int, ...]) -> None:
    """Raise PairingError when a past game cannot come from our rules."""
    for number in (game.white, game.black):
        if number not in known:
            raise PairingError(f"{_game_named(game)}: {number} is not an entrant")
    if game.white == game.black:
        raise PairingError(f"{_game_named(game)}: a player cannot meet themself")
    if game.kind not in _SCORES:
        raise PairingError(f"{_game_named(game)}: unknown kind {game.kind!r}; expected one of {sorted(_SCORES)}")
    if (game.white_points, game.black_points) not in _SCORES[game.kind]:
        raise PairingError(
            f"{_game_named(game)}: {game.white_points}-{game.black_points} is not a possible score for {game.kind}"
            " (T-7, T-15..T-19)"
        )
    if game.leg not in leg_numbers:
        kind = "double" if len(leg_numbers) == 2 else "single"
        raise PairingError(f"{_game_named(game)}: leg {game.leg} in a {kind} round (T-12)")


def _game_named(game: PlayedGame[int]) -> str:
    """Where an error about a past game is: its round and players (written only for an error, never per game)."""
    return f"round {game.round}: game {game.white}-{game.black}"
