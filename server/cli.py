"""The ``livetok`` command: one entry point, one module per subcommand.

Each subcommand module exposes ``add_parser(subparsers)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Sequence

#: subcommand modules, in the order ``livetok --help`` lists them
_COMMANDS = [
    "livetok.server.cmd_count",
    "livetok.server.cmd_check",
    "livetok.server.cmd_replay",
    "livetok.server.cmd_serve",
    "livetok.server.cmd_demo",
    "livetok.server.cmd_analyze",
]


class _VersionAction(argparse.Action):
    """``--version``: like argparse's, but the version is looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str = "show livetok's version and exit"
                 ) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any,
                 option_string: str | None = None) -> None:
        from .version import livetok_version

        print(f"livetok {livetok_version()}")
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every available subcommand registered (``only``: just the
    subcommand of that name, so that ``livetok count`` does not import the server's modules)."""
    parser = argparse.ArgumentParser(
        prog="livetok",
        description="Live, exact, incremental token counts for LLM tokenizers.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in _COMMANDS:
        if only is not None and name.rsplit("_", 1)[1] != only:
            continue
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # subcommand not part of this build
            raise
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``livetok`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # the subcommand named first (options before it are the top level's): build only its
    # parser when it is a known one (``livetok --help`` and mistakes still see them all)
    first = next((a for a in argv if not a.startswith("-")), None)
    known = {name.rsplit("_", 1)[1] for name in _COMMANDS}
    parser = build_parser(first if first in known else None)
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
