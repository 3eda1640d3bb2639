"""TRF(x) export and parsing for the Swiss pairing (T-13): FIDE TRF-06 player lines plus the
JaVaFo X codes (XXR rounds, XXS points, XXC colour of the first board, XXP forbidden pairs)
and the bbpPairings BB* point lines, so JaVaFo, bbpPairings, py4swiss and `arbiter pair`
all read the same file with our 2/1/0 points (T-7) and 2-point byes (T-8).

Pure: standard library only. Home-and-away rounds (T-12) are written as two consecutive
TRF rounds with reversed colours, which keeps every engine's colour and score maths right.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from arbiter.competition.swiss_model import (
    PairingError,
    PairingState,
    PlayerState,
    PreparedTournament,
    SwissEntrant,
    SwissRound,
    prepare,
)

__all__ = [
    "TrfError",
    "TrfPlayer",
    "TrfResult",
    "TrfTournament",
    "parse_trf",
    "relax_forfeit_wins",
    "render_trf",
    "tournament_to_trf",
]

# T-7 and T-8 in JaVaFo's notation (W also covers forfeit wins and full-point byes) ...
SCORING_XXS: Final = "XXS W=2.0 D=1.0 PAB=2.0"
# ... and in bbpPairings' (which ignores XXS).
SCORING_BB: Final = ("BBW  2.0", "BBD  1.0", "BBL  0.0", "BBZ  0.0", "BBF  0.0", "BBU  2.0")
# T-13 wants a deterministic draw: the top seed has white on board 1 (no coin toss).
FIRST_COLOUR: Final = "XXC white1"

_NAME_WIDTH: Final = 33
_RESULTS_AT: Final = 91
_RESULT_STRIDE: Final = 10
_PLAYED_TOKENS: Final = frozenset("1=0WDL")
_TOKENS: Final = frozenset("+-WDL1=0HFUZ ")


class TrfError(ValueError):
    """A TRF file that cannot be read."""


@dataclass(frozen=True, slots=True)
class TrfResult:
    """One round of a TRF player line: opponent (0 for none), colour ("w", "b", "-"), result character."""

    opponent: int
    colour: str
    result: str

    @property
    def played(self) -> bool:
        """Was the game played (TRF: 1 = 0 and W D L count, forfeits and byes do not)?"""
        return self.result in _PLAYED_TOKENS and self.opponent != 0


@dataclass(frozen=True, slots=True)
class TrfPlayer:
    """One 001 line."""

    number: int
    name: str
    rating: int
    points_x10: int
    results: tuple[TrfResult, ...]


@dataclass(frozen=True, slots=True)
class TrfTournament:
    """What a pairing program reads from a TRF(x) file."""

    players: tuple[TrfPlayer, ...]
    rounds: int | None  # XXR
    absent: frozenset[int] = frozenset()  # XXZ: not paired in the next round
    forbidden: frozenset[frozenset[int]] = frozenset()  # XXP
    points_x10: Mapping[str, int] = field(default_factory=dict)  # per scoring code (WW, BW, ..., PAB)

    @property
    def rounds_played(self) -> int:
        """Rounds already in the file; the next one is paired (as py4swiss counts them)."""
        return min((len(p.results) for p in self.players), default=0)

    def points_of(self, result: TrfResult) -> int:
        """Points times ten of one result under the file's point system."""
        code = _SCORING_CODE.get((result.result, result.colour)) or _SCORING_CODE.get((result.result, ""))
        return self.points_x10[code or "ZPB"]

    def pairing_state(self) -> PairingState:
        """The state before the next round, in TRF starting numbers (FIDE: forfeits are unplayed)."""
        played = self.rounds_played
        players = []
        for player in self.players:
            if len(player.results) != played or player.number in self.absent:
                continue
            results = player.results
            players.append(
                PlayerState(
                    id=player.number,
                    rank=player.number,
                    score=sum(self.points_of(r) for r in results),
                    colours="".join(r.colour for r in results if r.played),
                    opponents=frozenset(r.opponent for r in results if r.played),
                    byes=sum(1 for r in results if r.result == "U"),
                    forfeit_wins=sum(1 for r in results if r.result == "+"),
                )
            )
        return PairingState(
            round=played + 1,
            last_round=self.rounds is not None and played + 1 == self.rounds,
            double=False,
            players=tuple(players),
            forbidden=self.forbidden,
        )


