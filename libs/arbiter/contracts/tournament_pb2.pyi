import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from arbiter.contracts import common_pb2 as _common_pb2
from arbiter.contracts import events_pb2 as _events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TournamentState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOURNAMENT_STATE_UNSPECIFIED: _ClassVar[TournamentState]
    TOURNAMENT_STATE_SCHEDULED: _ClassVar[TournamentState]
    TOURNAMENT_STATE_RUNNING: _ClassVar[TournamentState]
    TOURNAMENT_STATE_FINISHED: _ClassVar[TournamentState]
    TOURNAMENT_STATE_CANCELLED: _ClassVar[TournamentState]
TOURNAMENT_STATE_UNSPECIFIED: TournamentState
TOURNAMENT_STATE_SCHEDULED: TournamentState
TOURNAMENT_STATE_RUNNING: TournamentState
TOURNAMENT_STATE_FINISHED: TournamentState
TOURNAMENT_STATE_CANCELLED: TournamentState

class TournamentSettings(_message.Message):
    __slots__ = ("name", "variant", "time_control", "threshold", "capacity", "minimum_entrants", "starts_at", "duration_minutes", "private", "password", "rated", "minimum_rating", "opening_mode", "thematic_opening", "home_and_away", "extra_round")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_ENTRANTS_FIELD_NUMBER: _ClassVar[int]
    STARTS_AT_FIELD_NUMBER: _ClassVar[int]
    DURATION_MINUTES_FIELD_NUMBER: _ClassVar[int]
    PRIVATE_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_RATING_FIELD_NUMBER: _ClassVar[int]
    OPENING_MODE_FIELD_NUMBER: _ClassVar[int]
    THEMATIC_OPENING_FIELD_NUMBER: _ClassVar[int]
    HOME_AND_AWAY_FIELD_NUMBER: _ClassVar[int]
    EXTRA_ROUND_FIELD_NUMBER: _ClassVar[int]
    name: str
    variant: str
    time_control: _common_pb2.TimeControl
    threshold: int
    capacity: int
    minimum_entrants: int
    starts_at: _timestamp_pb2.Timestamp
    duration_minutes: int
    private: bool
    password: str
    rated: bool
    minimum_rating: int
    opening_mode: _common_pb2.OpeningMode
    thematic_opening: int
    home_and_away: bool
    extra_round: bool
    def __init__(self, name: _Optional[str] = ..., variant: _Optional[str] = ..., time_control: _Optional[_Union[_common_pb2.TimeControl, _Mapping]] = ..., threshold: _Optional[int] = ..., capacity: _Optional[int] = ..., minimum_entrants: _Optional[int] = ..., starts_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., duration_minutes: _Optional[int] = ..., private: _Optional[bool] = ..., password: _Optional[str] = ..., rated: _Optional[bool] = ..., minimum_rating: _Optional[int] = ..., opening_mode: _Optional[_Union[_common_pb2.OpeningMode, str]] = ..., thematic_opening: _Optional[int] = ..., home_and_away: _Optional[bool] = ..., extra_round: _Optional[bool] = ...) -> None: ...

class Tournament(_message.Message):
    __slots__ = ("id", "creator_id", "settings", "state", "format", "rounds", "current_round", "entrants", "speed", "rated_note", "created_at", "cancel_reason", "games_per_pairing", "closes_at", "finished_at", "notes", "finish_note")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATOR_ID_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_ROUND_FIELD_NUMBER: _ClassVar[int]
    ENTRANTS_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    RATED_NOTE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REASON_FIELD_NUMBER: _ClassVar[int]
    GAMES_PER_PAIRING_FIELD_NUMBER: _ClassVar[int]
    CLOSES_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    FINISH_NOTE_FIELD_NUMBER: _ClassVar[int]
    id: str
    creator_id: str
    settings: TournamentSettings
    state: TournamentState
    format: str
    rounds: int
    current_round: int
    entrants: int
    speed: _common_pb2.Speed
    rated_note: str
    created_at: _timestamp_pb2.Timestamp
    cancel_reason: str
    games_per_pairing: int
    closes_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    notes: _containers.RepeatedScalarFieldContainer[str]
    finish_note: str
    def __init__(self, id: _Optional[str] = ..., creator_id: _Optional[str] = ..., settings: _Optional[_Union[TournamentSettings, _Mapping]] = ..., state: _Optional[_Union[TournamentState, str]] = ..., format: _Optional[str] = ..., rounds: _Optional[int] = ..., current_round: _Optional[int] = ..., entrants: _Optional[int] = ..., speed: _Optional[_Union[_common_pb2.Speed, str]] = ..., rated_note: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cancel_reason: _Optional[str] = ..., games_per_pairing: _Optional[int] = ..., closes_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., notes: _Optional[_Iterable[str]] = ..., finish_note: _Optional[str] = ...) -> None: ...

