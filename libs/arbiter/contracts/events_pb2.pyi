import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from arbiter.contracts import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GameRequested(_message.Message):
    __slots__ = ("meta", "game_id", "competition", "variant", "white_id", "black_id", "time_control", "speed", "rated", "opening", "game_in_pairing", "boost_allowed", "requested_at")
    META_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    COMPETITION_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    WHITE_ID_FIELD_NUMBER: _ClassVar[int]
    BLACK_ID_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    OPENING_FIELD_NUMBER: _ClassVar[int]
    GAME_IN_PAIRING_FIELD_NUMBER: _ClassVar[int]
    BOOST_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    game_id: str
    competition: _common_pb2.CompetitionRef
    variant: str
    white_id: str
    black_id: str
    time_control: _common_pb2.TimeControl
    speed: _common_pb2.Speed
    rated: bool
    opening: _common_pb2.Opening
    game_in_pairing: int
    boost_allowed: bool
    requested_at: _timestamp_pb2.Timestamp
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., game_id: _Optional[str] = ..., competition: _Optional[_Union[_common_pb2.CompetitionRef, _Mapping]] = ..., variant: _Optional[str] = ..., white_id: _Optional[str] = ..., black_id: _Optional[str] = ..., time_control: _Optional[_Union[_common_pb2.TimeControl, _Mapping]] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ..., rated: _Optional[bool] = ..., opening: _Optional[_Union[_common_pb2.Opening, _Mapping]] = ..., game_in_pairing: _Optional[int] = ..., boost_allowed: _Optional[bool] = ..., requested_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GameStarted(_message.Message):
    __slots__ = ("meta", "game_id", "white_id", "black_id", "started_at", "competition", "variant", "time_control", "start_fen")
    META_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    WHITE_ID_FIELD_NUMBER: _ClassVar[int]
    BLACK_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    COMPETITION_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    START_FEN_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    game_id: str
    white_id: str
    black_id: str
    started_at: _timestamp_pb2.Timestamp
    competition: _common_pb2.CompetitionRef
    variant: str
    time_control: _common_pb2.TimeControl
    start_fen: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., game_id: _Optional[str] = ..., white_id: _Optional[str] = ..., black_id: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., competition: _Optional[_Union[_common_pb2.CompetitionRef, _Mapping]] = ..., variant: _Optional[str] = ..., time_control: _Optional[_Union[_common_pb2.TimeControl, _Mapping]] = ..., start_fen: _Optional[str] = ...) -> None: ...

