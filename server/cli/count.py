"""``livetok count [FILE...]``: tokens per file, like ``wc`` (no FILE: standard input).

Memory stays bounded whatever the file: with the OpenAI encodings, a regular file of up to
``WHOLE_FILE_MAX_BYTES`` is read whole and counted by the fast paths (several processes, a
progress bar), a larger one in texts of about ``LARGE_BLOCK_CP`` code points cut where no
piece can span; anything else (standard input, a pipe, a device such as ``/dev/zero``, and
every file for the other encodings) is streamed
(:func:`livetok.incremental.stream.count_stream`). Either way a pre-token longer than
``MAX_PIECE_CP`` code points (1 GB of NUL bytes is one) is refused before it is encoded, with
one line that says so, and a vocabulary file (``--vocab``) is read with a bound on its size.
A bad file is one line ``livetok count: FILE: what is wrong``, exit status 2; the other files
are still counted.
"""

from __future__ import annotations

import argparse
import itertools
import os
import stat
import sys
from typing import Callable, Iterator

from livetok.incremental import Encoding, PieceEncoding, get_encoding
from livetok.incremental.load import MAX_VOCAB_BYTES, check_byte_level, size_limit
from livetok.incremental.registry import tokenizer_json_path
from livetok.incremental.stream import MAX_PIECE_CP, check_pieces, count_stream

from livetok.server.cli.main import INPUT_ERRORS, Subparsers, add_encoding_arguments, encoding_name, input_error
from livetok.server.forked import forked_map
from livetok.server.parallel_open import available_cores

#: regular files up to this many bytes are read whole (the fast paths need the whole text:
#: 4-16 bytes of memory per byte); larger ones are read in texts of about ``LARGE_BLOCK_CP``
#: code points cut where no piece can span (:func:`_count_by_blocks`)
WHOLE_FILE_MAX_BYTES = 64 << 20
#: as large as a whole read: each text's processes start from the parent's piece cache,
#: which is cold (texts of 16 Mi code points cost 18 % more CPU on 70 MB of real text)
LARGE_BLOCK_CP = 64 << 20
#: files that are not read whole are read in chunks of this many code points
READ_CHUNK_CP = 1 << 20
#: files above this many bytes get a progress bar on stderr
PROGRESS_MIN_BYTES = 4 << 20
#: texts of at least this many code points are counted by several processes (``--jobs``)
PARALLEL_MIN_CHARS = 4 << 20
#: each process takes parts of about this many code points (several per process, so that
#: they finish together and the progress bar moves)
_PART_CHARS = 1 << 20


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "count",
        help="count tokens in files (like wc)",
        description="Print the token count of each FILE ('-' reads standard input), then a "
        "total when there are several; with no FILE, the count of standard input, as wc "
        "does. Files are read as UTF-8; undecodable bytes count as U+FFFD.",
    )
    p.add_argument("files", nargs="*", metavar="FILE")
    add_encoding_arguments(p)
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


def default_jobs() -> int:
    """``--jobs`` by default: the available cores, at most 4."""
    return max(1, min(4, available_cores()))


def _count_part(work: tuple[PieceEncoding, list[str]], i: int) -> tuple[int, int]:
    """Code points and tokens of part ``i`` (in a forked process)."""
    enc, parts = work
    return len(parts[i]), len(enc.encode(parts[i]))


