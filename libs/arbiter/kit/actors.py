"""The acting player the play site names in a request (`Actor`): checked once, alike in every service."""

from __future__ import annotations

from typing import Final

from arbiter.competition.access import AccessRefusal, AccessRefused, check_registered
from arbiter.contracts import common_pb2 as common
from arbiter.kit.convert import ACCOUNT_KIND
from arbiter.kit.errors import FailedPrecondition, InvalidArgument, PermissionDenied, ServiceError
from arbiter.kit.fields import PLAYER_ID, check_id

# The answer to each refusal of A-1 and A-2 (arbiter.competition.access).
ACCESS_REFUSALS: Final[dict[AccessRefusal, type[ServiceError]]] = {
    AccessRefusal.KIND_MISSING: InvalidArgument,
    AccessRefusal.NOT_REGISTERED: PermissionDenied,
    AccessRefusal.ALREADY_RUNS_ONE: FailedPrecondition,
}


def access_error(refused: AccessRefused) -> ServiceError:
    """The gRPC error that answers an A-1 or A-2 refusal."""
    return ACCESS_REFUSALS[refused.refusal](str(refused))


def player_id_of(actor: common.Actor, what: str) -> str:
    """The actor's player id, refused when missing or when it breaks the player-id rule (kit.fields)."""
    if not actor.player_id:
        raise InvalidArgument(f"actor.player_id is required to {what}")
    return check_id(actor.player_id, PLAYER_ID, "actor.player_id")


def registered_player(actor: common.Actor, what: str) -> str:
    """The acting player's id when A-1 lets them `what` (registered accounts only), else the refusal."""
    player_id = player_id_of(actor, what)
    try:
        check_registered(player_id, ACCOUNT_KIND.get(actor.kind), what)
    except AccessRefused as refused:
        raise access_error(refused) from None
    return player_id
