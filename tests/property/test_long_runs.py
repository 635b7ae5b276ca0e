"""Long runs of one byte (issue 35): the byte-level BPE's repetition of a run's period
(``bytelevel/bpe.py``, ``_run_repeat``) against tiktoken, the token sequence's chunk-wise
Algorithm 1 candidates (``TokenSeq.glue_starts`` / ``glue_ends``) against a walk over every
token, and typing into a long one-letter line against tiktoken after every key."""

from __future__ import annotations

import random

import pytest

from livetok.incremental import get_encoding
from livetok.incremental.bytelevel import bpe
from livetok.incremental.document import Document
from livetok.incremental.tokenseq import CLEAN, PIECE_START, TokenSeq

from .._edits import type_in_span
from .._refs import BPE_NAMES, tiktoken_ref
from ..conftest import EXAMPLES

#: the bytes the runs are made of: a letter, a digit, a space, punctuation, a UTF-8 lead byte
#: and a continuation byte (tokens split characters there), and ``Q`` (few merges)
_RUN_BYTES = b"a0 =\xe4\x80Q"


def _run_piece(rng: random.Random) -> bytes:
    """A piece holding one or two long runs, with a few foreign bytes inside and around."""
    parts = []
    for _ in range(rng.choice([1, 1, 2])):
        b = bytes([rng.choice(_RUN_BYTES)])
        m = rng.choice([bpe.RUN_REPEAT_FROM - 1, bpe.RUN_REPEAT_FROM,
                        bpe.RUN_REPEAT_FROM + 1, 4 * bpe.RUN_PERIOD + 7,
                        rng.randrange(bpe.RUN_REPEAT_FROM, 60_000)])
        run = bytearray(b * m)
        for _ in range(rng.randrange(4)):
            p = rng.randrange(len(run) + 1)
            run[p:p] = bytes([rng.randrange(256)]) * rng.choice([1, 1, 2, 3, 17])
        parts.append(bytes(run))
        if rng.random() < 0.5:
            parts.append(rng.randbytes(rng.randrange(1, 60)))
    if rng.random() < 0.3:
        parts.insert(0, rng.randbytes(rng.randrange(1, 40)))
    return b"".join(parts)


@pytest.mark.parametrize("name", BPE_NAMES)
def test_long_runs_encode_as_tiktoken(name: str) -> None:
    """``bpe_encode`` of pieces with long runs equals tiktoken's BPE of the piece, and the
    repetition path is taken for the pure runs (so the test is about it)."""
    ranks = get_encoding(name).mergeable_ranks
    core = tiktoken_ref(name)._core_bpe
    rng = random.Random(35)
    for _ in range(EXAMPLES):
        piece = _run_piece(rng)
        assert bpe.bpe_encode(piece, ranks) == core.encode_single_piece(piece), piece[:40]
    for b in _RUN_BYTES:
        piece = bytes([b]) * (bpe.RUN_REPEAT_FROM + rng.randrange(5000))
        assert bpe._run_repeat(piece, ranks) is not None, (name, b)
        assert bpe.bpe_encode(piece, ranks) == core.encode_single_piece(piece)


def _walk_ends(seq: TokenSeq, lo: int, hi: int, shift: int) -> list[tuple[int, int, int]]:
    """``glue_ends`` by a walk over every token (the definition)."""
    toks = [t for c in seq.chunks for t in zip(c.ids, c.cps, c.flags)]
    pos = sum(w for _, w, _ in toks[:lo]) + shift
    out = []
    for k in range(lo, min(hi, len(toks))):
        pos += toks[k][1]
        if k == hi - 1 or k + 1 == len(toks) or toks[k + 1][2] & CLEAN:
            out.append((k, pos, toks[k][0]))
    return out


