"""`arbiter auth`: make scoped service keys and mint role tokens for callers such as the play site's backend."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from datetime import UTC, datetime

from arbiter.kit.auth import AuthConfigError, Role, ServiceKey, mint_token, parse_roles, signing_key

ROLE_NAMES = ", ".join(role.value for role in Role)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `auth new-key` and `auth token`."""
    parser = subparsers.add_parser("auth", help="service keys and role tokens (AUTH_KEYS, AUTH_SIGNING_KEY)")
    actions = parser.add_subparsers(dest="auth_command", required=True, metavar="ACTION")
    new_key = actions.add_parser("new-key", help="print a fresh id:secret:roles for AUTH_KEYS / AUTH_SIGNING_KEY")
    new_key.add_argument("--id", default="", help="key id (default: k + today's date)")
    new_key.add_argument("--roles", required=True,
                         help=f"the roles the key may sign tokens for, joined by + or commas ({ROLE_NAMES})")
    new_key.add_argument("--json", action="store_true")
    new_key.set_defaults(handler=run_new_key)
    token = actions.add_parser("token", help="mint a service token for a caller in one role")
    token.add_argument("--key", required=True, help="id:secret:roles to sign with (one of the servers' AUTH_KEYS)")
    token.add_argument("--role", required=True, help=f"the role the token carries, one the key may sign for "
                                                     f"({ROLE_NAMES})")
    token.add_argument("--caller", default="", help="who calls, for logs (default: the role)")
    token.add_argument("--ttl", type=int, default=3600, help="seconds the token is valid (default 3600)")
    token.add_argument("--json", action="store_true")
    token.set_defaults(handler=run_token)


def run_new_key(args: argparse.Namespace) -> int:
    """Print a new random key scoped to `--roles`."""
    key_id = args.id or f"k{datetime.now(UTC):%Y%m%d}"
    try:
        key = ServiceKey(key_id, secrets.token_urlsafe(32).encode(), parse_roles(args.roles, "--roles")).text()
        signing_key(key)
    except AuthConfigError as error:
        print(f"arbiter auth new-key: {error}", file=sys.stderr)
        return 2
    print(json.dumps({"key": key}) if args.json else key)
    return 0


def run_token(args: argparse.Namespace) -> int:
    """Print a token for `--caller` in `--role`, signed with `--key`."""
    if args.ttl <= 0:
        print("arbiter auth token: --ttl must be a positive number of seconds", file=sys.stderr)
        return 2
    try:
        key = signing_key(args.key)
        if key is None:
            raise AuthConfigError("--key is empty")
        roles = parse_roles(args.role, "--role")
        if len(roles) != 1:
            raise AuthConfigError("--role takes exactly one role")
        (role,) = roles
        expires = time.time() + args.ttl
        caller = args.caller or role
        token = mint_token(key, role, caller, expires)
    except AuthConfigError as error:
        print(f"arbiter auth token: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"token": token, "role": role.value, "caller": caller, "expires": int(expires)}))
    else:
        print(token)
    return 0
