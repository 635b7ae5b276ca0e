"""The incremental document: exact after every edit, against tiktoken and our own reference."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from livetok.incremental import Document, get_encoding

from .._refs import BPE_NAMES, real_text, tiktoken_ref
from ..conftest import SLOW

# short strings that stress the pre-tokenizer horizons and the in-piece gluing
ATOMS = ["a", "b", "Z", "Q", "x", " ", "  ", "\n", "\r\n", "\r", "\t", "0", "7", "'", "'s",
         "'ll", "'RE", ".", ",", "!", "/", "-", "中", "文", "日本", "😀", "🎉", "é",
         "\u0301", "ß", "ABC", "abc", "ſ"]
LONG = ["中文字符测试" * 12, "aGVsbG8gV29ybGQhIFRoaXMgaXMg" * 4, " " * 70, "x" * 90,
        "AbCdEf" * 15, "!?" * 40, "😀🎉" * 30, "1234567890" * 8, "\n" * 40, "ÀÉÎ" * 30]
FRAGMENT = st.lists(st.sampled_from(ATOMS), max_size=12).map("".join) | st.sampled_from(LONG)
PASTE = st.lists(FRAGMENT, max_size=60).map("".join).map(lambda s: s[:10_000])


class DocumentMachine(RuleBasedStateMachine):
    """Random inserts, deletes, replaces and pastes; compared with tiktoken after each one."""

    name = "o200k_base"
    load = 8  # tiny chunks so that chunk splits and merges happen all the time

    @initialize(text=PASTE)
    def start(self, text):
        self.doc = Document(text, encoding=get_encoding(self.name), load=self.load)
        self.text = text
        self.ref = tiktoken_ref(self.name)

    def _pos(self, data, lo=0):
        return data.draw(st.integers(min_value=lo, max_value=len(self.text)))

    @rule(data=st.data(), ins=FRAGMENT)
    def insert(self, data, ins):
        p = self._pos(data)
        self.doc.edit(p, p, ins)
        self.text = self.text[:p] + ins + self.text[p:]

    @precondition(lambda self: len(self.text) > 0)
    @rule(data=st.data())
    def delete(self, data):
        a = self._pos(data)
        b = data.draw(st.integers(min_value=a, max_value=min(len(self.text), a + 40)))
        self.doc.edit(a, b, "")
        self.text = self.text[:a] + self.text[b:]

    @rule(data=st.data(), ins=FRAGMENT)
    def replace(self, data, ins):
        a = self._pos(data)
        b = data.draw(st.integers(min_value=a, max_value=len(self.text)))
        self.doc.edit(a, b, ins)
        self.text = self.text[:a] + ins + self.text[b:]

    @rule(data=st.data(), paste=PASTE)
    def paste(self, data, paste):
        p = self._pos(data)
        self.doc.edit(p, p, paste)
        self.text = self.text[:p] + paste + self.text[p:]

    @invariant()
    def exact(self):
        assert self.doc.text == self.text
        assert self.doc.token_ids() == self.ref.encode_ordinary(self.text)
        assert self.doc.token_count == len(self.ref.encode_ordinary(self.text))
        self.doc._check()


class O200kMachine(DocumentMachine):
    name = "o200k_base"


class Cl100kMachine(DocumentMachine):
    name = "cl100k_base"


class R50kMachine(DocumentMachine):
    name = "r50k_base"


_steps = settings(stateful_step_count=25)
TestO200kDocument = _steps(O200kMachine).TestCase
TestCl100kDocument = _steps(Cl100kMachine).TestCase
TestR50kDocument = _steps(R50kMachine).TestCase


@pytest.mark.parametrize("half", [None, 2])
def test_edits_in_big_chunks_and_views_of_part_of_a_chunk(half, monkeypatch):
    """Chunks of the default size, where an edit's :class:`SeqView` covers a window of the
    chunk (``HALF`` tokens each side, made tiny here so that queries leave it) and runs of
    edits in one chunk reuse the last chunk's place (``TokenSeq._hint``)."""
    from livetok.incremental.tokenseq import SeqView

    if half is not None:
        monkeypatch.setattr(SeqView, "HALF", half)
    rng = random.Random(99)
    text = real_text(12_000)[:12_000]
    doc = Document(text, encoding=get_encoding("o200k_base"))
    assert len(doc._seq.chunks) > 4
    pos = len(text) // 2
    # 300 edits, 100 of them checked one by one when HALF is tiny (300 under slow)
    for k in range(300 if half is None or SLOW else 100):
        # runs of typing in one place, then a jump; single characters and short pastes
        if k % 25 == 0:
            pos = rng.randint(0, len(text))
        pos = max(0, min(len(text), pos + rng.randint(-3, 3)))
        end = min(len(text), pos + rng.choice([0, 0, 0, 1, 2, 7]))
        ins = rng.choice(["", "a", " ", "\n", "x", "中", "😀", " the", "()", rng.choice(ATOMS)])
        doc.edit(pos, end, ins)
        text = text[:pos] + ins + text[end:]
        pos += len(ins)
        if k % 10 == 0 or half is not None:
            doc._check()
    assert doc.text == text
    doc._check()


