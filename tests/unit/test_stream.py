"""``encode_stream`` equals ``encode`` on random chunkings, for every encoding it is given."""

from __future__ import annotations

import doctest
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental import stream
from livetok.incremental.samples import corpora as corpus
from livetok.incremental.sentencepiece.encoding import find_mistral_v1, load_mistral_v1
from livetok.incremental.stream import StreamStats, count_stream, encode_stream


def _encodings() -> list[str]:
    names = []
    if find_mistral_v1() is not None:
        names.append("mistral-7b-v0.1")
    try:
        from livetok.incremental import get_encoding

        for name in ("cl100k_base", "o200k_base", "r50k_base"):
            try:
                get_encoding(name)
                names.append(name)
            except Exception:  # vocabulary not installed on this machine
                pass
    except ImportError:
        pass
    return names


ENCODINGS = _encodings()


def get(name: str):
    # the registry keeps each loaded encoding (load_mistral_v1 builds one at each call: 0.3 s)
    from livetok.incremental import get_encoding

    return get_encoding(name)


def chunked(text: str, cuts: list[int]) -> list[str]:
    cuts = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(cuts, cuts[1:])]


_pieces = st.sampled_from(
    ["hello", " world", "  ", "\n", "\r\n", "\t", "123456", "don't", "'s", "日本語", "中文测试",
     "😀", "🦀🦀", " ", "!!", "...", "a", "ZZ", "\u00a0", "é", "\u0301", "▁",
     # what makes a piece read ahead: upper-case runs and combining marks before lower case
     # (o200k backtracks over them), contractions, whitespace before the end of the text
     "ABC", "DEF", "Hello", "\u0301\u0301", "ÀÉ", "'ll", "'RE", "'", "    ", " \n", "x",
     # lone surrogates (and a pair, which a str holds as two of them): U+FFFD each
     "\ud800", "\udfff", "\ud83d\ude00"]
)
stream_text = st.lists(_pieces | st.text(max_size=5), max_size=40).map("".join)


@pytest.mark.skipif(not ENCODINGS, reason="no encoding available (pip install --no-deps mistral-common)")
@pytest.mark.parametrize("name", ENCODINGS)
@given(text=stream_text, cuts=st.lists(st.integers(0, 10**6), max_size=12),
       batch=st.integers(1, 40))
def test_stream_equals_encode_hypothesis(name, text, cuts, batch) -> None:
    enc = get(name)
    chunks = chunked(text, cuts)
    got = list(encode_stream(enc, chunks, min_batch_cp=batch))
    assert got == enc.encode(text)
    assert count_stream(enc, chunks, min_batch_cp=batch) == len(got)


@pytest.mark.skipif(not ENCODINGS, reason="no encoding available")
@pytest.mark.parametrize("name", ENCODINGS)
def test_stream_equals_encode_real_text(name) -> None:
    enc = get(name)
    text = corpus.real_text(60_000)
    rng = random.Random(1234)
    cuts = [rng.randrange(len(text)) for _ in range(150)]
    chunks = chunked(text, cuts)
    stats = StreamStats()
    got = list(encode_stream(enc, chunks, min_batch_cp=64, stats=stats))
    assert got == enc.encode(text)
    # memory: the buffer never held much more than one chunk plus the unfinished piece
    longest = max(e - s for s, e in enc.split(text))
    assert stats.max_buffer_cp <= max(map(len, chunks)) + longest + 64 + 16, stats


@pytest.mark.skipif(find_mistral_v1() is None, reason="pip install --no-deps mistral-common")
def test_stream_memory_flat_on_long_input() -> None:
    enc = load_mistral_v1()
    line = "The quick brown fox jumps over the lazy dog. 日本語のテキスト 12345\n" * 50
    stats = StreamStats()
    n = count_stream(enc, (line for _ in range(200)), stats=stats)  # ~650 K code points
    assert n == enc.count(line * 200)
    assert stats.max_buffer_cp < 2 * len(line) + (1 << 16)


@pytest.mark.skipif(not ENCODINGS, reason="no encoding available")
@pytest.mark.parametrize("name", ENCODINGS)
def test_stream_lone_surrogates(name) -> None:
    """Surrogates become U+FFFD as in ``encode``, also when a pair is cut between chunks
    (encode_stream used to raise UnicodeEncodeError on them)."""
    enc = get(name)
    text = "a\ud800b x\udfff " + "word " * 20 + "\ud83d\ude00 end"
    for batch in (1, 8, 1 << 16):
        for cut in range(len(text) + 1):
            got = list(encode_stream(enc, [text[:cut], text[cut:]], min_batch_cp=batch))
            assert got == enc.encode(text), (batch, cut)


def test_stream_custom_pattern_takes_the_generic_path() -> None:
    """An encoding without the fast splitter (a custom ``pat_str``) streams piece by piece
    through ``split``/``encode_piece``; ids and counts still equal ``encode``."""
    from livetok.incremental import Encoding, get_encoding

    base = get_encoding("cl100k_base")
    enc = Encoding("cl100k_lines", pat_str=r"[^\n]+\n?|\n",
                   mergeable_ranks=base.mergeable_ranks)
    assert enc.piece_strings is None and base.piece_strings is not None
    text = corpus.real_text(20_000)
    rng = random.Random(5)
    chunks = chunked(text, [rng.randrange(len(text)) for _ in range(40)])
    stats = StreamStats()
    assert list(encode_stream(enc, chunks, min_batch_cp=256, stats=stats)) == enc.encode(text)
    assert stats.pieces == len(enc.pieces(text))
    assert count_stream(enc, chunks, min_batch_cp=256) == enc.count(text)


@pytest.mark.skipif(not ENCODINGS, reason="no encoding available")
@pytest.mark.parametrize("name", ENCODINGS)
def test_stream_stats_count_every_piece(name) -> None:
    enc = get(name)
    text = corpus.real_text(30_000)
    stats = StreamStats()
    n = count_stream(enc, chunked(text, list(range(0, 30_000, 997))), min_batch_cp=512,
                     stats=stats)
    assert n == enc.count(text)
    assert stats.pieces == len(list(enc.split(text)))


def test_stream_rejects_bytes() -> None:
    with pytest.raises(TypeError, match="text mode"):
        list(encode_stream(object(), [b"abc"]))  # type: ignore[arg-type, list-item]


def test_empty_stream() -> None:
    if find_mistral_v1() is None:
        pytest.skip("pip install --no-deps mistral-common")
    assert list(encode_stream(load_mistral_v1(), [])) == []
    assert list(encode_stream(load_mistral_v1(), ["", ""])) == []


def test_doctests() -> None:
    assert doctest.testmod(stream).failed == 0
