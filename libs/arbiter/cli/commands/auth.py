"""`arbiter auth`: make service keys and mint tokens for callers such as the play site's backend."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from datetime import UTC, datetime

from arbiter.kit.auth import AuthConfigError, mint_token, signing_key


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `auth new-key` and `auth token`."""
    parser = subparsers.add_parser("auth", help="service keys and tokens (AUTH_KEYS, AUTH_SIGNING_KEY)")
    actions = parser.add_subparsers(dest="auth_command", required=True, metavar="ACTION")
    new_key = actions.add_parser("new-key", help="print a fresh id:secret for AUTH_KEYS / AUTH_SIGNING_KEY")
    new_key.add_argument("--id", default="", help="key id (default: k + today's date)")
    new_key.add_argument("--json", action="store_true")
    new_key.set_defaults(handler=run_new_key)
    token = actions.add_parser("token", help="mint a service token for a caller")
    token.add_argument("--key", required=True, help="id:secret to sign with (one of the servers' AUTH_KEYS)")
    token.add_argument("--caller", required=True, help="who calls, e.g. play-site")
    token.add_argument("--ttl", type=int, default=3600, help="seconds the token is valid (default 3600)")
    token.add_argument("--json", action="store_true")
    token.set_defaults(handler=run_token)


def run_new_key(args: argparse.Namespace) -> int:
    """Print a new random key."""
    key_id = args.id or f"k{datetime.now(UTC):%Y%m%d}"
    key = f"{key_id}:{secrets.token_urlsafe(32)}"
    try:
        signing_key(key)
    except AuthConfigError as error:
        print(f"arbiter auth new-key: {error}", file=sys.stderr)
        return 2
    print(json.dumps({"key": key}) if args.json else key)
    return 0


def run_token(args: argparse.Namespace) -> int:
    """Print a token for `--caller` signed with `--key`."""
    if args.ttl <= 0:
        print("arbiter auth token: --ttl must be a positive number of seconds", file=sys.stderr)
        return 2
    try:
        key = signing_key(args.key)
        if key is None:
            raise AuthConfigError("--key is empty")
        expires = time.time() + args.ttl
        token = mint_token(key, args.caller, expires)
    except AuthConfigError as error:
        print(f"arbiter auth token: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"token": token, "caller": args.caller, "expires": int(expires)}))
    else:
        print(token)
    return 0
