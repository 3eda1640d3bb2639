"""Tournament Report Files (TRF) as Swiss pairing programs exchange them (T-13).

Reading: FIDE's TRF-16 player lines (001), the TRF-2026 codes a pairing program needs (142
rounds, 152 first colour, 162 point system, 192 system, 240 absences, 250 accelerations, 260
forbidden pairs), JaVaFo's TRF(x) codes (XXR, XXC, XXA, XXP; XXS and XXZ are ignored, as the
reference engine ignores them, like the header lines 012..132) and bbpPairings' point lines
(BBW, BBD, BBL, BBZ, BBF, BBU). What a file means follows the reference engine the
corpus under tests/data/swiss-corpus was made with, so that `arbiter pair` answers as it does:

- a round entry is `oooo c r` at column 92, 102, ...: opponent (`0000` none), colour
  (w, b, -), result (1 = 0 W D L played; + - forfeits; H F U Z no opponent; lower case too);
- blank entries before a later one are rounds the player was not paired in (a late entrant);
  a line that stops early is padded the same way, so a withdrawn player is paired again
  unless marked absent;
- an entry in the column of the round to pair marks an absence (H F Z - ...), as a 240 line does;
- the points column must equal the results under the point system (the round to pair and
  any acceleration may or may not be counted in it);
- without XXC / 152 the first colour is inferred from round 1.

Writing: `tournament_to_trf` renders one of our tournaments (T-7 points, T-8 byes, T-12
home-and-away rounds as two TRF rounds) in the same form the corpus uses, and the pairs that
met only through a forfeit (T-13) as 260 lines forbidding them from the next round on, so that
the reference engine, and `arbiter pair --check`, re-pairs it round by round.

Pure: standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from arbiter.competition.swiss_model import (
    PLAYED_TOKENS,
    NumberedEntrants,
    PairingError,
    PreparedTournament,
    SwissRound,
    prepare,
)

__all__ = [
    "PointSystem",
    "TrfEntry",
    "TrfError",
    "TrfPlayer",
    "TrfTournament",
    "parse_trf",
    "render_trf",
    "tournament_to_trf",
]

WHITE: Final = "w"
BLACK: Final = "b"
NO_COLOUR: Final = "-"
WIN: Final = 2
DRAW: Final = 1
LOSS: Final = 0

# T-7 and T-8 for bbpPairings (BB*) and JaVaFo (XXS); the first colour of T-13 (no coin toss).
SCORING_XXS: Final = "XXS W=2.0 D=1.0 PAB=2.0"
SCORING_BB: Final = ("BBW  2.0", "BBD  1.0", "BBL  0.0", "BBZ  0.0", "BBF  0.0", "BBU  2.0")
FIRST_COLOUR: Final = "XXC white1"

_RESULTS_AT: Final = 91
_RESULT_STRIDE: Final = 10
_NAME_WIDTH: Final = 33
_WINS: Final = frozenset("+W1FU")
_DRAWS: Final = frozenset("D=H")
_LOSSES: Final = frozenset("-L0Z ")
_UNPLAYED: Final = frozenset("+-HFUZ ")
_SYSTEMS: Final = {
    "FIDE_DUTCH": False, "FIDE_DUTCH_2025": False, "FIDE_DUTCH_BAKU": True, "FIDE_DUTCH_2025_BAKU": True,
    "FIDE_BURSTEIN": False, "FIDE_BURSTEIN_BAKU": True,
}  # fmt: skip


class TrfError(ValueError):
    """A TRF file that cannot be read: the message says which line and why."""


@dataclass(frozen=True, slots=True)
class PointSystem:
    """Points in tenths per kind of result (the defaults are FIDE's 1 / 0.5 / 0)."""

    win: int = 10
    draw: int = 5
    loss: int = 0
    zero_bye: int = 0
    forfeit_loss: int = 0
    pairing_bye: int = 10


@dataclass(frozen=True, slots=True)
class TrfEntry:
    """One round of a player: opponent (None for none), colour, result class, played or not."""

    opponent: int | None
    colour: str  # WHITE, BLACK or NO_COLOUR
    outcome: int  # WIN, DRAW or LOSS
    played: bool
    # paired in that round: an opponent, a pairing-allocated bye (U) or a bye written `+`
    paired: bool
    code: str = " "  # the result character, upper case

    def points(self, system: PointSystem) -> int:
        """Points in tenths under `system` (bbpPairings' reading of each result)."""
        if self.outcome == LOSS:
            if not self.paired:
                return system.zero_bye
            return system.loss if self.played else system.forfeit_loss
        if self.outcome == WIN:
            return system.pairing_bye if self.opponent is None and self.paired else system.win
        return system.draw

    @property
    def is_pairing_bye(self) -> bool:
        """A pairing-allocated bye (or `0000 - +`, which engines read the same way)."""
        return self.opponent is None and self.paired


NOT_PAIRED: Final = TrfEntry(None, NO_COLOUR, LOSS, played=False, paired=False)


@dataclass(frozen=True, slots=True)
class TrfPlayer:
    """One 001 line: starting number, name, rating (0 when none), points in tenths, rounds."""

    number: int
    name: str
    rating: int
    points: int
    entries: tuple[TrfEntry, ...]


@dataclass(frozen=True, slots=True)
class ForbiddenGroup:
    """Players who may not meet each other in rounds first..last (1-based, inclusive)."""

    players: tuple[int, ...]
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class TrfTournament:
    """What a pairing program reads from a TRF: players, rounds, points, colours, constraints."""

    players: Mapping[int, TrfPlayer]
    rank_order: tuple[int, ...]  # starting numbers in pairing-number order (XXC rank: file order)
    rounds: int  # the number of rounds of the tournament (XXR / 142)
    played_rounds: int
    points: PointSystem
    first_colour: str | None  # colour of the top seed in round 1 (XXC / 152, or inferred)
    forbidden: tuple[ForbiddenGroup, ...] = ()
    accelerations: Mapping[int, tuple[int, ...]] = field(default_factory=dict)  # per player, per round

    def entries_until(self, number: int, rounds: int) -> tuple[TrfEntry, ...]:
        """A player's first `rounds` entries, padded with rounds not paired."""
        entries = self.players[number].entries[:rounds]
        return entries + (NOT_PAIRED,) * (rounds - len(entries))

    def acceleration(self, number: int, round_index: int) -> int:
        """Points added for pairing round `round_index` (0-based), in tenths (XXA, 250)."""
        values = self.accelerations.get(number, ())
        return values[round_index] if round_index < len(values) else 0


def parse_trf(text: str, *, next_round: bool = True) -> TrfTournament:
    """Read a TRF; `next_round` when the next round is to be paired (the number of rounds is then
    required, and entries past the last played round are absences). TrfError says what is wrong."""
    reader = _Reader(next_round)
    for row, line in enumerate(_lines(text), start=1):
        if len(line) < 3:
            continue
        try:
            reader.read(line)
        except TrfError as exc:
            raise TrfError(f"line {row}: {exc}") from None
    return reader.finish()


def _lines(text: str) -> Iterable[str]:
    """Lines split at CR, LF or CR LF."""
    for chunk in text.split("\r"):
        yield from chunk.split("\n")


class _Reader:
    """The state of one file being read, line by line."""

    def __init__(self, next_round: bool) -> None:
        self.next_round = next_round
        self.players: dict[int, TrfPlayer] = {}
        self.order: list[int] = []
        self.played_rounds = 0
        self.rounds: int | None = None
        self.first_colour: str | None = None
        self.use_rank = False
        self.points = PointSystem()
        self.bye_points_set = False
        self.forbidden: list[ForbiddenGroup] = []
        self.forbidden_always: list[tuple[int, ...]] = []
        self.absences: list[tuple[int, int]] = []  # (round, player) from 240 lines
        self.accelerations: dict[int, list[int]] = {}
        self.accelerated = False
        self.baku = False

    def read(self, line: str) -> None:
        code = line[:3]
        handler = _HANDLERS.get(code)
        if handler is not None:
            handler(self, line)

    def player(self, line: str) -> None:
        if len(line) < 84:
            raise TrfError(f"a player line has at least 84 characters, this one {len(line)}: {line[:40]!r}")
        number = _player_id(line[4:8])
        rating_text = line[48:52]
        rating = _whole(rating_text, "rating") if rating_text.strip() else 0
        points = _tenths(line[80:84], "points")
        entries: list[TrfEntry] = []
        skipped = 0
        at = _RESULTS_AT
        while at + 8 <= len(line):
            entry, blank = _entry(line[at : at + 8], number)
            if blank:
                skipped += 1
            else:
                entries.extend([NOT_PAIRED] * skipped)
                skipped = 0
                if len(entries) > self.played_rounds:
                    self.played_rounds = len(entries)
                entries.append(entry)
                if entry.paired and len(entries) > self.played_rounds:
                    self.played_rounds = len(entries)
            at += _RESULT_STRIDE
        if line[at:].strip(" "):
            raise TrfError(f"player {number}: unreadable characters after the last round: {line[at:]!r}")
        if number in self.players:
            raise TrfError(f"starting number {number} is repeated")
        self.players[number] = TrfPlayer(number, line[14:47].strip(), rating, points, tuple(entries))
        self.order.append(number)

    def rounds_line(self, line: str) -> None:
        rounds = _whole(line[3:], "number of rounds")
        if rounds <= 0:
            raise TrfError("the number of rounds must be positive")
        self.rounds = rounds

    def colour_config(self, line: str) -> None:
        for token in line[3:].split():
            if token == "rank":
                self.use_rank = True
            elif token == "white1":
                self.first_colour = WHITE
            elif token == "black1":
                self.first_colour = BLACK

    def colour_2026(self, line: str) -> None:
        if len(line) != 5 or line[4] not in "WB":
            raise TrfError(f"152 takes W or B: {line!r}")
        self.first_colour = WHITE if line[4] == "W" else BLACK

    def point_system(self, line: str) -> None:
        if len(line) < 10:
            raise TrfError(f"a 162 line is too short: {line!r}")
        at = 5
        points = self.points
        while at + 5 <= len(line):
            symbol, value = line[at], _tenths(line[at + 1 : at + 5], "162 points")
            if symbol == "W":
                points = replace(points, win=value, pairing_bye=points.pairing_bye if self.bye_points_set else value)
            elif symbol == "D":
                points = replace(points, draw=value)
            elif symbol == "L":
                points = replace(points, loss=value)
            elif symbol == "Z":
                points = replace(points, zero_bye=value, forfeit_loss=value)
            elif symbol == "P":
                points = replace(points, pairing_bye=value)
                self.bye_points_set = True
            else:
                raise TrfError(f"162: unsupported result symbol {symbol!r}")
            at += 9
        if line[at:].strip(" "):
            raise TrfError(f"162: unreadable characters {line[at:]!r}")
        self.points = points

    def bb_points(self, line: str) -> None:
        if len(line) < 8:
            raise TrfError(f"a {line[:3]} line is too short: {line!r}")
        value = _tenths(line[4:12], line[:3])
        code = line[:3]
        if code == "BBW":
            self.points = replace(
                self.points, win=value, pairing_bye=self.points.pairing_bye if self.bye_points_set else value
            )
        elif code == "BBD":
            self.points = replace(self.points, draw=value)
        elif code == "BBL":
            self.points = replace(self.points, loss=value)
        elif code == "BBZ":
            self.points = replace(self.points, zero_bye=value)
        elif code == "BBF":
            self.points = replace(self.points, forfeit_loss=value)
        else:
            self.points = replace(self.points, pairing_bye=value)
            self.bye_points_set = True

    def system(self, line: str) -> None:
        if len(line) < 5 or line[4:] not in _SYSTEMS:
            raise TrfError(f"unsupported tournament type {line[4:]!r}")
        self.baku = _SYSTEMS[line[4:]]

    def absences_2026(self, line: str) -> None:
        if len(line) < 11:
            raise TrfError(f"a 240 line is too short: {line!r}")
        round_number = _round(line[6:9])
        at = 10
        while at + 4 <= len(line):
            self.absences.append((round_number, _player_id(line[at : at + 4])))
            at += 5
        if line[at:].strip(" "):
            raise TrfError(f"240: unreadable characters {line[at:]!r}")

    def acceleration_2026(self, line: str) -> None:
        if len(line) < 31:
            raise TrfError(f"a 250 line is too short: {line!r}")
        if line[4:8].strip() and _tenths(line[4:8], "250 match points"):
            raise TrfError("250: match points must be empty")
        value = _tenths(line[9:13], "250 game points")
        if not value:
            raise TrfError("250: game points must not be zero")
        first, last = _round(line[14:17]), _round(line[18:21])
        low, high = _player_id(line[22:26]), _player_id(line[27:31])
        if first > last or low > high:
            raise TrfError(f"250: empty range in {line!r}")
        for number in range(low, high + 1):
            values = self.accelerations.setdefault(number, [])
            if len(values) < first - 1:
                values.extend([0] * (first - 1 - len(values)))
            for index in range(first - 1, last):
                if index < len(values):
                    values[index] = value
                else:
                    values.append(value)
        self.accelerated = True

    def acceleration_xxa(self, line: str) -> None:
        number = _player_id(line[4:8])
        values = self.accelerations.setdefault(number, [])
        at = 9
        while at + 4 <= len(line):
            chunk = line[at : at + 4]
            values.append(_tenths(chunk, "XXA") if chunk.strip() else 0)
            at += 5
        if line[at:].strip(" "):
            raise TrfError(f"XXA: unreadable characters {line[at:]!r}")
        self.accelerated = True

    def forbidden_2026(self, line: str) -> None:
        if len(line) < 18:
            raise TrfError(f"a 260 line is too short: {line!r}")
        first, last = _round(line[4:7]), _round(line[8:11])
        players = []
        at = 12
        while at + 4 <= len(line):
            players.append(_player_id(line[at : at + 4]))
            at += 5
        if line[at:].strip(" "):
            raise TrfError(f"260: unreadable characters {line[at:]!r}")
        self.forbidden.append(ForbiddenGroup(tuple(players), first, last))

    def forbidden_xxp(self, line: str) -> None:
        self.forbidden_always.append(tuple(_player_id(token) for token in line[3:].split()))

    def team(self, line: str) -> None:
        raise TrfError("team tournaments are not supported")

    def unsupported(self, line: str) -> None:
        raise TrfError("abnormal assignment points (299) are not supported")

    def finish(self) -> TrfTournament:
        if not self.players:
            raise TrfError("no player (001) lines")
        numbers = sorted(self.players)
        if numbers != list(range(1, len(numbers) + 1)) and not self.use_rank:
            missing = sorted(set(range(1, numbers[-1] + 1)) - set(numbers))
            raise TrfError(f"starting numbers must run 1..{numbers[-1]}; missing {missing}")
        played = self.played_rounds
        if self.next_round and all(len(p.entries) > played for p in self.players.values()):
            # every player has an entry past the last paired round: that round was paired too
            played += 1
        if self.rounds is not None and played > self.rounds - (1 if self.next_round else 0):
            raise TrfError(
                f"{played} rounds are in the file but the tournament has {self.rounds} (XXR / 142)"
            )
        if self.next_round and self.rounds is None:
            raise TrfError("the total number of rounds must be given (XXR or 142)")
        rounds = self.rounds if self.rounds is not None else played
        players = {}
        for number, player in self.players.items():
            entries = player.entries + (NOT_PAIRED,) * (played - len(player.entries))
            if self.next_round and len(entries) <= played and any(
                r == played + 1 and p == number for r, p in self.absences
            ):
                entries += (NOT_PAIRED,)
            players[number] = replace(player, entries=entries)
        order = tuple(self.order) if self.use_rank else tuple(numbers)
        for group in self.forbidden + [ForbiddenGroup(g, 1, rounds) for g in self.forbidden_always]:
            for number in group.players:
                if number not in players:
                    raise TrfError(f"forbidden pair names {number}, who is not in the file")
        accelerations = {n: tuple(v) for n, v in self.accelerations.items()}
        if self.baku and not self.accelerated:
            accelerations = _baku(order, rounds, played, self.points)
        for number, values in accelerations.items():
            if len(values) > rounds:
                raise TrfError(f"player {number} has more accelerations than the {rounds} rounds")
        tournament = TrfTournament(
            players=players,
            rank_order=order,
            rounds=rounds,
            played_rounds=played,
            points=self.points,
            first_colour=self.first_colour,
            forbidden=tuple(self.forbidden) + tuple(ForbiddenGroup(g, 1, rounds) for g in self.forbidden_always),
            accelerations=accelerations,
        )
        if tournament.first_colour is None:
            tournament = replace(tournament, first_colour=_inferred_first_colour(tournament))
        _check_opponents(tournament)
        _check_points(tournament)
        return tournament


def _baku(order: Sequence[int], rounds: int, played: int, points: PointSystem) -> dict[int, tuple[int, ...]]:
    """Baku acceleration (192 ..._BAKU): the top half gets a win's points, then a draw's, for the first rounds."""
    if points.loss or points.draw * 2 != points.win:
        raise TrfError("the point system does not suit the Baku acceleration")
    last_rank = (len(order) - 1) // 2
    last_round = (rounds - 1) // 2
    last_full = last_round // 2
    result = {}
    for number in order[: last_rank + 1]:
        values = [points.win if r <= last_full else points.draw for r in range(min(last_round, played) + 1)]
        result[number] = tuple(values)
    return result


def _inferred_first_colour(tournament: TrfTournament) -> str | None:
    """The colour the top seed had in the first round with colours (as bbpPairings infers it)."""
    first = min(
        (i for p in tournament.players.values() for i, e in enumerate(p.entries) if e.colour != NO_COLOUR),
        default=None,
    )
    if first is None:
        return None
    seed = 0
    for number in tournament.rank_order:
        entries = tournament.players[number].entries
        if not any(e.paired for e in entries[: first + 1]):
            continue
        colour = entries[first].colour if first < len(entries) else NO_COLOUR
        if colour != NO_COLOUR:
            return colour if seed % 2 == 0 else _other(colour)
        seed += 1
    return None


def _check_opponents(tournament: TrfTournament) -> None:
    """Both sides of every played game name each other, with opposite colours."""
    for player in tournament.players.values():
        for index, entry in enumerate(player.entries):
            if not entry.played:
                continue
            opponent = tournament.players.get(entry.opponent) if entry.opponent is not None else None
            other = opponent.entries[index] if opponent is not None and index < len(opponent.entries) else None
            if other is None or not other.played or other.colour == entry.colour or other.opponent != player.number:
                raise TrfError(
                    f"round {index + 1} of player {player.number} contradicts the entry of player {entry.opponent}"
                )


def _check_points(tournament: TrfTournament) -> None:
    """The points column equals the results (with or without the round to pair and the acceleration)."""
    played = tournament.played_rounds
    system = tournament.points
    for player in tournament.players.values():
        total = sum(entry.points(system) for entry in player.entries[:played])
        acceleration = tournament.acceleration(player.number, played)
        shown = player.points
        candidates = {shown, shown - acceleration}
        if len(player.entries) > played:
            extra = player.entries[played].points(system)
            candidates |= {shown - extra, shown - extra - acceleration}
        if total not in candidates:
            raise TrfError(
                f"the points of player {player.number} ({_shown(shown)}) do not match the results ({_shown(total)})"
                " under the point system (BBW/BBD/BBU or 162 lines give it)"
            )


def _shown(tenths: int) -> str:
    return f"{tenths // 10}.{tenths % 10}"


def _entry(chunk: str, number: int) -> tuple[TrfEntry, bool]:
    """One 8-character round entry; True when it is blank."""
    opponent_text, colour_char, result_char = chunk[0:4], chunk[5], chunk[7]
    blank = True
    opponent: int | None = None
    if opponent_text != "    ":
        if opponent_text != "0000":
            opponent = _player_id(opponent_text)
            if opponent == number:
                raise TrfError(f"player {number} is paired with themself")
        blank = False
    played = opponent is not None
    if colour_char in "wb":
        colour = colour_char
        blank = False
    elif colour_char == "-":
        colour = NO_COLOUR
        blank = False
        played = False
    elif colour_char == " ":
        colour = NO_COLOUR
        played = False
    else:
        raise TrfError(f"player {number}: bad colour {colour_char!r} in {chunk!r}")
    if opponent is None and colour != NO_COLOUR:
        raise TrfError(f"player {number}: a colour without an opponent in {chunk!r}")
    if not result_char.isascii():
        raise TrfError(f"player {number}: bad result {result_char!r} in {chunk!r}")
    code = result_char.upper()
    if code in _DRAWS:
        outcome = DRAW
    elif code in _WINS:
        outcome = WIN
    elif code in _LOSSES:
        outcome = LOSS
    else:
        raise TrfError(f"player {number}: bad result {result_char!r} in {chunk!r}")
    if code in _UNPLAYED:
        played = False
        if code not in "+-" and opponent is not None:
            raise TrfError(f"player {number}: result {code!r} cannot have an opponent: {chunk!r}")
    elif colour == NO_COLOUR and (code != "=" or opponent is not None):
        raise TrfError(f"player {number}: a played result without a colour in {chunk!r}")
    if code != " ":
        blank = False
    paired = opponent is not None or code in "U+"
    return TrfEntry(opponent, colour, outcome, played, paired, code), blank


def _single(text: str, what: str) -> str:
    tokens = text.split(" ")
    tokens = [t for t in tokens if t]
    if len(tokens) != 1:
        raise TrfError(f"{what}: expected one value, got {text!r}")
    return tokens[0]


def _whole(text: str, what: str) -> int:
    token = _single(text, what)
    if not token.isascii() or not token.isdigit():
        raise TrfError(f"{what}: not a whole number: {text!r}")
    return int(token)


def _player_id(text: str) -> int:
    number = _whole(text, "starting number")
    if number == 0:
        raise TrfError("starting number 0")
    return number


def _round(text: str) -> int:
    number = _whole(text, "round")
    if number == 0:
        raise TrfError("round 0")
    return number


def _tenths(text: str, what: str) -> int:
    """'2.0' -> 20, '2' -> 20, '0.5' -> 5."""
    token = _single(text, what)
    whole, dot, tenth = token.partition(".")
    if not whole.isascii() or not whole.isdigit() or (dot and (len(tenth) != 1 or not tenth.isdigit())):
        raise TrfError(f"{what}: not a number with at most one decimal: {text!r}")
    return int(whole) * 10 + (int(tenth) if dot else 0)


def _other(colour: str) -> str:
    return BLACK if colour == WHITE else WHITE


_HANDLERS: Final = {
    "001": _Reader.player,
    "013": _Reader.team,
    "310": _Reader.team,
    "142": _Reader.rounds_line,
    "XXR": _Reader.rounds_line,
    "XXC": _Reader.colour_config,
    "152": _Reader.colour_2026,
    "162": _Reader.point_system,
    "BBW": _Reader.bb_points,
    "BBD": _Reader.bb_points,
    "BBL": _Reader.bb_points,
    "BBZ": _Reader.bb_points,
    "BBF": _Reader.bb_points,
    "BBU": _Reader.bb_points,
    "192": _Reader.system,
    "240": _Reader.absences_2026,
    "250": _Reader.acceleration_2026,
    "XXA": _Reader.acceleration_xxa,
    "260": _Reader.forbidden_2026,
    "XXP": _Reader.forbidden_xxp,
    "299": _Reader.unsupported,
}


# ---- our tournaments ----

# T-7 and T-8 in tenths: a win and the bye 2, a draw 1.
OUR_POINTS: Final = PointSystem(win=20, draw=10, loss=0, zero_bye=0, forfeit_loss=0, pairing_bye=20)
_OUTCOME: Final = {"1": WIN, "W": WIN, "+": WIN, "U": WIN, "=": DRAW, "D": DRAW, "0": LOSS, "L": LOSS, "-": LOSS}


def prepared_model(prepared: PreparedTournament, *, rounds: int) -> TrfTournament:
    """The TRF model of one of our histories, exactly what `parse_trf(render_trf(...))` reads back."""
    starts = prepared.start_numbers()
    players = {}
    for entrant_number, entrant in prepared.entrants:
        entries = tuple(
            TrfEntry(
                None if leg.opponent is None else starts[leg.opponent], leg.colour, _OUTCOME[leg.token],
                leg.token in PLAYED_TOKENS, leg.opponent is not None or leg.token == "U", leg.token,
            )
            for leg in prepared.legs[entrant_number]
        )
        number = starts[entrant_number]
        points = sum(leg.points for leg in prepared.legs[entrant_number]) * 10
        name = _clean(entrant.player)[:_NAME_WIDTH].strip()
        players[number] = TrfPlayer(number, name, _rating_column(entrant.rating), points, entries)
    forbidden = tuple(
        ForbiddenGroup(pair, first, rounds) for pair, first in _forbidden_from(prepared, starts) if first <= rounds
    )
    return TrfTournament(
        players=players,
        rank_order=tuple(range(1, len(players) + 1)),
        rounds=rounds,
        played_rounds=prepared.rounds_played * prepared.legs_per_round,
        points=OUR_POINTS,
        first_colour=WHITE,
        forbidden=forbidden,
    )


# ---- writing ----


def tournament_to_trf(
    entrants: NumberedEntrants,
    history: Sequence[SwissRound],
    total_rounds: int,
    *,
    double: bool = False,
    name: str = "Arbiter tournament",
) -> str:
    """The whole tournament as a TRF file, so arbiters can re-pair it with their own tools (T-13)."""
    if total_rounds < len(history):
        raise PairingError(f"{len(history)} rounds played but only {total_rounds} in the tournament (T-9)")
    prepared = prepare(entrants, history, double=double)
    return render_trf(prepared, rounds=total_rounds * prepared.legs_per_round, name=name)


def render_trf(prepared: PreparedTournament, *, rounds: int, name: str = "Arbiter tournament") -> str:
    """TRF text of a prepared history, with `rounds` as XXR."""
    starts = prepared.start_numbers()
    totals = {n: sum(leg.points for leg in legs) for n, legs in prepared.legs.items()}
    # Column 86-89 is the current rank: points, then initial rank.
    standing = sorted(prepared.entrants, key=lambda item: (-totals[item[0]], starts[item[0]]))
    places = {number: i for i, (number, _) in enumerate(standing, start=1)}
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
    for (a, b), first in _forbidden_from(prepared, starts):
        if first <= rounds:
            lines.append(f"260 {first:>3} {rounds:>3} {a:>4} {b:>4}")
    for number, entrant in prepared.entrants:
        results = []
        for leg in prepared.legs[number]:
            opponent = "0000" if leg.opponent is None else f"{starts[leg.opponent]:>4}"
            results.append(f"{opponent} {leg.colour} {leg.token}")
        lines.append(
            _player_line(starts[number], entrant.player, round(entrant.rating), totals[number], places[number], results)
        )
    return "\n".join(lines) + "\n"


def _forbidden_from(prepared: PreparedTournament, starts: Mapping[int, int]) -> list[tuple[tuple[int, int], int]]:
    """Pairs that met only through a forfeit (T-13), in starting numbers, with the first TRF round
    they may no longer meet in: the one after the round they met in."""
    found = []
    for pair, met in prepared.unplayed_pairs.items():
        a, b = sorted(starts[n] for n in pair)
        found.append(((a, b), met * prepared.legs_per_round + 1))
    return sorted(found)


def _rating_column(rating: float) -> int:
    """The rating as the four-digit column holds it (0 for none)."""
    return min(round(rating), 9999) if round(rating) > 0 else 0


def _player_line(start: int, name: str, rating: int, points: int, rank: int, results: list[str]) -> str:
    """A 001 line in TRF-16 columns: name 15-47, rating 49-52, points 81-84, rank 86-89, rounds from 92."""
    rating = _rating_column(rating)
    rating_text = str(rating) if rating else ""
    head = (
        f"001 {start:>4} {'':1}{'':3} {_clean(name)[:_NAME_WIDTH]:<{_NAME_WIDTH}} {rating_text:>4} {'':3} "
        f"{'':>11} {'':10} {f'{points}.0':>4} {rank:>4}"
    )
    return head + "".join(f"  {r}" for r in results)


def _clean(text: str) -> str:
    """A name safe for fixed columns: no control characters."""
    return re.sub(r"[\x00-\x1f\x7f]", " ", text).strip()
