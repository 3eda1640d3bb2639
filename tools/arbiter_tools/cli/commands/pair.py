"""`arbiter pair FILE.trf`: pair the next Swiss round of a TRF file by the FIDE Dutch system (T-13).

A drop-in for `bbpPairings --dutch FILE.trf -p`: it reads TRF-16, TRF(x), bbpPairings' BB*
lines and the TRF-2026 codes, and prints the number of boards on the first line (a bye
counts as one), then `white black` per board in board order, a bye as `N 0`. Exit status:
1 when no pairing complies with the absolute criteria (the reason on stderr), 3 when the
file cannot be read as TRF, 5 when it cannot be opened, 2 on an engine fault.

`--check` re-pairs every round of a played tournament from the rounds before it and reports
the first round whose pairing differs from the file's (exit status 1 then, 0 when all agree).
A file written by `arbiter trf` for home-and-away rounds (T-12: each pairing's two games are
two TRF rounds) is checked round by round, each pair of TRF rounds as one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from arbiter.competition.dutch import DutchPairing, pair_round
from arbiter.competition.swiss import ENGINE, EngineFault, NoValidPairing, PairingError, pair_trf
from arbiter.competition.trf import BLACK, NO_COLOUR, WHITE, TrfError, TrfTournament, parse_trf

# bbpPairings' exit codes.
NO_VALID_PAIRING = 1
UNEXPECTED_ERROR = 2
INVALID_REQUEST = 3
FILE_ERROR = 5
CHECK_DIFFERS = 1


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `pair` subcommand."""
    parser = subparsers.add_parser(
        "pair",
        help="pair the next Swiss round of a TRF file (like bbpPairings --dutch FILE -p)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE.trf", type=Path, help="TRF file with the rounds played so far")
    parser.add_argument(
        "--check", action="store_true", help="re-pair every played round and report the first that differs"
    )
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Pair (or check) the file and print the answer; return the exit code."""
    try:
        raw = args.file.read_bytes()
    except OSError as exc:
        print(f"Error reading file {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return FILE_ERROR
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        print(f"Error parsing file {args.file}: the file is not legal UTF-8.", file=sys.stderr)
        return INVALID_REQUEST
    try:
        return _check(args, text) if args.check else _pair(args, text)
    except TrfError as exc:
        print(f"Error parsing file {args.file}: {exc}", file=sys.stderr)
        return INVALID_REQUEST
    except NoValidPairing as exc:
        print(f"Error while pairing {args.file}: No valid pairing exists: {exc}", file=sys.stderr)
        return NO_VALID_PAIRING
    except EngineFault as exc:
        print(f"Error while pairing {args.file}: {exc}", file=sys.stderr)
        return UNEXPECTED_ERROR
    except PairingError as exc:
        print(f"Error while parsing {args.file}: {exc}", file=sys.stderr)
        return INVALID_REQUEST
    except Exception as exc:  # an engine fault ends with bbpPairings' status 2, never a traceback
        print(f"Error while pairing {args.file}: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
        return UNEXPECTED_ERROR


def _pair(args: argparse.Namespace, text: str) -> int:
    """Pair the next round and print it."""
    pairing = pair_trf(text)
    if args.json:
        print(json.dumps({"round": pairing.round, "pairs": [list(p) for p in pairing.pairs], "bye": pairing.bye,
                          "engine": ENGINE}))
        return 0
    lines = [f"{white} {black}" for white, black in pairing.pairs]
    if pairing.bye is not None:
        lines.append(f"{pairing.bye} 0")
    print(len(lines))
    for line in lines:
        print(line)
    return 0


Played = tuple[list[tuple[int, int]], int | None]


def _check(args: argparse.Namespace, text: str) -> int:
    """Re-pair every round of the file; report the first that differs."""
    tournament = parse_trf(text, next_round=False)
    step = 2 if _home_and_away(tournament) else 1
    # in home-and-away files the last pairing is the next-to-last TRF round
    engine_view = replace(tournament, rounds=tournament.rounds - (step - 1))
    checked = 0
    for index in range(0, tournament.played_rounds, step):
        try:
            ours = pair_round(engine_view, index)
        except NoValidPairing as exc:
            return _report(args, checked, index + 1, _round_in_file(tournament, index), None, str(exc))
        played = _round_in_file(tournament, index)
        if not _same(played, ours):
            return _report(args, checked, index + 1, played, ours, None)
        checked += 1
    if args.json:
        print(json.dumps({"rounds": checked, "identical": True, "first_difference": None}))
    else:
        unit = "pairings of two TRF rounds (home and away)" if step == 2 else "rounds"
        print(f"{checked} {unit} checked: every pairing is the engine's ({ENGINE})")
    return 0


def _report(
    args: argparse.Namespace, checked: int, trf_round: int, played: Played, ours: DutchPairing | None, error: str | None
) -> int:
    """Print the first difference."""
    file_pairs, file_bye = played
    if args.json:
        print(json.dumps({
            "rounds": checked, "identical": False,
            "first_difference": {
                "trf_round": trf_round,
                "file": {"pairs": [list(p) for p in file_pairs], "bye": file_bye},
                "engine": None if ours is None else {"pairs": [list(p) for p in ours.pairs], "bye": ours.bye},
                "error": error,
            },
        }))
    else:
        print(f"round {trf_round} differs ({checked} checked before it)")
        print("  file:   " + _describe(file_pairs, file_bye))
        print("  engine: " + ((error or "no pairing") if ours is None else _describe(ours.pairs, ours.bye)))
    return CHECK_DIFFERS


def _describe(pairs: Sequence[tuple[int, int]], bye: int | None) -> str:
    """'1-5, 6-2; bye 9'."""
    text = ", ".join(f"{w}-{b}" for w, b in pairs)
    return text + (f"; bye {bye}" if bye is not None else "")


def _round_in_file(tournament: TrfTournament, index: int) -> Played:
    """The pairs of TRF round index+1 as (white, black), colourless forfeits as (lower, higher), and its bye."""
    pairs = set()
    bye = None
    for number, player in tournament.players.items():
        if index >= len(player.entries):
            continue
        entry = player.entries[index]
        if entry.is_pairing_bye:
            bye = number
        elif entry.opponent is not None:
            if entry.colour == WHITE:
                pairs.add((number, entry.opponent))
            elif entry.colour == BLACK:
                pairs.add((entry.opponent, number))
            elif entry.colour == NO_COLOUR:
                pairs.add((min(number, entry.opponent), max(number, entry.opponent)))
    return sorted(pairs), bye


def _same(played: Played, ours: DutchPairing) -> bool:
    """The same pairs with the same colours (where the file gives them) and the same bye."""
    file_pairs, file_bye = played
    if file_bye != ours.bye:
        return False
    coloured = set(file_pairs)
    for white, black in ours.pairs:
        if (white, black) not in coloured and tuple(sorted((white, black))) not in coloured:
            return False
    return len(ours.pairs) == len({frozenset(p) for p in file_pairs})


def _home_and_away(tournament: TrfTournament) -> bool:
    """Every even TRF round repeats the round before with the colours reversed (T-12 as `arbiter trf` writes it)."""
    played = tournament.played_rounds
    if played < 2 or played % 2:
        return False
    for index in range(0, played, 2):
        first, _ = _round_in_file(tournament, index)
        second, _ = _round_in_file(tournament, index + 1)
        if not first or {(b, w) for w, b in first} != set(second):
            return False
    return True
