"""The FIDE Dutch system, 2025 edition (C.04.3, in force since 1 February 2026), on a TRF model (T-13).

Where each part of the edition lives:

- Article 1 (definitions): here. `round_players` derives, from the rounds played, each
  player's score (1.2, with acceleration), colour difference and preference (1.6, 1.7, the
  unplayed rounds skipped as C.04.2 says), floats (1.4: an unplayed round floats down only
  when it scored more than a loss), bye eligibility (C.04.1 Art. 4 / [C2]: no second
  pairing-allocated bye, none after a round scored as a win without playing, F included) and
  topscorers (1.8).
- Articles 2-4 (the criteria [C1]-[C21], the brackets, the order in which candidates are
  generated): the compiled core, `_dutch_core.c`, called by `pair_round`.
- Article 5 (colour allocation): `_colours`, here.
- Board order (C.04.2, the order pairings are published): `_board_key`, here.

Deterministic: the same TRF model always gives the same pairing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from arbiter.competition import _dutch_core
from arbiter.competition.swiss_model import PairingError
from arbiter.competition.trf import BLACK, NOT_PAIRED, WHITE, TrfEntry, TrfTournament

__all__ = ["DutchPairing", "DutchPlayer", "EngineFault", "NoValidPairing", "pair_round", "round_players"]

_PREF_CODE: Final = {None: 0, WHITE: 1, BLACK: 2}
_FLOAT_NONE: Final = 0
_FLOAT_DOWN: Final = 1
_FLOAT_UP: Final = 2


class NoValidPairing(PairingError):
    """No pairing of the round complies with the absolute criteria [C1]-[C3] (1.9.3: the arbiter decides)."""


class EngineFault(PairingError):
    """The engine failed to produce a pairing it can vouch for: a fault of the engine, never a pairing."""


@dataclass(frozen=True, slots=True)
class DutchPlayer:
    """One player as the round to pair sees them (Article 1)."""

    number: int  # starting number
    rank: int  # pairing number among the players of the round, 0-based (C.04.2)
    score: int  # tenths, without acceleration
    pairing_score: int  # tenths, with acceleration (1.2)
    present: bool
    colours: str  # colours of played games, oldest first
    preference: str | None  # 1.7
    imbalance: int  # |colour difference| (1.6)
    repeated: str | None  # the colour of the last two played games when they are equal
    strong: bool
    float1: int  # float of the previous round (1.4)
    float2: int  # float two rounds before
    played: int
    eligible_for_bye: bool  # [C2]
    topscorer: bool  # 1.8
    opponents: frozenset[int]  # met in played games ([C1])

    @property
    def absolute(self) -> bool:
        """An absolute colour preference (1.7.1)."""
        return self.imbalance > 1 or self.repeated is not None


@dataclass(frozen=True, slots=True)
class DutchPairing:
    """The pairing of one round in starting numbers: (white, black) per board in board order, and the bye."""

    round: int
    pairs: tuple[tuple[int, int], ...]
    bye: int | None


def round_players(tournament: TrfTournament, played_rounds: int | None = None) -> dict[int, DutchPlayer]:
    """Every player of the file as round `played_rounds + 1` sees them (the next round by default)."""
    played_rounds = tournament.played_rounds if played_rounds is None else played_rounds
    system = tournament.points
    entries = {
        number: tournament.players[number].entries[: played_rounds + 1] for number in tournament.players
    }
    history = {number: _padded(e[:played_rounds], played_rounds) for number, e in entries.items()}
    # Each player's score after each round (running[n][i]: the first i rounds): floats compare the
    # scores two players had before an earlier round, for which every round is summed once.
    running: dict[int, list[int]] = {}
    for number, h in history.items():
        total = 0
        sums = [0]
        for entry in h:
            total += entry.points(system)
            sums.append(total)
        running[number] = sums

    def score_before(number: int, rounds_back: int) -> int:
        round_index = played_rounds - rounds_back
        return running[number][round_index] + tournament.acceleration(number, round_index)

    rank = 0
    top_threshold = played_rounds * max(system.win, system.draw) // 2
    last_round = played_rounds >= tournament.rounds - 1
    players = {}
    for number in tournament.rank_order:
        own = entries[number]
        present = len(own) <= played_rounds or own[played_rounds].paired
        if not present and not any(e.paired for e in own):
            continue  # not in the tournament yet: no pairing number (C.04.2)
        h = history[number]
        played = [e for e in h if e.played]
        colours = "".join(e.colour for e in played)
        preference, imbalance, repeated, strong = _colour_preference(colours)
        score = running[number][-1]
        pairing_score = score + tournament.acceleration(number, played_rounds)
        players[number] = DutchPlayer(
            number=number,
            rank=rank,
            score=score,
            pairing_score=pairing_score,
            present=present,
            colours=colours,
            preference=preference,
            imbalance=imbalance,
            repeated=repeated,
            strong=strong,
            float1=_float(h, number, 1, played_rounds, system.loss, tournament, score_before)
            if played_rounds >= 1 else 0,
            float2=_float(h, number, 2, played_rounds, system.loss, tournament, score_before)
            if played_rounds >= 2 else 0,
            played=len(played),
            eligible_for_bye=not any(
                not e.played and (e.is_pairing_bye or e.points(system) >= system.win) for e in h
            ),
            topscorer=last_round and pairing_score > top_threshold,
            opponents=frozenset(e.opponent for e in played if e.opponent is not None),
        )
        rank += 1
    return players


def _padded(entries: Sequence[TrfEntry], rounds: int) -> tuple[TrfEntry, ...]:
    """The first `rounds` entries, rounds not paired added at the end."""
    return tuple(entries) + (NOT_PAIRED,) * (rounds - len(entries))


def _colour_preference(colours: str) -> tuple[str | None, int, str | None, bool]:
    """1.6-1.7: (preference, |difference|, repeated colour, strong) from the played colours."""
    whites = colours.count(WHITE)
    blacks = len(colours) - whites
    lower = BLACK if whites > blacks else WHITE
    imbalance = abs(whites - blacks)
    last = colours[-1] if colours else None
    preference: str | None
    run = 0
    for colour in reversed(colours):
        if colour != last:
            break
        run += 1
    if imbalance > 1:
        preference = lower
    elif run > 1:
        preference = _other(last)
    elif imbalance > 0:
        preference = lower
    elif last is not None:
        preference = _other(last)
    else:
        preference = None
    repeated = last if run > 1 else None
    absolute = imbalance > 1 or repeated is not None
    return preference, imbalance, repeated, (not absolute and imbalance > 0)


def _float(
    h: Sequence[TrfEntry], number: int, rounds_back: int, played_rounds: int, loss_points: int,
    tournament: TrfTournament, score_before: Callable[[int, int], int],
) -> int:
    """1.4: the float a player received `rounds_back` rounds before the round to pair."""
    entry = h[played_rounds - rounds_back]
    if not entry.played:
        return _FLOAT_DOWN if entry.points(tournament.points) > loss_points else _FLOAT_NONE
    assert entry.opponent is not None  # a played entry names its opponent
    own, theirs = score_before(number, rounds_back), score_before(entry.opponent, rounds_back)
    return _FLOAT_DOWN if own > theirs else _FLOAT_UP if own < theirs else _FLOAT_NONE


def _other(colour: str | None) -> str | None:
    return BLACK if colour == WHITE else WHITE if colour == BLACK else None


def _opposite(colour: str) -> str:
    """The other colour of a colour that is one."""
    return BLACK if colour == WHITE else WHITE


def pair_round(tournament: TrfTournament, played_rounds: int | None = None) -> DutchPairing:
    """Pair round `played_rounds + 1` (the next round by default); NoValidPairing when none complies."""
    played_rounds = tournament.played_rounds if played_rounds is None else played_rounds
    if tournament.first_colour is None:
        raise PairingError("the colour of the top seed in round 1 must be given (XXC white1/black1 or 152 W/B)")
    everyone = round_players(tournament, played_rounds)
    present = sorted((p for p in everyone.values() if p.present), key=lambda p: (-p.pairing_score, p.rank))
    index = {p.number: i for i, p in enumerate(present)}
    forbidden = set()
    for p in present:
        for o in p.opponents:
            if o in index:
                forbidden.add((index[p.number], index[o]))
    for group in tournament.forbidden:
        if group.first <= played_rounds + 1 <= group.last:
            members = [index[n] for n in group.players if n in index]
            forbidden.update((a, b) for a in members for b in members if a != b)
    try:
        mates = _dutch_core.pair(
            [p.pairing_score for p in present],
            [int(p.eligible_for_bye) for p in present],
            [_PREF_CODE[p.preference] for p in present],
            [p.imbalance for p in present],
            [_PREF_CODE[p.repeated] for p in present],
            [int(p.strong) for p in present],
            [p.float1 for p in present],
            [p.float2 for p in present],
            [p.played for p in present],
            [int(p.topscorer) for p in present],
            sorted(forbidden),
            played_rounds,
        )
    except RuntimeError as exc:
        raise EngineFault(f"round {played_rounds + 1}: {exc}") from exc
    if mates is None:
        raise NoValidPairing(
            f"round {played_rounds + 1}: no pairing keeps every player to the absolute criteria"
            " (no rematch, no second bye, no two players with the same absolute colour preference)"
        )
    pairs = []
    bye = None
    for i, mate in enumerate(mates):
        a = present[i]
        if mate < 0:
            bye = a.number
            continue
        b = present[mate]
        if a.number < b.number:
            first = _colours(a, b, tournament.first_colour)
            pairs.append((a.number, b.number) if first == WHITE else (b.number, a.number))
    pairs.sort(key=lambda pair: _board_key(everyone[pair[0]], everyone[pair[1]]))
    return DutchPairing(round=played_rounds + 1, pairs=tuple(pairs), bye=bye)


def _ranks_above(a: DutchPlayer, b: DutchPlayer, accelerated: bool) -> bool:
    """Does a rank above b (score, then pairing number)?"""
    sa, sb = (a.pairing_score, b.pairing_score) if accelerated else (a.score, b.score)
    return (sa, -a.rank) > (sb, -b.rank)


def _colours(a: DutchPlayer, b: DutchPlayer, first_colour: str) -> str:
    """Article 5.2: the colour of a against b."""
    granted = _preference_colour(a, b)
    if granted is not None:
        return granted
    higher_a = _ranks_above(a, b, accelerated=True)
    if a.preference is None:
        # 5.2.5: the higher ranked takes the initial colour with an odd pairing number
        if higher_a:
            return first_colour if a.rank % 2 == 0 else _opposite(first_colour)
        return _opposite(first_colour) if b.rank % 2 == 0 else first_colour
    # 5.2.4: the higher ranked player's preference (both have the same one here: 5.2.1-5.2.3 granted
    # a different or a missing one above)
    if higher_a:
        return a.preference
    assert b.preference is not None
    return _opposite(b.preference)


def _preference_colour(a: DutchPlayer, b: DutchPlayer) -> str | None:
    """5.2.1-5.2.3: both preferences, the stronger one, then alternation; None when they do not decide."""
    pa, pb = a.preference, b.preference
    if pa != pb or pa is None or pb is None:
        if pa is not None:
            return pa
        if pb is not None:
            return _other(pb)
        return None
    if a.absolute and (a.imbalance > b.imbalance or not b.absolute):
        return pa
    if b.absolute and (b.imbalance > a.imbalance or not a.absolute):
        return _other(pb)
    if a.strong and not b.strong:
        return pa
    if b.strong and not a.strong:
        return _other(pb)
    # 5.2.3: the latest round in which they had different colours (unplayed rounds skipped)
    for ca, cb in zip(reversed(a.colours), reversed(b.colours), strict=False):
        if ca != cb:
            return cb
    return None


def _board_key(white: DutchPlayer, black: DutchPlayer) -> tuple[int, int, int]:
    """Boards by the higher player's score, then the lower player's, then the higher's pairing number."""
    higher, lower = (white, black) if _ranks_above(white, black, accelerated=False) else (black, white)
    return (-higher.score, -lower.score, higher.rank)
