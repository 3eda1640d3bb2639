"""RatingService over gRPC: GetRating, GetRatings (pairing's R-2 minimums, T-13 seeding), GetRatingHistory."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from datetime import UTC, datetime, timedelta

import asyncpg
import grpc

from arbiter.contracts import rating_pb2, rating_pb2_grpc
from arbiter.kit.auth import READERS, Role, RpcRoles
from arbiter.kit.errors import InvalidArgument
from arbiter.kit.events import timestamp
from arbiter.kit.fields import PLAYER_ID, check_id
from arbiter.kit.paging import token_bytes
from arbiter.kit.ratings import GET_RATINGS_MAX_PLAYERS
from arbiter.kit.timesource import TimeSource
from arbiter.rating import decay, rating_periods
from arbiter.rating.ledger import NEW_PLAYER, GameKey, PlayerState
from services.rating import store
from services.rating.games import Pool, pool_of, rating_message

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
_TOKEN_VERSION = 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def shown_state(state: PlayerState, now: datetime) -> PlayerState:
    """The state to show at `now`: the deviation grown by the inactivity since the last game.

    Glicko-2's RD is the uncertainty *now*; a player away for months is shown provisional
    again. Only the display grows: the stored state stays as of the last game, and the next
    game grows it over the same game-time span (ledger), so reads never change a rating.
    """
    if state.last_rated_at is None:
        return state
    elapsed = max(now - state.last_rated_at, timedelta(0))
    return PlayerState(decay(state.rating, rating_periods(elapsed)), state.games, state.last_rated_at)


def check_player_id(player_id: str, field: str = "player_id") -> str:
    """`player_id` if it follows every service's player-id rule (kit.fields), else INVALID_ARGUMENT naming the field."""
    if not player_id:
        raise InvalidArgument(f"{field} is empty; name the player whose rating you want")
    return check_id(player_id, PLAYER_ID, field)


def request_pool(variant: str, speed: int) -> Pool:
    """The (variant, speed) of a request, or INVALID_ARGUMENT saying what is wrong (R-1, R-6)."""
    try:
        return pool_of(variant, speed)
    except ValueError as error:
        raise InvalidArgument(str(error)) from None


def _fingerprint(player_id: str, pool: Pool) -> str:
    return hashlib.sha256(f"{player_id}\0{pool.variant}\0{pool.speed}".encode()).hexdigest()[:12]


def encode_page_token(player_id: str, pool: Pool, last: GameKey) -> str:
    """An opaque token for the page after `last`, bound to this player and pool."""
    micros = (last[0] - _EPOCH) // timedelta(microseconds=1)
    raw = json.dumps([_TOKEN_VERSION, micros, last[1], _fingerprint(player_id, pool)], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_page_token(token: str, player_id: str, pool: Pool) -> GameKey:
    """The position a token stands for; INVALID_ARGUMENT if it is not one we issued for this query."""
    try:
        version, micros, game_id, fingerprint = json.loads(token_bytes(token))
        if version != _TOKEN_VERSION or not isinstance(micros, int) or not isinstance(game_id, str):
            raise ValueError(token)
        position = (_EPOCH + timedelta(microseconds=micros), game_id)
    except (ValueError, TypeError, binascii.Error, OverflowError, RecursionError):
        raise InvalidArgument(
            "page_token is not a token this service issued; call again without it to start from the newest game"
        ) from None
    if fingerprint != _fingerprint(player_id, pool):
        raise InvalidArgument("page_token belongs to another player, variant or speed; call again without it")
    return position


# Who may call what (arbiter.kit.auth): pairing reads ratings for R-2 and the Swiss ranks (T-13),
# arena for its pairing; the play site and operators read them all.
RPC_ROLES: RpcRoles = {
    "GetRating": READERS | {Role.PAIRING},
    "GetRatings": READERS | {Role.PAIRING, Role.ARENA},
    "GetRatingHistory": READERS,
}


class RatingServicer(rating_pb2_grpc.RatingServiceServicer):
    """Reads ratings; unknown players get the new-player rating (R-5), never NOT_FOUND."""

    def __init__(self, pool: asyncpg.Pool, time_source: TimeSource) -> None:
        self.pool = pool
        self.time_source = time_source

    def _player_rating(self, player_id: str, pool: Pool, state: PlayerState, now: datetime) -> rating_pb2.PlayerRating:
        answer = rating_pb2.PlayerRating(
            player_id=player_id, variant=pool.variant, speed=pool.speed,  # type: ignore[arg-type]  # the stored protobuf Speed number
            rating=rating_message(shown_state(state, now)), as_of=timestamp(now),
        )
        if state.last_rated_at is not None:
            answer.last_rated_at.CopyFrom(timestamp(state.last_rated_at))
        return answer

    async def GetRating(
        self, request: rating_pb2.GetRatingRequest, context: grpc.aio.ServicerContext
    ) -> rating_pb2.PlayerRating:
        """One player's rating in one (variant, speed)."""
        player_id = check_player_id(request.player_id)
        pool = request_pool(request.variant, request.speed)
        states = await store.player_states(self.pool, pool, [player_id])
        return self._player_rating(player_id, pool, states.get(player_id, NEW_PLAYER), self.time_source.now())

    async def GetRatings(
        self, request: rating_pb2.GetRatingsRequest, context: grpc.aio.ServicerContext
    ) -> rating_pb2.GetRatingsResponse:
        """Many players' ratings in one (variant, speed), in the order asked (R-2 minimums, T-13 seeding)."""
        if len(request.player_ids) > GET_RATINGS_MAX_PLAYERS:
            raise InvalidArgument(
                f"{len(request.player_ids)} player ids in one call; at most {GET_RATINGS_MAX_PLAYERS},"
                " split the request"
            )
        player_ids = [check_player_id(p, f"player_ids[{i}]") for i, p in enumerate(request.player_ids)]
        pool = request_pool(request.variant, request.speed)
        states = await store.player_states(self.pool, pool, set(player_ids))
        now = self.time_source.now()
        return rating_pb2.GetRatingsResponse(
            ratings=[self._player_rating(p, pool, states.get(p, NEW_PLAYER), now) for p in player_ids]
        )

    async def GetRatingHistory(
        self, request: rating_pb2.GetRatingHistoryRequest, context: grpc.aio.ServicerContext
    ) -> rating_pb2.GetRatingHistoryResponse:
        """One player's rated games in one (variant, speed), newest first, a page at a time."""
        player_id = check_player_id(request.player_id)
        pool = request_pool(request.variant, request.speed)
        size = request.page.page_size or DEFAULT_PAGE_SIZE
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise InvalidArgument(
                f"page_size {request.page.page_size} is outside 1..{MAX_PAGE_SIZE} (0 means {DEFAULT_PAGE_SIZE})"
            )
        before = decode_page_token(request.page.page_token, player_id, pool) if request.page.page_token else None
        rows = await store.history(self.pool, pool, player_id, before, size + 1)
        answer = rating_pb2.GetRatingHistoryResponse()
        for row in rows[:size]:
            change = answer.changes.add(
                game_id=row.game_id, before=rating_message(row.before), after=rating_message(row.after),
                opponent_id=row.opponent_id, score=row.score,
            )
            change.at.CopyFrom(timestamp(row.finished_at))
        if len(rows) > size:
            last = rows[size - 1]
            answer.next_page_token = encode_page_token(player_id, pool, (last.finished_at, last.game_id))
        return answer
