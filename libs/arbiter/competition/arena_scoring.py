"""Arena points, streaks, boosts and the leaderboard order (SPEC AR-4, AR-5, AR-6).

Pure and stdlib only: the arena service feeds finished games in, keeps the
returned records in Redis, and can rebuild or verify its live leaderboard
with `recompute_leaderboard` from the games stored in PostgreSQL.

A game one player never sat (never moved, lost on time as in T-16) is an
ordinary loss for that player and an ordinary win for the opponent: the
loser scores 0 and loses their streak, the winner scores a normal win
(streak and boost apply). The arena gives no special treatment to it; only
the rating skips it (R-3), which is not this module's business.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from arbiter.vocabulary import GameResult, Score, Side

PlayerId = str

# AR-4: win 2, draw 1, loss 0; from the third consecutive win on a win is worth 3.
WIN_POINTS: Final = 2
STREAK_WIN_POINTS: Final = 3
DRAW_POINTS: Final = 1
LOSS_POINTS: Final = 0
# AR-4: a win is a streak win once the player already has this many consecutive wins.
STREAK_AFTER_WINS: Final = 2
# AR-5: a boost doubles the points of a win only.
BOOST_FACTOR: Final = 2

# AR-6 ordering key: points * LEADERBOARD_WINS_SCALE + wins, stored in a Redis
# sorted set whose scores are IEEE doubles, exact up to 2**53.
LEADERBOARD_WINS_SCALE: Final = 1_000_000
# Bounds that keep the key exact and the wins from spilling into the points.
# An arena lasts at most 8 hours (AR-1): a million wins would need a win every
# 29 ms, and a million wins are worth at most 6 million points (AR-5 boosted
# streak wins), so the key stays below 6e12 + 1e6, far under 2**53 ~ 9e15.
MAX_LEADERBOARD_WINS: Final = LEADERBOARD_WINS_SCALE - 1
MAX_LEADERBOARD_POINTS: Final = (2**53 - 1) // LEADERBOARD_WINS_SCALE - 1


class ArenaError(ValueError):
    """An input that breaks an arena rule or this module's bounds."""


@dataclass(frozen=True, slots=True)
class ArenaGame:
    """A finished arena game as recorded; `ended_at` is needed only for cooldowns (AR-3)."""

    white: PlayerId
    black: PlayerId
    # A 0-0 (BOTH_LOSE) only if the service records a game neither side sat (T-19's 0-0 carried
    # over); a live game normally flags the side to move instead.
    result: GameResult
    white_boosted: bool = False
    black_boosted: bool = False
    ended_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.white == self.black:
            raise ArenaError(f"arena game {self.white} vs {self.black}: a player cannot meet themselves")

    def players(self) -> tuple[PlayerId, PlayerId]:
        """White then black."""
        return (self.white, self.black)


@dataclass(frozen=True, slots=True)
class ArenaPlayerRecord:
    """One player's running arena totals; `streak` counts the consecutive wins that end it."""

    points: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    streak: int = 0

    @property
    def games(self) -> int:
        """Games finished in this arena."""
        return self.wins + self.draws + self.losses

    def is_on_streak(self) -> bool:
        """Would the next win be a streak win (AR-4), the lichess "fire"?"""
        return self.streak >= STREAK_AFTER_WINS


def game_points(score: Score, streak_before: int, boosted: bool = False) -> int:
    """Points for one game given the consecutive wins before it (AR-4) and the boost (AR-5)."""
    if streak_before < 0:
        raise ArenaError(f"a streak counts wins and cannot be negative, got {streak_before}")
    if score is Score.WIN:
        points = STREAK_WIN_POINTS if streak_before >= STREAK_AFTER_WINS else WIN_POINTS
        # AR-5: the boost doubles a win, and only a win.
        return points * BOOST_FACTOR if boosted else points
    # AR-5: a boosted draw is still 1 and a boosted loss still 0.
    return DRAW_POINTS if score is Score.DRAW else LOSS_POINTS


