"""The order ratings are applied in, pure: every rating pool is the sequential result of its games
sorted by (finished_at, game_id), whatever order Kafka delivered them in (R-5).

Ratings are order-dependent, and GameFinished events of one player travel on different
partitions (they are keyed by game id), so arrival order is not a property of the games. The
service therefore defines one canonical order per pool (variant, speed): finish time, then
game id. A game that arrives after games later than itself in that order is inserted where it
belongs and the games after it are replayed: only those that involve a player whose rating the
insertion changed, transitively ("dirty" players). The stored before/after of every rated game
is the checkpoint that makes this cheap: an unaffected game keeps its stored result, and the
state of a not-yet-affected player before any game is that game's stored "before".

Which games a late one reaches depends only on who played whom in which order, not on the
ratings, so the service first reads the light list of later games (ids, players, keys), asks
`reach` which players the new games can affect (`may_change_stored` tells from the players' current
states alone when the answer is none of the stored games), loads the full stored results of only those
players' games, calls `merge`, and saves what it returns. Stdlib and `arbiter.rating` only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from arbiter.rating import Rating, rating_periods
from arbiter.rating.glicko2 import rate_one

GameKey = tuple[datetime, str]


@dataclass(frozen=True)
class PlayerState:
    """One player's rating in one pool, with what the next game needs: game count and last game time."""

    rating: Rating
    games: int
    last_rated_at: datetime | None


# new players start at 1500 / 350 / 0.06.
NEW_PLAYER = PlayerState(Rating(), 0, None)


@dataclass(frozen=True)
class GameToRate:
    """A rated game as the ledger needs it; `white_score` is 1, 0.5 or 0."""

    game_id: str
    finished_at: datetime
    white_id: str
    black_id: str
    white_score: float

    @property
    def key(self) -> GameKey:
        """The canonical order of a pool: finish time, then game id."""
        return (self.finished_at, self.game_id)


@dataclass(frozen=True)
class AppliedGame:
    """A rated game with both players' states before and after it."""

    game: GameToRate
    white_before: PlayerState
    white_after: PlayerState
    black_before: PlayerState
    black_after: PlayerState


@dataclass(frozen=True)
class Merge:
    """What `merge` changed: games to insert or rewrite (canonical order) and the players' new states."""

    applied: tuple[AppliedGame, ...]
    new_game_ids: frozenset[str]
    final_states: Mapping[str, PlayerState]

    @property
    def revised(self) -> tuple[AppliedGame, ...]:
        """Games stored before whose result the merge changed."""
        return tuple(a for a in self.applied if a.game.game_id not in self.new_game_ids)


def _elapsed_periods(before: PlayerState, finished_at: datetime) -> float:
    # Game time, not wall time: a replay gives the same deviation growth as the first pass.
    if before.last_rated_at is None:
        return 0.0
    return rating_periods(max(finished_at - before.last_rated_at, timedelta(0)))


def apply_game(game: GameToRate, white: PlayerState, black: PlayerState) -> AppliedGame:
    """R-5: rate both players from their pre-game ratings; each RD first grows with the time since their last game."""
    # rate_one on floats: this runs twice per rated game, the service's hottest arithmetic.
    w, b = white.rating, black.rating
    white_rating = Rating(*rate_one(
        w.rating, w.rd, w.vol, b.rating, b.rd, game.white_score,
        elapsed_periods=_elapsed_periods(white, game.finished_at),
    ))
    black_rating = Rating(*rate_one(
        b.rating, b.rd, b.vol, w.rating, w.rd, 1.0 - game.white_score,
        elapsed_periods=_elapsed_periods(black, game.finished_at),
    ))
    return AppliedGame(
        game, white, PlayerState(white_rating, white.games + 1, game.finished_at),
        black, PlayerState(black_rating, black.games + 1, game.finished_at),
    )


class Meeting(NamedTuple):
    """Who played whom, when: all `reach` needs of a stored game (plain tuples of this shape do too)."""

    key: GameKey
    white_id: str
    black_id: str


