from arbiter.contracts import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DrawOpeningRequest(_message.Message):
    __slots__ = ("competition", "variant", "mode", "thematic_opening", "no_repeat")
    COMPETITION_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    THEMATIC_OPENING_FIELD_NUMBER: _ClassVar[int]
    NO_REPEAT_FIELD_NUMBER: _ClassVar[int]
    competition: _common_pb2.CompetitionRef
    variant: str
    mode: _common_pb2.OpeningMode
    thematic_opening: int
    no_repeat: bool
    def __init__(self, competition: _Optional[_Union[_common_pb2.CompetitionRef, _Mapping]] = ..., variant: _Optional[str] = ..., mode: _Optional[_Union[_common_pb2.OpeningMode, str]] = ..., thematic_opening: _Optional[int] = ..., no_repeat: _Optional[bool] = ...) -> None: ...

class DrawOpeningResponse(_message.Message):
    __slots__ = ("opening",)
    OPENING_FIELD_NUMBER: _ClassVar[int]
    opening: _common_pb2.Opening
    def __init__(self, opening: _Optional[_Union[_common_pb2.Opening, _Mapping]] = ...) -> None: ...

class ListOpeningsRequest(_message.Message):
    __slots__ = ("variant", "mode")
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    variant: str
    mode: _common_pb2.OpeningMode
    def __init__(self, variant: _Optional[str] = ..., mode: _Optional[_Union[_common_pb2.OpeningMode, str]] = ...) -> None: ...

class ListOpeningsResponse(_message.Message):
    __slots__ = ("openings", "title", "source")
    OPENINGS_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    openings: _containers.RepeatedCompositeFieldContainer[_common_pb2.Opening]
    title: str
    source: str
    def __init__(self, openings: _Optional[_Iterable[_Union[_common_pb2.Opening, _Mapping]]] = ..., title: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class GetOpeningRequest(_message.Message):
    __slots__ = ("variant", "number")
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    variant: str
    number: int
    def __init__(self, variant: _Optional[str] = ..., number: _Optional[int] = ...) -> None: ...

class CheckRatedRequest(_message.Message):
    __slots__ = ("variant", "mode", "thematic_opening", "home_and_away")
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    THEMATIC_OPENING_FIELD_NUMBER: _ClassVar[int]
    HOME_AND_AWAY_FIELD_NUMBER: _ClassVar[int]
    variant: str
    mode: _common_pb2.OpeningMode
    thematic_opening: int
    home_and_away: bool
    def __init__(self, variant: _Optional[str] = ..., mode: _Optional[_Union[_common_pb2.OpeningMode, str]] = ..., thematic_opening: _Optional[int] = ..., home_and_away: _Optional[bool] = ...) -> None: ...

class CheckRatedResponse(_message.Message):
    __slots__ = ("rated_allowed", "reason")
    RATED_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    rated_allowed: bool
    reason: str
    def __init__(self, rated_allowed: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...
