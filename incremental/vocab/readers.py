"""Reading vocabulary files, offline and bounded: ``.tiktoken`` files, GPT-2 ``encoder.json``
+ ``vocab.bpe``, WordPiece ``vocab.txt``, and the bounded reads and checks they share.

Every reader bounds what a file may make livetok hold (:func:`read_limited`,
:data:`MAX_VOCAB_BYTES`, :data:`MAX_RANK`, :data:`MAX_JSON_DEPTH`) and fails with a
:class:`VocabularyError` that names the file. *Where* the built-in vocabularies are is
:mod:`.find`'s business; nothing here downloads.
"""

from __future__ import annotations

import binascii
import errno
import gzip
import io
import json
import os
import re
import stat
import zlib
from itertools import accumulate, repeat
from operator import sub
from typing import Any, Callable, Mapping

from . import parse_store as vocab_cache
from ..env_limits import size_limit

__all__ = [
    "VocabularyError",
    "MAX_VOCAB_BYTES",
    "MAX_RANK",
    "MAX_JSON_DEPTH",
    "load_tiktoken_file",
    "load_gpt2_files",
    "read_vocab_txt",
    "vocab_from_lines",
    "check_ranks",
    "check_byte_level",
    "read_limited",
    "read_as",
    "inflated",
    "gpt2_byte_decoder",
    "size_limit",
    "check_json_depth",
]


class VocabularyError(ValueError):
    """A vocabulary could not be found or read; the message names the file (``PATH: what is
    wrong``) or says where livetok looked."""


# --- bounds on what a file may make livetok hold ------------------------------------------------

