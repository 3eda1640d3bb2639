import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from arbiter.contracts import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ArenaState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ARENA_STATE_UNSPECIFIED: _ClassVar[ArenaState]
    ARENA_STATE_SCHEDULED: _ClassVar[ArenaState]
    ARENA_STATE_RUNNING: _ClassVar[ArenaState]
    ARENA_STATE_FINISHED: _ClassVar[ArenaState]
    ARENA_STATE_CANCELLED: _ClassVar[ArenaState]
ARENA_STATE_UNSPECIFIED: ArenaState
ARENA_STATE_SCHEDULED: ArenaState
ARENA_STATE_RUNNING: ArenaState
ARENA_STATE_FINISHED: ArenaState
ARENA_STATE_CANCELLED: ArenaState

class ArenaSettings(_message.Message):
    __slots__ = ("name", "variant", "time_control", "duration_minutes", "starts_at", "rated")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    DURATION_MINUTES_FIELD_NUMBER: _ClassVar[int]
    STARTS_AT_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    name: str
    variant: str
    time_control: _common_pb2.FischerControl
    duration_minutes: int
    starts_at: _timestamp_pb2.Timestamp
    rated: bool
    def __init__(self, name: _Optional[str] = ..., variant: _Optional[str] = ..., time_control: _Optional[_Union[_common_pb2.FischerControl, _Mapping]] = ..., duration_minutes: _Optional[int] = ..., starts_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., rated: _Optional[bool] = ...) -> None: ...

class Arena(_message.Message):
    __slots__ = ("id", "creator_id", "settings", "state", "speed", "starts_at", "ends_at", "players", "games_played")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATOR_ID_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    STARTS_AT_FIELD_NUMBER: _ClassVar[int]
    ENDS_AT_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    GAMES_PLAYED_FIELD_NUMBER: _ClassVar[int]
    id: str
    creator_id: str
    settings: ArenaSettings
    state: ArenaState
    speed: _common_pb2.Speed
    starts_at: _timestamp_pb2.Timestamp
    ends_at: _timestamp_pb2.Timestamp
    players: int
    games_played: int
    def __init__(self, id: _Optional[str] = ..., creator_id: _Optional[str] = ..., settings: _Optional[_Union[ArenaSettings, _Mapping]] = ..., state: _Optional[_Union[ArenaState, str]] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ..., starts_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ends_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., players: _Optional[int] = ..., games_played: _Optional[int] = ...) -> None: ...

class CreateArenaRequest(_message.Message):
    __slots__ = ("actor", "settings", "request_id")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    settings: ArenaSettings
    request_id: str
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., settings: _Optional[_Union[ArenaSettings, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class GetArenaRequest(_message.Message):
    __slots__ = ("arena_id",)
    ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    arena_id: str
    def __init__(self, arena_id: _Optional[str] = ...) -> None: ...

class JoinArenaRequest(_message.Message):
    __slots__ = ("actor", "arena_id")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    arena_id: str
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., arena_id: _Optional[str] = ...) -> None: ...

class JoinArenaResponse(_message.Message):
    __slots__ = ("players",)
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    players: int
    def __init__(self, players: _Optional[int] = ...) -> None: ...

class LeaveArenaRequest(_message.Message):
    __slots__ = ("actor", "arena_id")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    arena_id: str
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., arena_id: _Optional[str] = ...) -> None: ...

class LeaveArenaResponse(_message.Message):
    __slots__ = ("leaves_after_game",)
    LEAVES_AFTER_GAME_FIELD_NUMBER: _ClassVar[int]
    leaves_after_game: bool
    def __init__(self, leaves_after_game: _Optional[bool] = ...) -> None: ...

class BoostRequest(_message.Message):
    __slots__ = ("actor", "arena_id", "game_id")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    arena_id: str
    game_id: str
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., arena_id: _Optional[str] = ..., game_id: _Optional[str] = ...) -> None: ...

class BoostResponse(_message.Message):
    __slots__ = ("time_control", "base_ms", "increment_ms")
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    BASE_MS_FIELD_NUMBER: _ClassVar[int]
    INCREMENT_MS_FIELD_NUMBER: _ClassVar[int]
    time_control: _common_pb2.FischerControl
    base_ms: int
    increment_ms: int
    def __init__(self, time_control: _Optional[_Union[_common_pb2.FischerControl, _Mapping]] = ..., base_ms: _Optional[int] = ..., increment_ms: _Optional[int] = ...) -> None: ...

class GetLeaderboardRequest(_message.Message):
    __slots__ = ("arena_id", "page", "around_player_id")
    ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    AROUND_PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    arena_id: str
    page: _common_pb2.PageRequest
    around_player_id: str
    def __init__(self, arena_id: _Optional[str] = ..., page: _Optional[_Union[_common_pb2.PageRequest, _Mapping]] = ..., around_player_id: _Optional[str] = ...) -> None: ...

class LeaderboardRow(_message.Message):
    __slots__ = ("rank", "player_id", "points", "wins", "games", "streak", "playing")
    RANK_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    WINS_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    STREAK_FIELD_NUMBER: _ClassVar[int]
    PLAYING_FIELD_NUMBER: _ClassVar[int]
    rank: int
    player_id: str
    points: int
    wins: int
    games: int
    streak: int
    playing: bool
    def __init__(self, rank: _Optional[int] = ..., player_id: _Optional[str] = ..., points: _Optional[int] = ..., wins: _Optional[int] = ..., games: _Optional[int] = ..., streak: _Optional[int] = ..., playing: _Optional[bool] = ...) -> None: ...

class GetLeaderboardResponse(_message.Message):
    __slots__ = ("rows", "next_page_token", "total_players")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PLAYERS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[LeaderboardRow]
    next_page_token: str
    total_players: int
    def __init__(self, rows: _Optional[_Iterable[_Union[LeaderboardRow, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_players: _Optional[int] = ...) -> None: ...

class WatchArenaRequest(_message.Message):
    __slots__ = ("arena_id",)
    ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    arena_id: str
    def __init__(self, arena_id: _Optional[str] = ...) -> None: ...

class ArenaChange(_message.Message):
    __slots__ = ("arena", "change", "top", "player_id", "game_id")
    ARENA_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    TOP_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    arena: Arena
    change: str
    top: _containers.RepeatedCompositeFieldContainer[LeaderboardRow]
    player_id: str
    game_id: str
    def __init__(self, arena: _Optional[_Union[Arena, _Mapping]] = ..., change: _Optional[str] = ..., top: _Optional[_Iterable[_Union[LeaderboardRow, _Mapping]]] = ..., player_id: _Optional[str] = ..., game_id: _Optional[str] = ...) -> None: ...
