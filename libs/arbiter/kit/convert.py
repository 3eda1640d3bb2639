"""Translation of the shared contracts (common.proto) into the rules' vocabulary; no decisions here.

Only what several services translate alike lives here; each service's own messages stay in its convert module.
"""

from __future__ import annotations

from typing import Final

from arbiter.clocks.speed import Speed
from arbiter.competition.types import AccountKind
from arbiter.contracts import common_pb2 as common

SPEED_TO_PROTO: Final = {
    Speed.BULLET: common.SPEED_BULLET,
    Speed.BLITZ: common.SPEED_BLITZ,
    Speed.RAPID: common.SPEED_RAPID,
    Speed.CLASSICAL: common.SPEED_CLASSICAL,
    Speed.CORRESPONDENCE: common.SPEED_CORRESPONDENCE,
}
# An unspecified kind is absent on purpose: callers refuse an actor without one.
ACCOUNT_KIND: Final = {
    common.ACCOUNT_KIND_REGISTERED: AccountKind.REGISTERED,
    common.ACCOUNT_KIND_GUEST: AccountKind.GUEST,
    common.ACCOUNT_KIND_BOT: AccountKind.BOT,
}


_TERMINATIONS: Final = frozenset(common.Termination.values())


def termination_name(value: int) -> str:
    """The stored name of a Termination; a number this build does not know is TERMINATION_UNSPECIFIED, not refused.

    proto3 lets a newer play site send endings added after this build: the result still counts.
    """
    return common.Termination.Name(value if value in _TERMINATIONS else common.TERMINATION_UNSPECIFIED)


# What termination_name stores, read back: a plain dict, as the enum's own Value() cost more than
# the rest of a GameRecord when every result of a whole round is announced.
TERMINATION_OF_NAME: Final = dict(common.Termination.items())
