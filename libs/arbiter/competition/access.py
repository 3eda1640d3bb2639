"""Who may do what (A-1, A-2), decided here once for every service.

The kit fetches the facts (the account kind the play site names, the creator's live competition
in the shared registry), asks these functions, and saves the claim; every service calls the kit.
A refusal names its rule for people and carries the kind of refusal, which the kit answers with
the matching gRPC status.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from arbiter.competition.types import AccountKind, Refused

__all__ = ["AccessRefusal", "AccessRefused", "LiveCompetition", "check_may_create", "check_registered"]


class AccessRefusal(enum.StrEnum):
    """Why a request is refused before anything else is looked at."""

    # The play site named no account kind: the request is incomplete.
    KIND_MISSING = "kind_missing"
    # a guest or a bot.
    NOT_REGISTERED = "not_registered"
    # the creator already runs a live competition.
    ALREADY_RUNS_ONE = "already_runs_one"


class AccessRefused(Refused[AccessRefusal]):
    """A request A-1 or A-2 refuses; `refusal` says which case, the message says it for people."""


def check_registered(player_id: str, kind: AccountKind | None, what: str) -> None:
    """A-1: only registered accounts create or play competitions; `what` names the act ("play competitions")."""
    if kind is None:
        raise AccessRefused(
            AccessRefusal.KIND_MISSING, f"actor.kind is required to {what}: registered, guest or bot (A-1)"
        )
    if kind is not AccountKind.REGISTERED:
        raise AccessRefused(
            AccessRefusal.NOT_REGISTERED, f"{player_id} is a {kind} account: only registered accounts {what} (A-1)"
        )


@dataclass(frozen=True, slots=True)
class LiveCompetition:
    """The competition a creator runs: neither finished nor cancelled (A-2)."""

    kind: str
    competition_id: str


def check_may_create(creator_id: str, running: LiveCompetition | None) -> None:
    """A-2: a creator opens a competition only while running none; `running` is the one they run, if any."""
    if running is not None:
        raise AccessRefused(
            AccessRefusal.ALREADY_RUNS_ONE,
            f"player {creator_id} already runs {running.kind} {running.competition_id}; one live competition per"
            " creator until it finishes or is cancelled (A-2)",
        )
