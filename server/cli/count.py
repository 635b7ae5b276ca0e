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

Several ``-e`` print one column per encoding, under a header naming them. ``-r`` maps each
folder given (:mod:`livetok.server.workspace`: ``.gitignore`` and the budget file's
``include``/``exclude`` honoured, text files only, bounded, counts kept in the user's cache
folder by content hash) and prints it as a tree with folder totals, like ``du``, largest
first; ``--format json`` prints one object instead (``docs/workspace.md``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from livetok.incremental import Encoding, PieceEncoding, get_encoding
from livetok.incremental.names.catalog import stand_in
from livetok.incremental.vocab.readers import MAX_VOCAB_BYTES, check_byte_level
from livetok.incremental.env_limits import size_limit
from livetok.incremental.names.registry import tokenizer_json_path
from livetok.incremental.stream import count_stream

from livetok.server.cli.main import (
    INPUT_ERRORS,
    Subparsers,
    add_encoding_arguments,
    describe_error,
    encoding_names,
    input_error,
)
from livetok.server.budgets.limits import printable
from livetok.server.forked import forked_map
from livetok.server.parallel_open import available_cores
from livetok.server.walk import Skipped
from livetok.server.workspace.counting import (
    BINARY_REASON,
    Encodings,
    check_piece_lengths,
    max_piece_cp,
)
from livetok.server.workspace.tokenmap import WorkspaceMap
from livetok.server.workspace.tree import Sort

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
    add_encoding_arguments(p, repeat=True)
    p.add_argument("-r", "--recursive", action="store_true",
                   help="count the text files under each FOLDER (honouring .gitignore and the "
                   "include/exclude globs of livetok.toml or [tool.livetok]) and print them as "
                   "a tree with each folder's total, largest first (see docs/workspace.md)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: a line per file (default); json: one object for tools")
    p.add_argument("--sort", choices=("tokens", "name"), default="tokens",
                   help="with -r: each folder's entries by count, largest first (default), "
                   "or by name")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="with -r: also list the entries .gitignore or the budget file's globs "
                   "leave out, and each binary file (without it: how many, in one line; "
                   "unreadable and too large files are always listed)")
    p.add_argument("--no-ignore", action="store_true",
                   help="with -r: read no .gitignore file (the budget file's include/exclude "
                   "still apply); a FOLDER named is counted even when a .gitignore above it "
                   "ignores it, with or without this")
    p.add_argument("--no-cache", action="store_true",
                   help="with -r: neither read nor write the counts kept in the user's cache "
                   "folder")
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
                check_piece_lengths(enc, text, max_piece)
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
        check_piece_lengths(enc, head, max_piece)
        total += _count_with_bar(enc, head, name, allow_bar, jobs)
    rest = "".join(pending)
    check_piece_lengths(enc, rest, max_piece)
    return total + _count_with_bar(enc, rest, name, allow_bar, jobs)


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


def counted_with(names: Sequence[str]) -> list[str] | int:
    """The encoding each of ``names`` is counted with: for a model the catalog marks ≈
    (``-e claude-3.5-sonnet``) its stand-in, after a one-line note on stderr (its counts are
    then printed marked ≈, as the editor's ``livetok.compare`` shows them), else the name; or
    the exit status 2 after the one-line error when a stand-in is not here.

    Runtime complexity: ``O(names)``.
    """
    out = []
    for name in names:
        try:
            found = stand_in(name)
        except INPUT_ERRORS as exc:
            return input_error("count", exc)
        if found is not None:
            print(f"livetok count: {found.note}", file=sys.stderr)
        out.append(name if found is None else found.encoding)
    return out


