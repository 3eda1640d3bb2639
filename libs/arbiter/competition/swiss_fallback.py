"""Our own small Swiss pairing, used only when the FIDE Dutch engine fails or breaks a rule (T-13).

Score groups and backtracking: entrants are taken best score first (then initial rank) and
each is matched with the nearest-score opponent still free that the absolute rules allow;
a dead end undoes the last choice. It keeps the absolute rules (no rematch, one bye per
player while others have none, colour rules unless waived) but not the Dutch quality
criteria: it is a safety net, not a second pairing system.

The search is complete for the field sizes where a pairing can really be impossible; on
large fields it stops after a step budget and says so rather than hang.

Pure: standard library only, deterministic.
"""

from __future__ import annotations

from typing import Final

from arbiter.competition.swiss_model import (
    BLACK,
    WHITE,
    PairingError,
    PairingState,
    PlayerState,
    avoidable_colour_problem,
    colour_preference,
)

__all__ = ["STEP_BUDGET", "SearchGaveUp", "fallback_pairing"]

STEP_BUDGET: Final = 200_000


class _GaveUp(Exception):
    """The step budget ran out before the search finished."""


class SearchGaveUp(PairingError):
    """The fallback search stopped at its step budget: a pairing may still exist."""


def fallback_pairing(
    state: PairingState, *, colour_rules: bool = True, budget: int = STEP_BUDGET
) -> tuple[list[tuple[int, int]], int | None]:
    """A legal (white, black) pairing and bye for `state`; PairingError if none exists or the search gives up."""
    players = sorted(state.players, key=lambda p: (-p.score, p.rank))
    by_id = {p.id: p for p in players}
    allowed: dict[int, set[int]] = {p.id: set() for p in players}
    for i, a in enumerate(players):
        for b in players[i + 1 :]:
            if state.may_meet(a, b) and (not colour_rules or _colour_options(a, b, state.double)):
                allowed[a.id].add(b.id)
                allowed[b.id].add(a.id)
    order = _candidate_order(players, allowed)
    steps = 0

    def solve(free: set[int]) -> list[tuple[int, int]] | None:
        nonlocal steps
        if not free:
            return []
        steps += 1
        if steps > budget:
            raise _GaveUp
        # Forward check: a player with no partner left is a dead end; one with a single
        # partner is forced, so it goes first (keeps the search small).
        top, pick, fewest = None, None, len(free)
        for player in players:
            if player.id not in free:
                continue
            top = top if top is not None else player.id
            count = len(allowed[player.id] & free)
            if count == 0:
                return None
            if count < fewest:
                pick, fewest = player.id, count
        if pick is None or fewest > 1:
            pick = top
        assert pick is not None
        free.discard(pick)
        for opponent in order[pick]:
            if opponent in free:
                free.discard(opponent)
                rest = solve(free)
                free.add(opponent)
                if rest is not None:
                    free.add(pick)
                    return [(pick, opponent), *rest]
        free.add(pick)
        return None

    everyone = {p.id for p in players}
    try:
        if len(players) % 2 == 0:
            matching, bye = solve(set(everyone)), None
        else:
            matching, bye = None, None
            for candidate in _bye_candidates(players):
                matching = solve(everyone - {candidate})
                if matching is not None:
                    bye = candidate
                    break
    except _GaveUp:
        raise SearchGaveUp(
            f"no legal pairing found: the fallback search gave up after {budget} steps"
        ) from None
    if matching is None:
        rules = "no rematch, one bye each, colour rules" if colour_rules else "no rematch, one bye each"
        raise PairingError(
            f"no legal pairing exists for round {state.round} ({rules}; searched {steps} steps)"
        )
    pairs = [_colours(by_id[a], by_id[b], state.double, colour_rules) for a, b in matching]
    pairs.sort(key=lambda pair: _board_key(by_id[pair[0]], by_id[pair[1]]))
    return pairs, bye


def _bye_candidates(players: list[PlayerState]) -> list[int]:
    """Who may take the bye, best first: fewest byes (T-8), no forfeit win (C.04.1 d), lowest score and rank."""
    fewest = min(p.byes for p in players)
    eligible = [p for p in players if p.byes == fewest]
    eligible.sort(key=lambda p: (p.forfeit_wins > 0, p.score, -p.rank))
    return [p.id for p in eligible]


def _candidate_order(players: list[PlayerState], allowed: dict[int, set[int]]) -> dict[int, list[int]]:
    """Each player's opponents, best first: same score group, then nearest score, compatible colours,
    and inside the group the Dutch shape (top half against bottom half)."""
    groups: dict[int, list[int]] = {}
    for p in players:
        groups.setdefault(p.score, []).append(p.id)
    position = {number: (score, i) for score, members in groups.items() for i, number in enumerate(members)}
    by_id = {p.id: p for p in players}
    order: dict[int, list[int]] = {}
    for p in players:
        score, i = position[p.id]
        half = len(groups[score]) // 2
        side, _ = colour_preference(p.colours)

        def key(
            other: int, p: PlayerState = p, i: int = i, half: int = half, side: str | None = side
        ) -> tuple[int, bool, int, int]:
            q = by_id[other]
            q_side, _ = colour_preference(q.colours)
            clash = side is not None and side == q_side
            offset = abs(position[other][1] - (i + half)) if q.score == p.score else 0
            return (abs(q.score - p.score), clash, offset, q.rank)

        order[p.id] = sorted(allowed[p.id], key=key)
    return order


def _colour_options(a: PlayerState, b: PlayerState, double: bool) -> list[bool]:
    """Which of 'a white' (True) and 'a black' (False) keep C.04.1 f/g for both players."""
    options = []
    for a_white in (True, False):
        if avoidable_colour_problem(a.id, a.colours, double, a_white) is None and (
            avoidable_colour_problem(b.id, b.colours, double, not a_white) is None
        ):
            options.append(a_white)
    return options


def _colours(a: PlayerState, b: PlayerState, double: bool, check_colours: bool) -> tuple[int, int]:
    """(white, black) for a pair, after FIDE C.04.3 E.1-E.5 in short, within the colour rules if they bind."""
    options = _colour_options(a, b, double) if check_colours else [True, False]
    if len(options) == 1:
        return (a.id, b.id) if options[0] else (b.id, a.id)
    a_side, a_strength = colour_preference(a.colours)
    b_side, b_strength = colour_preference(b.colours)
    higher = a if (-a.score, a.rank) <= (-b.score, b.rank) else b
    if a_side != b_side:
        # E.1: both preferences can be granted (or only one player has one).
        a_white = a_side == WHITE or b_side == BLACK
    elif a_strength != b_strength:
        # E.2: the stronger preference wins.
        a_white = (a_side == WHITE) == (a_strength > b_strength)
    elif a_side is not None:
        # E.4 (E.3 skipped): the higher-ranked player gets the preference.
        a_white = (a_side == WHITE) == (higher is a)
    else:
        # E.5: nobody has a colour yet: the higher-ranked player alternates from board 1 white.
        higher_white = higher.rank % 2 == 1
        a_white = higher_white == (higher is a)
    return (a.id, b.id) if a_white else (b.id, a.id)


def _board_key(white: PlayerState, black: PlayerState) -> tuple[int, int, int]:
    """Board order as C.04.3 D.9: higher score of the pair, then score sum, then best initial rank."""
    return (-max(white.score, black.score), -(white.score + black.score), min(white.rank, black.rank))
