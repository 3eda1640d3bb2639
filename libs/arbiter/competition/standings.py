"""Standings and tie-breaks: Swiss (T-21) and round robin (T-22), with the criterion that decided each place.

Which result kinds count as opponents, wins and draws for the tie-breaks is explained in
`arbiter.competition.scoring`: in short, everything paired is an opponent (only the bye is
not, T-8/T-21), forfeit and never-sat wins are wins (T-16, T-18), 0-0 (T-19) is a loss for both.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.scoring import bye_points, is_valid_score
from arbiter.competition.types import Format

__all__ = [
    "ROUND_ROBIN_ORDER",
    "SWISS_ORDER",
    "StandingRow",
    "StandingsError",
    "TieBreak",
    "buchholz_cut1",
    "compute_standings",
    "separating_criterion",
    "why_above",
]


class StandingsError(ValueError):
    """Standings input that no tournament can produce."""


class TieBreak(StrEnum):
    """A criterion that orders two entrants, named as operators read it."""

    POINTS = "points"
    BUCHHOLZ_CUT1 = "buchholz_cut1"
    SONNEBORN_BERGER = "sonneborn_berger"
    WINS = "wins"
    HEAD_TO_HEAD = "head_to_head"
    BERGER_NUMBER = "berger_number"
    INITIAL_RANK = "initial_rank"

    def rule(self, fmt: Format) -> str:
        """The SPEC rule that makes this a criterion of a format's standings."""
        if self is TieBreak.WINS:
            return "T-21" if fmt is Format.SWISS else "T-22"
        return _RULE[self]

    @property
    def label(self) -> str:
        """How standings name the criterion for people."""
        return _LABEL[self]


_RULE: Final = {
    TieBreak.POINTS: "T-7",
    TieBreak.BUCHHOLZ_CUT1: "T-21",
    TieBreak.SONNEBORN_BERGER: "T-21",
    TieBreak.HEAD_TO_HEAD: "T-22",
    TieBreak.BERGER_NUMBER: "T-22",
    TieBreak.INITIAL_RANK: "T-13",
}
_LABEL: Final = {
    TieBreak.POINTS: "points",
    TieBreak.BUCHHOLZ_CUT1: "Buchholz Cut 1",
    TieBreak.SONNEBORN_BERGER: "Sonneborn-Berger",
    TieBreak.WINS: "wins",
    TieBreak.HEAD_TO_HEAD: "head-to-head among the players tied on points",
    TieBreak.BERGER_NUMBER: "Berger number",
    TieBreak.INITIAL_RANK: "initial rank",
}
# Order of the criteria; the last one of each is unique per entrant, so the order is total.
SWISS_ORDER: Final = (
    TieBreak.POINTS,
    TieBreak.BUCHHOLZ_CUT1,  # T-21 (1)
    TieBreak.SONNEBORN_BERGER,  # T-21 (2)
    TieBreak.WINS,  # T-21 (3)
    TieBreak.INITIAL_RANK,  # T-13: rating, then name; keeps the order deterministic
)
ROUND_ROBIN_ORDER: Final = (
    TieBreak.POINTS,
    TieBreak.WINS,  # T-22 (1)
    TieBreak.HEAD_TO_HEAD,  # T-22 (2)
    TieBreak.BERGER_NUMBER,  # T-22 (3), T-14
)
# Criteria where the smaller value ranks higher.
_ASCENDING: Final = frozenset({TieBreak.BERGER_NUMBER, TieBreak.INITIAL_RANK})


@dataclass(frozen=True, slots=True)
class StandingRow:
    """One line of the standings."""

    rank: int
    entrant: str
    points: int
    # T-21 Buchholz Cut 1; None in a round robin, which shows no BH (T-22).
    buchholz: int | None
    # T-21 Sonneborn-Berger, per game; information only in a round robin (T-22).
    # Always a multiple of 0.5, which a float holds exactly.
    sonneborn_berger: float
    wins: int
    # Game records the entrant was paired in (forfeits and 0-0 included, byes not).
    games: int
    # T-22 (2): points scored against the other entrants on the same points; None in a Swiss.
    head_to_head: int | None
    berger_number: int | None
    initial_rank: int | None
    # The first criterion that separates this row from the one above; None for the first row.
    tie_break_used: TieBreak | None

    def value(self, criterion: TieBreak) -> float | int | None:
        """This row's value for one criterion."""
        return {
            TieBreak.POINTS: self.points,
            TieBreak.BUCHHOLZ_CUT1: self.buchholz,
            TieBreak.SONNEBORN_BERGER: self.sonneborn_berger,
            TieBreak.WINS: self.wins,
            TieBreak.HEAD_TO_HEAD: self.head_to_head,
            TieBreak.BERGER_NUMBER: self.berger_number,
            TieBreak.INITIAL_RANK: self.initial_rank,
        }[criterion]


