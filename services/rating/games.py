"""Between the contracts and the rules: a GameFinished judged (R-1, R-3, T-18, T-19), a rating as a message."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from arbiter.contracts import common_pb2
from arbiter.contracts import events_pb2 as ev
from arbiter.draughts.variants import variant_by_name
from arbiter.kit.convert import GAME_RESULT, TERMINATION
from arbiter.kit.events import datetime_of
from arbiter.rating import RatedReason, is_game_rated
from arbiter.rating.ledger import GameToRate, PlayerState
from arbiter.vocabulary import ResultKind

# Metric label of an event the service cannot rate although it says rated (logged, never retried).
INVALID = "invalid"
SPEEDS = frozenset(value for value in common_pb2.Speed.values() if value != common_pb2.SPEED_UNSPECIFIED)
_WHITE_SCORE = {
    common_pb2.GAME_RESULT_WHITE_WINS: 1.0,
    common_pb2.GAME_RESULT_BLACK_WINS: 0.0,
    common_pb2.GAME_RESULT_DRAW: 0.5,
}


@dataclass(frozen=True, order=True)
class Pool:
    """One rating per player per pool: R-1, R-5's (variant, speed)."""

    variant: str
    speed: int

    @property
    def lock_name(self) -> str:
        """The advisory lock that serialises writes to this pool across replicas."""
        return f"rating:{self.variant}:{self.speed}"


@dataclass(frozen=True)
class RatingDecision:
    """What to do with one event: rate `game` in `pool`, or ignore it for `reason`."""

    event_id: str
    reason: str
    pool: Pool | None = None
    game: GameToRate | None = None
    problem: str = ""

    @property
    def rated(self) -> bool:
        """Whether the game moves ratings."""
        return self.game is not None


def result_kind(event: ev.GameFinished) -> ResultKind:
    """How the game's result counts (T-16, T-18, T-19): `ResultKind.of` its termination and result."""
    return ResultKind.of(TERMINATION.get(event.termination), GAME_RESULT.get(event.result))


@lru_cache(maxsize=1024)  # every event names its pool; a handful of distinct ones exist
def pool_of(variant: str, speed: int) -> Pool:
    """The pool of a (variant, speed); ValueError with a message for people when either is unknown."""
    if not variant.strip():
        raise ValueError("variant is required (international, english, italian, russian, brazilian, ...)")
    canonical = variant_by_name(variant).value
    if speed not in SPEEDS:
        known = ", ".join(name.removeprefix("SPEED_").lower() for name, v in common_pb2.Speed.items() if v in SPEEDS)
        given = "is required" if speed == common_pb2.SPEED_UNSPECIFIED else f"{speed} is unknown"
        raise ValueError(f"speed {given}: one of {known} (R-6)")
    return Pool(canonical, speed)


def judge(event: ev.GameFinished) -> RatingDecision:
    """Decide whether `event`'s game is rated (`is_game_rated`) and, if so, what to rate."""
    # Each field read once: a protobuf attribute read costs as much as the rest of a check.
    white_id, black_id = event.white_id, event.black_id
    # A competition game without an opponent is a bye (T-8); byes are scored by pairing and
    # should never arrive here, but one that does must not move a rating.
    is_bye = not white_id or not black_id
    # "sat" means moved (a NEVER_SAT termination says one side did not, whatever the flags).
    rated, reason = is_game_rated(event.rated, result_kind(event), event.white_sat and event.black_sat, is_bye)
    event_id = event.meta.event_id
    if not rated:
        return RatingDecision(event_id, reason.value)
    problem = ""
    pool = None
    try:
        pool = pool_of(event.variant, event.speed)
    except ValueError as error:
        problem = str(error)
    game_id, result = event.game_id, event.result
    if not game_id:
        problem = "no game id"
    elif white_id == black_id:
        problem = f"{white_id} cannot play themselves"
    elif result not in _WHITE_SCORE:
        name = common_pb2.GameResult.Name(result) if result in _RESULTS else f"unknown result {result}"
        problem = f"a rated game needs a win or a draw, not {name}"
    elif not event.HasField("finished_at"):
        # The finish time orders the pool (see ledger); a made-up one would misplace the game.
        problem = "no finished_at"
    finished_at = datetime_of(event.finished_at)
    if not problem and finished_at is None:
        problem = "finished_at is not a date (years 1..9999)"
    if problem or pool is None or finished_at is None:
        return RatingDecision(event_id, INVALID, problem=problem)
    game = GameToRate(
        game_id=game_id,
        finished_at=finished_at,
        white_id=white_id,
        black_id=black_id,
        white_score=_WHITE_SCORE[result],
    )
    return RatingDecision(event_id, RatedReason.RATED.value, pool, game)


_RESULTS = frozenset(common_pb2.GameResult.values())


def rating_message(state: PlayerState) -> common_pb2.Rating:
    """A player's state as the contracts' Rating (provisional while RD >= 110, R-5)."""
    return common_pb2.Rating(
        rating=state.rating.rating, deviation=state.rating.rd, volatility=state.rating.vol,
        provisional=state.rating.is_provisional, games=state.games,
    )
