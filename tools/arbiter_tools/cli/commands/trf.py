"""`arbiter trf TOURNAMENT_ID`: a running system's Swiss tournament as a TRF file (T-13).

Asks the pairing service (TournamentService.ExportTrf at PAIRING_GRPC_ADDR, signing a service
token with AUTH_SIGNING_KEY when the services require one) for the tournament's completed
rounds, and prints the file or writes it with `--out`. `arbiter pair --check FILE` then re-pairs
every round of it; any engine of the FIDE Dutch system reads it too.

Exit status: 0, or 2 with the service's message (unknown tournament, not a Swiss, not started,
service unreachable).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

import grpc

from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit.auth import READERS, Role, TokenSigner, signing_key
from arbiter.kit.grpcclient import open_channel

FAILED = 2
CALLER = "cli"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `trf` subcommand."""
    parser = subparsers.add_parser(
        "trf",
        help="a Swiss tournament of the running system as a TRF file (for arbiter pair --check)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("tournament_id", metavar="TOURNAMENT_ID")
    parser.add_argument("--out", type=Path, help="write the file here instead of printing it")
    parser.add_argument("--pairing-addr", default=os.environ.get("PAIRING_GRPC_ADDR", ""),
                        help="the pairing service's gRPC address (default: PAIRING_GRPC_ADDR)")
    parser.add_argument("--json", action="store_true",
                        help='print {"tournament_id", "rounds", "home_and_away", "trf"}')
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Fetch the TRF and print or write it; return the exit status."""
    if not args.pairing_addr:
        print("arbiter trf: set PAIRING_GRPC_ADDR or --pairing-addr", file=sys.stderr)
        return FAILED
    try:
        answer = asyncio.run(export(args.pairing_addr, args.tournament_id, os.environ.get("AUTH_SIGNING_KEY", "")))
    except grpc.aio.AioRpcError as error:
        print(f"arbiter trf: {error.code().name}: {error.details()}", file=sys.stderr)
        return FAILED
    except ValueError as error:  # a malformed AUTH_SIGNING_KEY
        print(f"arbiter trf: {error}", file=sys.stderr)
        return FAILED
    if args.out is not None:
        try:
            args.out.write_text(answer.trf, encoding="utf-8")
        except OSError as error:
            print(f"arbiter trf: cannot write {args.out}: {error.strerror or error}", file=sys.stderr)
            return FAILED
    if args.json:
        print(json.dumps({"tournament_id": answer.tournament_id, "rounds": answer.rounds,
                          "home_and_away": answer.home_and_away, "trf": answer.trf}))
    elif args.out is None:
        sys.stdout.write(answer.trf)
    else:
        print(f"{args.out}: {answer.rounds} rounds of {answer.tournament_id}")
    return 0


async def export(address: str, tournament_id: str, auth_signing_key: str) -> tp.ExportTrfResponse:
    """Call TournamentService.ExportTrf."""
    key = signing_key(auth_signing_key) if auth_signing_key else None
    signer = None
    if key is not None:
        # A read: an operator's key signs as the operator, a play site's as the play site.
        readers = sorted(key.roles & READERS, key=lambda role: role is not Role.OPERATOR)
        if not readers:
            raise ValueError(f"AUTH_SIGNING_KEY {key.key_id} may not sign for a role that reads tournaments "
                             f"({', '.join(sorted(READERS))})")
        signer = TokenSigner(key, readers[0], CALLER)
    async with open_channel(address, signer) as channel:
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        return await stub.ExportTrf(tp.ExportTrfRequest(tournament_id=tournament_id), timeout=30)
