"""Words of the competition rules alone: the two tournament formats, who is asking, a refusal (T-2, A-1)."""

from __future__ import annotations

from enum import StrEnum
from typing import Generic, TypeVar

# The cases of one kind of refusal (an enum of its own per rule set).
Case = TypeVar("Case", bound=StrEnum)


class Refused(ValueError, Generic[Case]):
    """A request a rule refuses: `refusal` names the case, which the service answers with its own status."""

    def __init__(self, refusal: Case, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal


class Format(StrEnum):
    """The two shapes a tournament takes at its start (T-2)."""

    ROUND_ROBIN = "round_robin"
    SWISS = "swiss"


class AccountKind(StrEnum):
    """Who is asking (A-1); mirrors `AccountKind` in common.proto."""

    REGISTERED = "registered"
    GUEST = "guest"
    BOT = "bot"
