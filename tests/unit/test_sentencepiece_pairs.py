"""SentencePiece BPE on the pair engine (``sentencepiece/pairs.py``) and long pieces in a
document (issue 35, item 2).

The pair table must give the symbols of the priority queue (``sp_bpe``, SentencePiece's own
order) on every string: synthetic vocabularies with a tied group of runs (the shape Mistral's
whitespace pieces have, with gaps in the run lengths) and ones whose ties it must refuse; and
Mistral's vocabulary against ``sentencepiece`` itself on long runs. A document edited inside a
long piece of one letter or of spaces must equal ``SentencePieceProcessor.encode`` after every
edit and take the stretch path (no re-split of the line).
"""

from __future__ import annotations

import random

import pytest

from livetok.incremental.document import Document
from livetok.incremental.sentencepiece.bpe import sp_bpe
from livetok.incremental.sentencepiece.encoding import find_mistral_v1, load_mistral_v1
from livetok.incremental.sentencepiece.pairs import SentencePiecePairs, _leftmost_run, _run_chunks

from .._edits import type_in_span



def _vocab(rng: random.Random, alphabet: str, n_pieces: int, group: list[int] | None
           ) -> tuple[dict[str, int], list[float]]:
    """Random formable pieces over ``alphabet`` with distinct scores, every character a piece,
    and (``group``) the runs ``c^k`` of ``c = alphabet[0]`` for ``k`` in it, tied at the
    lowest score; no other piece holds ``cc``."""
    c = alphabet[0]
    pieces: dict[str, int] = {}
    for ch in alphabet:
        pieces[ch] = len(pieces)
    while len(pieces) < n_pieces + len(alphabet):
        p = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 5)))
        if p not in pieces and (group is None or c + c not in p):
            pieces[p] = len(pieces)
    neg = [0.0] * len(pieces)
    order = list(range(len(alphabet), len(pieces)))
    rng.shuffle(order)
    for rank, i in enumerate(order):
        neg[i] = float(rank)
    if group:
        for k in group:
            pieces[c * k] = len(neg)
            neg.append(1e9)
    return pieces, neg


def _random_text(rng: random.Random, alphabet: str) -> str:
    parts = []
    for _ in range(rng.randint(1, 6)):
        if rng.random() < 0.4:
            parts.append(alphabet[0] * rng.randint(1, 70))
        else:
            parts.append("".join(rng.choice(alphabet + "?") for _ in range(rng.randint(1, 30))))
    return "".join(parts)


@pytest.mark.parametrize("seed", range(6))
def test_pair_table_equals_the_priority_queue_with_a_tied_run_group(seed: int) -> None:
    rng = random.Random(seed)
    compiled = 0
    while compiled < 3:
        alphabet = "_abc"
        sizes = sorted({2, *rng.sample(range(3, 14), rng.randint(0, 6))})
        ids, neg = _vocab(rng, alphabet, 25, sizes)
        table = SentencePiecePairs.compile(ids, neg, frozenset())
        if table is None:
            # refused only where the run simulation shows no recurrence
            assert _run_chunks(frozenset(sizes)) is None, sizes
            continue
        compiled += 1
        for _ in range(100):
            s = _random_text(rng, alphabet)
            assert table.spans(s) == sp_bpe(s, ids, neg), (s, sizes)
        for r in range(60):
            s = alphabet[0] * r
            assert table.spans(s) == sp_bpe(s, ids, neg), (r, sizes)


@pytest.mark.parametrize("seed", range(6))
def test_pair_table_equals_the_priority_queue_without_ties(seed: int) -> None:
    rng = random.Random(100 + seed)
    ids, neg = _vocab(rng, "abcd", 40, None)
    table = SentencePiecePairs.compile(ids, neg, frozenset())
    assert table is not None
    for _ in range(200):
        s = _random_text(rng, "abcd")
        assert table.spans(s) == sp_bpe(s, ids, neg), s