def run(args: argparse.Namespace) -> int:
    names = encoding_names("count", args)
    if isinstance(names, int):
        return names
    counted = counted_with(names)
    if isinstance(counted, int):
        return counted
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        print("livetok count: --jobs takes a number of processes, 1 or more", file=sys.stderr)
        return 2
    if args.vocab is not None and len(names) > 1:
        print("livetok count: --vocab names one vocabulary: give one -e with it",
              file=sys.stderr)
        return 2
    if args.recursive:
        return _run_tree(args, names, jobs, counted)
    encs: list[PieceEncoding] = []
    for name, counted_name in zip(names, counted):
        try:
            tokenizer = name if args.tokenizer is not None and name == names[-1] else None
            encs.append(load_encoding(counted_name, args.vocab, tokenizer and args.tokenizer))
        except INPUT_ERRORS as exc:
            return input_error("count", exc, args.vocab or args.tokenizer)
    return _run_files(args, names, encs, jobs, counted)


def _run_files(args: argparse.Namespace, names: list[str], encs: list[PieceEncoding],
               jobs: int, counted: list[str]) -> int:
    """``livetok count FILE...``: a row per file, a column per encoding."""
    status = 0
    files = args.files
    if not files:  # as wc: standard input, and its count printed without a name
        files = ["-"]
        if sys.stdin.isatty() and len(encs) == 1:
            print("livetok count: reading standard input (end it with Ctrl-D)", file=sys.stderr)
    if len(encs) > 1 and "-" in files:
        print("livetok count: standard input is read once: give one -e to count it",
              file=sys.stderr)
        return 2
    table = _Table(names, args.format, named=bool(args.files), counted=counted)
    for name in files:
        try:
            row = [count_file(enc, name, stream=args.stream, allow_bar=not args.no_progress,
                              jobs=jobs) for enc in encs]
        except BrokenPipeError:
            raise
        except INPUT_ERRORS as exc:
            label = "standard input" if name == "-" else name
            status = input_error("count", exc, label)
            table.errors.append({"path": label, "message": describe_error(exc, label)})
            continue
        table.row(row, name)
    table.finish(total=len(files) > 1)
    return status


class _Table:
    """What ``livetok count`` prints: ``wc``'s lines for one encoding; with several, a header
    naming them and a column each; or, with ``--format json``, one object at the end.
    ``counted``: the encoding each name is counted with (:func:`counted_with`); an ≈ model's
    counts are marked ``≈``, and false in the JSON's ``exact``."""

    def __init__(self, names: Sequence[str], fmt: str, *, named: bool = True,
                 counted: Sequence[str] | None = None) -> None:
        self.names = list(names)
        self.counted = list(names if counted is None else counted)
        self.marks = ["" if c == n else "≈" for n, c in zip(self.names, self.counted)]
        self.json = fmt == "json"
        self.named = named
        self.widths = [max(10, len(n)) for n in self.names]
        self.totals = [0] * len(self.names)
        self.files: list[dict[str, Any]] = []
        self.trees: list[dict[str, Any]] = []
        self.errors: list[dict[str, str]] = []
        self._header = len(self.names) > 1 and not self.json

    def line(self, counts: Sequence[int], label: str) -> None:
        if self._header:
            print(" ".join(n.rjust(w) for n, w in zip(self.names, self.widths)))
            self._header = False
        cells = " ".join(f"{m + str(n):>{w}}" for n, m, w in zip(counts, self.marks, self.widths))
        # a name is escaped: an ESC in it would drive the terminal, a newline forge a row
        print(f"{cells} {printable(label)}" if label else cells)

    def row(self, counts: Sequence[int], name: str) -> None:
        """A file's counts (added to the total)."""
        self.totals = [t + n for t, n in zip(self.totals, counts)]
        if self.json:
            self.files.append({"path": name, "tokens": list(counts)})
        else:
            self.line(counts, name if self.named else "")

    def finish(self, *, total: bool) -> None:
        if self.json:
            # one write (json.dump writes each of a big tree's ~30 pieces a node on its own);
            # indented for a terminal, else compact: only then does json use its C encoder
            # (a 10,000-file tree: 1.7 s in the Python encoder, under cProfile)
            sys.stdout.write(json.dumps(
                {"livetok-count": 1, "encodings": self.names, "counted_with": self.counted,
                 "exact": [not m for m in self.marks], "files": self.files,
                 "trees": self.trees, "total": self.totals, "errors": self.errors},
                indent=2 if sys.stdout.isatty() else None, ensure_ascii=False) + "\n")
        elif total:
            self.line(self.totals, "total")