# (result, colour) -> scoring code, "" when the colour does not matter (JaVaFo XXS codes).
_SCORING_CODE: Final[dict[tuple[str, str], str]] = {
    ("1", "w"): "WW", ("W", "w"): "WW", ("1", "b"): "BW", ("W", "b"): "BW",
    ("=", "w"): "WD", ("D", "w"): "WD", ("=", "b"): "BD", ("D", "b"): "BD",
    ("0", "w"): "WL", ("L", "w"): "WL", ("0", "b"): "BL", ("L", "b"): "BL",
    ("+", ""): "FW", ("-", ""): "FL", ("U", ""): "PAB", ("F", ""): "FPB",
    ("H", ""): "HPB", ("Z", ""): "ZPB", (" ", ""): "ZPB",
}  # fmt: skip
_DEFAULT_POINTS_X10: Final = {
    "WW": 10, "BW": 10, "WD": 5, "BD": 5, "WL": 0, "BL": 0,
    "ZPB": 0, "HPB": 5, "FPB": 10, "PAB": 10, "FW": 10, "FL": 0,
}  # fmt: skip
# JaVaFo's group codes, and bbpPairings' BB* lines, in terms of the single codes.
_XXS_GROUPS: Final = {
    "W": ("WW", "BW", "FW", "FPB"),
    "D": ("WD", "BD", "HPB"),
    "L": ("WL", "BL", "ZPB", "FL"),
}
_BB_CODES: Final = {
    "BBW": ("WW", "BW", "FW", "FPB"),
    "BBD": ("WD", "BD", "HPB"),
    "BBL": ("WL", "BL"),
    "BBZ": ("ZPB",),
    "BBF": ("FL",),
    "BBU": ("PAB",),
}


def tournament_to_trf(
    entrants: Sequence[SwissEntrant],
    history: Sequence[SwissRound],
    total_rounds: int,
    *,
    double: bool = False,
    name: str = "Arbiter tournament",
) -> str:
    """The whole tournament as a TRF(x) file, so arbiters can re-pair it with their own tools (T-13)."""
    if total_rounds < len(history):
        raise PairingError(f"{len(history)} rounds played but only {total_rounds} in the tournament (T-9)")
    prepared = prepare(entrants, history, double=double)
    return render_trf(prepared, rounds=total_rounds * prepared.legs_per_round, name=name)


def render_trf(prepared: PreparedTournament, *, rounds: int, name: str = "Arbiter tournament") -> str:
    """TRF text of a prepared history with `rounds` as XXR."""
    starts = prepared.start_numbers()
    totals = {n: sum(leg.points for leg in legs) for n, legs in prepared.legs.items()}
    # Column 86-89 is the current rank: points, then initial rank.
    standing = sorted(prepared.entrants, key=lambda e: (-totals[e.number], starts[e.number]))
    places = {e.number: i for i, e in enumerate(standing, start=1)}
    kind = "Swiss, FIDE Dutch (C.04.3)"
    if prepared.double:
        kind += ", home and away: 2 TRF rounds per round"
    lines = [
        f"012 {_clean(name)[:80]}",
        f"062 {len(prepared.entrants)}",
        f"092 {kind}",
        f"XXR {rounds}",
        SCORING_XXS,
        *SCORING_BB,
        FIRST_COLOUR,
    ]
    for pair in sorted(tuple(sorted(starts[n] for n in p)) for p in prepared.unplayed_pairs):
        lines.append(f"XXP {pair[0]} {pair[1]}")
    for entrant in prepared.entrants:
        results = []
        for leg in prepared.legs[entrant.number]:
            opponent = "0000" if leg.opponent is None else f"{starts[leg.opponent]:>4}"
            results.append(f"{opponent} {leg.colour} {leg.token}")
        number = entrant.number
        line = _player_line(starts[number], entrant.name, round(entrant.rating), totals[number], places[number], results)
        lines.append(line)
    return "\n".join(lines) + "\n"


def _player_line(start: int, name: str, rating: int, points: int, rank: int, results: list[str]) -> str:
    """A 001 line in TRF-06 columns: name 15-47, rating 49-52, points 81-84, rank 86-89, rounds from 92."""
    rating_text = str(min(rating, 9999)) if rating > 0 else ""
    points_text = f"{points}.0"
    head = (
        f"001 {start:>4} {'':1}{'':3} {_clean(name)[:_NAME_WIDTH]:<{_NAME_WIDTH}} {rating_text:>4} {'':3} "
        f"{'':>11} {'':10} {points_text:>4} {rank:>4}"
    )
    return head + "".join(f"  {r}" for r in results)


def _clean(text: str) -> str:
    """A name safe for fixed columns: no control characters."""
    return re.sub(r"[\x00-\x1f\x7f]", " ", text).strip()


