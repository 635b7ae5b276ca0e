"""The ``livetok`` command: one entry point, one module per subcommand.

Each subcommand module exposes ``add_parser(subparsers)`` and ``run(args) -> int``.

Exit status (also in ``livetok --help``): 0 done; 1 a check failed (``replay``'s mismatch) or
livetok itself failed; 2 a bad input or option. A bad input is never a traceback: each
command catches :data:`INPUT_ERRORS` around the file it is reading and prints one line,
``livetok CMD: FILE: what is wrong`` (:func:`input_error`), and :func:`main` does the same for
what escapes a command. Any other exception is a bug: one line with its type and message,
exit 1, and the traceback with ``LIVETOK_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import zlib
from typing import Any, Sequence, TypeAlias

#: what a bad file or option raises (a ``ValueError`` subclass such as ``VocabularyError``
#: from the readers, which check what they read; ``OSError`` for a missing file, a directory,
#: a permission; the rest from a damaged or hostile file that got past the checks)
INPUT_ERRORS: tuple[type[BaseException], ...] = (
    OSError, EOFError, zlib.error, ValueError, MemoryError, RecursionError,
)

#: what to do about the common ``OSError`` numbers
_OS_HINTS = {
    errno.ENOENT: "check the path",
    errno.EISDIR: "pass a file, not a directory",
    errno.EACCES: "check its permissions",
    errno.EPERM: "check its permissions",
}

_EPILOG = ("exit status: 0 done; 1 a check failed or an internal error (LIVETOK_DEBUG=1 "
           "shows its traceback); 2 a bad input or option, said in one line on stderr")

#: what each subcommand's ``add_parser`` receives: :func:`build_parser`'s subparsers action
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

#: subcommand modules, in the order ``livetok --help`` lists them
_COMMANDS = [
    "livetok.server.cli.count",
    "livetok.server.cli.check",
    "livetok.server.cli.replay",
    "livetok.server.cli.serve",
    "livetok.server.cli.demo",
    "livetok.server.cli.analyze",
    "livetok.server.cli.models",
]


class _VersionAction(argparse.Action):
    """``--version``: like argparse's, but the version is looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str = "show livetok's version and exit"
                 ) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None,
                 option_string: str | None = None) -> None:
        from livetok.server.version import livetok_version

        print(f"livetok {livetok_version()}")
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every available subcommand registered (``only``: just the
    subcommand of that name, so that ``livetok count`` does not import the server's modules)."""
    parser = argparse.ArgumentParser(
        prog="livetok",
        description="Live, exact, incremental token counts for LLM tokenizers.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in _COMMANDS:
        if only is not None and name.rsplit(".", 1)[1] != only:
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
    known = {name.rsplit(".", 1)[1] for name in _COMMANDS}
    parser = build_parser(first if first in known else None)
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except INPUT_ERRORS as exc:  # a command's own catch names the file; this is the net
        if os.environ.get("LIVETOK_DEBUG") == "1":
            raise
        return input_error(args.command, exc)
    except Exception as exc:  # a bug: one line, and the traceback on demand
        if os.environ.get("LIVETOK_DEBUG") == "1":
            raise
        print(f"livetok {args.command}: internal error: {type(exc).__name__}: "
              f"{_one_line(str(exc))} (run with LIVETOK_DEBUG=1 for the traceback)",
              file=sys.stderr)
        return 1


def add_encoding_arguments(p: argparse.ArgumentParser, default: str = "o200k_base", *,
                           repeat: bool = False) -> None:
    """``-e/--encoding NAME`` and ``--tokenizer FILE`` on a subcommand's parser; the help lists
    what :func:`livetok.incremental.list_encodings` finds (the built-in names, and the models
    whose ``tokenizer.json`` is in the local Hugging Face cache: a listing of its folder).
    :func:`encoding_name` reads them back; with ``repeat``, ``-e`` may be given several
    times and :func:`encoding_names` reads them."""
    from livetok.incremental import list_encodings
    from livetok.incremental.names.registry import ALIASES

    names = list_encodings()
    builtin = [n for n in names if not n.startswith("hf:")]
    found = [n for n in names if n.startswith("hf:")]
    cache = (f"; found in the local Hugging Face cache: {', '.join(found)}" if found
             else "; none in the local Hugging Face cache yet")
    p.add_argument(
        "-e", "--encoding", default=None, metavar="NAME", action="append" if repeat else "store",
        help=("several -e: one column each; " if repeat else "") + f"encoding (default {default}): one of {', '.join(builtin)} (aliases: "
        f"{', '.join(sorted(ALIASES))}); a tokenizer.json path; or hf:ORG/NAME, a model in "
        f"the local Hugging Face cache, never downloaded{cache}".replace("%", "%%"),
    )
    p.add_argument("--tokenizer", metavar="FILE",
                   help="count with this HuggingFace tokenizer.json, or the one in this model "
                   "folder (the same as -e FILE)")
    p.set_defaults(_default_encoding=default)


def encoding_name(command: str, args: argparse.Namespace) -> str | int:
    """The encoding name that :func:`add_encoding_arguments`'s options ask for (a
    ``--tokenizer`` file as its absolute path), or the exit status 2 after the one-line
    error when both are given.

    Runtime complexity: ``O(1)``.
    """
    if args.tokenizer is not None and args.encoding is not None:
        print(f"livetok {command}: give -e/--encoding or --tokenizer, not both", file=sys.stderr)
        return 2
    if args.tokenizer is not None:
        # an absolute path is a path to get_encoding whatever the file is called
        return os.path.abspath(os.path.expanduser(str(args.tokenizer)))
    return str(args.encoding if args.encoding is not None else args._default_encoding)


def encoding_names(command: str, args: argparse.Namespace) -> list[str] | int:
    """The encoding names that :func:`add_encoding_arguments` with ``repeat`` asks for, in the
    order given (``--tokenizer`` last), or the exit status 2 after a one-line error.

    Runtime complexity: ``O(names)``.
    """
    names = list(args.encoding or [])
    if args.tokenizer is not None:
        names.append(os.path.abspath(os.path.expanduser(str(args.tokenizer))))
    return names or [str(args._default_encoding)]


def input_error(command: str, exc: BaseException, name: str | None = None) -> int:
    """Print the one line ``livetok COMMAND: FILE: what is wrong`` for ``exc``, one of
    :data:`INPUT_ERRORS` raised while reading ``name``; return 2, the exit status.

    Runtime complexity: ``O(len(message))``.
    """
    print(f"livetok {command}: {describe_error(exc, name)}", file=sys.stderr)
    return 2


def describe_error(exc: BaseException, name: str | None = None) -> str:
    """``FILE: what is wrong (and how to fix it)`` for an exception raised reading ``name``;
    one line whatever the exception's message holds.

    >>> describe_error(FileNotFoundError(2, "No such file or directory", "a.txt"))
    'a.txt: No such file or directory (check the path)'
    >>> describe_error(ValueError("a.txt: not a trace"), "a.txt")
    'a.txt: not a trace'

    Runtime complexity: ``O(len(message))``.
    """
    if isinstance(exc, OSError) and exc.strerror:
        name = exc.filename if exc.filename is not None else name
        hint = _OS_HINTS.get(exc.errno or 0)
        msg = exc.strerror + (f" ({hint})" if hint else "")
    elif isinstance(exc, UnicodeDecodeError):
        msg = f"not UTF-8 text ({exc.reason} at byte {exc.start:,})"
    elif isinstance(exc, (EOFError, zlib.error)) or isinstance(exc, OSError):
        msg = f"damaged or truncated compressed data ({exc or type(exc).__name__})"
    elif isinstance(exc, MemoryError):
        msg = "not enough memory to read it (is it the file you meant?)"
    elif isinstance(exc, RecursionError):
        msg = "nested too deeply to read (is it the file you meant?)"
    else:
        msg = str(exc) or type(exc).__name__
    msg = _one_line(msg)
    if name is None or msg.startswith(os.fspath(name)):
        return msg
    return f"{name}: {msg}"


def _one_line(msg: str) -> str:
    return " ".join(msg.split("\n")).strip()


if __name__ == "__main__":
    sys.exit(main())