#: the most bytes a vocabulary file may hold, after inflating a gzipped one: o200k_base is
#: 3.6 MB, so any real vocabulary fits while a gzip bomb or ``/dev/zero`` stops here.
#: ``LIVETOK_MAX_VOCAB_BYTES`` overrides it (tests lower it).
MAX_VOCAB_BYTES = 256 << 20
#: ranks are token ids, and an encoding keeps tables of ``max rank + 1`` entries (decoder,
#: lead counts): a rank of 2^31 would ask for 16 GB there. 2^24 is 64 times the largest
#: vocabulary in use (o200k_base: 200,019 ids).
MAX_RANK = 1 << 24
#: JSON files livetok reads (an ``encoder.json``, an editing trace) are a few levels deep:
#: deeper ones are refused before the parser, which recurses once per level
MAX_JSON_DEPTH = 16
#: files are read in blocks of this size, with a running total against the bound
_READ_BLOCK = 1 << 20


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def read_limited(
    path: str | os.PathLike[str],
    limit: int,
    *,
    what: str,
    env: str,
    error: type[ValueError] = VocabularyError,
    inflate: bool = True,
    regular_only: bool = False,
) -> bytes:
    """The bytes of the file ``path`` (inflated when it is gzipped, unless ``inflate`` is
    false), read in blocks and refused as soon as they pass ``limit`` bytes: a gzip bomb,
    ``/dev/zero`` or a sparse file of a terabyte cost ``O(limit)`` memory, never more.
    With ``regular_only`` (every vocabulary and ``tokenizer.json``), the file is opened
    without blocking (``O_NONBLOCK``) and anything but a regular file is refused, unread, so
    a FIFO or a device named as a vocabulary cannot stop the reader (a trace or a base
    document named on the command line may come from a pipe).

    Every failure is ``error("PATH: what is wrong")``: a file that cannot be opened, one too
    large (naming ``env``, the variable that raises ``limit``), a damaged gzip stream.
    ``what`` names the kind of file in the messages ("vocabulary", "trace").

    Runtime complexity: ``O(min(file size, limit))``; memory ``O(limit)``.
    """
    name = os.fspath(path)
    try:
        # regular_only: without blocking, so a FIFO is refused, not waited on
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
                     | (getattr(os, "O_NONBLOCK", 0) if regular_only else 0))
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise error(f"{name}: cannot read {what}: {getattr(exc, 'strerror', None) or exc}"
                    ) from exc
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode) or (regular_only and not stat.S_ISREG(mode)):
        os.close(fd)
        if stat.S_ISDIR(mode):  # as open() says it
            raise error(f"{name}: cannot read {what}: {os.strerror(errno.EISDIR)}")
        raise error(f"{name}: not a regular file (a FIFO, a device or a folder); livetok "
                    f"reads a {what} only from a regular file")
    os.set_blocking(fd, True)  # regular_only: a regular file, whose reads never wait
    with open(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:  # a regular file (devices and pipes say 0)
            raise error(_too_large(name, what, limit, env, f"{size:,} bytes, more"))
        try:
            raw = _read_blocks(f.read, limit, lambda: error(
                _too_large(name, what, limit, env, "more")))
        except OSError as exc:
            raise error(f"{name}: cannot read {what}: {exc.strerror or exc}") from exc
    if inflate and raw[:2] == b"\x1f\x8b":
        return inflate_limited(raw, limit, name, what=what, env=env, error=error)
    return raw


def inflate_limited(raw: bytes, limit: int, name: str, *, what: str, env: str,
                    error: type[ValueError] = VocabularyError) -> bytes:
    """The gzip data ``raw`` (of the file ``name``) inflated, refused as soon as it passes
    ``limit`` bytes; raises ``error`` as :func:`read_limited` does.

    Runtime complexity: ``O(min(inflated size, limit))``.
    """
    try:
        return _read_blocks(gzip.GzipFile(fileobj=io.BytesIO(raw), mode="rb").read, limit,
                            lambda: error(_too_large(name, what, limit, env, "inflates to more")))
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise error(
            f"{name}: a damaged or truncated gzip file ({exc}); copy the {what} again"
        ) from None


def _read_blocks(read: Callable[[int], bytes], limit: int,
                 too_large: Callable[[], ValueError]) -> bytes:
    """All that ``read`` gives, in blocks, raising ``too_large()`` once past ``limit`` bytes."""
    blocks: list[bytes] = []
    total = 0
    while block := read(_READ_BLOCK):
        total += len(block)
        if total > limit:
            raise too_large()
        blocks.append(block)
    return b"".join(blocks)


def _too_large(name: str, what: str, limit: int, env: str, got: str) -> str:
    return (f"{name}: {got} than livetok reads for a {what} ({_mib(limit)}); not a {what}, "
            f"or set {env} to a larger number of bytes")


#: a JSON string once its escapes are gone (see :func:`check_json_depth`)
_JSON_STRING = re.compile(rb'"[^"]*"')
#: what is neither a quote nor a bracket, deleted by ``bytes.translate``
_NOT_MARKS = bytes(b for b in range(256) if b not in b'"[]{}')
#: an opening bracket becomes 2, a closing one 0: each minus one is the change in depth
_BRACKET_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def check_json_depth(raw: bytes, max_depth: int, name: str, error: type[ValueError]) -> None:
    r"""Raise ``error`` when the JSON text ``raw`` nests deeper than ``max_depth`` brackets
    (the ``json`` parser recurses once per level and fails with ``RecursionError``).

    Brackets are counted outside strings without a parser: escaped backslashes and quotes
    are dropped first (``\\`` before ``\"``, as a JSON reader pairs them left to right), so
    every remaining quote delimits a string and ``"[^"]*"`` removes them all in one linear
    pass; the running depth is then summed in C over blocks, stopping at the first block that
    goes too deep. Malformed JSON passes through for the parser to report.

    >>> check_json_depth(b'{"a": ["[[[\\"", [1]]}', 3, "x.json", ValueError)
    >>> check_json_depth(b"[[[]]]", 2, "x.json", ValueError)
    Traceback (most recent call last):
    ...
    ValueError: x.json: JSON nested deeper than 2 levels (3 at least); not the expected file?

    Runtime complexity: ``O(len(raw))``.
    """
    # escapes out, then only quotes and brackets kept: strings are short runs of those
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = unescaped.translate(None, _NOT_MARKS).replace(b'""', b"")
    steps = _JSON_STRING.sub(b"", marks).translate(_BRACKET_STEP)
    depth = 0
    for at in range(0, len(steps), _READ_BLOCK):
        block = steps[at : at + _READ_BLOCK]
        deepest = max(accumulate(map(sub, block, repeat(1)), initial=depth))
        if deepest > max_depth:
            raise error(f"{name}: JSON nested deeper than {max_depth} levels ({deepest:,} at "
                        "least); not the expected file?")
        depth += block.count(2) - block.count(0)


def check_ranks(ranks: Mapping[bytes, int], name: str) -> None:
    """Raise :class:`VocabularyError` unless the ranks are distinct integers in
    ``0 <= rank < MAX_RANK`` (a rank is a token id: two tokens with one id could not be told
    apart when decoding, and ids index tables of ``max rank + 1`` entries).

    >>> check_ranks({b"a": 0, b"b": 0}, "v.tiktoken")
    Traceback (most recent call last):
    ...
    livetok.incremental.vocab.readers.VocabularyError: v.tiktoken: rank 0 is given to two tokens, b'a' and b'b'; each token needs its own rank

    Runtime complexity: ``O(len(ranks))``.
    """
    if not ranks:
        raise VocabularyError(f"{name}: the vocabulary is empty")
    values = ranks.values()
    if min(values) < 0 or max(values) >= MAX_RANK:
        tok, rank = next((t, r) for t, r in ranks.items() if not 0 <= r < MAX_RANK)
        raise VocabularyError(
            f"{name}: token {tok!r} has rank {rank:,}; ranks are token ids from 0 to "
            f"{MAX_RANK - 1:,}"
        )
    if len(set(values)) != len(ranks):
        first: dict[int, bytes] = {}
        for tok, rank in ranks.items():
            other = first.setdefault(rank, tok)
            if other is not tok:
                raise VocabularyError(
                    f"{name}: rank {rank} is given to two tokens, {other!r} and {tok!r}; each "
                    "token needs its own rank"
                )


def check_byte_level(ranks: Mapping[bytes, int], name: str) -> None:
    """Raise :class:`VocabularyError` unless every single byte is a token, as byte-level BPE
    needs (a text holding a missing byte could not be encoded).

    >>> check_byte_level({bytes([b]): b for b in range(255)}, "v.tiktoken")
    Traceback (most recent call last):
    ...
    livetok.incremental.vocab.readers.VocabularyError: v.tiktoken: not a byte-level BPE vocabulary: 1 of the 256 single bytes has no rank (0xff); every byte must be a token

    Runtime complexity: ``O(1)`` (256 lookups).
    """
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        shown = ", ".join(f"0x{b:02x}" for b in missing[:8]) + (", ..." if len(missing) > 8 else "")
        n = len(missing)
        raise VocabularyError(
            f"{name}: not a byte-level BPE vocabulary: {n} of the 256 single bytes "
            f"{'has' if n == 1 else 'have'} no rank ({shown}); every byte must be a token"
        )


def load_tiktoken_file(path: str | os.PathLike[str]) -> dict[bytes, int]:
    """Read a ``.tiktoken`` file (``base64(token) rank`` per line, optionally gzipped).

    The file is read with a bound on its (inflated) size, ``MAX_VOCAB_BYTES``, and its ranks
    are checked by :func:`check_ranks`; every failure is a :class:`VocabularyError` that
    names the file. The ranks come from the vocabulary cache when it holds this file's
    (:mod:`.parse_store`; docs/startup.md has the figures).

    Runtime complexity: ``O(file size)``.
    """
    name = os.fspath(path)
    limit = vocabulary_limit()
    raw = read_vocabulary(name, inflate=False)  # as on disk: the cache's key

    def parse() -> dict[bytes, int]:
        text = inflated(raw, name, "vocabulary", limit)
        try:
            ranks = _parse_strict(text)
        except ValueError:  # not in the strict form: read line by line, as tiktoken does
            ranks = _parse_lines(text, name)
        check_ranks(ranks, name)
        return ranks

    # the bound is part of the key: a file refused under a lower bound is refused cached too
    return vocab_cache.cached(f"tiktoken-{limit}", name, [raw], parse, valid=_is_ranks,
                              code=[__file__])


def _is_ranks(value: object) -> bool:
    """Whether ``value`` has the shape of ranks (a non-empty dict of bytes to ints; the
    cache's checksum vouches for the rest). Runtime complexity: ``O(1)``."""
    if type(value) is not dict or not value:
        return False
    token, rank = next(iter(value.items()))
    return type(token) is bytes and type(rank) is int


#: the variable that raises :data:`MAX_VOCAB_BYTES`
_LIMIT_ENV = "LIVETOK_MAX_VOCAB_BYTES"


def vocabulary_limit() -> int:
    """The most bytes a vocabulary file may hold: ``$LIVETOK_MAX_VOCAB_BYTES`` or
    :data:`MAX_VOCAB_BYTES`. Runtime complexity: ``O(1)``."""
    return size_limit(_LIMIT_ENV, MAX_VOCAB_BYTES)


def read_vocabulary(name: str, *, inflate: bool = True) -> bytes:
    """The bytes of a vocabulary file, read with the ``LIVETOK_MAX_VOCAB_BYTES`` bound (see
    :func:`read_limited`). Runtime complexity: ``O(min(file size, bound))``."""
    return read_limited(name, vocabulary_limit(), what="vocabulary", env=_LIMIT_ENV,
                        inflate=inflate, regular_only=True)


def _parse_lines(raw: bytes, name: str) -> dict[bytes, int]:
    """Ranks of a ``.tiktoken`` file in any layout tiktoken reads (``token rank`` per line,
    any white space), or :class:`VocabularyError` naming the first bad line.

    Runtime complexity: ``O(len(raw))``.
    """
    ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[binascii.a2b_base64(token)] = int(rank)
        except ValueError:  # binascii.Error is a ValueError
            raise VocabularyError(
                f"{name}: not a .tiktoken file (expected 'base64token rank' per line; line "
                f"{lineno} is {line[:60]!r})"
            ) from None
    return ranks


#: the bytes a ``.tiktoken`` file in the strict form holds besides the space and ``\n``
_B64_AND_DIGITS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="


def _parse_strict(raw: bytes) -> dict[bytes, int]:
    """Ranks of a ``.tiktoken`` file whose every line is ``token rank`` with one space and
    ``\\n`` endings (all files that tiktoken and the vocabulary packages ship), in C loops;
    ``ValueError`` when the file is not in that form (the caller then reads it line by line).

    The form is checked on the whole file: only base64 characters, digits, spaces and
    ``\\n``; no empty line; as many spaces as lines and none at a line's start or end, so every
    line splits into exactly two fields and ``raw.split()`` alternates token, rank (faster than
    a loop over the lines: docs/algorithms.md, "Encoder choices").

    Runtime complexity: ``O(len(raw))``.
    """
    body = raw[:-1] if raw.endswith(b"\n") else raw
    if (not body or body.translate(None, _B64_AND_DIGITS + b" \n")
            or body.count(b" ") != body.count(b"\n") + 1
            or b"\n\n" in body or b" \n" in body or b"\n " in body or b"  " in body
            or body[:1] == b" " or body[-1:] == b" "):
        raise ValueError("not the strict form")
    fields = body.split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2])))


def gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-ins for bytes (``bytes_to_unicode`` of ``encoder.py``), reversed."""
    printable = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    decoder = {chr(b): b for b in printable}
    n = 0
    for b in range(256):
        if b not in printable:
            decoder[chr(256 + n)] = b
            n += 1
    return decoder


def _gpt2_unmap_table() -> dict[int, int]:
    """``str.translate`` table from GPT-2's stand-in characters to the code points U+0000..U+00FF
    of their bytes: ``token.translate(table).encode("latin-1")`` is the token's bytes (one C
    call per token instead of a generator over its characters)."""
    return {ord(c): b for c, b in gpt2_byte_decoder().items()}


def load_gpt2_files(
    encoder_json: str | os.PathLike[str], vocab_bpe: str | os.PathLike[str] | None = None
) -> dict[bytes, int]:
    """Read GPT-2 style ``encoder.json`` (+ ``vocab.bpe``) into tiktoken-style ranks.

    The ids of ``encoder.json`` are the ranks (tiktoken's ``r50k_base`` is exactly this). When
    ``vocab.bpe`` is given, its merge order is checked against the ids, as tiktoken does.
    Both files are read with a bound on their size (``MAX_VOCAB_BYTES``); ``encoder.json``
    must be one flat JSON object of token strings to integer ids (:func:`check_ranks`). The
    ranks come from the vocabulary cache when it holds these files' (:mod:`.parse_store`).

    Runtime complexity: ``O(file size)``.
    """
    name = os.fspath(encoder_json)
    limit = vocabulary_limit()
    raw = read_as(name, _ENCODER_JSON, inflate=False)
    bpe_name = None if vocab_bpe is None else os.fspath(vocab_bpe)
    raw_bpe = b"" if bpe_name is None else read_as(bpe_name, _VOCAB_BPE, inflate=False)

    def parse() -> dict[bytes, int]:
        encoder = json_object(inflated(raw, name, _ENCODER_JSON, limit), name, _ENCODER_JSON)
        ranks, token_bytes = _gpt2_ranks(encoder, name)
        if bpe_name is not None:
            _check_merges(inflated(raw_bpe, bpe_name, _VOCAB_BPE, limit), bpe_name, name,
                          ranks, token_bytes)
        return ranks

    kind = f"gpt2-{limit}" + ("" if bpe_name is None else "-merges")
    return vocab_cache.cached(kind, name, [raw, raw_bpe], parse, valid=_is_ranks,
                              code=[__file__])


_ENCODER_JSON = "GPT-2 encoder.json"
_VOCAB_BPE = "GPT-2 vocab.bpe"


def _gpt2_ranks(encoder: dict[str, Any], name: str
                ) -> tuple[dict[bytes, int], Callable[[str], bytes]]:
    """The ranks of the parsed ``encoder.json`` of the file ``name``, checked, and the
    function from a GPT-2 token string to its bytes. Runtime complexity: ``O(vocabulary)``."""
    table = _gpt2_unmap_table()

    def token_bytes(token: str) -> bytes:
        try:
            return token.translate(table).encode("latin-1")
        except UnicodeEncodeError:  # a character that stands for no byte
            raise VocabularyError(
                f"{name}: {token!r} is not a GPT-2 byte-level token"
            ) from None

    ranks = {}
    for token, rank in encoder.items():
        if token.startswith("<|") and token.endswith("|>"):
            continue  # special tokens are not mergeable
        if type(rank) is not int:
            raise VocabularyError(
                f"{name}: the id of {token!r} is {json.dumps(rank)[:40]}; encoder.json maps "
                "each token to an integer id"
            )
        ranks[token_bytes(token)] = rank
    check_ranks(ranks, name)
    return ranks, token_bytes


def read_as(name: str, what: str, *, inflate: bool = True) -> bytes:
    """:func:`read_vocabulary`, its errors naming the file as ``what``."""
    try:
        return read_vocabulary(name, inflate=inflate)
    except VocabularyError as exc:
        raise VocabularyError(str(exc).replace("vocabulary", what, 1)) from exc.__cause__


def inflated(raw: bytes, name: str, what: str, limit: int) -> bytes:
    """``raw``, the bytes of the file ``name``, inflated when they are gzipped."""
    if raw[:2] != b"\x1f\x8b":
        return raw
    return inflate_limited(raw, limit, name, what=what, env=_LIMIT_ENV)


def read_json_object(name: str, what: str) -> dict[str, Any]:
    """The JSON object of the file ``name`` (bounded read, depth checked before parsing).

    Runtime complexity: ``O(file size)``.
    """
    return json_object(read_as(name, what), name, what)


def json_object(raw: bytes, name: str, what: str) -> dict[str, Any]:
    """The JSON object that ``raw``, the bytes of the file ``name``, holds (depth checked
    before parsing); a :class:`VocabularyError` saying what is wrong otherwise.

    Runtime complexity: ``O(len(raw))``.
    """
    check_json_depth(raw, MAX_JSON_DEPTH, name, VocabularyError)
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise VocabularyError(f"{name}: not a {what}: not UTF-8 text ({exc.reason} at byte "
                              f"{exc.start})") from None
    except ValueError as exc:
        raise VocabularyError(f"{name}: not a {what}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise VocabularyError(
            f"{name}: not a {what}: its top level is a JSON {type(data).__name__}, not an "
            "object of token strings to ids"
        )
    return data


def _check_merges(raw: bytes, name: str, encoder_name: str, ranks: dict[bytes, int],
                  token_bytes: Callable[[str], bytes]) -> None:
    """Check that the merges of ``vocab.bpe`` (the bytes ``raw`` of the file ``name``) make
    the tokens of ``encoder.json`` in id order.

    Runtime complexity: ``O(file size)``.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VocabularyError(f"{name}: not a GPT-2 vocab.bpe: not UTF-8 text ({exc.reason})") from None
    n = 256
    for lineno, line in enumerate(text.split("\n")[1:], 2):
        if not line.strip():
            continue
        pair = line.split()
        if len(pair) != 2:
            raise VocabularyError(
                f"{name}: line {lineno} is {line[:60]!r}; vocab.bpe has one merge 'left right' "
                "per line"
            )
        if ranks.get(token_bytes(pair[0] + pair[1])) != n:
            raise VocabularyError(
                f"{name} does not match {encoder_name} at merge {n}: pass the encoder.json "
                "and vocab.bpe of the same model"
            )
        n += 1


# --- WordPiece vocab.txt -------------------------------------------------------------------------

# Rust's str::trim_end strips White_Space characters (HF's WordPiece::read_file uses it)
_RUST_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + (
    "\u2028\u2029\u202f\u205f\u3000"
)


def read_vocab_txt(path: str | os.PathLike[str]) -> dict[str, int]:
    """Read a WordPiece ``vocab.txt``: token of line ``k`` gets id ``k``, as HF does.

    Lines are split at ``\\n`` (a trailing ``\\r`` goes too) and right-trimmed of whitespace;
    a repeated token keeps its last id.

    Runtime complexity: ``O(file size)``.
    """
    try:  # a bounded read: a huge or endless file is an error, not an exhausted memory
        text = read_vocabulary(os.fspath(path)).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VocabularyError(f"cannot read vocab.txt {str(path)!r}: {exc}") from exc
    return vocab_from_lines(text)


def vocab_from_lines(text: str) -> dict[str, int]:
    """The vocabulary of the text of a ``vocab.txt`` (see :func:`read_vocab_txt`).

    >>> vocab_from_lines("[UNK]\\nhello \\n##s\\n")
    {'[UNK]': 0, 'hello': 1, '##s': 2}

    Runtime complexity: ``O(len(text))``.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return {line.rstrip(_RUST_WS): k for k, line in enumerate(lines)}
