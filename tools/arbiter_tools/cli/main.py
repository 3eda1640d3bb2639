"""Entry point of the `arbiter` operator CLI.

Every module in `arbiter_tools.cli.commands` is named after its subcommand and defines
`register(subparsers)`, which adds that subcommand and sets `handler` (a callable taking the
parsed args and returning an exit code) as a parser default. Subcommands that print a result
take `--json`. A Ctrl-C (or SIGTERM) that a command does not handle itself ends it with exit code
130 and one line, no traceback (`arbiter up` stops its system and exits 0).

Only the module of the subcommand being run is imported: `arbiter pair` must not pay for the
simulator, Kafka and Redis that `arbiter up` needs. The overview (`arbiter --help`, or no
subcommand) imports them all to list their help.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from arbiter_tools.cli import commands

# What a shell reports for a process ended by SIGINT (128 + 2).
STOPPED_EXIT_CODE = 130


def command_names() -> list[str]:
    """The subcommands, found without importing their modules."""
    return sorted(module.name for module in pkgutil.iter_modules(commands.__path__))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Build the parser with every subcommand, or with `only` that one when it is known."""
    parser = argparse.ArgumentParser(prog="arbiter", description="Arbiter operator CLI")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = command_names()
    for name in [only] if only in names else names:
        importlib.import_module(f"{commands.__name__}.{name}").register(subparsers)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    """The module of the subcommand named by `argv` (its first word that is not an option): `set-aside` is set_aside."""
    word = next((word for word in argv if not word.startswith("-")), None)
    return None if word is None else word.replace("-", "_")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(only=_command_in(words)).parse_args(words)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM. A command that runs clients stops them first (arbiter.kit.eventloop's
        # run_stoppable unwinds it, then raises this): what is left to say is that it stopped.
        print(f"arbiter {args.command}: stopped", file=sys.stderr)
        return STOPPED_EXIT_CODE


if __name__ == "__main__":
    sys.exit(main())
