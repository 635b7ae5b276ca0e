"""``livetok count [FILE...]``: tokens per file, like ``wc`` (no FILE: standard input)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from livetok.incremental import VocabularyError, get_encoding, list_encodings

#: files above this many bytes get a progress bar on stderr
PROGRESS_MIN_BYTES = 4 << 20


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "count",
        help="count tokens in files (like wc)",
        description="Print the token count of each FILE ('-' reads standard input), then a "
        "total when there are several; with no FILE, the count of standard input, as wc "
        "does. Files are read as UTF-8; undecodable bytes count as U+FFFD.",
    )
    p.add_argument("files", nargs="*", metavar="FILE")
    p.add_argument(
        "-e", "--encoding", default="o200k_base",
        help=f"encoding name (default o200k_base; known: {', '.join(list_encodings())})",
    )
    p.add_argument("--vocab", metavar="PATH", help="read the vocabulary from this file instead")
    p.add_argument("--stream", action="store_true",
                   help="count in bounded memory while reading (for files larger than memory)")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    return p


def count_text(enc: Any, text: str, progress: Callable[[int], None] | None = None) -> int:
    """Token count of ``text``, reporting code points done to ``progress`` as it goes.

    Runtime complexity: as ``enc.encode``.
    """
    if progress is None or len(text) < PROGRESS_MIN_BYTES:
        n = len(enc.encode(text))
        if progress is not None:
            progress(len(text))
        return n
    blocks = getattr(enc, "encode_blocks", None)
    if blocks is not None:  # the OpenAI encodings: encode's own blocks, at encode's speed
        total = 0
        for n_cp, ids in blocks(text):
            total += len(ids)
            progress(n_cp)
        return total
    # piece by piece: the protocol guarantees the concatenation equals one encode()
    total = 0
    done = 0
    encode_piece = enc.encode_piece
    for s, e in enc.split(text, 0):
        total += len(encode_piece(text[s:e], at_text_start=s == 0))
        if e - done >= 1 << 20:
            progress(e - done)
            done = e
    progress(len(text) - done)
    return total


def read_chunks(path: str, chunk_cp: int = 1 << 20) -> Iterator[str]:
    """Chunks of a UTF-8 file ('-': standard input); undecodable bytes become U+FFFD.

    Runtime complexity: ``O(file size)``; memory ``O(chunk_cp)``.
    """
    f = (
        open(sys.stdin.fileno(), encoding="utf-8", errors="replace", newline="", closefd=False)
        if path == "-"
        else open(path, encoding="utf-8", errors="replace", newline="")
    )
    with f:
        while True:
            c = f.read(chunk_cp)
            if not c:
                return
            yield c


def run(args: argparse.Namespace) -> int:
    try:
        enc = get_encoding(args.encoding, path=args.vocab) if args.vocab else get_encoding(args.encoding)
    except (ValueError, VocabularyError) as exc:
        print(f"livetok count: {exc}", file=sys.stderr)
        return 2
    status = 0
    grand = 0
    files = args.files
    if not files:  # as wc: standard input, and its count printed without a name
        files = ["-"]
        if sys.stdin.isatty():
            print("livetok count: reading standard input (end it with Ctrl-D)", file=sys.stderr)
    for name in files:
        try:
            if args.stream:
                from livetok.incremental.stream import count_stream

                n = count_stream(enc, read_chunks(name))
            else:
                raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
                text = raw.decode("utf-8", errors="replace")
                n = _count_with_bar(enc, text, name, not args.no_progress)
        except OSError as exc:
            print(f"livetok count: {name}: {exc.strerror or exc}", file=sys.stderr)
            status = 1
            continue
        grand += n
        print(f"{n:>10} {name}" if args.files else f"{n:>10}")
    if len(files) > 1:
        print(f"{grand:>10} total")
    return status


def _count_with_bar(enc: Any, text: str, name: str, allow_bar: bool) -> int:
    if not allow_bar or len(text) < PROGRESS_MIN_BYTES:
        return len(enc.encode(text))
    from tqdm import tqdm

    with tqdm(total=len(text), unit="char", unit_scale=True, desc=name, file=sys.stderr,
              leave=False) as bar:
        return count_text(enc, text, bar.update)
