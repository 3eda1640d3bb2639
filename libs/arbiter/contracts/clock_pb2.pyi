import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from arbiter.contracts import common_pb2 as _common_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ClockKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CLOCK_KIND_UNSPECIFIED: _ClassVar[ClockKind]
    CLOCK_KIND_FISCHER: _ClassVar[ClockKind]
    CLOCK_KIND_TRIPLE_BLOCK: _ClassVar[ClockKind]

class ClaimDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CLAIM_DECISION_UNSPECIFIED: _ClassVar[ClaimDecision]
    CLAIM_DECISION_UPHELD: _ClassVar[ClaimDecision]
    CLAIM_DECISION_REJECTED: _ClassVar[ClaimDecision]
    CLAIM_DECISION_UNRESOLVED: _ClassVar[ClaimDecision]
    CLAIM_DECISION_APPEALED: _ClassVar[ClaimDecision]
CLOCK_KIND_UNSPECIFIED: ClockKind
CLOCK_KIND_FISCHER: ClockKind
CLOCK_KIND_TRIPLE_BLOCK: ClockKind
CLAIM_DECISION_UNSPECIFIED: ClaimDecision
CLAIM_DECISION_UPHELD: ClaimDecision
CLAIM_DECISION_REJECTED: ClaimDecision
CLAIM_DECISION_UNRESOLVED: ClaimDecision
CLAIM_DECISION_APPEALED: ClaimDecision

class SideClock(_message.Message):
    __slots__ = ("player_id", "remaining_ms", "bank_ms", "increment_ms", "moves_made", "sat", "online", "running", "boosted", "disconnect_deadline")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    REMAINING_MS_FIELD_NUMBER: _ClassVar[int]
    BANK_MS_FIELD_NUMBER: _ClassVar[int]
    INCREMENT_MS_FIELD_NUMBER: _ClassVar[int]
    MOVES_MADE_FIELD_NUMBER: _ClassVar[int]
    SAT_FIELD_NUMBER: _ClassVar[int]
    ONLINE_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    BOOSTED_FIELD_NUMBER: _ClassVar[int]
    DISCONNECT_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    remaining_ms: int
    bank_ms: int
    increment_ms: int
    moves_made: int
    sat: bool
    online: bool
    running: bool
    boosted: bool
    disconnect_deadline: _timestamp_pb2.Timestamp
    def __init__(self, player_id: _Optional[str] = ..., remaining_ms: _Optional[int] = ..., bank_ms: _Optional[int] = ..., increment_ms: _Optional[int] = ..., moves_made: _Optional[int] = ..., sat: _Optional[bool] = ..., online: _Optional[bool] = ..., running: _Optional[bool] = ..., boosted: _Optional[bool] = ..., disconnect_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Clock(_message.Message):
    __slots__ = ("game_id", "kind", "white", "black", "side_to_move", "server_time", "finished", "claim_state", "claimant_id", "ply", "next_deadline", "claim_reason", "claim_filed_at", "claim_both_stopped", "termination", "loser_id")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    WHITE_FIELD_NUMBER: _ClassVar[int]
    BLACK_FIELD_NUMBER: _ClassVar[int]
    SIDE_TO_MOVE_FIELD_NUMBER: _ClassVar[int]
    SERVER_TIME_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    CLAIM_STATE_FIELD_NUMBER: _ClassVar[int]
    CLAIMANT_ID_FIELD_NUMBER: _ClassVar[int]
    PLY_FIELD_NUMBER: _ClassVar[int]
    NEXT_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    CLAIM_REASON_FIELD_NUMBER: _ClassVar[int]
    CLAIM_FILED_AT_FIELD_NUMBER: _ClassVar[int]
    CLAIM_BOTH_STOPPED_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_FIELD_NUMBER: _ClassVar[int]
    LOSER_ID_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    kind: ClockKind
    white: SideClock
    black: SideClock
    side_to_move: _common_pb2.Color
    server_time: _timestamp_pb2.Timestamp
    finished: bool
    claim_state: str
    claimant_id: str
    ply: int
    next_deadline: _timestamp_pb2.Timestamp
    claim_reason: str
    claim_filed_at: _timestamp_pb2.Timestamp
    claim_both_stopped: bool
    termination: _common_pb2.Termination
    loser_id: str
    def __init__(self, game_id: _Optional[str] = ..., kind: _Optional[_Union[ClockKind, str]] = ..., white: _Optional[_Union[SideClock, _Mapping]] = ..., black: _Optional[_Union[SideClock, _Mapping]] = ..., side_to_move: _Optional[_Union[_common_pb2.Color, str]] = ..., server_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished: _Optional[bool] = ..., claim_state: _Optional[str] = ..., claimant_id: _Optional[str] = ..., ply: _Optional[int] = ..., next_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., claim_reason: _Optional[str] = ..., claim_filed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., claim_both_stopped: _Optional[bool] = ..., termination: _Optional[_Union[_common_pb2.Termination, str]] = ..., loser_id: _Optional[str] = ...) -> None: ...

class GetClockRequest(_message.Message):
    __slots__ = ("game_id",)
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    def __init__(self, game_id: _Optional[str] = ...) -> None: ...

class RefuelRequest(_message.Message):
    __slots__ = ("actor", "game_id", "amount_seconds")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    game_id: str
    amount_seconds: int
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., game_id: _Optional[str] = ..., amount_seconds: _Optional[int] = ...) -> None: ...

class FileClaimRequest(_message.Message):
    __slots__ = ("actor", "game_id", "reason")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    game_id: str
    reason: str
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., game_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ResolveClaimRequest(_message.Message):
    __slots__ = ("actor", "game_id", "decision")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    game_id: str
    decision: ClaimDecision
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., game_id: _Optional[str] = ..., decision: _Optional[_Union[ClaimDecision, str]] = ...) -> None: ...
