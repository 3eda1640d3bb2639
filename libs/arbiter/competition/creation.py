"""The settings a competition is created with (A-3, T-1, T-3..T-5, R-2, R-4, AR-1).

Who may create at all (A-1, A-2) is `arbiter.competition.access`, asked before these.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from arbiter.competition.formats import (
    CAPACITY_MAX,
    CAPACITY_MIN,
    DEFAULT_THRESHOLD,
    DOUBLE_ROUND_ROBIN_ENTRANTS,
    FormatError,
    validate_threshold,
)
from arbiter.openings.fairness import max_opening_level
from arbiter.openings.modes import MAX_OPENING_LEVEL, PARI_LEVEL, OpeningMode
from arbiter.openings.tables import OFFICIAL_OPENINGS, OpeningError, has_table, variant_name
from arbiter.rating.rated import MAX_LEVEL_WITHOUT_HOME_AND_AWAY, competition_is_rated

__all__ = [
    "ArenaRequest",
    "ArenaSettings",
    "CreationError",
    "TournamentRequest",
    "TournamentSettings",
    "opening_level_ceiling",
    "validate_arena_settings",
    "validate_tournament_settings",
]

# T-4 (and AR-1, which uses the same window for a scheduled arena).
START_MIN_DELAY: Final = timedelta(minutes=5)
START_MAX_DELAY: Final = timedelta(days=14)
# T-15 sets no ceiling; this one only refuses the absurd. Ten rounds of the slowest live games fit many
# times over, and the close it announces (which ends a stalled tournament and frees its creator, A-2)
# stays within reach.
TOURNAMENT_MAX_DURATION: Final = timedelta(days=30)
# T-3
DEFAULT_MINIMUM_ENTRANTS: Final = CAPACITY_MIN
#
MIN_RATING_FLOOR: Final = 1000
MIN_RATING_CEILING: Final = 2000
MIN_RATING_STEP: Final = 100
# AR-1
ARENA_MIN_DURATION: Final = timedelta(minutes=10)
ARENA_MAX_DURATION: Final = timedelta(hours=8)
# O-8 without a variant: italian reaches 4N and english 3 (the barred ballots); both go beyond class 2.
_LOWEST_TABLE_CEILING: Final = 3


class CreationError(ValueError):
    """A competition that may not be created as requested; the message is written for the creator."""


@dataclass(frozen=True, slots=True)
class TournamentRequest:
    """What the creator asks for; times must be timezone-aware."""

    created_at: datetime
    starts_at: datetime
    # T-15: the announced duration, from the start.
    duration: timedelta
    capacity: int
    threshold: int = DEFAULT_THRESHOLD
    minimum_entrants: int = DEFAULT_MINIMUM_ENTRANTS
    private: bool = False
    password: str | None = None
    rated: bool = True
    minimum_rating: int | None = None
    opening_mode: OpeningMode = OpeningMode.FREE
    # The level that counts for R-4 (PARI = 0, then 1..4). Read from the official table when
    # `variant` is given; otherwise required for THEMATIC and derived from the mode for draws.
    opening_level: int | None = None
    # O-9: number (1..174) of the opening a thematic tournament plays.
    thematic_opening: int | None = None
    # Engine name or alias ("italian", "english", "checkers", ...); checked against O-5..O-9.
    variant: str | None = None
    home_and_away: bool = False
    extra_round: bool = False


@dataclass(frozen=True, slots=True)
class TournamentSettings:
    """The settings the tournament is created with, and why they differ from the request."""

    created_at: datetime
    starts_at: datetime
    duration: timedelta
    capacity: int
    threshold: int
    minimum_entrants: int
    private: bool
    # T-5: every private tournament gets an invite link; the token itself is made by the service.
    invite_link: bool
    password: str | None
    rated: bool
    minimum_rating: int | None
    opening_mode: OpeningMode
    opening_level: int | None
    thematic_opening: int | None
    variant: str | None
    home_and_away: bool
    extra_round: bool
    # why a rated request became friendly; "" when it did not.
    rated_note: str
    # One readable sentence per derived or changed setting, each citing its rule.
    reasons: tuple[str, ...]

    @property
    def closes_at(self) -> datetime:
        """When the announced duration ends; running games then get 10 more minutes (T-15)."""
        return self.starts_at + self.duration


@dataclass(frozen=True, slots=True)
class ArenaRequest:
    """What an arena creator asks for; `starts_at` None means at once (AR-1)."""

    created_at: datetime
    duration: timedelta
    starts_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ArenaSettings:
    """The effective schedule of an arena."""

    starts_at: datetime
    ends_at: datetime
    duration: timedelta
    starts_at_once: bool


def opening_level_ceiling(
    mode: OpeningMode,
    *,
    variant: str | None = None,
    opening_level: int | None = None,
    thematic_opening: int | None = None,
) -> int | None:
    """The opening level that counts for R-4; None for free and random-move modes, which never count.

    With a variant the level is read from its official table (the table's ceiling, or the
    thematic opening's class); without one, `opening_level` is taken as given, and a draw
    mode falls back to its class limit (all 174: 3, the lowest ceiling of the two tables).
    """
    if not mode.uses_official_table():
        if opening_level is not None:
            raise CreationError(
                f"an opening class applies only to table and thematic modes, not to {mode} ({mode.rule})"
            )
        return None
    if opening_level is not None:
        _checked_level(opening_level)
    limit = mode.table_class_limit
    if limit is not None and opening_level is not None and opening_level > limit:
        raise CreationError(
            f"a table up to class {limit} cannot reach class {opening_level} ({mode.rule})"
        )
    if variant is not None and (mode is not OpeningMode.THEMATIC or thematic_opening is not None):
        _table_variant(variant, mode)
        try:
            table_level = max_opening_level(variant, mode, thematic_opening)
        except OpeningError as error:
            raise CreationError(str(error)) from None
        if opening_level is not None and opening_level != table_level:
            raise CreationError(
                f"class level {opening_level} was given, but the {variant_name(variant)} table "
                f"says {table_level} for {mode} ({mode.rule})"
            )
        return table_level
    if mode is OpeningMode.THEMATIC:
        if opening_level is None:
            raise CreationError("a thematic tournament needs the chosen opening's class (O-9, R-4)")
        return opening_level
    if opening_level is not None:
        return opening_level
    # Up to class k reaches k in both tables; all 174 reaches 4 (italian) or 3 (english).
    return limit if limit is not None else _LOWEST_TABLE_CEILING


def competition_variant(variant: str) -> str:
    """The engine's name of the competition's variant; refused when missing or unknown."""
    if not variant:
        raise CreationError("settings.variant is required (international, english, italian, ...)")
    return variant_name(variant)


def validate_tournament_settings(request: TournamentRequest) -> TournamentSettings:
    """Check a tournament request and return its effective settings, or raise CreationError."""
    _check_times(request.created_at, request.starts_at)
    reasons: list[str] = [
        # creating needs no permission and does not enter the creator.
        "the creator is not entered: to play they join like anyone else, and count "
        "toward the minimum only then (A-3)"
    ]

    try:
        validate_threshold(request.threshold)
    except FormatError as error:
        raise CreationError(str(error)) from None
    if not CAPACITY_MIN <= request.capacity <= CAPACITY_MAX:
        raise CreationError(
            f"capacity {request.capacity} is outside {CAPACITY_MIN}..{CAPACITY_MAX} (T-3)"
        )
    if request.minimum_entrants < CAPACITY_MIN:
        raise CreationError(
            f"minimum {request.minimum_entrants} is below {CAPACITY_MIN}: "
            f"the creator may only raise it (T-3)"
        )
    if request.minimum_entrants > request.capacity:
        raise CreationError(
            f"minimum {request.minimum_entrants} is above the capacity {request.capacity} (T-3)"
        )

    delay = request.starts_at - request.created_at
    if not START_MIN_DELAY <= delay <= START_MAX_DELAY:
        raise CreationError(
            f"the start must be between 5 minutes and 14 days after creation; "
            f"{request.starts_at.isoformat()} is {_human(delay)} after it (T-4)"
        )
    if request.duration <= timedelta(0):
        raise CreationError(f"the duration must be positive, not {_human(request.duration)} (T-15)")
    if request.duration > TOURNAMENT_MAX_DURATION:
        raise CreationError(
            f"a tournament lasts at most {_human(TOURNAMENT_MAX_DURATION)}, not {_human(request.duration)} (T-15)"
        )

    password = request.password or None
    if password is not None and not request.private:
        raise CreationError("a password needs a private tournament (T-5)")
    if request.private:
        entry = "the invite link or the password" if password else "the invite link"
        reasons.append(f"private: entry with {entry} (T-5)")

    if request.minimum_rating is not None:
        if not request.rated:
            raise CreationError("a friendly tournament has no minimum rating (R-2)")
        _check_minimum_rating(request.minimum_rating)

    _check_opening(request)
    level = opening_level_ceiling(
        request.opening_mode,
        variant=request.variant,
        opening_level=request.opening_level,
        thematic_opening=request.thematic_opening,
    )

    # T-10: capacity 4 (and a minimum of at least 4) can only start with 4 entrants, always double.
    always_double = request.capacity == DOUBLE_ROUND_ROBIN_ENTRANTS
    rated = competition_is_rated(request.rated, level, request.home_and_away or always_double)
    minimum_rating = request.minimum_rating
    rated_note = ""
    if request.rated and level is not None and level > MAX_LEVEL_WITHOUT_HOME_AND_AWAY:
        if request.home_and_away:
            reasons.append(f"rated: class {level} openings are fair with home and away (R-4, O-11)")
        elif always_double:
            reasons.append(
                f"rated: with capacity {DOUBLE_ROUND_ROBIN_ENTRANTS} the tournament can only be a "
                f"double round robin (T-10), so class {level} openings are fair (R-4)"
            )
    if request.rated and not rated:
        rated_note = (
            f"created friendly: {_mode_words(request.opening_mode)} reaches class {level}, "
            f"and a single game is fair only up to class {MAX_LEVEL_WITHOUT_HOME_AND_AWAY}; "
            f"switch home and away on to keep it rated (R-4)"
        )
        reasons.append(rated_note)
        if minimum_rating is not None:
            minimum_rating = None
            reasons.append(
                f"minimum rating {request.minimum_rating} dropped: "
                f"friendly tournaments have no minimum (R-2)"
            )

    return TournamentSettings(
        created_at=request.created_at,
        starts_at=request.starts_at,
        duration=request.duration,
        capacity=request.capacity,
        threshold=request.threshold,
        minimum_entrants=request.minimum_entrants,
        private=request.private,
        invite_link=request.private,
        password=password,
        rated=rated,
        minimum_rating=minimum_rating,
        opening_mode=request.opening_mode,
        opening_level=level,
        thematic_opening=request.thematic_opening,
        variant=request.variant,
        home_and_away=request.home_and_away,
        extra_round=request.extra_round,
        rated_note=rated_note,
        reasons=tuple(reasons),
    )


def validate_arena_settings(request: ArenaRequest) -> ArenaSettings:
    """Check an arena request (AR-1) and return its schedule, or raise CreationError."""
    if not ARENA_MIN_DURATION <= request.duration <= ARENA_MAX_DURATION:
        raise CreationError(
            f"an arena lasts 10 minutes to 8 hours, not {_human(request.duration)} (AR-1)"
        )
    at_once = request.starts_at is None or request.starts_at == request.created_at
    starts_at = request.created_at if request.starts_at is None else request.starts_at
    _check_times(request.created_at, starts_at)
    if not at_once:
        delay = starts_at - request.created_at
        if not START_MIN_DELAY <= delay <= START_MAX_DELAY:
            raise CreationError(
                f"an arena starts at once or between 5 minutes and 14 days after creation; "
                f"{starts_at.isoformat()} is {_human(delay)} after it (AR-1, T-4)"
            )
    return ArenaSettings(
        starts_at=starts_at,
        ends_at=starts_at + request.duration,
        duration=request.duration,
        starts_at_once=at_once,
    )


def _check_times(created_at: datetime, starts_at: datetime) -> None:
    """Times are compared across services and hosts, so they must say their time zone."""
    for name, moment in (("creation time", created_at), ("start time", starts_at)):
        if moment.tzinfo is None or moment.utcoffset() is None:
            raise CreationError(f"the {name} {moment.isoformat()} has no time zone")


def _check_minimum_rating(minimum: int) -> None:
    """R-2: steps of 100 from 1000 to 2000."""
    if not MIN_RATING_FLOOR <= minimum <= MIN_RATING_CEILING or minimum % MIN_RATING_STEP:
        raise CreationError(
            f"minimum rating {minimum} is not one of 1000, 1100, ..., 2000 (R-2)"
        )


def _check_opening(request: TournamentRequest) -> None:
    """O-5..O-9: official tables exist only for italian and english; a thematic names one opening."""
    mode = request.opening_mode
    if mode.uses_official_table() and request.variant is not None:
        _table_variant(request.variant, mode)
    if mode is OpeningMode.THEMATIC:
        if request.thematic_opening is None:
            raise CreationError("a thematic tournament needs the opening everybody plays (O-9)")
        if not 1 <= request.thematic_opening <= OFFICIAL_OPENINGS:
            raise CreationError(
                f"opening {request.thematic_opening} is not one of the {OFFICIAL_OPENINGS} "
                f"official openings (O-9)"
            )
    elif request.thematic_opening is not None:
        raise CreationError(f"only a thematic tournament names its opening, not {mode} (O-9)")


def _table_variant(variant: str, mode: OpeningMode) -> str:
    """The variant's canonical name, if it has an official table (O-5..O-9); else CreationError."""
    try:
        name = variant_name(variant)
        if not has_table(name):
            raise CreationError(
                f"{name} has no official opening table; "
                f"{mode} is only for italian and english ({mode.rule})"
            )
    except OpeningError as error:
        raise CreationError(str(error)) from None
    return name


def _checked_level(level: int) -> int:
    """An opening level is PARI (0) or 1..4."""
    if not PARI_LEVEL <= level <= MAX_OPENING_LEVEL:
        raise CreationError(f"opening class level {level} is not PARI (0) or 1..4 (O-5..O-8)")
    return level


def _mode_words(mode: OpeningMode) -> str:
    """Name the opening choice the way the creator picked it."""
    if mode is OpeningMode.THEMATIC:
        return "the thematic opening"
    if mode is OpeningMode.TABLE_ALL:
        return "the table of all 174 openings"
    return f"the table up to class {mode.table_class_limit}"


def _human(span: timedelta) -> str:
    """A duration as people read it: 3 days 2 h 5 min."""
    sign = "-" if span < timedelta(0) else ""
    seconds = int(abs(span).total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [
        f"{days} day{'s' if days > 1 else ''}" if days else "",
        f"{hours} h" if hours else "",
        f"{minutes} min" if minutes else "",
        f"{seconds} s" if seconds else "",
    ]
    text = " ".join(p for p in parts if p) or "0 min"
    return sign + text
