"""The records of a round-based tournament: an entrant, a played game, a bye (T-7, T-8, T-12..T-14).

One record of each for every module: the service's history, the standings, the round's pairing
and the Swiss engine read the same ones. A game and a bye name their players by whatever the
reader knows them by: the player ids everywhere, the entrant numbers inside the Swiss engine
(`arbiter.competition.swiss`), which numbers entrants as a TRF file does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from arbiter.competition.scoring import BYE_POINTS_PER_GAME, GameScore
from arbiter.rating import DEFAULT_RATING
from arbiter.vocabulary import ResultKind

__all__ = ["Bye", "Entrant", "PlayedGame", "PlayerRef"]

# How a record names a player: a player id (str), or an entrant number of the Swiss engine (int).
PlayerRef = TypeVar("PlayerRef", str, int)

@dataclass(frozen=True, slots=True)
class Entrant:
    """A player registered in the tournament, with the numbers the start gave them.

    `berger_number` orders a round robin (T-14, its last tie-break, T-22); `initial_rank` a
    Swiss (T-13: rating, then name); `rating` is the one for the tournament's variant and speed,
    exact (rounded, 1499.6 and 1500.4 would tie and the name would rank them).
    """

    player: str
    berger_number: int | None = None
    initial_rank: int | None = None
    rating: float = DEFAULT_RATING


@dataclass(frozen=True, slots=True)
class PlayedGame(Generic[PlayerRef]):
    """A scored game of a round; a home-and-away pairing plays two in the same round, `leg` 1 and 2 (T-12)."""

    round: int
    white: PlayerRef
    black: PlayerRef
    white_points: int
    black_points: int
    kind: ResultKind = ResultKind.NORMAL
    leg: int = 1

    @classmethod
    def scored(
        cls, round: int, white: PlayerRef, black: PlayerRef, score: GameScore, leg: int = 1
    ) -> PlayedGame[PlayerRef]:
        """The record of a game scored by `arbiter.competition.scoring.score_game`."""
        return cls(round, white, black, score.white_points, score.black_points, score.kind, leg)


@dataclass(frozen=True, slots=True)
class Bye(Generic[PlayerRef]):
    """A round an entrant rested: 2 points, or 4 in double rounds (T-8, T-12)."""

    round: int
    entrant: PlayerRef
    points: int = BYE_POINTS_PER_GAME
