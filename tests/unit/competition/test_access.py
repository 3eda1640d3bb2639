"""Who may do what, decided once for every service (A-1, A-2)."""

from __future__ import annotations

import pytest

from arbiter.competition.access import (
    AccessRefusal,
    AccessRefused,
    LiveCompetition,
    check_may_create,
    check_registered,
)
from arbiter.competition.types import AccountKind


def test_a_registered_account_may_create_and_play() -> None:
    check_registered("alice", AccountKind.REGISTERED, "create competitions")
    check_registered("alice", AccountKind.REGISTERED, "play competitions")


@pytest.mark.parametrize("kind", [AccountKind.GUEST, AccountKind.BOT])
def test_a1_guests_and_bots_may_neither_create_nor_play(kind: AccountKind) -> None:
    for what in ("create competitions", "play competitions"):
        with pytest.raises(AccessRefused) as refused:
            check_registered("bob", kind, what)
        assert refused.value.refusal is AccessRefusal.NOT_REGISTERED
        assert str(refused.value) == f"bob is a {kind} account: only registered accounts {what} (A-1)"


def test_a_request_that_names_no_account_kind_is_incomplete() -> None:
    with pytest.raises(AccessRefused) as refused:
        check_registered("carol", None, "join competitions")
    assert refused.value.refusal is AccessRefusal.KIND_MISSING
    assert "actor.kind is required to join competitions" in str(refused.value)


def test_a2_one_live_competition_per_creator() -> None:
    check_may_create("dan", None)
    with pytest.raises(AccessRefused) as refused:
        check_may_create("dan", LiveCompetition("arena", "a_1"))
    assert refused.value.refusal is AccessRefusal.ALREADY_RUNS_ONE
    assert str(refused.value) == (
        "player dan already runs arena a_1; one live competition per creator until it finishes or is cancelled (A-2)")


def test_a_refusal_is_a_value_error() -> None:
    assert issubclass(AccessRefused, ValueError)
