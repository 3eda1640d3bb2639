"""The acting player the play site names in a request (`Actor`): checked once, alike in every service."""

from __future__ import annotations

from typing import Final

from arbiter.competition.types import AccountKind
from arbiter.contracts import common_pb2 as common
from arbiter.kit.convert import ACCOUNT_KIND
from arbiter.kit.errors import InvalidArgument, PermissionDenied

MAX_PLAYER_ID_LENGTH: Final = 128


def player_id_of(actor: common.Actor, what: str) -> str:
    """The actor's player id, refused when missing, too long or unprintable."""
    player_id = actor.player_id
    if not player_id:
        raise InvalidArgument(f"actor.player_id is required to {what}")
    if len(player_id) > MAX_PLAYER_ID_LENGTH:
        raise InvalidArgument(f"actor.player_id is {len(player_id)} characters long; at most {MAX_PLAYER_ID_LENGTH}")
    if not player_id.isprintable() or "," in player_id:
        # Ids travel in Redis lines split on control characters and commas, and in logs.
        raise InvalidArgument(f"actor.player_id {player_id!r} may not hold commas or control characters")
    return player_id


def registered_player(actor: common.Actor, what: str) -> str:
    """The acting player's id when A-1 lets them `what` (registered accounts only), else the refusal."""
    player_id = player_id_of(actor, what)
    kind = ACCOUNT_KIND.get(actor.kind)
    if kind is None:
        raise InvalidArgument(f"actor.kind is required to {what}: registered, guest or bot (A-1)")
    if kind is not AccountKind.REGISTERED:
        raise PermissionDenied(f"{player_id} is a {kind} account: only registered accounts {what} (A-1)")
    return player_id