class MoveMade(_message.Message):
    __slots__ = ("meta", "game_id", "player_id", "ply", "move", "fen_after", "played_at")
    META_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    PLY_FIELD_NUMBER: _ClassVar[int]
    MOVE_FIELD_NUMBER: _ClassVar[int]
    FEN_AFTER_FIELD_NUMBER: _ClassVar[int]
    PLAYED_AT_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    game_id: str
    player_id: str
    ply: int
    move: str
    fen_after: str
    played_at: _timestamp_pb2.Timestamp
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., game_id: _Optional[str] = ..., player_id: _Optional[str] = ..., ply: _Optional[int] = ..., move: _Optional[str] = ..., fen_after: _Optional[str] = ..., played_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PlayerPresenceChanged(_message.Message):
    __slots__ = ("meta", "game_id", "player_id", "online", "at")
    META_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    ONLINE_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    game_id: str
    player_id: str
    online: bool
    at: _timestamp_pb2.Timestamp
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., game_id: _Optional[str] = ..., player_id: _Optional[str] = ..., online: _Optional[bool] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GameFinished(_message.Message):
    __slots__ = ("meta", "game_id", "competition", "variant", "speed", "white_id", "black_id", "result", "termination", "white_sat", "black_sat", "rated", "white_boosted", "black_boosted", "plies", "finished_at", "started_at")
    META_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    COMPETITION_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    WHITE_ID_FIELD_NUMBER: _ClassVar[int]
    BLACK_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_FIELD_NUMBER: _ClassVar[int]
    WHITE_SAT_FIELD_NUMBER: _ClassVar[int]
    BLACK_SAT_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    WHITE_BOOSTED_FIELD_NUMBER: _ClassVar[int]
    BLACK_BOOSTED_FIELD_NUMBER: _ClassVar[int]
    PLIES_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    game_id: str
    competition: _common_pb2.CompetitionRef
    variant: str
    speed: _common_pb2.Speed
    white_id: str
    black_id: str
    result: _common_pb2.GameResult
    termination: _common_pb2.Termination
    white_sat: bool
    black_sat: bool
    rated: bool
    white_boosted: bool
    black_boosted: bool
    plies: int
    finished_at: _timestamp_pb2.Timestamp
    started_at: _timestamp_pb2.Timestamp
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., game_id: _Optional[str] = ..., competition: _Optional[_Union[_common_pb2.CompetitionRef, _Mapping]] = ..., variant: _Optional[str] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ..., white_id: _Optional[str] = ..., black_id: _Optional[str] = ..., result: _Optional[_Union[_common_pb2.GameResult, str]] = ..., termination: _Optional[_Union[_common_pb2.Termination, str]] = ..., white_sat: _Optional[bool] = ..., black_sat: _Optional[bool] = ..., rated: _Optional[bool] = ..., white_boosted: _Optional[bool] = ..., black_boosted: _Optional[bool] = ..., plies: _Optional[int] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ClockFlagged(_message.Message):
    __slots__ = ("meta", "game_id", "loser_id", "reason", "loser_never_sat", "flagged_at")
    META_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    LOSER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    LOSER_NEVER_SAT_FIELD_NUMBER: _ClassVar[int]
    FLAGGED_AT_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    game_id: str
    loser_id: str
    reason: _common_pb2.Termination
    loser_never_sat: bool
    flagged_at: _timestamp_pb2.Timestamp
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., game_id: _Optional[str] = ..., loser_id: _Optional[str] = ..., reason: _Optional[_Union[_common_pb2.Termination, str]] = ..., loser_never_sat: _Optional[bool] = ..., flagged_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GameAbandoned(_message.Message):
    __slots__ = ("meta", "game_id", "white_id", "black_id", "abandoned_at")
    META_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    WHITE_ID_FIELD_NUMBER: _ClassVar[int]
    BLACK_ID_FIELD_NUMBER: _ClassVar[int]
    ABANDONED_AT_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    game_id: str
    white_id: str
    black_id: str
    abandoned_at: _timestamp_pb2.Timestamp
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., game_id: _Optional[str] = ..., white_id: _Optional[str] = ..., black_id: _Optional[str] = ..., abandoned_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ClockState(_message.Message):
    __slots__ = ("meta", "game_id", "white_remaining_ms", "black_remaining_ms", "side_to_move", "server_time", "ply", "white_bank_ms", "black_bank_ms", "white_boosted", "black_boosted")
    META_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    WHITE_REMAINING_MS_FIELD_NUMBER: _ClassVar[int]
    BLACK_REMAINING_MS_FIELD_NUMBER: _ClassVar[int]
    SIDE_TO_MOVE_FIELD_NUMBER: _ClassVar[int]
    SERVER_TIME_FIELD_NUMBER: _ClassVar[int]
    PLY_FIELD_NUMBER: _ClassVar[int]
    WHITE_BANK_MS_FIELD_NUMBER: _ClassVar[int]
    BLACK_BANK_MS_FIELD_NUMBER: _ClassVar[int]
    WHITE_BOOSTED_FIELD_NUMBER: _ClassVar[int]
    BLACK_BOOSTED_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    game_id: str
    white_remaining_ms: int
    black_remaining_ms: int
    side_to_move: _common_pb2.Color
    server_time: _timestamp_pb2.Timestamp
    ply: int
    white_bank_ms: int
    black_bank_ms: int
    white_boosted: bool
    black_boosted: bool
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., game_id: _Optional[str] = ..., white_remaining_ms: _Optional[int] = ..., black_remaining_ms: _Optional[int] = ..., side_to_move: _Optional[_Union[_common_pb2.Color, str]] = ..., server_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ply: _Optional[int] = ..., white_bank_ms: _Optional[int] = ..., black_bank_ms: _Optional[int] = ..., white_boosted: _Optional[bool] = ..., black_boosted: _Optional[bool] = ...) -> None: ...

