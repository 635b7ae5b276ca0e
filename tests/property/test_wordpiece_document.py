"""A live Document with the bert-base-uncased WordPiece encoding stays equal to HF after edits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from livetok.incremental import Document
from livetok.incremental.text import sanitize

from ..unit.test_wordpiece_bert import NASTY, bert, corpus, hf_bert, hf_ids

# fragments that move word, punctuation, added-token and normalization boundaries around
# (the Document turns a lone surrogate into U+FFFD, as encode does: model text does the same)
ATOMS = NASTY + ["[", "]", "MASK", "SEP", "\u0301\u0323", "e", "s", "'", "-", "  ", "\n\n"]
FRAGMENT = st.lists(st.sampled_from(ATOMS), max_size=8).map("".join).map(sanitize)
PASTE = st.lists(FRAGMENT, max_size=25).map("".join)


class WordPieceDocumentMachine(RuleBasedStateMachine):
    """Random inserts, deletes, replaces and pastes; ids compared with HF after each one."""

    @initialize(text=PASTE)
    def start(self, text):
        self.doc = Document(text, encoding=bert(), load=8)
        self.text = text

    def _pos(self, data):
        return data.draw(st.integers(min_value=0, max_value=len(self.text)))

    @rule(data=st.data(), ins=FRAGMENT)
    def insert(self, data, ins):
        p = self._pos(data)
        self.doc.edit(p, p, ins)
        self.text = self.text[:p] + ins + self.text[p:]

    @precondition(lambda self: len(self.text) > 0)
    @rule(data=st.data())
    def delete(self, data):
        a = self._pos(data)
        b = data.draw(st.integers(min_value=a, max_value=min(len(self.text), a + 12)))
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
        want = hf_ids(hf_bert(), self.text)
        assert self.doc.token_ids() == want
        assert self.doc.token_count == len(want)
        self.doc._check()


TestWordPieceDocument = settings(stateful_step_count=25)(WordPieceDocumentMachine).TestCase


def test_hover_tokens_cover_their_words():
    doc = Document("Héllo, [MASK] wörld!", encoding=bert())
    toks = [doc.token_at(k) for k in range(len(doc.text))]
    assert [t.bytes if t else None for t in toks] == [
        b"hello", b"hello", b"hello", b"hello", b"hello", b",", None,
        b"[MASK]", b"[MASK]", b"[MASK]", b"[MASK]", b"[MASK]", b"[MASK]", None,
        b"world", b"world", b"world", b"world", b"world", b"!",
    ]
    assert list(doc.iter_tokens())[2] == (103, 7, 13)


@given(data=st.data())
@settings(max_examples=10)
def test_count_range_equals_hf_on_the_substring(data):
    base = corpus(300_000, 30_000)[:20_000]
    text = base[:10_000] + data.draw(PASTE) + base[10_000:]
    doc = Document(text, encoding=bert())
    assert doc.token_ids() == hf_ids(hf_bert(), text)
    for _ in range(4):
        a = data.draw(st.integers(0, len(text)))
        width = data.draw(st.sampled_from([5, 3000, 20_000]))
        b = data.draw(st.integers(a, min(len(text), a + width)))
        assert doc.count_range(a, b) == len(hf_ids(hf_bert(), text[a:b])), (a, b)