@pytest.mark.parametrize("name", BPE_NAMES)
def test_random_edits_in_long_pieces_glue_exactly(name):
    """Algorithm 1 inside long pieces: thousands of byte-level edits of one-piece texts.

    The paper proves gluing for merge-rule dictionaries; rank-based BPE is checked here. A
    counter-example would show up as a mismatch with tiktoken.
    """
    rng = random.Random(1234)
    ref = tiktoken_ref(name)
    # lower-case letters and CJK stay in one letter piece under all three patterns; the rare
    # emoji and capital split pieces so that glued pieces also merge and split
    alphabet = ["中", "文", "字", "a", "b", "é", "ab", "的", "x"] * 6 + ["😀", "Z", " "]
    n_edits = int(os.environ.get("LIVETOK_GLUE_EDITS", "400"))
    glued = 0
    for trial in range(8):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(100, 600)))
        doc = Document(text, encoding=get_encoding(name))
        for _ in range(n_edits // 8):
            a = rng.randint(0, len(text))
            b = min(len(text), a + rng.choice([0, 0, 1, 2, 5]))
            ins = "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 1, 2, 3])))
            doc.edit(a, b, ins)
            text = text[:a] + ins + text[b:]
            assert doc.token_ids() == ref.encode_ordinary(text), (trial, a, b, ins)
        glued += doc.stats.glued_pieces
    assert glued > 0, "the gluing path was never exercised"


@pytest.mark.parametrize("name", BPE_NAMES)
@given(data=st.data())
@settings(max_examples=20)
def test_count_range_equals_encoding_the_substring(name, data):
    base = real_text(30_000)[:30_000]
    extra = data.draw(PASTE)
    text = base[:15_000] + extra + base[15_000:]
    doc = Document(text, encoding=get_encoding(name))
    ref = tiktoken_ref(name)
    for _ in range(5):
        a = data.draw(st.integers(0, len(text)))
        b = data.draw(st.integers(a, min(len(text), a + data.draw(st.sampled_from([10, 3000, 30_000])))))
        assert doc.count_range(a, b) == len(ref.encode_ordinary(text[a:b])), (a, b)


@pytest.mark.parametrize("name", BPE_NAMES)
def test_count_range_grows_its_head_window_over_a_long_first_piece(name):
    """The head of the range is split in a window that grows while a piece's decision reads
    past it: here a first piece of 10,000 CJK letters (past the 4,096-character first window),
    and ranges that start inside it, before it and after it."""
    text = "ab " + "中" * 10_000 + " tail words é here" * 400
    doc = Document(text, encoding=get_encoding(name))
    ref = tiktoken_ref(name)
    for a in (0, 1, 3, 500, 9_000, 10_003, 10_010):
        for b in (len(text), len(text) - 5, 10_400, 14_000):
            if a <= b:
                assert doc.count_range(a, b) == len(ref.encode_ordinary(text[a:b])), (a, b)


@pytest.mark.parametrize("name", BPE_NAMES)
def test_count_range_with_ends_inside_long_pieces(name):
    """Ranges whose ends fall inside long pieces (CJK lines, letter runs, one-character runs,
    emoji, mixed case, white space, whose pieces in a range can span document pieces): the
    partial pieces are counted by gluing at each end (Algorithm 1,
    ``RangeCounter._count_sub``); every count must equal tiktoken's encoding of the substring."""
    rng = random.Random(name)
    ref = tiktoken_ref(name)
    runs = ["中文字符测试的日本語", "的", "a", "abcdefghij", "AbCdEf", "😀🎉", "é", "ACGT",
            "xY", "ß", "\u0301a", " ", "\n", " \t"]
    for trial in range(6 if SLOW else 2):  # two documents by default, six under slow
        parts = []
        for _ in range(8):
            run = rng.choice(runs)
            body = (run * (rng.randint(20, 3000) // len(run) + 1)) if rng.random() < 0.7 else (
                "".join(rng.choice(run) for _ in range(rng.randint(20, 3000))))
            parts.append(body + rng.choice(["", " ", "\n", ", ", "  x "]))
        text = "".join(parts)
        doc = Document(text, encoding=get_encoding(name))
        for _ in range(60):
            a = rng.randrange(len(text))
            # (over 2,048 characters: shorter ranges are encoded whole)
            b = min(len(text), a + rng.choice([2049, 2100, 2500, 4000, 9000]))
            assert doc.count_range(a, b) == len(ref.encode_ordinary(text[a:b])), (trial, a, b)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_count_range_inside_one_long_token(name):
    """Both ends inside one token of 113 bytes (`` `` and 112 ``-``, a token of both
    encodings): no old token boundary lies in the range to glue at, so the partial piece is
    encoded whole (Algorithm 1 with ``i = 1`` and ``j = m``)."""
    ref = tiktoken_ref(name)
    text = "a" + (" " + "-" * 112) * 40 + " b"
    doc = Document(text, encoding=get_encoding(name))
    assert [e - s for _, s, e in doc.iter_tokens(1, 340)] == [113] * 3  # one token each
    # (ranges over 2,048 characters: shorter ones are encoded whole)
    for a, b in ((10, 3000), (2, 4000), (115, 2500), (120, 4300), (1, 3500), (0, len(text))):
        assert doc.count_range(a, b) == len(ref.encode_ordinary(text[a:b])), (a, b)


def test_count_range_inside_a_long_piece_encodes_only_near_its_ends(monkeypatch):
    """Inside a line of 20,000 CJK letters (one piece), a range's partial pieces reuse the
    document's tokens and re-encode a few tokens at each end: no BPE call sees more than a
    few hundred bytes (the whole partial piece, up to 60,000 bytes, was encoded before)."""
    import livetok.incremental.bytelevel.encoding as encoding_module

    enc = get_encoding("o200k_base")
    ref = tiktoken_ref("o200k_base")
    text = "Before it.\n" + "中文字符测试的日本語" * 2_000 + "\nAfter it.\n"
    doc = Document(text, encoding=enc)
    seen: list[int] = []
    bpe = encoding_module.bpe_encode

    def spy(data, ranks):
        seen.append(len(data))
        return bpe(data, ranks)

    monkeypatch.setattr(encoding_module, "bpe_encode", spy)
    lo, hi = text.index("中"), text.index("\nAfter")
    for a, b in ((lo, hi), (lo + 1, hi), (lo, hi - 1), (lo + 777, hi - 5_000), (lo + 3, lo + 9_000),
                 (0, lo + 12_345), (lo + 15_000, len(text)), (lo + 10, lo + 100)):
        seen.clear()
        assert doc.count_range(a, b) == len(ref.encode_ordinary(text[a:b])), (a, b)
        assert max(seen, default=0) <= 600, (a, b, max(seen))


def _spy_on_split(enc, monkeypatch) -> list[int]:
    """Record the length split by each ``enc.split`` call (from its ``pos``) in the list returned."""
    sizes: list[int] = []
    split = enc.split

    def spy(t: str, pos: int = 0):
        sizes.append(len(t) - pos)
        return split(t, pos)

    monkeypatch.setattr(enc, "split", spy)
    return sizes


def test_count_range_splits_only_near_its_ends(monkeypatch):
    """A long non-ASCII range is split only in a window of its head and in its tail: the split
    of a whole non-ASCII substring builds its class codes up front (~1 s for 10 MB), which is
    what ``count_range`` did for every range before."""
    enc = get_encoding("o200k_base")
    text = "héllo wörld, " * 20_000
    doc = Document(text, encoding=enc)
    seen = _spy_on_split(enc, monkeypatch)
    a, b = 5, len(text) - 7
    assert doc.count_range(a, b) == len(enc.encode(text[a:b]))
    assert seen and max(seen) <= 4096, seen


def test_token_at_and_iter_tokens():
    doc = Document("Hello world 中文", encoding=get_encoding("cl100k_base"))
    t = doc.token_at(7)
    assert t is not None and t.bytes == b" world" and (t.start, t.end) == (5, 11) and t.index == 1
    spans = list(doc.iter_tokens())
    assert [i for i, _, _ in spans] == doc.token_ids()
    assert spans[0][1] == 0 and spans[-1][2] == doc.length
    assert doc.token_at(doc.length) is None


@pytest.mark.parametrize(
    "args, exc, msg",
    [
        ((-1, 0, "x"), ValueError, "negative"),
        ((3, 2, "x"), ValueError, "reversed"),
        ((0, 99, "x"), ValueError, "past the end"),
        ((0, 1, b"x"), TypeError, "str"),
        ((0.5, 1, "x"), TypeError, "int"),
        ((True, 1, "x"), TypeError, "int"),
    ],
)
def test_bad_edit_arguments_leave_document_unchanged(args, exc, msg):
    doc = Document("hello world", encoding=get_encoding("o200k_base"))
    before = (doc.text, doc.token_ids(), doc.version)
    with pytest.raises(exc, match=msg):
        doc.edit(*args)
    assert (doc.text, doc.token_ids(), doc.version) == before


def test_bad_construction():
    with pytest.raises(TypeError, match="str"):
        Document(b"bytes", get_encoding("o200k_base"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not the name 'o200k_base'.*get_encoding\('o200k_base'\)"):
        Document("x", encoding="o200k_base")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="PieceEncoding"):
        Document("x", encoding=object())  # type: ignore[arg-type]


def test_lone_surrogates_and_nul_in_documents():
    doc = Document("a\ud800b\x00c", encoding=get_encoding("o200k_base"))
    assert doc.length == 5 and doc.text == "a\ufffdb\x00c"
    doc.edit(1, 1, "\udfff\x00")
    assert doc.text == "a\ufffd\x00\ufffdb\x00c"
    assert doc.token_ids() == tiktoken_ref("o200k_base").encode_ordinary(doc.text)


def test_version_counts_every_edit():
    doc = Document("abc", encoding=get_encoding("o200k_base"))
    doc.edit(0, 0, "x")
    doc.edit(0, 1, "x")  # a no-op replacement still bumps the version
    assert doc.version == 2


def test_edit_result_fields_and_frozen():
    """EditResult is an immutable typed record of the fields it declares."""
    doc = Document("Hello world", encoding=get_encoding("o200k_base"))
    r = doc.edit(5, 5, ",")
    assert r._asdict() == {
        "version": 1, "start": 5, "old_end": 5, "new_end": 6,
        "tokens_removed": r.tokens_removed, "tokens_added": r.tokens_added,
        "token_count": doc.token_count,
    }
    assert r == type(r)(**r._asdict()) and hash(r) == hash(type(r)(*r))
    with pytest.raises(AttributeError):
        r.start = 0  # type: ignore[misc]


@pytest.mark.parametrize("name", BPE_NAMES)
def test_edits_before_runs_longer_than_the_first_window(name):
    """Edits just before runs longer than the first re-split window (white space, letters,
    punctuation, newlines, digits), so that the piece at the window's end reads past it: the
    re-split asks only the last piece's horizon (the others are dominated by it), and must
    grow the window exactly when some piece would have read past it."""
    from livetok.incremental.document import FIRST_WINDOW

    rng = random.Random(7)
    ref = tiktoken_ref(name)
    runs = [" " * 100, "\t" * 90, "word" * 40, "Word" * 30, "!?" * 60, "\n" * 80, " \n" * 50,
            "1" * 100, "ab" * 50 + "'re", " " * 70 + "x", "WORDS" * 20 + "lower" * 5]
    seps = ["a", " b", "C", ".", "\n", "  "]
    text = "".join(rng.choice(seps) + run for run in runs * 2)
    doc = Document(text, encoding=get_encoding(name))
    before = doc.stats.window_retries
    for k in range(300):
        # an offset just before or early inside a run, or anywhere
        run_start = text.find(rng.choice(runs)) if k % 3 else rng.randrange(len(text))
        p = max(0, min(len(text), run_start + rng.randint(-3, 3)))
        e = min(len(text), p + rng.choice([0, 0, 1, 2]))
        ins = rng.choice(["", "a", " ", "\n", "'", "x y", "中", "9"])
        doc.edit(p, e, ins)
        text = text[:p] + ins + text[e:]
        if k % 20 == 0:
            assert doc.token_ids() == ref.encode_ordinary(text)
    assert doc.text == text
    assert doc.token_ids() == ref.encode_ordinary(text)
    doc._check()
    assert doc.stats.window_retries > before, f"no edit needed more than {FIRST_WINDOW} chars"


@pytest.mark.parametrize("name", BPE_NAMES)
def test_an_edit_inside_a_long_piece_resplits_it_once(name, monkeypatch):
    """Inside one long piece (a line of CJK letters without spaces) the earliest resync is the
    piece's end: the first re-split window reaches past it, so the piece is split once per
    edit. (The window used to start 64 characters right of the edit and grow x4, each round
    re-splitting from the piece's start: 5 rounds for the first edit here.) Since issue 35
    CJK letters are quiet letter runs (``Pretokenizer.quiet``): an edit of them deep inside
    the piece stretches it and splits nothing."""
    enc = get_encoding(name)
    ref = tiktoken_ref(name)
    text = "Some words before it.\n" * 40 + "中文字符测试的日本語" * 2_000 + ", and after.\n" * 40
    doc = Document(text, encoding=enc)
    sizes = _spy_on_split(enc, monkeypatch)
    rng = random.Random(3)
    lo = text.index("中")
    for k in range(12):
        p = lo + rng.randrange(15_000)
        e = p + rng.choice([0, 0, 1, 3])
        ins = rng.choice(["字", "", "日本", "的的的"])
        e += not ins and e == p  # not a no-op
        sizes.clear()
        doc.edit(p, e, ins)
        text = text[:p] + ins + text[e:]
        assert len(sizes) <= 1, (k, sizes)
        assert doc.token_ids() == ref.encode_ordinary(text)
    assert doc.stats.window_retries == 0 and doc.stats.stretched > 0
    doc._check()


@pytest.mark.parametrize("name", BPE_NAMES)
@pytest.mark.parametrize("first_window", [1, 2, 4])
def test_tiny_resplit_windows_grow_exactly_when_a_piece_reads_past_them(
    name, first_window, monkeypatch
):
    """With a re-split window of a few characters the pieces at its end often read past it.
    The re-split asks only the last piece's horizon (the others are dominated by it): asking
    none, or the first piece's only, gives wrong tokens here within a few hundred edits."""
    import livetok.incremental.document as document_module

    monkeypatch.setattr(document_module, "FIRST_WINDOW", first_window)
    ref = tiktoken_ref(name)
    rng = random.Random(first_window)
    alpha = ["a", "b", "A", " ", "  ", "\n", "'", "s", "re", "1", "!", "/", "\t", "中", "x y",
             "'s", "ll", "\r\n"]
    for _ in range(400):
        text = "".join(rng.choice(alpha) for _ in range(rng.randint(0, 12)))
        doc = Document(text, encoding=get_encoding(name))
        for _ in range(4):
            p = rng.randint(0, len(text))
            e = min(len(text), p + rng.choice([0, 0, 1, 2]))
            ins = rng.choice([*alpha, ""])
            doc.edit(p, e, ins)
            text = text[:p] + ins + text[e:]
            assert doc.token_ids() == ref.encode_ordinary(text), (text, p, e, ins)
    doc._check()