def buchholz_cut1(opponent_points: Iterable[int]) -> int:
    """Sum of the opponents' final points minus the lowest one; 0 with no opponent (T-21)."""
    values = list(opponent_points)
    return sum(values) - min(values) if values else 0


def compute_standings(
    fmt: Format,
    entrants: Sequence[Entrant],
    games: Iterable[PlayedGame[str]],
    byes: Iterable[Bye[str]] = (),
) -> tuple[StandingRow, ...]:
    """Rank every entrant by points and the tie-breaks of T-21 (Swiss) or T-22 (round robin)."""
    games = tuple(games)
    byes = tuple(byes)
    _validate(fmt, entrants, games, byes)

    points: dict[str, int] = {e.player: 0 for e in entrants}
    wins: dict[str, int] = dict.fromkeys(points, 0)
    played: dict[str, int] = dict.fromkeys(points, 0)
    for game in games:
        points[game.white] += game.white_points
        points[game.black] += game.black_points
        played[game.white] += 1
        played[game.black] += 1
        # A win is scoring more than the opponent: T-16 and T-18 wins included (see scoring).
        if game.white_points > game.black_points:
            wins[game.white] += 1
        elif game.black_points > game.white_points:
            wins[game.black] += 1
    for bye in byes:
        # T-8: the bye's points count, but it is neither a game nor a win.
        points[bye.entrant] += bye.points

    # T-21 (1): one opponent per round; both games of a home-and-away pairing meet the same
    # opponent once (T-12), so BH counts that opponent once. The bye is not an opponent.
    opponents: dict[str, dict[int, str]] = {e.player: {} for e in entrants}
    for game in games:
        opponents[game.white][game.round] = game.black
        opponents[game.black][game.round] = game.white
    buchholz = {
        entrant: buchholz_cut1(points[opp] for opp in by_round.values())
        for entrant, by_round in opponents.items()
    }

    # T-21 (2): per game, so a home-and-away pairing counts twice. Won games add the opponent's
    # final points, drawn games half of them; 0-0 (T-19) adds nothing to either side.
    sonneborn: dict[str, float] = dict.fromkeys(points, 0.0)
    for game in games:
        for me, opp, mine, theirs in (
            (game.white, game.black, game.white_points, game.black_points),
            (game.black, game.white, game.black_points, game.white_points),
        ):
            if mine > theirs:
                sonneborn[me] += points[opp]
            elif mine == theirs and mine > 0:
                sonneborn[me] += points[opp] / 2

    head_to_head: dict[str, int] | None = None
    if fmt is Format.ROUND_ROBIN:
        head_to_head = _head_to_head(points, games)

    provisional = [
        StandingRow(
            rank=0,
            entrant=e.player,
            points=points[e.player],
            buchholz=buchholz[e.player] if fmt is Format.SWISS else None,
            sonneborn_berger=sonneborn[e.player],
            wins=wins[e.player],
            games=played[e.player],
            head_to_head=head_to_head[e.player] if head_to_head is not None else None,
            berger_number=e.berger_number,
            initial_rank=e.initial_rank,
            tie_break_used=None,
        )
        for e in entrants
    ]
    order = _order(fmt)
    provisional.sort(key=lambda row: tuple(_sort_value(row, c) for c in order))

    rows = []
    above: StandingRow | None = None
    for rank, row in enumerate(provisional, start=1):
        used = separating_criterion(fmt, above, row) if above is not None else None
        row = replace(row, rank=rank, tie_break_used=used)
        rows.append(row)
        above = row
    return tuple(rows)


def separating_criterion(fmt: Format, upper: StandingRow, lower: StandingRow) -> TieBreak:
    """The first criterion of T-21/T-22 on which two rows differ (the upper one ranks higher)."""
    for criterion in _order(fmt):
        if upper.value(criterion) != lower.value(criterion):
            return criterion
    raise StandingsError(f"{upper.entrant} and {lower.entrant} are equal on every criterion")


def why_above(fmt: Format, rows: Sequence[StandingRow], first: str, second: str) -> str:
    """Answer "why is X above Y?" with the deciding criterion, both values and the rule."""
    by_id = {row.entrant: row for row in rows}
    for entrant in (first, second):
        if entrant not in by_id:
            raise StandingsError(f"{entrant} is not in these standings")
    upper, lower = sorted((by_id[first], by_id[second]), key=lambda row: row.rank)
    criterion = separating_criterion(fmt, upper, lower)
    comparison = "lower" if criterion in _ASCENDING else "more"
    equal_on = _order(fmt)[: _order(fmt).index(criterion)]
    tied = f"level on {', '.join(c.label for c in equal_on)}; " if equal_on else ""
    return (
        f"{upper.entrant} (rank {upper.rank}) is above {lower.entrant} (rank {lower.rank}): "
        f"{tied}{comparison} {criterion.label}, "
        f"{_fmt(upper.value(criterion))} against {_fmt(lower.value(criterion))} ({criterion.rule(fmt)})"
    )