class BoostTaken(_message.Message):
    __slots__ = ("meta", "game_id", "arena_id", "player_id", "at")
    META_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    game_id: str
    arena_id: str
    player_id: str
    at: _timestamp_pb2.Timestamp
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., game_id: _Optional[str] = ..., arena_id: _Optional[str] = ..., player_id: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TournamentCreated(_message.Message):
    __slots__ = ("meta", "tournament_id", "creator_id", "name", "variant", "speed", "starts_at", "rated", "private")
    META_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CREATOR_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    STARTS_AT_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    PRIVATE_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    tournament_id: str
    creator_id: str
    name: str
    variant: str
    speed: _common_pb2.Speed
    starts_at: _timestamp_pb2.Timestamp
    rated: bool
    private: bool
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., tournament_id: _Optional[str] = ..., creator_id: _Optional[str] = ..., name: _Optional[str] = ..., variant: _Optional[str] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ..., starts_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., rated: _Optional[bool] = ..., private: _Optional[bool] = ...) -> None: ...

class TournamentStarted(_message.Message):
    __slots__ = ("meta", "tournament_id", "format", "rounds", "games_per_pairing", "entrant_ids")
    META_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    GAMES_PER_PAIRING_FIELD_NUMBER: _ClassVar[int]
    ENTRANT_IDS_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    tournament_id: str
    format: str
    rounds: int
    games_per_pairing: int
    entrant_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., tournament_id: _Optional[str] = ..., format: _Optional[str] = ..., rounds: _Optional[int] = ..., games_per_pairing: _Optional[int] = ..., entrant_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class PairingLine(_message.Message):
    __slots__ = ("white_id", "black_id", "game_ids")
    WHITE_ID_FIELD_NUMBER: _ClassVar[int]
    BLACK_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_IDS_FIELD_NUMBER: _ClassVar[int]
    white_id: str
    black_id: str
    game_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, white_id: _Optional[str] = ..., black_id: _Optional[str] = ..., game_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class RoundPaired(_message.Message):
    __slots__ = ("meta", "tournament_id", "round", "opening", "pairings", "bye_id")
    META_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    OPENING_FIELD_NUMBER: _ClassVar[int]
    PAIRINGS_FIELD_NUMBER: _ClassVar[int]
    BYE_ID_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    tournament_id: str
    round: int
    opening: _common_pb2.Opening
    pairings: _containers.RepeatedCompositeFieldContainer[PairingLine]
    bye_id: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., tournament_id: _Optional[str] = ..., round: _Optional[int] = ..., opening: _Optional[_Union[_common_pb2.Opening, _Mapping]] = ..., pairings: _Optional[_Iterable[_Union[PairingLine, _Mapping]]] = ..., bye_id: _Optional[str] = ...) -> None: ...

class StandingRow(_message.Message):
    __slots__ = ("rank", "player_id", "points", "buchholz", "sonneborn_berger", "wins", "games", "tie_break")
    RANK_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    BUCHHOLZ_FIELD_NUMBER: _ClassVar[int]
    SONNEBORN_BERGER_FIELD_NUMBER: _ClassVar[int]
    WINS_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    TIE_BREAK_FIELD_NUMBER: _ClassVar[int]
    rank: int
    player_id: str
    points: int
    buchholz: float
    sonneborn_berger: float
    wins: int
    games: int
    tie_break: str
    def __init__(self, rank: _Optional[int] = ..., player_id: _Optional[str] = ..., points: _Optional[int] = ..., buchholz: _Optional[float] = ..., sonneborn_berger: _Optional[float] = ..., wins: _Optional[int] = ..., games: _Optional[int] = ..., tie_break: _Optional[str] = ...) -> None: ...

