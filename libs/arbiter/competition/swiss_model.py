"""Vocabulary and absolute rules of the Swiss pairing (T-8, T-13, T-18..T-20; FIDE C.04.1).

Pure: standard library only. `arbiter.competition.swiss` is the public entry point and
re-exports the names a caller needs; this module holds what the engine wrapper, the TRF
writer and the fallback share.

Decisions on results that are not played games (the issue asked to decide them):

- Rematches. FIDE (C.04.1 b) only forbids playing the same opponent twice, and TRF tools
  (bbpPairings, JaVaFo, py4swiss) therefore let a forfeited pair meet again. The SPEC wins
  over FIDE: T-2/T-13 say "never the same opponent twice", and the standings count every
  pairing as an opponent for Buchholz (see `scoring.py`). So once two entrants have been
  paired they are never paired again, whatever happened: a played game, a game one side
  never sat at (T-16/T-17), a busy forfeit (T-18) or a double absence (T-19). In TRF the
  pairs that met only through a forfeit are written as forbidden pairs (XXP), which every
  engine honours, so the exported file reproduces our pairings.
- Colours. Only games that were opened count (FIDE A.6 counts played games): a forfeit or
  a double absence leaves the colour history untouched, as in TRF (`+`/`-` are unplayed).
- Byes. T-8 counts pairing-allocated byes only: the bye goes to an entrant with the fewest
  byes so far. FIDE C.04.1 d also keeps it from a player who already won by forfeit (T-18);
  the engine applies that too and we only drop it when it leaves no legal pairing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from arbiter.competition.types import ResultKind

__all__ = [
    "PLAYED_KINDS",
    "Leg",
    "PairingError",
    "PairingState",
    "PlayerState",
    "PreparedTournament",
    "SwissBye",
    "SwissEntrant",
    "SwissGame",
    "SwissRound",
    "SwissRoundPairing",
    "avoidable_colour_problem",
    "colour_problem",
    "colour_preference",
    "prepare",
    "violations",
]

WHITE: Final = "w"
BLACK: Final = "b"

# Kinds in which the game was opened: they count for colours (FIDE A.6) and are "played" in TRF.
PLAYED_KINDS: Final = frozenset({ResultKind.NORMAL, ResultKind.NEVER_SAT, ResultKind.CLOSED_DRAW})
_SCORES: Final[dict[str, frozenset[tuple[int, int]]]] = {
    ResultKind.NORMAL: frozenset({(2, 0), (1, 1), (0, 2)}),  # T-7
    ResultKind.NEVER_SAT: frozenset({(2, 0), (0, 2)}),  # T-16: lost on time
    ResultKind.CLOSED_DRAW: frozenset({(1, 1)}),  # T-15
    ResultKind.BUSY_FORFEIT: frozenset({(2, 0), (0, 2)}),  # T-18
    ResultKind.BOTH_ABSENT: frozenset({(0, 0)}),  # T-19
}
# TRF result characters per kind and points (TRF-06: 1/=/0 played, W/D/L lasted under one
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
# T-8: a bye is worth a game won, per game of the pairing (4 when rounds are double, T-12).
BYE_POINTS_PER_GAME: Final = 2


class PairingError(ValueError):
    """A Swiss round that cannot be paired, or a history that cannot be paired from."""


@dataclass(frozen=True, slots=True)
class SwissEntrant:
    """An entrant: `number` is our stable id in the tournament; rank comes from rating, then name (T-13).

    The rating is the exact Glicko-2 one: rounded, 1499.6 and 1500.4 would tie and the name would
    rank them. Only the TRF's rating column is rounded.
    """

    number: int
    rating: float
    name: str


@dataclass(frozen=True, slots=True)
class SwissGame:
    """One game of a past round; `kind` is a `ResultKind` value, `leg` 1 or 2 in double rounds (T-12)."""

    round: int
    white: int
    black: int
    white_points: int
    black_points: int
    kind: str = ResultKind.NORMAL
    leg: int = 1


@dataclass(frozen=True, slots=True)
class SwissBye:
    """A pairing-allocated bye of a past round: 2 points, 4 in double rounds (T-8)."""

    round: int
    player: int
    points: int = BYE_POINTS_PER_GAME


# One past round: its games (two per pairing in double rounds) and its bye, in any order.
SwissRound: TypeAlias = Sequence[SwissGame | SwissBye]
EngineName: TypeAlias = Literal["py4swiss", "fallback"]


@dataclass(frozen=True, slots=True)
class SwissRoundPairing:
    """The pairing of one round.

    `pairs` are (white, black) of the first game; in double rounds (T-12) the second game of
    each pair reverses them. `engine` is "py4swiss" for the FIDE Dutch pairing (round 1 in
    closed form, identical to py4swiss's answer) and "fallback" for ours, with the reason.
    """

    round: int
    pairs: list[tuple[int, int]]
    bye: int | None
    engine: EngineName
    fallback_reason: str | None = None
    # Rules the engine had to relax, each with the reason (empty when none was needed).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PlayerState:
    """What the absolute rules need to know about one player before the round is paired."""

    id: int
    rank: int
    score: int
    colours: str = ""  # colours of opened games, oldest first ("w"/"b")
    opponents: frozenset[int] = frozenset()
    byes: int = 0
    forfeit_wins: int = 0


@dataclass(frozen=True, slots=True)
class PairingState:
    """Everyone to pair in one round and whether colour rules bind (C.04.1 f/g spare the last round)."""

    round: int
    last_round: bool
    double: bool
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
        return self.token in "1=0WDL"


def colour_preference(colours: str) -> tuple[str | None, int]:
    """The colour a player is due and how strongly (3 absolute, 2 strong, 1 mild, 0 none): FIDE C.04.3 A.6."""
    if not colours:
        return None, 0
    difference = colours.count(WHITE) - colours.count(BLACK)
    repeated = colours[-2:] if len(colours) >= 2 and colours[-1] == colours[-2] else ""
    # Two equal colours in a row make the other one absolute whatever the difference,
    # or a third one would follow (C.04.1 g).
    if repeated and abs(difference) <= 1:
        return (BLACK if repeated[0] == WHITE else WHITE), 3
    if difference > 0:
        return BLACK, 3 if difference > 1 else 2
    if difference < 0:
        return WHITE, 3 if difference < -1 else 2
    return (WHITE if colours[-1] == BLACK else BLACK), 1


def colour_problem(player: int, colours: str, added: str) -> str | None:
    """Why giving `added` (one colour, or two reversed ones in a double round) to a player with this
    history breaks C.04.1 f/g, or None.

    A round may not push the colour difference past +-2 any further than it already was.
    "Already" matters in double rounds (T-12): a forfeited game is no game, so a player whose
    first games were forfeited can come out of earlier rounds at +3 or with three equal colours
    in a row, which no pairing caused and none can undo (both games of a round have opposite
    colours); the pairing is only answerable for what its own games add.
    """
    sequence = colours
    start = abs(colours.count(WHITE) - colours.count(BLACK))
    for colour in added:
        sequence += colour
        difference = sequence.count(WHITE) - sequence.count(BLACK)
        name = "white" if colour == WHITE else "black"
        if len(sequence) >= 3 and sequence[-3:] == colour * 3:
            return f"player {player} would get {name} three times in a row (T-13, C.04.1 g)"
        if abs(difference) > 2 and abs(difference) > start:
            return f"player {player}'s colour difference would reach {difference:+d} (T-13, C.04.1 f)"
    return None


def avoidable_colour_problem(player: int, colours: str, double: bool, white: bool) -> str | None:
    """`colour_problem` for the colour(s) a pairing gives, unless the other colour breaks C.04.1 f/g too.

    Then no pairing can help: after forfeited first games of double rounds a player can be at
    +2 with two blacks in a row ("wwwwbb"), where black makes three in a row and white +3.
    """
    problem = colour_problem(player, colours, pair_colours(double, white))
    if problem and colour_problem(player, colours, pair_colours(double, not white)) is None:
        return problem
    return None


def pair_colours(double: bool, white: bool) -> str:
    """The colours one side gets from a pairing: one game, or two with colours reversed (T-12)."""
    first = WHITE if white else BLACK
    if not double:
        return first
    return first + (BLACK if white else WHITE)


def violations(state: PairingState, pairs: Iterable[tuple[int, int]], bye: int | None) -> list[str]:
    """Absolute rules (C.04.1, T-8, T-13, T-20) that this pairing breaks; empty when it is legal."""
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
            problems.append(
                f"rematch {white}-{black}: already paired in an earlier round (T-2, T-13, C.04.1 b)"
            )
        elif not state.may_meet(a, b):
            problems.append(f"{white}-{black} is a forbidden pair (TRF XXP)")
    if bye is not None:
        fewest = min(p.byes for p in players.values())
        if players[bye].byes > fewest:
            others = sorted(p.id for p in players.values() if p.byes == fewest)
            problems.append(
                f"bye to {bye}, who already had {players[bye].byes}, while {others[0]} had {fewest}"
                " (T-8, C.04.1 c: nobody gets a second bye while others have none)"
            )
    if not state.last_round:
        # C.04.1 f/g; each system may waive them in the last round only.
        for white, black in pairs:
            for number, is_white in ((white, True), (black, False)):
                problem = avoidable_colour_problem(number, players[number].colours, state.double, is_white)
                if problem:
                    problems.append(problem)
    return problems


@dataclass(frozen=True, slots=True)
class PreparedTournament:
    """A validated history, ready for TRF: entrants in initial order and each one's TRF legs."""

    entrants: tuple[SwissEntrant, ...]  # initial rank order: rating desc, then name (T-13)
    legs: Mapping[int, tuple[Leg, ...]]
    double: bool
    rounds_played: int
    # Pairs that met only through a forfeit or a double absence: not a game in TRF terms,
    # so the TRF must forbid them explicitly (XXP).
    unplayed_pairs: frozenset[frozenset[int]] = field(default_factory=frozenset)

    @property
    def legs_per_round(self) -> int:
        """Games per pairing and round: 2 when rounds are double (T-12)."""
        return 2 if self.double else 1

    def start_numbers(self) -> dict[int, int]:
        """TRF starting number (1..n, the initial rank) of each entrant number."""
        return {e.number: i for i, e in enumerate(self.entrants, start=1)}

    def state(self, round_number: int, total_rounds: int) -> PairingState:
        """The pairing state before `round_number`, in entrant numbers."""
        ranks = self.start_numbers()
        players = []
        for entrant in self.entrants:
            legs = self.legs[entrant.number]
            players.append(
                PlayerState(
                    id=entrant.number,
                    rank=ranks[entrant.number],
                    score=sum(leg.points for leg in legs),
                    colours="".join(leg.colour for leg in legs if leg.played),
                    opponents=frozenset(leg.opponent for leg in legs if leg.opponent is not None),
                    byes=sum(1 for leg in legs if leg.token == BYE_TOKEN) // self.legs_per_round,
                    forfeit_wins=sum(1 for leg in legs if leg.token == "+"),
                )
            )
        return PairingState(
            round=round_number,
            last_round=round_number == total_rounds,
            double=self.double,
            players=tuple(players),
        )


def initial_order(entrants: Iterable[SwissEntrant]) -> tuple[SwissEntrant, ...]:
    """Entrants by initial rank: rating descending, then name, then number (T-13)."""
    return tuple(sorted(entrants, key=lambda e: (-e.rating, e.name.casefold(), e.name, e.number)))


def prepare(
    entrants: Sequence[SwissEntrant], history: Sequence[SwissRound], *, double: bool
) -> PreparedTournament:
    """Validate a history against the entrants and turn it into TRF legs; PairingError says what is wrong."""
    numbers = [e.number for e in entrants]
    if len(set(numbers)) != len(numbers):
        duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
        raise PairingError(f"entrant numbers must be unique; repeated: {duplicates}")
    if len(numbers) < 2:
        raise PairingError(f"a Swiss round needs at least 2 entrants, got {len(numbers)}")
    known = set(numbers)
    legs_per_round = 2 if double else 1
    legs: dict[int, list[Leg]] = {n: [] for n in numbers}
    unplayed: set[frozenset[int]] = set()
    played: set[frozenset[int]] = set()

    for round_number, items in enumerate(history, start=1):
        entries: dict[int, list[tuple[int, int, Leg]]] = defaultdict(list)
        for order, item in enumerate(items):
            if item.round != round_number:
                raise PairingError(
                    f"history round {round_number} holds an item of round {item.round}: {item}"
                )
            if isinstance(item, SwissBye):
                if item.player not in known:
                    raise PairingError(f"round {round_number}: bye to {item.player}, who is not an entrant")
                expected = BYE_POINTS_PER_GAME * legs_per_round
                if item.points != expected:
                    raise PairingError(
                        f"round {round_number}: bye to {item.player} is worth {expected} points (T-8),"
                        f" not {item.points}"
                    )
                for leg in range(1, legs_per_round + 1):
                    entries[item.player].append((leg, order, Leg(None, "-", BYE_TOKEN, BYE_POINTS_PER_GAME)))
                continue
            _check_game(item, known, double)
            white_token = _TOKENS[(item.kind, item.white_points)]
            black_token = _TOKENS[(item.kind, item.black_points)]
            white_leg = Leg(item.black, WHITE, white_token, item.white_points)
            black_leg = Leg(item.white, BLACK, black_token, item.black_points)
            entries[item.white].append((item.leg, order, white_leg))
            entries[item.black].append((item.leg, order, black_leg))
            pair = frozenset((item.white, item.black))
            (played if item.kind in PLAYED_KINDS else unplayed).add(pair)

        for number in numbers:
            found = sorted(entries.get(number, []), key=lambda e: (e[0], e[1]))
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
            legs[number].extend(entry[2] for entry in found)

    return PreparedTournament(
        entrants=initial_order(entrants),
        legs={n: tuple(v) for n, v in legs.items()},
        double=double,
        rounds_played=len(history),
        unplayed_pairs=frozenset(unplayed - played),
    )


def _check_game(game: SwissGame, known: set[int], double: bool) -> None:
    """Raise PairingError when a past game cannot come from our rules."""
    where = f"round {game.round}: game {game.white}-{game.black}"
    for number in (game.white, game.black):
        if number not in known:
            raise PairingError(f"{where}: {number} is not an entrant")
    if game.white == game.black:
        raise PairingError(f"{where}: a player cannot meet themself")
    if game.kind not in _SCORES:
        raise PairingError(f"{where}: unknown kind {game.kind!r}; expected one of {sorted(_SCORES)}")
    if (game.white_points, game.black_points) not in _SCORES[game.kind]:
        raise PairingError(
            f"{where}: {game.white_points}-{game.black_points} is not a possible score for {game.kind}"
            " (T-7, T-15..T-19)"
        )
    if game.leg not in ((1, 2) if double else (1,)):
        raise PairingError(f"{where}: leg {game.leg} in a {'double' if double else 'single'} round (T-12)")
