"""``python -m livetok.server [serve options]``: the language server, like ``livetok serve``."""

from __future__ import annotations

import argparse
import sys

from livetok.server.cli import serve as cmd_serve


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        argv = argv[1:]
    parser = argparse.ArgumentParser(prog="python -m livetok.server")
    sub = parser.add_subparsers(dest="command")
    cmd_serve.add_parser(sub)
    return cmd_serve.run(parser.parse_args(["serve", *argv]))


if __name__ == "__main__":
    sys.exit(main())