def relax_forfeit_wins(text: str) -> str:
    """The same TRF with forfeits written as full-point / zero-point byes, so that C.04.1 d no longer keeps
    forfeit winners from the bye (points, colours and floats are unchanged: both are unplayed rounds)."""
    out = []
    for line in text.splitlines():
        if line.startswith("001") and len(line) > _RESULTS_AT:
            chars = list(line)
            for at in range(_RESULTS_AT, len(line), _RESULT_STRIDE):
                token = line[at + 7 : at + 8]
                if token in ("+", "-") and line[at : at + 4].strip() not in ("", "0000"):
                    chars[at : at + 8] = f"0000 - {'F' if token == '+' else 'Z'}"
            line = "".join(chars)
        out.append(line)
    return "\n".join(out) + "\n"


def parse_trf(text: str) -> TrfTournament:
    """Read the TRF(x) fields a pairing program needs (001, XXR/142, XXS, BB*, XXZ, XXP); TrfError if bad."""
    players: dict[int, TrfPlayer] = {}
    rounds: int | None = None
    absent: set[int] = set()
    forbidden: set[frozenset[int]] = set()
    points = dict(_DEFAULT_POINTS_X10)
    pab_set = False
    for row, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r\n")
        code = line[:3]
        try:
            if code == "001":
                player = _parse_player(line)
                if player.number in players:
                    raise TrfError(f"starting number {player.number} is repeated")
                players[player.number] = player
            elif code in ("XXR", "142"):
                rounds = int(line[3:].strip())
            elif code == "XXZ":
                absent.update(int(x) for x in line[3:].split())
            elif code == "XXP":
                ids = [int(x) for x in line[3:].split()]
                if len(ids) != 2:
                    raise TrfError("XXP takes exactly two starting numbers")
                forbidden.add(frozenset(ids))
            elif code == "XXS":
                for part in line[3:].split():
                    key, _, value = part.partition("=")
                    for single in _XXS_GROUPS.get(key, (key,)):
                        if single not in points:
                            raise TrfError(f"unknown XXS code {key!r}")
                        points[single] = _points_x10(value)
                    pab_set = pab_set or key == "PAB"
            elif code in _BB_CODES:
                value = _points_x10(line[3:].strip())
                for single in _BB_CODES[code]:
                    points[single] = value
                # bbpPairings: the bye is worth a win unless BBU says otherwise.
                if code == "BBU":
                    pab_set = True
                elif code == "BBW" and not pab_set:
                    points["PAB"] = value
        except (ValueError, IndexError) as exc:
            message = exc.args[0] if isinstance(exc, TrfError) else f"cannot read {line[:40]!r}"
            raise TrfError(f"line {row}: {message}") from exc
    numbers = sorted(players)
    if numbers != list(range(1, len(numbers) + 1)):
        missing = sorted(set(range(1, len(numbers) + 1)) - set(numbers))
        raise TrfError(f"starting numbers must run 1..{len(numbers)}; missing {missing}")
    if not players:
        raise TrfError("no player (001) lines")
    for player in players.values():
        for index, result in enumerate(player.results, start=1):
            if result.opponent and result.opponent not in players:
                raise TrfError(
                    f"player {player.number}, round {index}: opponent {result.opponent} is not in the file"
                )
    return TrfTournament(
        players=tuple(players[n] for n in numbers),
        rounds=rounds,
        absent=frozenset(absent),
        forbidden=frozenset(forbidden),
        points_x10=points,
    )


def _points_x10(value: str) -> int:
    """'2.0' -> 20, '1' -> 10."""
    whole, _, tenth = value.strip().partition(".")
    return int(whole or "0") * 10 + int((tenth or "0")[:1])


def _parse_player(line: str) -> TrfPlayer:
    """One 001 line by TRF-06 columns."""
    if len(line) < 84:
        raise TrfError("player line shorter than 84 characters")
    rating_text = line[48:52].strip()
    results = []
    tail = line[_RESULTS_AT:].rstrip()
    for at in range(0, len(tail), _RESULT_STRIDE):
        chunk = tail[at : at + 8].ljust(8)
        opponent_text, colour, token = chunk[0:4].strip(), chunk[5], chunk[7].upper()
        if token not in _TOKENS or colour not in "wb- ":
            raise TrfError(f"bad round entry {chunk!r}")
        results.append(TrfResult(int(opponent_text or "0"), colour.replace(" ", "-"), token))
    return TrfPlayer(
        number=int(line[4:8]),
        name=line[14:47].strip(),
        rating=int(rating_text) if rating_text else 0,
        points_x10=_points_x10(line[80:84]),
        results=tuple(results),
    )