class CreateTournamentRequest(_message.Message):
    __slots__ = ("actor", "settings", "request_id")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    settings: TournamentSettings
    request_id: str
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., settings: _Optional[_Union[TournamentSettings, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreateTournamentResponse(_message.Message):
    __slots__ = ("tournament", "invite_token")
    TOURNAMENT_FIELD_NUMBER: _ClassVar[int]
    INVITE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tournament: Tournament
    invite_token: str
    def __init__(self, tournament: _Optional[_Union[Tournament, _Mapping]] = ..., invite_token: _Optional[str] = ...) -> None: ...

class GetTournamentRequest(_message.Message):
    __slots__ = ("tournament_id",)
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    tournament_id: str
    def __init__(self, tournament_id: _Optional[str] = ...) -> None: ...

class JoinTournamentRequest(_message.Message):
    __slots__ = ("actor", "tournament_id", "password", "invite_token")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    INVITE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    tournament_id: str
    password: str
    invite_token: str
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., tournament_id: _Optional[str] = ..., password: _Optional[str] = ..., invite_token: _Optional[str] = ...) -> None: ...

class JoinTournamentResponse(_message.Message):
    __slots__ = ("entrants",)
    ENTRANTS_FIELD_NUMBER: _ClassVar[int]
    entrants: int
    def __init__(self, entrants: _Optional[int] = ...) -> None: ...

class WithdrawTournamentRequest(_message.Message):
    __slots__ = ("actor", "tournament_id")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    tournament_id: str
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., tournament_id: _Optional[str] = ...) -> None: ...

class WithdrawTournamentResponse(_message.Message):
    __slots__ = ("entrants",)
    ENTRANTS_FIELD_NUMBER: _ClassVar[int]
    entrants: int
    def __init__(self, entrants: _Optional[int] = ...) -> None: ...

class CancelTournamentRequest(_message.Message):
    __slots__ = ("actor", "tournament_id")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    tournament_id: str
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., tournament_id: _Optional[str] = ...) -> None: ...

class CancelTournamentResponse(_message.Message):
    __slots__ = ("tournament",)
    TOURNAMENT_FIELD_NUMBER: _ClassVar[int]
    tournament: Tournament
    def __init__(self, tournament: _Optional[_Union[Tournament, _Mapping]] = ...) -> None: ...

class RevokeInviteRequest(_message.Message):
    __slots__ = ("actor", "tournament_id", "issue_new")
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    ISSUE_NEW_FIELD_NUMBER: _ClassVar[int]
    actor: _common_pb2.Actor
    tournament_id: str
    issue_new: bool
    def __init__(self, actor: _Optional[_Union[_common_pb2.Actor, _Mapping]] = ..., tournament_id: _Optional[str] = ..., issue_new: _Optional[bool] = ...) -> None: ...

class RevokeInviteResponse(_message.Message):
    __slots__ = ("invite_token",)
    INVITE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    invite_token: str
    def __init__(self, invite_token: _Optional[str] = ...) -> None: ...

class GetStandingsRequest(_message.Message):
    __slots__ = ("tournament_id",)
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    tournament_id: str
    def __init__(self, tournament_id: _Optional[str] = ...) -> None: ...

class GetStandingsResponse(_message.Message):
    __slots__ = ("tournament_id", "round", "rows", "explanations", "final", "format")
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    EXPLANATIONS_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    tournament_id: str
    round: int
    rows: _containers.RepeatedCompositeFieldContainer[_events_pb2.StandingRow]
    explanations: _containers.RepeatedScalarFieldContainer[str]
    final: bool
    format: str
    def __init__(self, tournament_id: _Optional[str] = ..., round: _Optional[int] = ..., rows: _Optional[_Iterable[_Union[_events_pb2.StandingRow, _Mapping]]] = ..., explanations: _Optional[_Iterable[str]] = ..., final: _Optional[bool] = ..., format: _Optional[str] = ...) -> None: ...

class GetPairingsRequest(_message.Message):
    __slots__ = ("tournament_id", "round")
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    tournament_id: str
    round: int
    def __init__(self, tournament_id: _Optional[str] = ..., round: _Optional[int] = ...) -> None: ...