def score_game(
    record: ArenaPlayerRecord, score: Score, boosted: bool = False
) -> tuple[int, ArenaPlayerRecord]:
    """The points this game earns and the player's record after it (AR-4, AR-5)."""
    points = game_points(score, record.streak, boosted)
    # The constructor rather than dataclasses.replace: this runs for both players of every result.
    if score is Score.WIN:
        after = ArenaPlayerRecord(record.points + points, record.wins + 1, record.draws, record.losses,
                                  record.streak + 1)
    elif score is Score.DRAW:
        # AR-4: a draw ends the streak.
        after = ArenaPlayerRecord(record.points + points, record.wins, record.draws + 1, record.losses, 0)
    else:
        after = ArenaPlayerRecord(record.points, record.wins, record.draws, record.losses + 1, 0)
    return points, after


def leaderboard_score(points: int, wins: int) -> int:
    """One sortable number ordering by points, then wins (AR-6); higher ranks higher."""
    if not 0 <= points <= MAX_LEADERBOARD_POINTS:
        raise ArenaError(f"arena points must be within 0..{MAX_LEADERBOARD_POINTS}, got {points}")
    if not 0 <= wins <= MAX_LEADERBOARD_WINS:
        raise ArenaError(f"arena wins must be within 0..{MAX_LEADERBOARD_WINS}, got {wins}")
    return points * LEADERBOARD_WINS_SCALE + wins


def leaderboard_points_and_wins(score: float) -> tuple[int, int]:
    """The (points, wins) a `leaderboard_score` encodes; accepts Redis's float score."""
    if not math.isfinite(score):
        raise ArenaError(f"not an arena leaderboard score: {score!r}")
    whole = int(score)
    if whole != score or whole < 0:
        raise ArenaError(f"not an arena leaderboard score: {score!r}")
    points, wins = divmod(whole, LEADERBOARD_WINS_SCALE)
    if points > MAX_LEADERBOARD_POINTS:
        raise ArenaError(f"not an arena leaderboard score: {score!r}")
    return points, wins


@dataclass(frozen=True, slots=True)
class LeaderboardRow:
    """One line of the arena leaderboard; equal (points, wins) share a rank."""

    rank: int
    player_id: PlayerId
    points: int
    wins: int
    games: int
    streak: int


def scored_records(
    games: Iterable[ArenaGame], records: Mapping[PlayerId, ArenaPlayerRecord]
) -> dict[PlayerId, ArenaPlayerRecord]:
    """`records` after `games`, scored one after the other in the order given (AR-4, AR-5).

    A player without a record starts blank; one without a game keeps theirs.
    """
    after = dict(records)
    blank = ArenaPlayerRecord()
    for game in games:
        for side, player, boosted in (
            (Side.WHITE, game.white, game.white_boosted),
            (Side.BLACK, game.black, game.black_boosted),
        ):
            _, after[player] = score_game(after.get(player, blank), game.result.score_of(side), boosted)
    return after


def recompute_records(
    games: Iterable[ArenaGame], players: Iterable[PlayerId] = ()
) -> dict[PlayerId, ArenaPlayerRecord]:
    """Every player's record from the games in the order they finished (AR-4, AR-5)."""
    # Entrants who joined but never finished a game still appear, with zeros.
    return scored_records(games, {player: ArenaPlayerRecord() for player in players})


def rank_records(records: dict[PlayerId, ArenaPlayerRecord]) -> list[LeaderboardRow]:
    """Leaderboard rows, best first: points, then wins (AR-6), ties share a rank.

    This is AR-6's specification: the ranks the arena service reads from Redis are tested against it.
    """
    # Rows of a full tie are listed by player id only so that the output is
    # deterministic; their rank is shared ("1, 2, 2, 4"), so a live board that
    # lists ties in another order (Redis lists equal scores by member) agrees
    # on every rank. The shared rank is 1 + the number of strictly better
    # scores, i.e. ZCOUNT(key, "(" + score, "+inf") + 1 in Redis.
    ordered = sorted(records.items(), key=lambda item: (-item[1].points, -item[1].wins, item[0]))
    rows: list[LeaderboardRow] = []
    for position, (player, record) in enumerate(ordered, start=1):
        tied = bool(rows) and (rows[-1].points, rows[-1].wins) == (record.points, record.wins)
        rank = rows[-1].rank if tied else position
        rows.append(LeaderboardRow(rank, player, record.points, record.wins, record.games, record.streak))
    return rows


def recompute_leaderboard(
    games: Iterable[ArenaGame], players: Iterable[PlayerId] = ()
) -> list[LeaderboardRow]:
    """The arena leaderboard from the recorded games in finish order (AR-4..AR-6)."""
    return rank_records(recompute_records(games, players))
