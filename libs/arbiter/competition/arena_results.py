"""An arena's results, pure: finished games in; records, cooldowns and who plays again out (AR-1..AR-5).

The arena service fetches under its locks, calls `score_results` and saves what it returns, in
both places where results are scored: as each batch of results arrives (with the games just
finished, the players' stored records and their earlier meetings), and when Redis is rebuilt
from PostgreSQL (with every finished game of the arena, from blank records). One computation for
both is what keeps a rebuilt arena equal to the one the results built.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from arbiter.competition.arena_matching import meetings
from arbiter.competition.arena_scoring import ArenaError, ArenaGame, ArenaPlayerRecord, PlayerId, scored_records
from arbiter.competition.types import Refused
from arbiter.vocabulary import GameResult, Side


class BoostRefusal(enum.StrEnum):
    """Why a boost is refused (AR-5)."""

    NOT_A_PLAYER = "not_a_player"
    GAME_OVER = "game_over"
    ALREADY_BOOSTED = "already_boosted"
    ALREADY_MOVED = "already_moved"


class BoostRefused(Refused[BoostRefusal], ArenaError):
    """A boost the rules do not allow; `refusal` says which rule, the message says it for people."""


@dataclass(frozen=True, slots=True)
class BoostableGame:
    """An arena game as a boost request finds it: its players, result so far, boosts taken and first moves."""

    game_id: str
    white: PlayerId
    black: PlayerId
    result: GameResult | None = None
    white_boosted: bool = False
    black_boosted: bool = False
    white_moved: bool = False
    black_moved: bool = False


def take_boost(game: BoostableGame, player: PlayerId) -> Side:
    """AR-5: the side whose boost `player` takes, before their own first move of a running game; else BoostRefused."""
    if player == game.white:
        side, boosted, moved = Side.WHITE, game.white_boosted, game.white_moved
    elif player == game.black:
        side, boosted, moved = Side.BLACK, game.black_boosted, game.black_moved
    else:
        raise BoostRefused(BoostRefusal.NOT_A_PLAYER,
                           f"{player} does not play game {game.game_id}; only its players may boost")
    if game.result is not None:
        raise BoostRefused(BoostRefusal.GAME_OVER,
                           f"game {game.game_id} is over ({game.result.pdn}); boosting is too late")
    if boosted:
        raise BoostRefused(BoostRefusal.ALREADY_BOOSTED, f"{player} already boosted game {game.game_id} (AR-5)")
    if moved:
        raise BoostRefused(
            BoostRefusal.ALREADY_MOVED,
            f"{player} already moved in game {game.game_id}; a boost is taken before one's own first move (AR-5)",
        )
    return side


def boost_counts(taken: bool, played_with: bool) -> bool:
    """AR-5: a boost doubles a win when the arena accepted it and the game was played with it.

    Taken is the Boost call the arena granted (before one's own first move); played with is the
    play site's word that the clock charged its cost. Either alone is not enough: the play site
    cannot grant a boost, nor the arena count one nobody paid for.
    """
    return taken and played_with


def pairs_players(running: bool, ends_at: datetime, now: datetime) -> bool:
    """AR-1, AR-2: whether the arena pairs players at `now`: it runs and its duration is not over."""
    return running and now < ends_at


@dataclass(frozen=True, slots=True)
class FinishedGame:
    """A finished arena game to score: its players, result and end, and each side's boost as taken and as played."""

    game_id: str
    white: PlayerId
    black: PlayerId
    result: GameResult
    ended_at: datetime
    white_boost_taken: bool = False
    black_boost_taken: bool = False
    white_boost_played: bool = False
    black_boost_played: bool = False

    def counted(self) -> ArenaGame:
        """The game as it scores, with the boosts that count (AR-5)."""
        return ArenaGame(
            self.white, self.black, self.result,
            boost_counts(self.white_boost_taken, self.white_boost_played),
            boost_counts(self.black_boost_taken, self.black_boost_played),
            self.ended_at,
        )


@dataclass(frozen=True, slots=True)
class ArenaSeat:
    """A player of the arena as scoring needs them: running totals (AR-4, AR-5) and whether still in (AR-2)."""

    record: ArenaPlayerRecord = ArenaPlayerRecord()
    active: bool = True


@dataclass(frozen=True, slots=True)
class ScoredResults:
    """What a batch of results changes: the games as scored, the records, the cooldowns, who waits again."""

    # The finished games with the boosts that count, in scoring order.
    scored: tuple[ArenaGame, ...]
    # Every seat's record after the games (a seat without a game keeps its own).
    records: dict[PlayerId, ArenaPlayerRecord]
    # AR-3: for every pair that ever met (the earlier meetings and these games), the first instant
    # it may meet again; one in the past has run out.
    next_meetings: dict[frozenset[PlayerId], datetime]
    # AR-2: the seats back in the queue now.
    requeue: frozenset[PlayerId]


def score_results(
    finished: Sequence[FinishedGame],
    seats: Mapping[PlayerId, ArenaSeat],
    earlier: Iterable[ArenaGame] = (),
    *,
    playing: Collection[PlayerId] = (),
    pairing: bool,
) -> ScoredResults:
    """Score `finished` in order over the seats' records (AR-4, AR-5), space out the pairs (AR-3), requeue (AR-2).

    `seats` are the players concerned with their stored records (a player missing starts blank);
    `earlier` the games already scored between the pairs of `finished` (AR-3 counts every meeting:
    also a game one player never sat, since the pairing is what the cooldown spaces out);
    `playing` the seats still in another game of the arena; `pairing` whether the arena pairs
    players now (`pairs_players`). A seat goes back in the queue at once when the arena pairs, the
    seat is still in and not playing: leaving during a game takes effect when it ends (AR-2).
    """
    scored = tuple(game.counted() for game in finished)
    records = scored_records(scored, {player: seat.record for player, seat in seats.items()})
    met = meetings([*earlier, *scored])
    requeue = frozenset(
        player for player, seat in seats.items() if pairing and seat.active and player not in playing
    )
    return ScoredResults(
        scored=scored,
        records=records,
        next_meetings={pair: meeting.next_allowed for pair, meeting in met.items()},
        requeue=requeue,
    )