def reach(new_games: Iterable[GameToRate], later: Iterable[tuple[GameKey, str, str]]) -> frozenset[str]:
    """The players whose rating `new_games` change: their players, then whoever later meets one of them.

    `later` is every stored game of the pool after the earliest new game, as (key, white, black)
    (a `Meeting`); in canonical order it costs least (two sorted runs), but any order is right.
    """
    sequence = sorted(
        [(g.key, True, g.white_id, g.black_id) for g in new_games]
        + [(key, False, white, black) for key, white, black in later]
    )
    dirty: set[str] = set()
    for _key, is_new, white, black in sequence:
        if is_new or white in dirty or black in dirty:
            dirty.add(white)
            dirty.add(black)
    return frozenset(dirty)


def may_change_stored(new_games: Iterable[GameToRate], current: Mapping[str, PlayerState], latest: GameKey) -> bool:
    """R-5: whether rating `new_games` can change a stored game of their pool, whose latest stored game is `latest`.

    The earliest stored game a new game reaches shares a player with a new game before it (a
    stored game between them would have been reached first), so that player's last rated game
    finished no earlier than the new game. Games after `latest` have no stored game after them.
    When no late game has such a player, `reach` would mark no stored game and the later games
    need not be read: the usual late arrival, games finishing together on other partitions.
    """
    for game in new_games:
        if game.key > latest:
            continue
        for player in (game.white_id, game.black_id):
            state = current.get(player)
            if state is not None and state.last_rated_at is not None and state.last_rated_at >= game.finished_at:
                return True
    return False


def merge(
    new_games: Iterable[GameToRate], stored_after: Sequence[AppliedGame], current: Mapping[str, PlayerState],
) -> Merge:
    """Insert `new_games` into a pool in canonical order and replay what they change.

    `stored_after` must hold, among the pool's stored games after the smallest new key,
    at least every game of a player in `reach(new_games, ...)` (more is harmless);
    `current` the stored state of the new games' players (absent = new player). Returns
    the new games and the stored games whose result changed, in canonical order, and the
    final state of every player whose rating changed.
    """
    new = sorted(new_games, key=lambda g: g.key)
    if not new:
        return Merge((), frozenset(), {})
    if any(a.game.key <= new[0].key for a in stored_after):
        raise ValueError("stored_after must hold only games after the earliest new game")
    state: dict[str, PlayerState] = {}
    # The state before a player's first stored game after the insertion point is that
    # game's stored "before"; players without such a game are at their current state.
    for applied in sorted(stored_after, key=lambda a: a.game.key, reverse=True):
        state[applied.game.white_id] = applied.white_before
        state[applied.game.black_id] = applied.black_before
    for game in new:
        for player in (game.white_id, game.black_id):
            if player not in state:
                state[player] = current.get(player, NEW_PLAYER)
    new_ids = frozenset(g.game_id for g in new)
    sequence: list[GameToRate | AppliedGame] = [*new, *stored_after]
    sequence.sort(key=lambda item: item.key if isinstance(item, GameToRate) else item.game.key)
    dirty: set[str] = set()
    changed: list[AppliedGame] = []
    for item in sequence:
        if isinstance(item, AppliedGame) and item.game.white_id not in dirty and item.game.black_id not in dirty:
            # Neither player's rating moved before this game: its stored result stands.
            state[item.game.white_id] = item.white_after
            state[item.game.black_id] = item.black_after
            continue
        game = item if isinstance(item, GameToRate) else item.game
        applied = apply_game(game, state[game.white_id], state[game.black_id])
        state[game.white_id] = applied.white_after
        state[game.black_id] = applied.black_after
        dirty.update((game.white_id, game.black_id))
        if applied != item:
            changed.append(applied)
    return Merge(tuple(changed), new_ids, {player: state[player] for player in sorted(dirty)})


def replay_in_order(games: Iterable[GameToRate]) -> dict[str, PlayerState]:
    """The reference: every game applied one by one in canonical order, from new players."""
    state: dict[str, PlayerState] = {}
    for game in sorted(games, key=lambda g: g.key):
        applied = apply_game(game, state.get(game.white_id, NEW_PLAYER), state.get(game.black_id, NEW_PLAYER))
        state[game.white_id] = applied.white_after
        state[game.black_id] = applied.black_after
    return state