def _walk_starts(seq: TokenSeq, lo: int, hi: int) -> list[tuple[int, int, int]]:
    """``glue_starts`` by a walk over every token (the definition)."""
    toks = [t for c in seq.chunks for t in zip(c.ids, c.cps, c.flags)]
    out = []
    for k in range(hi - 1, lo - 1, -1):
        if toks[k][2] & CLEAN:
            out.append((k, sum(w for _, w, _ in toks[:k]), toks[k][0]))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_glue_candidates_chunk_by_chunk_equal_a_walk(seed: int) -> None:
    """The chunk-wise candidates equal the token-by-token walk, for ranges inside one chunk
    and across many, ending at the sequence's end or inside it, with unclean tokens at chunk
    edges."""
    rng = random.Random(seed)
    seq = TokenSeq(load=rng.choice([4, 8, 32]))
    k = rng.randint(50, 400)
    cps = [rng.randint(0, 3) for _ in range(k)]
    flags = bytearray(rng.choice([0, CLEAN, CLEAN, PIECE_START | CLEAN]) for _ in range(k))
    flags[0] = PIECE_START | CLEAN
    seq.replace(0, 0, list(range(k)), cps, flags, "x" * sum(cps))
    for _ in range(max(EXAMPLES, 20)):
        lo = rng.randrange(k)
        hi = rng.randint(lo, k)
        shift = rng.randint(-5, 5)
        assert list(seq.glue_ends(lo, hi, shift)) == _walk_ends(seq, lo, hi, shift)
        assert list(seq.glue_starts(lo, hi)) == _walk_starts(seq, lo, hi)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_typing_in_a_long_one_letter_line(name: str) -> None:
    """Keys typed into a line of one letter long enough for the runs' repetition (each
    Algorithm 1 window there is a long run): the ids equal tiktoken's after every key."""
    enc = get_encoding(name)
    ref = tiktoken_ref(name)
    rng = random.Random(36)
    line = "a" * (3 * bpe.RUN_REPEAT_FROM)
    head = "x = 1\n"
    text = head + line + "\nprint(x)\n"
    doc = Document(text, enc)
    text = type_in_span(rng, doc, text, len(head), len(line), alphabet="a", other="ab Q",
                        n=max(EXAMPLES // 2, 10), reference=ref.encode_ordinary)
    assert doc.token_ids() == ref.encode_ordinary(text)
    doc._check()


#: punctuation lines (one piece each under the three patterns): emoji ZWJ sequences, ``=``
#: runs, mixed ASCII punctuation; what is typed into them: their own characters, and letters,
#: digits, spaces, ``'``, ``/``, a newline and a combining mark, which end the quiet run
_PUNCT_LINES = [
    "\U0001F469\u200d\U0001F4BB\U0001F3F3\ufe0f\u200d\U0001F308" * 300,
    "=" * 3000,
    "-=+*#!?;:.,<>[]{}()|\\^~@$%&`" * 120,
]
_FOREIGN = "aZ7 '/\n\u0301_\U0001F600"


@pytest.mark.parametrize("name", BPE_NAMES)
@pytest.mark.parametrize("line", range(len(_PUNCT_LINES)))
def test_typing_in_a_punctuation_line(name: str, line: int) -> None:
    """Keys typed deep inside a long punctuation piece take the stretch (quiet runs,
    ``Pretokenizer.quiet``) when they are punctuation, the general steps when not: the ids
    equal tiktoken's after every key, the document's invariants hold at the end, and some
    edits did stretch (so the test is about it)."""
    enc = get_encoding(name)
    ref = tiktoken_ref(name)
    rng = random.Random(line)
    stretch = _PUNCT_LINES[line]
    head = "def f(x):\n    return x\n"
    text = head + stretch + "\nprint(f(1))\n"
    doc = Document(text, enc)
    text = type_in_span(rng, doc, text, len(head), len(stretch),
                        alphabet="".join(sorted(set(stretch))), other=_FOREIGN,
                        n=max(EXAMPLES * 2, 20), reference=ref.encode_ordinary)
    assert doc.token_ids() == ref.encode_ordinary(text)
    doc._check()
    assert doc.stats.stretched > 0


def test_quiet_is_punctuation_only() -> None:
    """The quiet characters: punctuation but the apostrophe and ``/``, no 7 marks in a row; and
    only for the patterns whose argument is made (a custom pattern offers nothing)."""
    from livetok.incremental.bytelevel.pretokenize import Pretokenizer

    p = Pretokenizer("cl100k_base")
    assert p.quiet_margin > 0
    assert p.quiet("==\U0001F600\u200d;;")
    assert p.quiet("=\ufe0f\u200d" + "\u0301" * 6 + "=")
    for bad in ("=a=", "=1=", "= =", "='=", "=/=", "=" + "\u0301" * 7 + "=", "=\n=", ""):
        assert not p.quiet(bad), bad
    custom = Pretokenizer("mine", r"\S+|\s+")
    assert custom.quiet_margin == 0 and not custom.quiet("===")


@pytest.mark.parametrize("name", BPE_NAMES)
def test_typing_among_combining_marks(name: str) -> None:
    """Punctuation with runs of combining marks (o200k's letter classes hold the marks, so
    a mark after a punctuation character can make a letter piece): typing marks and
    punctuation in such a line keeps the ids equal to tiktoken's after every key."""
    enc = get_encoding(name)
    ref = tiktoken_ref(name)
    rng = random.Random(7)
    stretch = "".join(rng.choice(["=", "\U0001F3F3", "\ufe0f", "\u0301" * rng.randint(1, 9),
                                  "\u200d", "!"]) for _ in range(800))
    text = "x = 1\n" + stretch + "\n"
    doc = Document(text, enc)
    text = type_in_span(rng, doc, text, 6, len(stretch),
                        alphabet="=\U0001F3F3\ufe0f\u0301\u200d!", other="a\u0301\u0301",
                        n=max(EXAMPLES * 2, 20),
                        reference=ref.encode_ordinary)
    doc._check()


@pytest.mark.parametrize("name", BPE_NAMES)
def test_deleting_a_cased_letter_from_a_cjk_line(name: str) -> None:
    """o200k's cased runs: a lone lower-case letter deep in a CJK line puts the rest of the
    line in the lower-case run, which stops at an upper-case letter far right; deleting it
    (the new text around is quiet, the replaced text is not) moves that boundary, and the
    pieces must follow (the document asks ``quiet`` of the replaced text too)."""
    enc = get_encoding(name)
    ref = tiktoken_ref(name)
    cjk = "中文字符测试汉语词典" * 10
    for lone in ("a", "A", "\u02b0"):  # lower-case, upper-case, a modifier letter (Lm)
        text = "x\n" + cjk + lone + cjk + "Ab" + cjk + "\n"
        doc = Document(text, enc)
        at = 2 + len(cjk)
        doc.edit(at, at + 1, "")
        text = text[:at] + text[at + 1:]
        assert doc.token_ids() == ref.encode_ordinary(text), lone
        doc._check()  # (the pieces too: here the ids alone may agree)
        doc.edit(at, at, lone)
        text = text[:at] + lone + text[at:]
        assert doc.token_ids() == ref.encode_ordinary(text), lone
        doc._check()


@pytest.mark.parametrize("name", BPE_NAMES)
def test_typing_in_a_cjk_line(name: str) -> None:
    """Keys typed into a CJK line (one letter piece): CJK letters stretch it, cased ASCII
    letters, digits and spaces take the general steps; ids equal tiktoken's after every
    key, and some edits stretched."""
    enc = get_encoding(name)
    ref = tiktoken_ref(name)
    rng = random.Random(11)
    stretch = "".join(rng.choices("中文字符测试汉语词典日本語のテキスト", k=1500))
    text = "x = 1\n" + stretch + "\n"
    doc = Document(text, enc)
    text = type_in_span(rng, doc, text, 6, len(stretch), alphabet="中文字符测试の",
                        other="aAbZ 7\u02b0", n=max(EXAMPLES * 3, 30),
                        reference=ref.encode_ordinary)
    doc._check()
    assert doc.stats.stretched > 0
