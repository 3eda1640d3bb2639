"""Which games move ratings (R-1, R-3, R-4, T-18, T-19, T-8)."""

from __future__ import annotations

import enum

from arbiter.vocabulary import ResultKind

# a single game is fair up to class 2 (2N/2B); level 3 or 4 needs home and away.
MAX_LEVEL_WITHOUT_HOME_AND_AWAY = 2


class RatedReason(enum.StrEnum):
    """Why a game is or is not rated; the values are metric labels."""

    RATED = "rated"
    FRIENDLY = "friendly"
    NEVER_SAT = "never_sat"
    BUSY_FORFEIT = "busy_forfeit"
    BOTH_ABSENT = "both_absent"
    BYE = "bye"


def competition_is_rated(
    rated_requested: bool, max_opening_level: int | None, home_and_away: bool
) -> bool:
    """R-1, R-4: whether a competition is created rated.

    `max_opening_level` is the highest class level the opening mode can produce (PARI = 0;
    the table ceiling for a draw mode, the chosen opening's class for a thematic one) or
    None for free and random-move modes, which never switch rating off. A combination that
    does not hold makes the competition friendly instead of being refused.
    """
    if not rated_requested:
        return False
    if max_opening_level is None or max_opening_level <= MAX_LEVEL_WITHOUT_HOME_AND_AWAY:
        return True
    return home_and_away


def is_game_rated(
    competition_rated: bool, result_kind: ResultKind, both_sat: bool, is_bye: bool
) -> tuple[bool, RatedReason]:
    """R-1, R-3, T-18, T-19, T-8: whether a game moves ratings, and why.

    Reasons that belong to the game come before the competition's own setting, so the
    label says why this game would stay unrated even in a rated competition. R-4 is
    already in `competition_rated` (see `competition_is_rated`).
    """
    if is_bye:
        # T-8: a bye is not a game.
        return False, RatedReason.BYE
    if result_kind is ResultKind.BUSY_FORFEIT:
        # T-18: never opened, so never rated.
        return False, RatedReason.BUSY_FORFEIT
    if result_kind is ResultKind.BOTH_ABSENT:
        # T-19
        return False, RatedReason.BOTH_ABSENT
    if not both_sat or result_kind is ResultKind.NEVER_SAT:
        # one player never sat (never moved), whatever the sat flags say.
        return False, RatedReason.NEVER_SAT
    if not competition_rated:
        # a friendly competition.
        return False, RatedReason.FRIENDLY
    return True, RatedReason.RATED
