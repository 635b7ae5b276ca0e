"""``livetok count [FILE...]``: tokens per file, like ``wc`` (no FILE: standard input)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from livetok.incremental import VocabularyError, get_encoding, list_encodings

#: files above this many bytes get a progress bar on stderr
PROGRESS_MIN_BYTES = 4 << 20
#: texts of at least this many code points are counted by several processes (``--jobs``)
PARALLEL_MIN_CHARS = 4 << 20
#: each process takes parts of about this many code points (several per process, so that
#: they finish together and the progress bar moves)
_PART_CHARS = 1 << 20


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
    p.add_argument(
        "-j", "--jobs", type=int, default=None, metavar="N",
        help="processes for a file of 4 M characters or more, on Linux (default: the "
        "available cores, at most 4; 1 counts in this process)",
    )
    return p


def available_cores() -> int:
    """The cores this process may run on (``sched_getaffinity`` where there is one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_jobs() -> int:
    """``--jobs`` by default: the available cores, at most 4."""
    return max(1, min(4, available_cores()))


#: what the forked workers count: set by :func:`count_parallel` before it forks them
_WORK: tuple[Any, list[str]] | None = None


def _count_part(i: int) -> tuple[int, int]:
    enc, parts = _WORK  # type: ignore[misc]  # set before the fork
    return len(parts[i]), len(enc.encode(parts[i]))


def count_parallel(
    enc: Any, text: str, jobs: int, progress: Callable[[int], None] | None = None
) -> int | None:
    """Token count of ``text`` by ``jobs`` forked processes, or ``None`` when that is not
    possible (not on Linux, an encoding without :meth:`split_blocks`, a text without cut
    points, no process to be had), for the caller to count in this process.

    Exact: the text is cut only where no piece can span (``Encoding.split_blocks``), so the
    parts' counts add up to ``len(enc.encode(text))``. Each process encodes whole parts with
    its own (copied) piece cache; only counts travel back.

    Runtime complexity: ``O(len(text) / jobs)`` wall time plus the start of the processes.
    """
    global _WORK
    import multiprocessing

    split = getattr(enc, "split_blocks", None)
    # fork only where it is the platform's own default (Linux): macOS offers it but warns
    # that system libraries may crash in a forked child
    if jobs < 2 or split is None or not sys.platform.startswith("linux"):
        return None
    parts = split(text, max(_PART_CHARS, len(text) // (4 * jobs)))
    if len(parts) < 2:
        return None
    _WORK = (enc, parts)
    try:
        # subtle: fork, so the workers share the loaded vocabulary and the parts instead of
        # loading and receiving them (the progress bar runs no thread: monitor_interval = 0)
        try:
            pool = multiprocessing.get_context("fork").Pool(min(jobs, len(parts)))
        except OSError:  # no processes to be had (a limit on them): count in this one
            return None
        with pool:
            total = 0
            for n_cp, n in pool.imap_unordered(_count_part, range(len(parts))):
                total += n
                if progress is not None:
                    progress(n_cp)
            return total
    finally:
        _WORK = None


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
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        print("livetok count: --jobs takes a number of processes, 1 or more", file=sys.stderr)
        return 2
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
                n = _count_with_bar(enc, text, name, not args.no_progress, jobs)
        except OSError as exc:
            print(f"livetok count: {name}: {exc.strerror or exc}", file=sys.stderr)
            status = 1
            continue
        grand += n
        print(f"{n:>10} {name}" if args.files else f"{n:>10}")
    if len(files) > 1:
        print(f"{grand:>10} total")
    return status


def _count_with_bar(enc: Any, text: str, name: str, allow_bar: bool, jobs: int = 1) -> int:
    parallel = jobs > 1 and len(text) >= PARALLEL_MIN_CHARS
    if not allow_bar or len(text) < PROGRESS_MIN_BYTES:
        n = count_parallel(enc, text, jobs) if parallel else None
        return len(enc.encode(text)) if n is None else n
    from tqdm import tqdm

    tqdm.monitor_interval = 0  # no monitor thread: count_parallel forks while the bar is shown
    with tqdm(total=len(text), unit="char", unit_scale=True, desc=name, file=sys.stderr,
              leave=False) as bar:
        n = count_parallel(enc, text, jobs, bar.update) if parallel else None
        return count_text(enc, text, bar.update) if n is None else n