def count_parallel(
    enc: PieceEncoding, text: str, jobs: int, progress: Callable[[int], object] | None = None
) -> int | None:
    """Token count of ``text`` by ``jobs`` forked processes (:func:`.forked.forked_map`), or
    ``None`` when that is not possible (not on Linux, not a byte-level :class:`Encoding`, a
    text without cut points, no process to be had), for the caller to count in this process.

    Exact: the text is cut only where no piece can span (``Encoding.split_blocks``), so the
    parts' counts add up to ``len(enc.encode(text))``. Each process encodes whole parts with
    its own (copied) piece cache; only counts travel back.

    Runtime complexity: ``O(len(text) / jobs)`` wall time plus the start of the processes.
    """
    if jobs < 2 or not isinstance(enc, Encoding) or not sys.platform.startswith("linux"):
        return None
    parts = enc.split_blocks(text, max(_PART_CHARS, len(text) // (4 * jobs)))
    if len(parts) < 2:
        return None
    # the progress bar runs no thread while the processes fork (monitor_interval = 0)
    done = forked_map(_count_part, (enc, parts), len(parts), jobs, ordered=False,
                      each=None if progress is None else (lambda r: progress(r[0])))
    return None if done is None else sum(n for _, n in done)


def count_text(enc: PieceEncoding, text: str,
               progress: Callable[[int], object] | None = None) -> int:
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


def max_piece_cp() -> int:
    """The longest pre-token ``livetok count`` encodes: ``$LIVETOK_MAX_PIECE_CP`` or
    :data:`~livetok.incremental.stream.MAX_PIECE_CP` (4 Mi code points).

    Runtime complexity: ``O(1)``.
    """
    return size_limit("LIVETOK_MAX_PIECE_CP", MAX_PIECE_CP)


def count_file(enc: PieceEncoding, name: str, *, stream: bool = False, allow_bar: bool = True,
               jobs: int = 1) -> int:
    """Token count of the file ``name`` ('-': standard input), in bounded memory (see the
    module docstring); raises one of :data:`~livetok.server.cli.main.INPUT_ERRORS` for a bad file.

    Runtime complexity: as ``enc.encode`` of the file's text.
    """
    max_piece = max_piece_cp()
    size = None  # of a regular file
    if name != "-":
        mode = os.stat(name).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", name)
        if stat.S_ISREG(mode):
            size = os.path.getsize(name)
    # the fast paths need an encoding that cuts texts where no piece spans (the OpenAI ones,
    # Encoding.split_blocks: asked with isinstance, as protocol.byte_level would build the
    # per-token tables that counting never reads); the others stream, which is as fast for
    # them and keeps no list of ids
    if size is not None and not stream and isinstance(enc, Encoding):
        if size <= WHOLE_FILE_MAX_BYTES:
            with open(name, "rb") as f:
                raw = f.read(size + 1)
            if len(raw) <= size:  # (else it grew since it was looked at: read it in blocks)
                text = raw.decode("utf-8", errors="replace")
                del raw
                _check_pieces(enc, text, max_piece)
                return _count_with_bar(enc, text, name, allow_bar, jobs)
            del raw
        return _count_by_blocks(enc, name, max_piece, allow_bar, jobs)
    chunks = read_chunks(name, READ_CHUNK_CP)
    if stream or not allow_bar or size is None or size < PROGRESS_MIN_BYTES:
        return count_stream(enc, chunks, max_piece_cp=max_piece)
    from tqdm import tqdm

    with tqdm(unit="char", unit_scale=True, desc=name, file=sys.stderr, leave=False) as bar:
        return count_stream(enc, _reported(chunks, bar.update), max_piece_cp=max_piece)


def _reported(chunks: Iterator[str], progress: Callable[[int], object]) -> Iterator[str]:
    for chunk in chunks:
        yield chunk
        progress(len(chunk))


def _count_by_blocks(enc: Encoding, name: str, max_piece: int, allow_bar: bool,
                     jobs: int) -> int:
    """Token count of a large file in texts of about ``LARGE_BLOCK_CP`` code points cut where
    no piece can span (``enc.split_blocks``: their counts add up), each counted by the
    whole-text paths (several processes, a progress bar); from a text without such a cut on
    (one long piece, or text whose lines never start with an ASCII letter), the rest is
    streamed. Memory ``O(LARGE_BLOCK_CP)``.

    Runtime complexity: as ``enc.encode`` of the file's text.
    """
    chunks = read_chunks(name, READ_CHUNK_CP)
    total = 0
    pending: list[str] = []  # text from the last cut on, not counted yet
    pending_cp = 0
    for chunk in chunks:
        pending.append(chunk)
        pending_cp += len(chunk)
        if pending_cp < LARGE_BLOCK_CP:
            continue
        parts = enc.split_blocks("".join(pending), LARGE_BLOCK_CP // 4)
        if len(parts) < 2:  # no cut: the stream takes it from here, in bounded memory
            return total + count_stream(enc, itertools.chain(parts, chunks),
                                        max_piece_cp=max_piece)
        pending = [parts.pop()]
        pending_cp = len(pending[0])
        head = "".join(parts)
        del parts
        _check_pieces(enc, head, max_piece)
        total += _count_with_bar(enc, head, name, allow_bar, jobs)
    rest = "".join(pending)
    _check_pieces(enc, rest, max_piece)
    return total + _count_with_bar(enc, rest, name, allow_bar, jobs)


def _check_pieces(enc: Encoding, text: str, max_piece: int) -> None:
    """:func:`~livetok.incremental.stream.check_pieces` for the OpenAI encodings, the text cut
    here as it cuts it: only a slice over the bound goes to it, which asks
    ``protocol.byte_level`` and so builds the per-token tables that counting never reads
    (docs/startup.md).

    Runtime complexity: ``O(len(text))`` C work, plus a split of the slices over the bound.
    """
    if len(text) > max_piece:
        for block in enc.split_blocks(text, max_piece // 2):
            check_pieces(enc, block, max_piece)  # at once unless the block is over the bound


def check_vocabulary_file(path: str, option: str = "--vocab") -> None:
    """Refuse ``path`` unless it is a regular file under the vocabulary bound
    (``LIVETOK_MAX_VOCAB_BYTES``): the one-line errors of :data:`INPUT_ERRORS`.

    Runtime complexity: ``O(1)``.
    """
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path}: not a regular file; {option} takes a vocabulary file")
    limit = size_limit("LIVETOK_MAX_VOCAB_BYTES", MAX_VOCAB_BYTES)
    if st.st_size > limit:
        raise ValueError(f"{path}: {st.st_size:,} bytes, more than livetok reads for a "
                         f"vocabulary ({limit:,}); set LIVETOK_MAX_VOCAB_BYTES to change it")


def load_encoding(name: str, vocab: str | None, tokenizer: str | None = None) -> PieceEncoding:
    """The encoding ``name``, its vocabulary from the file ``vocab`` when given: refused
    unless a regular file under the vocabulary bound (``LIVETOK_MAX_VOCAB_BYTES``), and a
    byte-level BPE vocabulary must hold every single byte. ``tokenizer`` (``--tokenizer``: a
    file, or a model's folder and then its ``tokenizer.json``) is checked the same way before
    ``name`` (its absolute path) is read.

    Runtime complexity: ``O(vocabulary)``.
    """
    if tokenizer is not None:
        # a model's folder: its tokenizer.json, as -e reads it
        check_vocabulary_file(tokenizer_json_path(tokenizer), "--tokenizer")
    if vocab is None:
        enc = get_encoding(name)
    else:
        check_vocabulary_file(vocab)
        enc = get_encoding(name, path=vocab)
    if isinstance(enc, Encoding):
        check_byte_level(enc.mergeable_ranks, vocab or enc.source or enc.name)
    return enc


def run(args: argparse.Namespace) -> int:
    name = encoding_name("count", args)
    if isinstance(name, int):
        return name
    try:
        enc = load_encoding(name, args.vocab, args.tokenizer)
    except INPUT_ERRORS as exc:
        return input_error("count", exc, args.vocab or args.tokenizer)
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
            n = count_file(enc, name, stream=args.stream, allow_bar=not args.no_progress,
                           jobs=jobs)
        except BrokenPipeError:
            raise
        except INPUT_ERRORS as exc:
            status = input_error("count", exc, "standard input" if name == "-" else name)
            continue
        grand += n
        print(f"{n:>10} {name}" if args.files else f"{n:>10}")
    if len(files) > 1:
        print(f"{grand:>10} total")
    return status


def _count_with_bar(enc: PieceEncoding, text: str, name: str, allow_bar: bool,
                    jobs: int = 1) -> int:
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