def test_ties_it_cannot_rank_keep_the_priority_queue() -> None:
    # a tied run group without "aa": the run process never starts at a run's left end
    ids0 = {"a": 0, "aaa": 1, "a" * 6: 2}
    assert SentencePiecePairs.compile(ids0, [0, 5.0, 5.0], frozenset()) is None
    ids = {"a": 0, "b": 1, "ab": 2, "ba": 3, "aa": 4}
    # two different tied pieces that are not runs of one character
    assert SentencePiecePairs.compile(ids, [0, 0, 1.0, 1.0, 0.5], frozenset()) is None
    # a tied run group that does not score lowest
    ids2 = {"a": 0, "b": 1, "aa": 2, "aaa": 3, "ab": 4}
    assert SentencePiecePairs.compile(ids2, [0, 0, 1.0, 1.0, 2.0], frozenset()) is None
    # another piece holds "aa"
    ids3 = {"a": 0, "b": 1, "aa": 2, "aaa": 3, "baa": 4}
    assert SentencePiecePairs.compile(ids3, [0, 0, 5.0, 5.0, 1.0], frozenset()) is None
    # UNUSED pieces are re-split by resegment: the heap keeps them
    assert SentencePiecePairs.compile({"a": 0, "aa": 1}, [0, 1.0], frozenset({1})) is None
    # the same group, lowest score, no other "aa": compiled
    assert SentencePiecePairs.compile(ids2, [0, 0, 5.0, 5.0, 1.0], frozenset()) is not None


def test_the_run_simulation_is_the_leftmost_process() -> None:
    sizes = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16})  # Mistral's
    assert _leftmost_run(15, sizes)[0] == [14, 1]
    assert _leftmost_run(31, sizes)[0] == [16, 14, 1]
    assert _leftmost_run(40, sizes)[0] == [16, 16, 8]
    # 2, 3 and 10: a 3 is inert (3 + 1, 3 + 2, 3 + 3 are no group lengths), 10 never forms
    assert _leftmost_run(8, frozenset({2, 3, 10}))[0] == [3, 3, 2]


# -- Mistral 7B against sentencepiece ---------------------------------------------------------

spm = pytest.importorskip("sentencepiece")
if find_mistral_v1() is None:
    pytest.skip("pip install --no-deps mistral-common", allow_module_level=True)

ENC = load_mistral_v1()
SP = spm.SentencePieceProcessor(model_file=str(find_mistral_v1()))


def test_mistral_compiles_to_the_pair_engine_with_its_whitespace_group() -> None:
    ENC.encode_piece("x" * 100)  # a long string compiles the table
    table = ENC._pair_table
    assert table is not None and table._run is not None
    for r in range(0, 200):
        s = "\u2581" * r
        assert table.spans(s) == sp_bpe(s, ENC._piece_ids, ENC._neg_scores), r


@pytest.mark.parametrize("text", [
    "a" * 5000, " " * 3000, "a" * 2000 + "b" + "a" * 3000, " " * 1000 + "x" + " " * 999,
    "ab" * 1500, "a" * 1000 + "  " + "a" * 1000, "日本" * 500, "😀" * 300 + "a" * 300,
])
def test_long_pieces_equal_sentencepiece(text: str) -> None:
    assert ENC.encode(text) == SP.encode(text)
    assert ENC.encode("prefix " + text + " suffix") == SP.encode("prefix " + text + " suffix")


def _edit_run(line: str, alphabet: str, n_edits: int, seed: int) -> Document:
    rng = random.Random(seed)
    text = "def f():\n    return 1\n" + line + "\nmore text here\n"
    lo = text.index(line)
    length = len(line)
    doc = Document(text, ENC)
    type_in_span(rng, doc, text, lo, length, alphabet=alphabet, other="abcXYZ ", n=n_edits,
                 reference=SP.encode)
    return doc


@pytest.mark.parametrize("line,alphabet", [("a" * 3000, "a"), (" " * 2000, " "),
                                            ("ACGT" * 700, "ACGT")])
def test_edits_inside_a_long_piece_stretch_it_and_equal_sentencepiece(line: str, alphabet: str
                                                                       ) -> None:
    doc = _edit_run(line, alphabet, 60, seed=len(line))
    # the pieces are decided locally (QuietEncoding): most edits only stretch the piece
    assert doc.stats.stretched >= 20, doc.stats


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_many_edits_inside_long_runs_equal_sentencepiece(seed: int) -> None:
    for line, alphabet in (("a" * 20000, "a"), (" " * 8000, " "), ("ab " * 3000, "ab ")):
        _edit_run(line, alphabet, 400, seed=seed)
