"""Creation rules: the settings' ranges and R-4's rated switch (A-3, T-1, T-3..T-5, R-2, R-4, AR-1)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.competition.creation import (
    ArenaRequest,
    CreationError,
    TournamentRequest,
    opening_level_ceiling,
    validate_arena_settings,
    validate_tournament_settings,
)
from arbiter.openings.modes import OpeningMode

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
M = OpeningMode


def request(**changes: object) -> TournamentRequest:
    """A valid request: registered creator, start in one hour, two hours long, 32 places."""
    base = TournamentRequest(
        created_at=NOW,
        starts_at=NOW + timedelta(hours=1),
        duration=timedelta(hours=2),
        capacity=32,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def refused(message: str, **changes: object) -> None:
    """The request with these changes is refused with a message containing `message`."""
    with pytest.raises(CreationError) as error:
        validate_tournament_settings(request(**changes))
    assert message in str(error.value)


def test_defaults() -> None:
    settings = validate_tournament_settings(request())
    assert (settings.threshold, settings.minimum_entrants, settings.capacity) == (7, 4, 32)
    assert settings.rated and settings.rated_note == ""
    assert not settings.private and not settings.invite_link and settings.password is None
    assert settings.opening_mode is M.FREE and settings.opening_level is None
    assert settings.closes_at == NOW + timedelta(hours=3)
    # the creator is not entered by creating.
    assert any("(A-3)" in reason for reason in settings.reasons)


def test_t1_threshold() -> None:
    for threshold in range(7, 21):
        assert validate_tournament_settings(request(threshold=threshold)).threshold == threshold
    refused("threshold 25 is outside 7..20 (T-1)", threshold=25)
    refused("threshold 6 is outside 7..20 (T-1)", threshold=6)


def test_t3_capacity_and_minimum_exhaustive() -> None:
    for capacity, minimum in itertools.product(range(0, 203, 7), range(0, 203, 7)):
        req = request(capacity=capacity, minimum_entrants=minimum)
        if 4 <= capacity <= 200 and 4 <= minimum <= capacity:
            settings = validate_tournament_settings(req)
            assert (settings.capacity, settings.minimum_entrants) == (capacity, minimum)
        else:
            with pytest.raises(CreationError, match=r"\(T-3\)"):
                validate_tournament_settings(req)
    refused("capacity 201 is outside 4..200 (T-3)", capacity=201)
    refused("minimum 3 is below 4: the creator may only raise it (T-3)", minimum_entrants=3)
    refused("minimum 40 is above the capacity 32 (T-3)", minimum_entrants=40)


@pytest.mark.parametrize(
    ("delay", "ok"),
    [
        (timedelta(minutes=5), True),
        (timedelta(days=14), True),
        (timedelta(days=3, hours=2), True),
        (timedelta(minutes=4, seconds=59), False),
        (timedelta(0), False),
        (timedelta(minutes=-30), False),
        (timedelta(days=14, seconds=1), False),
    ],
)
def test_t4_start_window(delay: timedelta, ok: bool) -> None:
    req = request(starts_at=NOW + delay)
    if ok:
        assert validate_tournament_settings(req).starts_at == NOW + delay
    else:
        with pytest.raises(CreationError, match=r"between 5 minutes and 14 days after creation; .* \(T-4\)"):
            validate_tournament_settings(req)


def test_t4_message_for_people() -> None:
    refused(
        "the start must be between 5 minutes and 14 days after creation; "
        "2026-12-16T10:00:00+00:00 is 15 days after it (T-4)",
        starts_at=NOW + timedelta(days=15),
    )


def test_times_need_a_time_zone() -> None:
    refused("has no time zone", starts_at=datetime(2026, 12, 1, 12, 0))


def test_t15_duration_must_be_positive() -> None:
    refused("the duration must be positive", duration=timedelta(0))


def test_t15_duration_has_a_ceiling_of_thirty_days() -> None:
    refused("at most 30 days", duration=timedelta(days=30, minutes=1))
    refused("at most 30 days", duration=timedelta(minutes=2**31 - 1))
    assert validate_tournament_settings(request(duration=timedelta(days=30))).duration == timedelta(days=30)


def test_t5_private_tournaments() -> None:
    settings = validate_tournament_settings(request(private=True))
    assert settings.invite_link and settings.password is None
    settings = validate_tournament_settings(request(private=True, password="s3cret"))
    assert settings.invite_link and settings.password == "s3cret"
    assert any("invite link or the password (T-5)" in reason for reason in settings.reasons)
    refused("a password needs a private tournament (T-5)", password="s3cret")
    # An empty password is no password.
    assert validate_tournament_settings(request(password="")).password is None


@pytest.mark.parametrize("minimum", range(1000, 2001, 100))
def test_r2_minimum_rating_steps(minimum: int) -> None:
    assert validate_tournament_settings(request(minimum_rating=minimum)).minimum_rating == minimum


@pytest.mark.parametrize("minimum", [0, 900, 1050, 1999, 2100, -1000])
def test_r2_minimum_rating_refused(minimum: int) -> None:
    refused(f"minimum rating {minimum} is not one of 1000, 1100, ..., 2000 (R-2)", minimum_rating=minimum)


def test_r2_friendly_has_no_minimum() -> None:
    refused("a friendly tournament has no minimum rating (R-2)", rated=False, minimum_rating=1500)


# (mode, level) -> does a single game stay rated?
R4_CASES = [
    (M.FREE, None, True),
    (M.RANDOM_1, None, True),
    (M.RANDOM_2, None, True),
    (M.RANDOM_3, None, True),
    (M.TABLE_UP_TO_1, None, True),
    (M.TABLE_UP_TO_2, None, True),
    (M.TABLE_UP_TO_3, None, False),
    (M.TABLE_ALL, None, False),
    (M.THEMATIC, 0, True),
    (M.THEMATIC, 1, True),
    (M.THEMATIC, 2, True),
    (M.THEMATIC, 3, False),
    (M.THEMATIC, 4, False),
]


# R-4 with the real tables: (variant, mode, thematic opening) -> level read from the table.
# Italian: no. 4 PARI, 1 class 1, 8 class 2, 3 class 3, 6 class 4; english: 1 PARI, 7, 5, 3 (barred).
R4_TABLE_CASES = [
    ("italian", M.TABLE_UP_TO_1, None, 1),
    ("italian", M.TABLE_UP_TO_2, None, 2),
    ("italian", M.TABLE_UP_TO_3, None, 3),
    ("italian", M.TABLE_ALL, None, 4),
    ("english", M.TABLE_UP_TO_2, None, 2),
    ("english", M.TABLE_UP_TO_3, None, 3),
    ("english", M.TABLE_ALL, None, 3),
    ("checkers", M.TABLE_ALL, None, 3),
    ("italian", M.THEMATIC, 4, 0),
    ("italian", M.THEMATIC, 1, 1),
    ("italian", M.THEMATIC, 8, 2),
    ("italian", M.THEMATIC, 3, 3),
    ("italian", M.THEMATIC, 6, 4),
    ("english", M.THEMATIC, 1, 0),
    ("english", M.THEMATIC, 5, 2),
    ("english", M.THEMATIC, 3, 3),
]


def assert_r4(settings_for: object, single_rated: bool) -> None:
    """Check the rated switch over every (rated, home and away) request."""
    for rated, double in itertools.product((True, False), (True, False)):
        settings = settings_for(rated, double)  # type: ignore[operator]
        # Friendly stays friendly; rated stays rated when fair, and home and away always makes it fair.
        assert settings.rated == (rated and (single_rated or double))
        switched = rated and not settings.rated
        assert bool(settings.rated_note) == switched
        if switched:
            assert settings.rated_note.startswith("created friendly: ")
            assert settings.rated_note.endswith("switch home and away on to keep it rated (R-4)")
            assert settings.rated_note in settings.reasons


@pytest.mark.parametrize(("mode", "level", "single_rated"), R4_CASES)
def test_r4_rated_switch_from_given_levels(mode: OpeningMode, level: int | None, single_rated: bool) -> None:
    thematic = 57 if mode is M.THEMATIC else None

    def settings_for(rated: bool, double: bool) -> object:
        return validate_tournament_settings(
            request(
                opening_mode=mode,
                opening_level=level,
                thematic_opening=thematic,
                rated=rated,
                home_and_away=double,
            )
        )

    assert_r4(settings_for, single_rated)


@pytest.mark.parametrize(("variant", "mode", "thematic", "level"), R4_TABLE_CASES)
def test_r4_rated_switch_from_the_official_tables(
    variant: str, mode: OpeningMode, thematic: int | None, level: int
) -> None:
    def settings_for(rated: bool, double: bool) -> object:
        return validate_tournament_settings(
            request(
                opening_mode=mode,
                variant=variant,
                thematic_opening=thematic,
                rated=rated,
                home_and_away=double,
            )
        )

    assert settings_for(True, True).opening_level == level  # type: ignore[attr-defined]
    assert_r4(settings_for, level <= 2)


def test_a_given_level_must_agree_with_the_table() -> None:
    refused(
        "class level 1 was given, but the italian table says 3 for thematic (O-9)",
        opening_mode=M.THEMATIC, variant="italian", thematic_opening=3, opening_level=1,
    )  # fmt: skip
    refused(
        "class level 2 was given, but the english table says 3 for table_up_to_3 (O-7)",
        opening_mode=M.TABLE_UP_TO_3, variant="checkers", opening_level=2,
    )  # fmt: skip


def test_r4_messages() -> None:
    settings = validate_tournament_settings(request(opening_mode=M.TABLE_UP_TO_3))
    assert settings.rated_note == (
        "created friendly: the table up to class 3 reaches class 3, and a single game is fair "
        "only up to class 2; switch home and away on to keep it rated (R-4)"
    )
    settings = validate_tournament_settings(request(opening_mode=M.TABLE_ALL, variant="italian"))
    assert settings.opening_level == 4
    assert "the table of all 174 openings reaches class 4" in settings.rated_note
    settings = validate_tournament_settings(
        request(opening_mode=M.THEMATIC, opening_level=3, thematic_opening=12)
    )
    assert "the thematic opening reaches class 3" in settings.rated_note


def test_r4_switch_drops_the_minimum_rating() -> None:
    settings = validate_tournament_settings(request(opening_mode=M.TABLE_ALL, minimum_rating=1600))
    assert not settings.rated and settings.minimum_rating is None
    assert any("minimum rating 1600 dropped" in reason and "(R-2)" in reason for reason in settings.reasons)
    kept = validate_tournament_settings(
        request(opening_mode=M.TABLE_ALL, minimum_rating=1600, home_and_away=True)
    )
    assert kept.rated and kept.minimum_rating == 1600


def test_r4_capacity_four_is_always_double_by_t10() -> None:
    settings = validate_tournament_settings(request(opening_mode=M.TABLE_ALL, capacity=4))
    assert settings.rated and not settings.home_and_away
    assert any("(T-10)" in reason for reason in settings.reasons)
    assert not validate_tournament_settings(request(opening_mode=M.TABLE_ALL, capacity=5)).rated


def test_table_levels() -> None:
    assert opening_level_ceiling(M.FREE) is None
    assert opening_level_ceiling(M.RANDOM_3, variant="international") is None
    assert [opening_level_ceiling(m) for m in (M.TABLE_UP_TO_1, M.TABLE_UP_TO_2, M.TABLE_UP_TO_3)] == [1, 2, 3]
    assert opening_level_ceiling(M.TABLE_ALL, variant="italian") == 4
    assert opening_level_ceiling(M.TABLE_ALL, variant="english") == 3
    # Without a variant, all 174 counts the lower of the two ceilings, still beyond class 2.
    assert opening_level_ceiling(M.TABLE_ALL) == 3
    # Without a variant the caller may pass the real ceiling of the table it draws from.
    assert opening_level_ceiling(M.TABLE_UP_TO_3, opening_level=2) == 2
    assert opening_level_ceiling(M.THEMATIC, opening_level=4) == 4
    # A thematic without its opening number takes the level as given, even with a variant.
    assert opening_level_ceiling(M.THEMATIC, variant="italian", opening_level=2) == 2
    with pytest.raises(CreationError, match=r"a table up to class 1 cannot reach class 3 \(O-5\)"):
        opening_level_ceiling(M.TABLE_UP_TO_1, opening_level=3)
    with pytest.raises(CreationError, match=r"not to free \(O-1\)"):
        opening_level_ceiling(M.FREE, opening_level=1)
    with pytest.raises(CreationError, match=r"PARI \(0\) or 1..4"):
        opening_level_ceiling(M.THEMATIC, opening_level=5)
    with pytest.raises(CreationError, match="unknown draughts variant 'nope'"):
        opening_level_ceiling(M.TABLE_ALL, variant="nope")


def test_o9_thematic_needs_one_official_opening_and_its_level() -> None:
    refused("needs the opening everybody plays (O-9)", opening_mode=M.THEMATIC, opening_level=1)
    refused("needs the chosen opening's class (O-9, R-4)", opening_mode=M.THEMATIC, thematic_opening=3)
    refused(
        "opening 175 is not one of the 174 official openings (O-9)",
        opening_mode=M.THEMATIC,
        thematic_opening=175,
        opening_level=1,
    )
    refused("only a thematic tournament names its opening", thematic_opening=3)


@pytest.mark.parametrize("mode", [M.TABLE_UP_TO_1, M.TABLE_ALL, M.THEMATIC])
def test_official_tables_only_for_italian_and_english(mode: OpeningMode) -> None:
    refused(
        f"international has no official opening table; {mode} is only for italian and english ({mode.rule})",
        opening_mode=mode,
        variant="international",
        thematic_opening=1 if mode is M.THEMATIC else None,
        opening_level=1 if mode is M.THEMATIC else None,
    )
    # Free and random-move modes work in every variant.
    assert validate_tournament_settings(request(opening_mode=M.RANDOM_2, variant="international")).rated


def test_opening_mode_vocabulary() -> None:
    assert [m.rule for m in OpeningMode] == [f"O-{i}" for i in range(1, 10)]
    assert [m.random_moves for m in OpeningMode] == [0, 1, 2, 3, 0, 0, 0, 0, 0]
    assert [m.is_table_draw() for m in OpeningMode] == [False] * 4 + [True] * 4 + [False]
    assert [m.uses_official_table() for m in OpeningMode] == [False] * 4 + [True] * 5


@given(
    capacity=st.integers(-5, 210),
    minimum=st.integers(-5, 210),
    threshold=st.integers(0, 30),
    delay_minutes=st.integers(-60, 15 * 24 * 60),
    rated=st.booleans(),
    double=st.booleans(),
    mode=st.sampled_from(OpeningMode),
    level=st.integers(0, 4),
)
def test_validation_never_returns_settings_outside_the_rules(
    capacity: int,
    minimum: int,
    threshold: int,
    delay_minutes: int,
    rated: bool,
    double: bool,
    mode: OpeningMode,
    level: int,
) -> None:
    req = request(
        capacity=capacity,
        minimum_entrants=minimum,
        threshold=threshold,
        starts_at=NOW + timedelta(minutes=delay_minutes),
        rated=rated,
        home_and_away=double,
        opening_mode=mode,
        opening_level=level if mode is M.THEMATIC else None,
        thematic_opening=1 if mode is M.THEMATIC else None,
    )
    try:
        settings = validate_tournament_settings(req)
    except CreationError as error:
        # Every refusal names its rule.
        assert "(" in str(error) and str(error).endswith(")")
        return
    assert 7 <= settings.threshold <= 20
    assert 4 <= settings.minimum_entrants <= settings.capacity <= 200
    assert timedelta(minutes=5) <= settings.starts_at - settings.created_at <= timedelta(days=14)
    assert not (settings.rated and not rated)
    if settings.rated and settings.opening_level is not None and settings.opening_level > 2:
        assert settings.home_and_away or settings.capacity == 4


# ------------------------------------------------------------------------ arena


def arena(**changes: object) -> ArenaRequest:
    """A valid arena request starting at once, one hour long."""
    base = ArenaRequest(
        created_at=NOW,
        duration=timedelta(hours=1),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_ar1_arena_at_once() -> None:
    settings = validate_arena_settings(arena())
    assert settings.starts_at_once and settings.starts_at == NOW
    assert settings.ends_at == NOW + timedelta(hours=1)
    assert validate_arena_settings(arena(starts_at=NOW)).starts_at_once


@pytest.mark.parametrize(
    ("duration", "ok"),
    [
        (timedelta(minutes=10), True),
        (timedelta(hours=8), True),
        (timedelta(minutes=9, seconds=59), False),
        (timedelta(hours=8, seconds=1), False),
        (timedelta(0), False),
    ],
)
def test_ar1_arena_duration(duration: timedelta, ok: bool) -> None:
    if ok:
        assert validate_arena_settings(arena(duration=duration)).duration == duration
    else:
        with pytest.raises(CreationError, match=r"an arena lasts 10 minutes to 8 hours, not .* \(AR-1\)"):
            validate_arena_settings(arena(duration=duration))


@pytest.mark.parametrize(
    ("delay", "ok"),
    [
        (timedelta(minutes=5), True),
        (timedelta(days=14), True),
        (timedelta(minutes=1), False),
        (timedelta(days=15), False),
        (timedelta(minutes=-1), False),
    ],
)
def test_ar1_arena_scheduled_start_uses_the_t4_window(delay: timedelta, ok: bool) -> None:
    if ok:
        settings = validate_arena_settings(arena(starts_at=NOW + delay))
        assert not settings.starts_at_once and settings.ends_at == NOW + delay + timedelta(hours=1)
    else:
        with pytest.raises(CreationError, match=r"\(AR-1, T-4\)"):
            validate_arena_settings(arena(starts_at=NOW + delay))