def _order(fmt: Format) -> tuple[TieBreak, ...]:
    """The criteria of a format, in order."""
    return SWISS_ORDER if fmt is Format.SWISS else ROUND_ROBIN_ORDER


def _sort_value(row: StandingRow, criterion: TieBreak) -> float:
    """A key where smaller sorts first."""
    value = row.value(criterion)
    assert value is not None  # _validate guarantees every criterion of the format has a value
    return value if criterion in _ASCENDING else -value


def _head_to_head(points: dict[str, int], games: Sequence[PlayedGame[str]]) -> dict[str, int]:
    """T-22 (2): each entrant's points in games against exactly the entrants tied with them on points."""
    # The mini-table is taken among everyone on the same points, as the SPEC words it, not
    # only among those still tied after wins: it is applied only between entrants equal on
    # points and wins, but it counts every game inside the points group.
    score: dict[str, int] = dict.fromkeys(points, 0)
    for game in games:
        if points[game.white] == points[game.black]:
            score[game.white] += game.white_points
            score[game.black] += game.black_points
    return score


def _validate(
    fmt: Format, entrants: Sequence[Entrant], games: Sequence[PlayedGame[str]], byes: Sequence[Bye[str]]
) -> None:
    """Refuse input that no tournament can produce, naming what is wrong."""
    ids = [e.player for e in entrants]
    if len(set(ids)) != len(ids):
        raise StandingsError("an entrant appears twice in the entrant list")
    if fmt is Format.SWISS:
        _check_unique_numbers(entrants, "initial_rank", "initial rank (T-13)")
    else:
        _check_unique_numbers(entrants, "berger_number", "Berger number (T-14)")
    known = set(ids)
    opponent_in_round: dict[tuple[int, str], str] = {}
    games_in_round: dict[tuple[int, str], int] = defaultdict(int)
    for game in games:
        where = f"round {game.round} game {game.white}-{game.black}"
        if game.round < 1:
            raise StandingsError(f"{where}: rounds are numbered from 1")
        for entrant in (game.white, game.black):
            if entrant not in known:
                raise StandingsError(f"{where}: {entrant} is not an entrant")
        if game.white == game.black:
            raise StandingsError(f"{where}: an entrant cannot play themselves")
        if not is_valid_score(game.kind, game.white_points, game.black_points):
            raise StandingsError(
                f"{where}: {game.white_points}-{game.black_points} is not a possible "
                f"{game.kind} score (T-7, T-15..T-19)"
            )
        for me, opp in ((game.white, game.black), (game.black, game.white)):
            seen = opponent_in_round.setdefault((game.round, me), opp)
            if seen != opp:
                raise StandingsError(f"{where}: {me} already has opponent {seen} in that round")
            games_in_round[(game.round, me)] += 1
            if games_in_round[(game.round, me)] > 2:
                raise StandingsError(f"{where}: a pairing plays at most two games a round (T-12)")
    rested: set[tuple[int, str]] = set()
    for bye in byes:
        if (bye.round, bye.entrant) in rested:
            raise StandingsError(f"round {bye.round}: {bye.entrant} has two byes")
        rested.add((bye.round, bye.entrant))
        if bye.entrant not in known:
            raise StandingsError(f"bye in round {bye.round}: {bye.entrant} is not an entrant")
        if bye.points not in (bye_points(1), bye_points(2)):
            raise StandingsError(
                f"bye in round {bye.round}: worth {bye_points(1)} or {bye_points(2)} points, "
                f"not {bye.points} (T-8)"
            )
        if (bye.round, bye.entrant) in opponent_in_round:
            raise StandingsError(f"round {bye.round}: {bye.entrant} has both a game and a bye (T-8)")


def _check_unique_numbers(entrants: Sequence[Entrant], attribute: str, what: str) -> None:
    """Every entrant needs a distinct value of the format's last tie-break."""
    values = [getattr(e, attribute) for e in entrants]
    missing = [e.player for e, v in zip(entrants, values, strict=True) if v is None]
    if missing:
        raise StandingsError(f"{', '.join(missing)}: no {what}")
    if len(set(values)) != len(values):
        raise StandingsError(f"two entrants have the same {what}")


def _fmt(value: float | int | None) -> str:
    """Show 7.0 as 7 and 7.5 as 7.5."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