class TournamentFinished(_message.Message):
    __slots__ = ("meta", "tournament_id", "standings", "finished_at")
    META_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    STANDINGS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    tournament_id: str
    standings: _containers.RepeatedCompositeFieldContainer[StandingRow]
    finished_at: _timestamp_pb2.Timestamp
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., tournament_id: _Optional[str] = ..., standings: _Optional[_Iterable[_Union[StandingRow, _Mapping]]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TournamentCancelled(_message.Message):
    __slots__ = ("meta", "tournament_id", "reason")
    META_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    tournament_id: str
    reason: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., tournament_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ArenaCreated(_message.Message):
    __slots__ = ("meta", "arena_id", "creator_id", "name", "variant", "speed", "starts_at", "ends_at", "rated")
    META_FIELD_NUMBER: _ClassVar[int]
    ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    CREATOR_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    STARTS_AT_FIELD_NUMBER: _ClassVar[int]
    ENDS_AT_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    arena_id: str
    creator_id: str
    name: str
    variant: str
    speed: _common_pb2.Speed
    starts_at: _timestamp_pb2.Timestamp
    ends_at: _timestamp_pb2.Timestamp
    rated: bool
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., arena_id: _Optional[str] = ..., creator_id: _Optional[str] = ..., name: _Optional[str] = ..., variant: _Optional[str] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ..., starts_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ends_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., rated: _Optional[bool] = ...) -> None: ...

class ArenaFinished(_message.Message):
    __slots__ = ("meta", "arena_id", "standings", "finished_at", "total_players")
    META_FIELD_NUMBER: _ClassVar[int]
    ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    STANDINGS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PLAYERS_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    arena_id: str
    standings: _containers.RepeatedCompositeFieldContainer[StandingRow]
    finished_at: _timestamp_pb2.Timestamp
    total_players: int
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., arena_id: _Optional[str] = ..., standings: _Optional[_Iterable[_Union[StandingRow, _Mapping]]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., total_players: _Optional[int] = ...) -> None: ...

class RatingUpdated(_message.Message):
    __slots__ = ("meta", "player_id", "game_id", "variant", "speed", "before", "after")
    META_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    player_id: str
    game_id: str
    variant: str
    speed: _common_pb2.Speed
    before: _common_pb2.Rating
    after: _common_pb2.Rating
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., player_id: _Optional[str] = ..., game_id: _Optional[str] = ..., variant: _Optional[str] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ..., before: _Optional[_Union[_common_pb2.Rating, _Mapping]] = ..., after: _Optional[_Union[_common_pb2.Rating, _Mapping]] = ...) -> None: ...

class OpeningDrawn(_message.Message):
    __slots__ = ("meta", "competition_id", "competition", "opening", "no_repeat", "drawn_at")
    META_FIELD_NUMBER: _ClassVar[int]
    COMPETITION_ID_FIELD_NUMBER: _ClassVar[int]
    COMPETITION_FIELD_NUMBER: _ClassVar[int]
    OPENING_FIELD_NUMBER: _ClassVar[int]
    NO_REPEAT_FIELD_NUMBER: _ClassVar[int]
    DRAWN_AT_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.EventMeta
    competition_id: str
    competition: _common_pb2.CompetitionRef
    opening: _common_pb2.Opening
    no_repeat: bool
    drawn_at: _timestamp_pb2.Timestamp
    def __init__(self, meta: _Optional[_Union[_common_pb2.EventMeta, _Mapping]] = ..., competition_id: _Optional[str] = ..., competition: _Optional[_Union[_common_pb2.CompetitionRef, _Mapping]] = ..., opening: _Optional[_Union[_common_pb2.Opening, _Mapping]] = ..., no_repeat: _Optional[bool] = ..., drawn_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
