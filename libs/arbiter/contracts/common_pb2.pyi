import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AccountKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACCOUNT_KIND_UNSPECIFIED: _ClassVar[AccountKind]
    ACCOUNT_KIND_REGISTERED: _ClassVar[AccountKind]
    ACCOUNT_KIND_GUEST: _ClassVar[AccountKind]
    ACCOUNT_KIND_BOT: _ClassVar[AccountKind]

class Color(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COLOR_UNSPECIFIED: _ClassVar[Color]
    COLOR_WHITE: _ClassVar[Color]
    COLOR_BLACK: _ClassVar[Color]

class Speed(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SPEED_UNSPECIFIED: _ClassVar[Speed]
    SPEED_BULLET: _ClassVar[Speed]
    SPEED_BLITZ: _ClassVar[Speed]
    SPEED_RAPID: _ClassVar[Speed]
    SPEED_CLASSICAL: _ClassVar[Speed]
    SPEED_CORRESPONDENCE: _ClassVar[Speed]

class OpeningMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OPENING_MODE_UNSPECIFIED: _ClassVar[OpeningMode]
    OPENING_MODE_FREE: _ClassVar[OpeningMode]
    OPENING_MODE_RANDOM_1: _ClassVar[OpeningMode]
    OPENING_MODE_RANDOM_2: _ClassVar[OpeningMode]
    OPENING_MODE_RANDOM_3: _ClassVar[OpeningMode]
    OPENING_MODE_TABLE_UP_TO_1: _ClassVar[OpeningMode]
    OPENING_MODE_TABLE_UP_TO_2: _ClassVar[OpeningMode]
    OPENING_MODE_TABLE_UP_TO_3: _ClassVar[OpeningMode]
    OPENING_MODE_TABLE_ALL: _ClassVar[OpeningMode]
    OPENING_MODE_THEMATIC: _ClassVar[OpeningMode]

class CompetitionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPETITION_KIND_UNSPECIFIED: _ClassVar[CompetitionKind]
    COMPETITION_KIND_TOURNAMENT: _ClassVar[CompetitionKind]
    COMPETITION_KIND_ARENA: _ClassVar[CompetitionKind]
    COMPETITION_KIND_CASUAL: _ClassVar[CompetitionKind]

class GameResult(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GAME_RESULT_UNSPECIFIED: _ClassVar[GameResult]
    GAME_RESULT_WHITE_WINS: _ClassVar[GameResult]
    GAME_RESULT_BLACK_WINS: _ClassVar[GameResult]
    GAME_RESULT_DRAW: _ClassVar[GameResult]
    GAME_RESULT_BOTH_LOSE: _ClassVar[GameResult]

class Termination(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TERMINATION_UNSPECIFIED: _ClassVar[Termination]
    TERMINATION_NO_MOVES: _ClassVar[Termination]
    TERMINATION_RESIGNATION: _ClassVar[Termination]
    TERMINATION_DRAW_AGREED: _ClassVar[Termination]
    TERMINATION_DRAW_RULE: _ClassVar[Termination]
    TERMINATION_TIME: _ClassVar[Termination]
    TERMINATION_DISCONNECTION: _ClassVar[Termination]
    TERMINATION_NEVER_SAT: _ClassVar[Termination]
    TERMINATION_BUSY_FORFEIT: _ClassVar[Termination]
    TERMINATION_BOTH_ABSENT: _ClassVar[Termination]
    TERMINATION_CLOSED_AT_DEADLINE: _ClassVar[Termination]
ACCOUNT_KIND_UNSPECIFIED: AccountKind
ACCOUNT_KIND_REGISTERED: AccountKind
ACCOUNT_KIND_GUEST: AccountKind
ACCOUNT_KIND_BOT: AccountKind
COLOR_UNSPECIFIED: Color
COLOR_WHITE: Color
COLOR_BLACK: Color
SPEED_UNSPECIFIED: Speed
SPEED_BULLET: Speed
SPEED_BLITZ: Speed
SPEED_RAPID: Speed
SPEED_CLASSICAL: Speed
SPEED_CORRESPONDENCE: Speed
OPENING_MODE_UNSPECIFIED: OpeningMode
OPENING_MODE_FREE: OpeningMode
OPENING_MODE_RANDOM_1: OpeningMode
OPENING_MODE_RANDOM_2: OpeningMode
OPENING_MODE_RANDOM_3: OpeningMode
OPENING_MODE_TABLE_UP_TO_1: OpeningMode
OPENING_MODE_TABLE_UP_TO_2: OpeningMode
OPENING_MODE_TABLE_UP_TO_3: OpeningMode
OPENING_MODE_TABLE_ALL: OpeningMode
OPENING_MODE_THEMATIC: OpeningMode
COMPETITION_KIND_UNSPECIFIED: CompetitionKind
COMPETITION_KIND_TOURNAMENT: CompetitionKind
COMPETITION_KIND_ARENA: CompetitionKind
COMPETITION_KIND_CASUAL: CompetitionKind
GAME_RESULT_UNSPECIFIED: GameResult
GAME_RESULT_WHITE_WINS: GameResult
GAME_RESULT_BLACK_WINS: GameResult
GAME_RESULT_DRAW: GameResult
GAME_RESULT_BOTH_LOSE: GameResult
TERMINATION_UNSPECIFIED: Termination
TERMINATION_NO_MOVES: Termination
TERMINATION_RESIGNATION: Termination
TERMINATION_DRAW_AGREED: Termination
TERMINATION_DRAW_RULE: Termination
TERMINATION_TIME: Termination
TERMINATION_DISCONNECTION: Termination
TERMINATION_NEVER_SAT: Termination
TERMINATION_BUSY_FORFEIT: Termination
TERMINATION_BOTH_ABSENT: Termination
TERMINATION_CLOSED_AT_DEADLINE: Termination

class EventMeta(_message.Message):
    __slots__ = ("event_id", "occurred_at", "producer", "causation_id", "trace_id")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_AT_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_FIELD_NUMBER: _ClassVar[int]
    CAUSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    occurred_at: _timestamp_pb2.Timestamp
    producer: str
    causation_id: str
    trace_id: str
    def __init__(self, event_id: _Optional[str] = ..., occurred_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., producer: _Optional[str] = ..., causation_id: _Optional[str] = ..., trace_id: _Optional[str] = ...) -> None: ...

class Actor(_message.Message):
    __slots__ = ("player_id", "kind")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    kind: AccountKind
    def __init__(self, player_id: _Optional[str] = ..., kind: _Optional[_Union[AccountKind, str]] = ...) -> None: ...

class FischerControl(_message.Message):
    __slots__ = ("base_seconds", "increment_seconds")
    BASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    INCREMENT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    base_seconds: int
    increment_seconds: int
    def __init__(self, base_seconds: _Optional[int] = ..., increment_seconds: _Optional[int] = ...) -> None: ...

class TripleBlockControl(_message.Message):
    __slots__ = ("increment_days", "bank_days", "guaranteed_time")
    INCREMENT_DAYS_FIELD_NUMBER: _ClassVar[int]
    BANK_DAYS_FIELD_NUMBER: _ClassVar[int]
    GUARANTEED_TIME_FIELD_NUMBER: _ClassVar[int]
    increment_days: int
    bank_days: int
    guaranteed_time: bool
    def __init__(self, increment_days: _Optional[int] = ..., bank_days: _Optional[int] = ..., guaranteed_time: _Optional[bool] = ...) -> None: ...

class TimeControl(_message.Message):
    __slots__ = ("fischer", "triple_block")
    FISCHER_FIELD_NUMBER: _ClassVar[int]
    TRIPLE_BLOCK_FIELD_NUMBER: _ClassVar[int]
    fischer: FischerControl
    triple_block: TripleBlockControl
    def __init__(self, fischer: _Optional[_Union[FischerControl, _Mapping]] = ..., triple_block: _Optional[_Union[TripleBlockControl, _Mapping]] = ...) -> None: ...

class Opening(_message.Message):
    __slots__ = ("variant", "mode", "number", "moves", "class_label", "level", "fen", "name")
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    MOVES_FIELD_NUMBER: _ClassVar[int]
    CLASS_LABEL_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    FEN_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    variant: str
    mode: OpeningMode
    number: int
    moves: _containers.RepeatedScalarFieldContainer[str]
    class_label: str
    level: int
    fen: str
    name: str
    def __init__(self, variant: _Optional[str] = ..., mode: _Optional[_Union[OpeningMode, str]] = ..., number: _Optional[int] = ..., moves: _Optional[_Iterable[str]] = ..., class_label: _Optional[str] = ..., level: _Optional[int] = ..., fen: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CompetitionRef(_message.Message):
    __slots__ = ("kind", "id", "round")
    KIND_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    kind: CompetitionKind
    id: str
    round: int
    def __init__(self, kind: _Optional[_Union[CompetitionKind, str]] = ..., id: _Optional[str] = ..., round: _Optional[int] = ...) -> None: ...

class Rating(_message.Message):
    __slots__ = ("rating", "deviation", "volatility", "provisional", "games")
    RATING_FIELD_NUMBER: _ClassVar[int]
    DEVIATION_FIELD_NUMBER: _ClassVar[int]
    VOLATILITY_FIELD_NUMBER: _ClassVar[int]
    PROVISIONAL_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    rating: float
    deviation: float
    volatility: float
    provisional: bool
    games: int
    def __init__(self, rating: _Optional[float] = ..., deviation: _Optional[float] = ..., volatility: _Optional[float] = ..., provisional: _Optional[bool] = ..., games: _Optional[int] = ...) -> None: ...

class PageRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...
