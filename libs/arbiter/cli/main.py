"""Entry point of the `arbiter` operator CLI.

Every module in `arbiter.cli.commands` defines `register(subparsers)`, which adds
its subcommand(s) and sets `handler` (a callable taking the parsed args and
returning an exit code) as a parser default. Subcommands that print a result
take `--json`.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from arbiter.cli import commands


def build_parser() -> argparse.ArgumentParser:
    """Build the parser with every subcommand module found in `arbiter.cli.commands`."""
    parser = argparse.ArgumentParser(prog="arbiter", description="Arbiter operator CLI")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{module_info.name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