class GameRecord(_message.Message):
    __slots__ = ("game_id", "white_id", "black_id", "result", "termination", "white_points", "black_points", "finished", "round", "board", "game_in_pairing", "rated", "opened")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    WHITE_ID_FIELD_NUMBER: _ClassVar[int]
    BLACK_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_FIELD_NUMBER: _ClassVar[int]
    WHITE_POINTS_FIELD_NUMBER: _ClassVar[int]
    BLACK_POINTS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    BOARD_FIELD_NUMBER: _ClassVar[int]
    GAME_IN_PAIRING_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    OPENED_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    white_id: str
    black_id: str
    result: _common_pb2.GameResult
    termination: _common_pb2.Termination
    white_points: int
    black_points: int
    finished: bool
    round: int
    board: int
    game_in_pairing: int
    rated: bool
    opened: bool
    def __init__(self, game_id: _Optional[str] = ..., white_id: _Optional[str] = ..., black_id: _Optional[str] = ..., result: _Optional[_Union[_common_pb2.GameResult, str]] = ..., termination: _Optional[_Union[_common_pb2.Termination, str]] = ..., white_points: _Optional[int] = ..., black_points: _Optional[int] = ..., finished: _Optional[bool] = ..., round: _Optional[int] = ..., board: _Optional[int] = ..., game_in_pairing: _Optional[int] = ..., rated: _Optional[bool] = ..., opened: _Optional[bool] = ...) -> None: ...

class RoundPairings(_message.Message):
    __slots__ = ("round", "opening", "games", "bye_id", "bye_points", "engine", "notes")
    ROUND_FIELD_NUMBER: _ClassVar[int]
    OPENING_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    BYE_ID_FIELD_NUMBER: _ClassVar[int]
    BYE_POINTS_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    round: int
    opening: _common_pb2.Opening
    games: _containers.RepeatedCompositeFieldContainer[GameRecord]
    bye_id: str
    bye_points: int
    engine: str
    notes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, round: _Optional[int] = ..., opening: _Optional[_Union[_common_pb2.Opening, _Mapping]] = ..., games: _Optional[_Iterable[_Union[GameRecord, _Mapping]]] = ..., bye_id: _Optional[str] = ..., bye_points: _Optional[int] = ..., engine: _Optional[str] = ..., notes: _Optional[_Iterable[str]] = ...) -> None: ...

class EntrantLine(_message.Message):
    __slots__ = ("player_id", "berger_number", "initial_rank", "rating")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    BERGER_NUMBER_FIELD_NUMBER: _ClassVar[int]
    INITIAL_RANK_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    berger_number: int
    initial_rank: int
    rating: float
    def __init__(self, player_id: _Optional[str] = ..., berger_number: _Optional[int] = ..., initial_rank: _Optional[int] = ..., rating: _Optional[float] = ...) -> None: ...

class GetPairingsResponse(_message.Message):
    __slots__ = ("rounds", "entrants")
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    ENTRANTS_FIELD_NUMBER: _ClassVar[int]
    rounds: _containers.RepeatedCompositeFieldContainer[RoundPairings]
    entrants: _containers.RepeatedCompositeFieldContainer[EntrantLine]
    def __init__(self, rounds: _Optional[_Iterable[_Union[RoundPairings, _Mapping]]] = ..., entrants: _Optional[_Iterable[_Union[EntrantLine, _Mapping]]] = ...) -> None: ...

class ListUpcomingTournamentsRequest(_message.Message):
    __slots__ = ("page", "variant")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    page: _common_pb2.PageRequest
    variant: str
    def __init__(self, page: _Optional[_Union[_common_pb2.PageRequest, _Mapping]] = ..., variant: _Optional[str] = ...) -> None: ...

class ListUpcomingTournamentsResponse(_message.Message):
    __slots__ = ("tournaments", "next_page_token")
    TOURNAMENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tournaments: _containers.RepeatedCompositeFieldContainer[Tournament]
    next_page_token: str
    def __init__(self, tournaments: _Optional[_Iterable[_Union[Tournament, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchTournamentRequest(_message.Message):
    __slots__ = ("tournament_id",)
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    tournament_id: str
    def __init__(self, tournament_id: _Optional[str] = ...) -> None: ...

class TournamentChange(_message.Message):
    __slots__ = ("tournament", "change", "round", "game")
    TOURNAMENT_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    tournament: Tournament
    change: str
    round: int
    game: GameRecord
    def __init__(self, tournament: _Optional[_Union[Tournament, _Mapping]] = ..., change: _Optional[str] = ..., round: _Optional[int] = ..., game: _Optional[_Union[GameRecord, _Mapping]] = ...) -> None: ...

class ExportTrfRequest(_message.Message):
    __slots__ = ("tournament_id",)
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    tournament_id: str
    def __init__(self, tournament_id: _Optional[str] = ...) -> None: ...

class ExportTrfResponse(_message.Message):
    __slots__ = ("tournament_id", "trf", "rounds", "home_and_away")
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TRF_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    HOME_AND_AWAY_FIELD_NUMBER: _ClassVar[int]
    tournament_id: str
    trf: str
    rounds: int
    home_and_away: bool
    def __init__(self, tournament_id: _Optional[str] = ..., trf: _Optional[str] = ..., rounds: _Optional[int] = ..., home_and_away: _Optional[bool] = ...) -> None: ...
