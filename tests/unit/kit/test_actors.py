"""The acting player (kit.actors): ids checked alike everywhere, A-1 refusals with their reason."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.contracts import common_pb2 as common
from arbiter.kit.actors import player_id_of, registered_player
from arbiter.kit.errors import InvalidArgument, PermissionDenied
from arbiter.kit.fields import PLAYER_ID

MAX_PLAYER_ID_LENGTH = PLAYER_ID.max_length


def actor(player_id: str, kind: int = common.ACCOUNT_KIND_REGISTERED) -> common.Actor:
    return common.Actor(player_id=player_id, kind=kind)


def test_a_registered_player_may_act() -> None:
    assert registered_player(actor("alice"), "join competitions") == "alice"


@pytest.mark.parametrize("kind, word", [(common.ACCOUNT_KIND_GUEST, "guest"), (common.ACCOUNT_KIND_BOT, "bot")])
def test_guests_and_computer_accounts_are_refused_by_a1(kind: int, word: str) -> None:
    with pytest.raises(PermissionDenied, match=rf"bob is a {word} account: only registered accounts join .*\(A-1\)"):
        registered_player(actor("bob", kind), "join competitions")


def test_a_missing_kind_or_id_is_an_invalid_argument() -> None:
    with pytest.raises(InvalidArgument, match="actor.kind is required"):
        registered_player(actor("carol", common.ACCOUNT_KIND_UNSPECIFIED), "join competitions")
    with pytest.raises(InvalidArgument, match="actor.player_id is required to refuel"):
        player_id_of(actor(""), "refuel")
    with pytest.raises(InvalidArgument, match=f"at most {MAX_PLAYER_ID_LENGTH}"):
        player_id_of(actor("p" * (MAX_PLAYER_ID_LENGTH + 1)), "refuel")


@given(st.text(min_size=1, max_size=MAX_PLAYER_ID_LENGTH))
def test_an_id_is_accepted_exactly_when_printable_unpadded_and_without_commas(player_id: str) -> None:
    acceptable = player_id.isprintable() and "," not in player_id and player_id == player_id.strip()
    if acceptable:
        assert player_id_of(actor(player_id), "act") == player_id
    else:
        with pytest.raises(InvalidArgument, match="^actor.player_id .*(blank|spaces|invisible|',')"):
            player_id_of(actor(player_id), "act")


def test_a_blank_id_is_refused_as_in_every_other_service() -> None:
    with pytest.raises(InvalidArgument, match="actor.player_id is blank"):
        player_id_of(actor(" "), "join")