def _quiet(reason: str) -> bool:
    """Whether an entry left out for ``reason`` is listed only with ``--verbose`` (what the
    user asked to leave out, and links to folders, which git does not follow either)."""
    return reason.startswith(("ignored by", "excluded by", "not included by",
                              "a symbolic link to a folder"))


def _run_tree(args: argparse.Namespace, names: list[str], jobs: int, counted: list[str]) -> int:
    """``livetok count -r FOLDER...``: each folder's map as a tree with totals."""
    if args.vocab is not None:
        print("livetok count: -r counts with named encodings (their counts are cached by "
              "name): use -e or --tokenizer, not --vocab", file=sys.stderr)
        return 2
    if not args.files or "-" in args.files:
        print("livetok count: -r takes folders (and files) to count, not standard input: "
              "livetok count -r .", file=sys.stderr)
        return 2
    try:
        encs = Encodings(counted, cache=not args.no_cache)
    except INPUT_ERRORS as exc:
        return input_error("count", exc, args.tokenizer)
    table = _Table(names, args.format, counted=counted)
    status = 0
    loaded: list[PieceEncoding] | None = None
    for name in args.files:
        if not os.path.isdir(name):
            try:
                if loaded is None:
                    loaded = [encs.encoding(i) for i in range(len(names))]
                row = [count_file(enc, name, allow_bar=False, jobs=jobs) for enc in loaded]
            except INPUT_ERRORS as exc:
                status = input_error("count", exc, name)
                table.errors.append({"path": name, "message": describe_error(exc, name)})
                continue
            table.row(row, name)
            continue
        try:
            m = WorkspaceMap(Path(name), encs, jobs=jobs, gitignore=not args.no_ignore)
            m.build()
        except INPUT_ERRORS as exc:
            status = input_error("count", exc, name)
            table.errors.append({"path": name, "message": describe_error(exc, name)})
            continue
        _print_map(m, name, table, args.sort, args.verbose)
    table.finish(total=len(args.files) > 1)
    return status


def _print_map(m: WorkspaceMap, name: str, table: _Table, sort: Sort, verbose: bool) -> None:
    """A folder's map: its entries left out on stderr, its tree on stdout (or in the JSON)."""
    root = str(m.root)
    inside = root.rstrip(os.sep) + os.sep

    def shown(path: Path) -> str:  # string work: relative_to costs ~10 us a node
        p = str(path)
        if p == root:
            return name
        if not p.startswith(inside):  # a .gitignore above the folder, with its warning
            return p
        return os.path.join(name, p[len(inside):].replace(os.sep, "/"))

    quiet = binary = 0
    for path, reason in sorted(m.skipped.items()):
        if _quiet(reason) and not verbose:
            quiet += 1
        elif reason == BINARY_REASON and not verbose:
            binary += 1
        elif not table.json:
            print(f"{printable(shown(path))}: warning: skipped: {printable(reason)}",
                  file=sys.stderr)
    table.totals = [t + n for t, n in zip(table.totals, m.tree.root.tokens)]
    if table.json:
        table.trees.append({
            "root": name, "tree": m.to_json(sort=sort, label=shown),
            "skipped": [{"path": shown(p), "reason": r} for p, r in sorted(m.skipped.items())]})
        return
    for path, _depth, node in m.tree.walk(sort=sort):
        table.line(node.tokens, shown(path) + ("/" if node.is_folder and
                                               not shown(path).endswith("/") else ""))
    if binary:
        print(f"livetok count: {printable(name)}: {binary:,} binary "
              f"{'file' if binary == 1 else 'files'} left out (a NUL byte in the first 8,000 "
              "bytes; -v lists them)", file=sys.stderr)
    if quiet:
        print(f"livetok count: {printable(name)}: {quiet:,} entries left out by .gitignore, the "
              "budget file's include/exclude or as links to folders (-v lists them)",
              file=sys.stderr)


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
