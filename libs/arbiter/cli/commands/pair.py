"""`arbiter pair FILE.trf`: pair the next Swiss round of a TRF(x) file (T-13).

A drop-in for `bbpPairings --dutch FILE.trf -p`: the number of pairs on the first line, then
`white black` per board, a bye as `N 0`; exit 1 when no legal pairing exists (the reason on
stderr), 3 when the file cannot be read as TRF, 5 when it cannot be opened. By default it
pairs as the pairing service does (FIDE Dutch by py4swiss, checked, with the documented
relaxations and fallback, reported on stderr); `--strict` answers exactly as bbpPairings
does (no relaxation, no fallback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from arbiter.competition.swiss import PairingError, pair_trf
from arbiter.competition.trf import TrfError

# bbpPairings' exit codes.
NO_VALID_PAIRING = 1
INVALID_REQUEST = 3
FILE_ERROR = 5


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `pair` subcommand."""
    parser = subparsers.add_parser(
        "pair",
        help="pair the next Swiss round of a TRF(x) file (like bbpPairings --dutch FILE -p)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE.trf", type=Path, help="TRF(x) file with the rounds played so far")
    parser.add_argument(
        "--json", action="store_true", help='print {"pairs": [[w, b], ...], "bye": N|null, "engine": ...}'
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="FIDE Dutch only: no relaxation, no fallback (bbpPairings' answer)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Pair the file and print the pairing; return the exit code."""
    try:
        text = args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"Error reading file {args.file}: {exc}", file=sys.stderr)
        return FILE_ERROR
    try:
        pairing = pair_trf(text, strict=args.strict)
    except TrfError as exc:
        print(f"Error parsing file {args.file}: {exc}", file=sys.stderr)
        return INVALID_REQUEST
    except PairingError as exc:
        print(f"Error while pairing {args.file}: No valid pairing exists: {exc}", file=sys.stderr)
        return NO_VALID_PAIRING
    if pairing.fallback_reason:
        print(f"warning: paired by the fallback because {pairing.fallback_reason}", file=sys.stderr)
    for note in pairing.notes:
        print(f"warning: {note}", file=sys.stderr)
    if args.json:
        print(
            json.dumps(
                {
                    "pairs": [list(pair) for pair in pairing.pairs],
                    "bye": pairing.bye,
                    "engine": pairing.engine,
                    "fallback_reason": pairing.fallback_reason,
                    "notes": list(pairing.notes),
                }
            )
        )
        return 0
    lines = [f"{white} {black}" for white, black in pairing.pairs]
    if pairing.bye is not None:
        lines.append(f"{pairing.bye} 0")
    print(len(lines))
    for line in lines:
        print(line)
    return 0
