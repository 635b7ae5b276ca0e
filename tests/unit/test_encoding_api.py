"""One API on every encoding: each family ``get_encoding`` returns has ``encode_stream`` (and
``count``), declared in ``protocol.PieceEncoding`` and required by ``check_encoding``.

For each family available here (byte-level BPE, WordPiece, SentencePiece, the real
``tokenizer.json`` files) the method yields ``encode`` of a real text cut at seeded random
places: inside words, and just before, after and between multi-byte characters.
"""

from __future__ import annotations

import inspect
import random
from typing import Any, Iterator, Sequence

import pytest

from livetok.incremental import Document, get_encoding
from livetok.incremental import tiktoken_compat
from livetok.incremental.piece_encoding import PieceEncoding, check_encoding
from livetok.incremental.sentencepiece.encoding import find_mistral_v1
from livetok.incremental.stream import EncodeStreamMixin

from .. import _hf_encodings as hf
from .._refs import real_text

#: the registry's families: byte-level BPE (two patterns), WordPiece, SentencePiece BPE
REGISTERED = ["o200k_base", "cl100k_base", "bert-base-uncased", "mistral-7b-v0.1"]

#: text that puts 2-, 3- and 4-byte characters next to ASCII, combining marks, CJK without
#: spaces, emoji sequences and runs of white space
_MIXED = (
    "Größe café naïve e\u0301te\u0301 — 東京都の天気は晴れです。 Привет, мир! مرحبا بالعالم "
    "😀👍🏽 👨‍👩‍👧 🦀🦀🦀\n\n\t  x²+y²=z² ½ ﬁnance Ⅻ ０１２\u00a0nbsp\u2028ls  \r\n"
    "don't WE'LL I'm 12345678 ABCdef HTTPServer\n"
)


def _text() -> str:
    """Real text (Python sources, translations when Django is installed) and :data:`_MIXED`."""
    parts = [real_text(3_000), _MIXED]
    try:
        parts.append(hf.multilingual_text(3_000))
    except BaseException as exc:  # pytest.skip: Django (the translations) is not installed
        if type(exc).__name__ != "Skipped":
            raise
    parts.append(_MIXED)
    return "".join(parts)


TEXT = _text()


def _cuts(text: str, rng: random.Random, k: int) -> list[int]:
    """``k`` random cut positions, a third of them next to a non-ASCII character and a third
    between two letters (inside a word)."""
    wide = [i for i, ch in enumerate(text) if not ch.isascii()]
    inner = [i for i in range(1, len(text)) if text[i - 1].isalpha() and text[i].isalpha()]
    cuts = set()
    for _ in range(k):
        kind = rng.randrange(3)
        if kind == 0 and wide:
            cuts.add(rng.choice(wide) + rng.randrange(2))  # before or after the character
        elif kind == 1 and inner:
            cuts.add(rng.choice(inner))
        else:
            cuts.add(rng.randrange(len(text) + 1))
    return sorted(cuts)


def _chunks(text: str, cuts: Sequence[int]) -> list[str]:
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def _check_stream(enc: PieceEncoding, seed: int) -> None:
    """``encode_stream`` of random chunkings of :data:`TEXT` equals ``encode`` (and ``count``
    its length), for small batches (the buffer is split after nearly every chunk) and the
    default one."""
    check_encoding(enc)
    want = enc.encode(TEXT)
    assert enc.count(TEXT) == len(want)
    rng = random.Random(seed)
    for k, batch in ((400, 1), (60, 1), (30, 64), (5, 1 << 16)):
        chunks = _chunks(TEXT, _cuts(TEXT, rng, k))
        stream = enc.encode_stream(iter(chunks), min_batch_cp=batch)
        assert isinstance(stream, Iterator)
        got = list(stream)
        if got != want:
            at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                      min(len(got), len(want)))
            pytest.fail(f"{enc.name}: encode_stream differs from encode at token {at} "
                        f"(min_batch_cp={batch}, {len(chunks)} chunks): "
                        f"{got[at:at + 5]} != {want[at:at + 5]}")
    assert list(enc.encode_stream([])) == [] == list(enc.encode_stream(["", ""]))


def _registered(name: str) -> PieceEncoding:
    if name == "mistral-7b-v0.1" and find_mistral_v1() is None:
        pytest.skip("mistral-7b-v0.1: tokenizer.model.v1 not found "
                    "(pip install --no-deps mistral-common)")
    return get_encoding(name)


@pytest.mark.parametrize("name", REGISTERED)
def test_encode_stream_equals_encode_registered(name: str) -> None:
    _check_stream(_registered(name), seed=REGISTERED.index(name))


def test_encode_stream_equals_encode_tiktoken_compat() -> None:
    """tiktoken_compat's ``Encoding`` (a byte-level subclass) has it too."""
    _check_stream(tiktoken_compat.get_encoding("cl100k_base"), seed=10)


@pytest.mark.parametrize("name", hf.params())
def test_encode_stream_equals_encode_tokenizer_json(name: str) -> None:
    """The real ``tokenizer.json`` files (skipped, saying how to install it, when missing)."""
    _check_stream(hf.encoding(name), seed=20 + hf.NAMES.index(name))


def test_every_family_has_the_declared_signature() -> None:
    """``encode_stream`` has one signature everywhere: the protocol's."""
    want = inspect.signature(PieceEncoding.encode_stream)
    classes = {type(get_encoding(n)) for n in ("o200k_base", "bert-base-uncased")}
    from livetok.incremental.hf.encoding import TokenizerJsonEncoding
    from livetok.incremental.sentencepiece.encoding import SentencePieceEncoding

    classes |= {TokenizerJsonEncoding, SentencePieceEncoding, tiktoken_compat.Encoding}
    for cls in classes:
        assert inspect.signature(cls.encode_stream) == want, cls


class _NoStream:
    """Every member of ``PieceEncoding`` but ``encode_stream`` (one piece per text)."""

    name = "no-stream"
    supports_glue = False

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def count(self, text: str) -> int:
        return len(text)

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(map(chr, ids))

    def token_bytes(self, token_id: int) -> bytes:
        return chr(token_id).encode("utf-8", "replace")

    def split(self, text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
        if pos < len(text):
            yield pos, len(text)

    def horizon(self, text: str, start: int, limit: int) -> int:
        return len(text) + 1

    def encode_piece(self, piece: str, *, at_text_start: bool = False) -> list[int]:
        return self.encode(piece)

    def token_cp_lens(self, piece: str, ids: Sequence[int], *,
                      at_text_start: bool = False) -> list[int]:
        return [1] * len(ids)


class _WithStream(EncodeStreamMixin, _NoStream):
    """The same with the mixin: nothing else is missing."""


def test_check_encoding_requires_encode_stream() -> None:
    bad: Any = _NoStream()
    with pytest.raises(TypeError, match=r"it lacks encode_stream\. .*EncodeStreamMixin"):
        check_encoding(bad)
    with pytest.raises(TypeError, match=r"lacks encode_stream"):
        Document("hello", encoding=bad)
    good: Any = _WithStream()
    assert check_encoding(good) is good
    assert list(good.encode_stream(["ab", "c"], min_batch_cp=1)) == good.encode("abc")
    assert Document("hello", encoding=good).token_ids() == good.encode("hello")


def test_check_encoding_requires_count() -> None:
    bad: Any = type("NoCount", (EncodeStreamMixin,), {
        k: v for k, v in vars(_NoStream).items() if k != "count" and not k.startswith("__")})()
    with pytest.raises(TypeError, match=r"it lacks count\. "):
        check_encoding(bad)
