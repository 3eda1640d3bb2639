"""Translation of the shared contracts (common.proto) into the rules' vocabulary; no decisions here.

Only what several services translate alike lives here; each service's own messages stay in its convert module.
"""

from __future__ import annotations

from typing import Final, cast

from arbiter.clocks.speed import Speed
from arbiter.competition.types import AccountKind
from arbiter.contracts import common_pb2 as common
from arbiter.vocabulary import GameResult, Side, Termination

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


SIDE_TO_PROTO: Final = {Side.WHITE: common.COLOR_WHITE, Side.BLACK: common.COLOR_BLACK}
GAME_RESULT: Final = {
    common.GAME_RESULT_WHITE_WINS: GameResult.WHITE_WINS,
    common.GAME_RESULT_BLACK_WINS: GameResult.BLACK_WINS,
    common.GAME_RESULT_DRAW: GameResult.DRAW,
    common.GAME_RESULT_BOTH_LOSE: GameResult.BOTH_LOSE,
}
GAME_RESULT_TO_PROTO: Final = {result: value for value, result in GAME_RESULT.items()}
# TERMINATION_UNSPECIFIED (and a number newer than this build) has no word: the game ended some other way.
TERMINATION: Final = {
    common.TERMINATION_NO_MOVES: Termination.NO_MOVES,
    common.TERMINATION_RESIGNATION: Termination.RESIGNATION,
    common.TERMINATION_DRAW_AGREED: Termination.DRAW_AGREED,
    common.TERMINATION_DRAW_RULE: Termination.DRAW_RULE,
    common.TERMINATION_TIME: Termination.TIME,
    common.TERMINATION_DISCONNECTION: Termination.DISCONNECTION,
    common.TERMINATION_NEVER_SAT: Termination.NEVER_SAT,
    common.TERMINATION_BUSY_FORFEIT: Termination.BUSY_FORFEIT,
    common.TERMINATION_BOTH_ABSENT: Termination.BOTH_ABSENT,
    common.TERMINATION_CLOSED_AT_DEADLINE: Termination.CLOSED_AT_DEADLINE,
}
TERMINATION_TO_PROTO: Final = {termination: value for value, termination in TERMINATION.items()}


_TERMINATIONS: Final = frozenset(common.Termination.values())


def termination_name(value: int) -> str:
    """The stored name of a Termination; a number this build does not know is TERMINATION_UNSPECIFIED, not refused.

    proto3 lets a newer play site send endings added after this build: the result still counts.
    """
    return common.Termination.Name(value if value in _TERMINATIONS else common.TERMINATION_UNSPECIFIED)


# What termination_name stores, read back: a plain dict, as the enum's own Value() cost more than
# the rest of a GameRecord when every result of a whole round is announced.
# (protobuf's stubs type an enum's values as plain int: the cast names the enum they are.)
TERMINATION_OF_NAME: Final = cast("dict[str, common.Termination]", dict(common.Termination.items()))
