import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from arbiter.contracts import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PlayerRating(_message.Message):
    __slots__ = ("player_id", "variant", "speed", "rating", "last_rated_at", "as_of")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    LAST_RATED_AT_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    variant: str
    speed: _common_pb2.Speed
    rating: _common_pb2.Rating
    last_rated_at: _timestamp_pb2.Timestamp
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, player_id: _Optional[str] = ..., variant: _Optional[str] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ..., rating: _Optional[_Union[_common_pb2.Rating, _Mapping]] = ..., last_rated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetRatingRequest(_message.Message):
    __slots__ = ("player_id", "variant", "speed")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    variant: str
    speed: _common_pb2.Speed
    def __init__(self, player_id: _Optional[str] = ..., variant: _Optional[str] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ...) -> None: ...

class GetRatingsRequest(_message.Message):
    __slots__ = ("player_ids", "variant", "speed")
    PLAYER_IDS_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    player_ids: _containers.RepeatedScalarFieldContainer[str]
    variant: str
    speed: _common_pb2.Speed
    def __init__(self, player_ids: _Optional[_Iterable[str]] = ..., variant: _Optional[str] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ...) -> None: ...

class GetRatingsResponse(_message.Message):
    __slots__ = ("ratings",)
    RATINGS_FIELD_NUMBER: _ClassVar[int]
    ratings: _containers.RepeatedCompositeFieldContainer[PlayerRating]
    def __init__(self, ratings: _Optional[_Iterable[_Union[PlayerRating, _Mapping]]] = ...) -> None: ...

class GetRatingHistoryRequest(_message.Message):
    __slots__ = ("player_id", "variant", "speed", "page")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    variant: str
    speed: _common_pb2.Speed
    page: _common_pb2.PageRequest
    def __init__(self, player_id: _Optional[str] = ..., variant: _Optional[str] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ..., page: _Optional[_Union[_common_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class RatingChange(_message.Message):
    __slots__ = ("game_id", "before", "after", "at", "opponent_id", "score")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    OPPONENT_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    before: _common_pb2.Rating
    after: _common_pb2.Rating
    at: _timestamp_pb2.Timestamp
    opponent_id: str
    score: float
    def __init__(self, game_id: _Optional[str] = ..., before: _Optional[_Union[_common_pb2.Rating, _Mapping]] = ..., after: _Optional[_Union[_common_pb2.Rating, _Mapping]] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., opponent_id: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class GetRatingHistoryResponse(_message.Message):
    __slots__ = ("changes", "next_page_token")
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[RatingChange]
    next_page_token: str
    def __init__(self, changes: _Optional[_Iterable[_Union[RatingChange, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
