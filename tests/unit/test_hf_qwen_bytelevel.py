"""Qwen 3 (its ``NFC`` normalizer) on the byte-level path (issue 35, item 2):
``hf/bytelevel_nfc.py`` splits and encodes with the byte-level file where NFC leaves the text
as it is and normalizes only around the units it changes.

Seeded fuzz against HuggingFace ``tokenizers`` on text that is *not* NFC (``e`` + U+0301,
Hangul jamo, singletons such as U+212B, marks out of canonical order, marks after an added
token) and edits that make and break compositions: encodes, the pieces (the tail from every
boundary, horizons sound and dominated), and documents under random edits with long lines
(letters, CJK, spaces, emoji, decomposed letters). Small by default, long with
``LIVETOK_SLOW=1``.
"""

from __future__ import annotations

import random
import unicodedata
from typing import Any

import pytest

from livetok.incremental import Document
from livetok.incremental.hf.bytelevel_file import reads_behind
from livetok.incremental.hf import bytelevel_nfc
from livetok.incremental.hf.bytelevel_nfc import NfcByteLevelFile

from .._edits import random_edit
from .._hf_encodings import encoding, hf_ids

tokenizers = pytest.importorskip("tokenizers")

#: atoms of hostile text: NFC-changing sequences and their parts, and the regex's classes
ALPHABET = (list("aZe \t\n,.!?'1２日本語한\u0301\u0300\u0327\u0315\u0344\u0338<>|")
            + ["e\u0301", "a\u0308\u0301", "\u1100", "\u1161", "\u11a8", "\u1100\u1161\u11a8",
               "\u212b", "\u2126", "\u212a", "\u0958", "\u0915\u093c", "\u0301\u0327",
               "\u1e9b\u0323", "\u00e9", "  ", "\n\n", "'s", "🙂", "👩\u200d💻", "\ufe0f",
               "<think>", "</think>", "<|im_start|>", "\u0cc6\u0cc2", "\u0b47\u0b3e",
               "\u0f73", "\U0001d15e", "ACGT" * 3, "日本" * 8, "\uf900", "\ufa36",
               "\u2000", "\u037e"])
#: (texts, document edits): the default run's, and the slow run's
SIZES = [(400, 600), pytest.param((6_000, 20_000), marks=pytest.mark.slow)]
#: probes written at and after a horizon
PROBES = ["a", " ", "\n", "\u0301", "\u0327", "\u1161", "\u11a8", "e", ">", "<think>", "1",
          "\u0338", "日", "'"]


def _text(rng: random.Random, k: int = 14) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, k)))


def _piece_ids(enc: Any, text: str) -> list[int]:
    return [i for s, e in enc.split(text) for i in enc.encode_piece(text[s:e])]


def test_the_file_takes_the_nfc_byte_level_route() -> None:
    enc = encoding("qwen3")
    assert type(enc) is NfcByteLevelFile
    assert enc.decode(enc.encode("cafe\u0301 日本")) == "café 日本"


def test_a_pattern_that_reads_behind_is_refused() -> None:
    assert not reads_behind(r"(?i:'s|'t)|[^\r\n\p{L}\p{N}]?\p{L}+|\s+(?!\S)|\s+")
    assert reads_behind(r"(?<=a)b") and reads_behind(r"^a|b") and reads_behind(r"\bx")


@pytest.mark.parametrize("size", SIZES)
def test_encode_and_pieces_equal_hf(size: tuple[int, int]) -> None:
    enc = encoding("qwen3")
    rng = random.Random(351)
    seen_changed = 0
    for _ in range(size[0]):
        t = _text(rng)
        want = hf_ids("qwen3", t)
        seen_changed += unicodedata.normalize("NFC", t) != t
        assert enc.encode(t) == want, t
        assert _piece_ids(enc, t) == want, t
    assert seen_changed > size[0] // 3  # the fuzz does reach text NFC changes


def _check_pieces(enc: Any, text: str, rng: random.Random) -> None:
    """The split from every boundary is the tail of the whole one; each horizon is past its
    piece's start, obeys a limit, is dominated, and is sound (text changed at or after it
    leaves the piece alone)."""
    pieces = list(enc.split(text))
    assert [p for p in pieces if p[0] < p[1]] == pieces and (
        not pieces or (pieces[0][0] == 0 and pieces[-1][1] == len(text))), text
    for k, (s, _) in enumerate(pieces):
        assert list(enc.split(text, s)) == pieces[k:], (text, s)
    n = len(text)
    hs = [min(enc.horizon(text, s, n + 2), n + 1) for s, _ in pieces]
    for k, (s, e) in enumerate(pieces):
        assert hs[k] > s, (text, s)
        lim = rng.randint(s + 1, n + 1)
        if hs[k] > lim:
            assert enc.horizon(text, s, lim) >= lim, ("limit", text, s, lim)
        for i in range(k + 1, len(pieces)):
            assert hs[k] <= max(hs[i], pieces[i][0] + 4), ("dominance", text, s, hs[k])
        h = hs[k]
        if h > n:
            continue
        for _ in range(2):
            tail = "".join(rng.choice(PROBES) for _ in range(rng.randint(0, 3)))
            j = rng.randrange(h, n + 1)
            for t2 in (text[:h] + tail, text[:h] + tail + text[h:], text[:h] + text[h + 1:],
                       text[:j] + rng.choice(PROBES) + text[j:]):
                got = next(iter(enc.split(t2, s)), None)
                assert got == (s, e), ("soundness", text, s, e, h, t2, got)


@pytest.mark.parametrize("size", SIZES)
def test_split_tail_and_horizons(size: tuple[int, int]) -> None:
    enc = encoding("qwen3")
    rng = random.Random(352)
    for _ in range(size[0] // 4):
        _check_pieces(enc, _text(rng, 10), rng)


def test_token_code_points_cover_each_piece() -> None:
    enc = encoding("qwen3")
    rng = random.Random(353)
    for _ in range(200):
        t = _text(rng)
        for s, e in enc.split(t):
            ids = enc.encode_piece(t[s:e])
            cps = enc.token_cp_lens(t[s:e], ids)
            assert sum(cps) == e - s and min(cps) >= 0 and cps[0] > 0, (t, s, e)


#: the long lines of the edited document: letters, CJK, spaces, emoji ZWJ, decomposed
#: letters (one piece NFC changes everywhere), Hangul as jamo
LINES = ["a" * 300, "日本語の文章" * 60, "日本\uf900語\ufa36の" * 50, " " * 150, "👩\u200d💻" * 60, "e\u0301" * 120,
         "\u1100\u1161" * 80, "Intro 12345 text, cafe\u0301."]


@pytest.mark.parametrize("size", SIZES)
def test_a_document_with_long_lines_equals_hf_under_edits(size: tuple[int, int]) -> None:
    _edit_document("\n".join(LINES) + "\n", random.Random(354), size[1], 25)


def _edit_document(text: str, rng: random.Random, edits: int, every: int) -> None:
    """Random edits of a Qwen 3 document of ``text``, its ids equal HF's every ``every``."""
    doc = Document(text, encoding=encoding("qwen3"))
    assert doc.token_ids() == hf_ids("qwen3", text)
    keys = ALPHABET + ["a", "日", " ", "\u0301", "e", "\u1161"] * 3
    for k in range(edits):
        text = random_edit(rng, doc, text, rng.choice(keys), most=3)
        if k % every == 0:
            assert doc.token_ids() == hf_ids("qwen3", text), text
    assert doc.token_ids() == hf_ids("qwen3", text)
    doc._check()


@pytest.mark.parametrize("size", SIZES)
def test_kept_scans_of_every_split_text_equal_hf(size: tuple[int, int],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """With every split text's scans kept (``_SCANS_MIN`` 0: the image and hard characters
    of the window serve its horizon and ``glue_ok``, as a long line's do), the document under
    edits still equals HF."""
    monkeypatch.setattr(bytelevel_nfc, "_SCANS_MIN", 0)
    _edit_document("\n".join(LINES) + "\n", random.Random(356), size[1], 25)


def test_a_long_line_with_hard_units_equals_hf_under_edits() -> None:
    """A line past ``_SCANS_MIN`` (its scans kept) of CJK with singletons, a hard unit every
    few hundred characters (jamo inside the long letter pieces), typed into anywhere: HF's
    ids after every edit."""
    rng = random.Random(357)
    unit = ["日本語の文章", "\uf900", "\ufa36", "\u1100\u1161"]
    line = "".join(rng.choices(unit, weights=[60, 3, 3, 1], k=1500))
    assert len(line) > bytelevel_nfc._SCANS_MIN
    _edit_document("intro\n" + line + "\nend\n", rng, 40, 1)


@pytest.mark.parametrize("line", ["日本語の文章" * 400, "日本\uf900語の文\ufa36章" * 300])
def test_typing_inside_a_long_cjk_line_glues(line: str) -> None:
    """A keystroke inside a long CJK line is glued by Algorithm 1, also where the line holds
    CJK compatibility ideographs (NFC maps each to one other character), and a combining
    mark or jamo typed there (a hard unit: the piece is encoded whole) is exact too."""
    enc = encoding("qwen3")
    text = line
    doc = Document(text, encoding=enc)
    before = doc.stats.glued_pieces
    doc.edit(1200, 1200, "中")
    text = text[:1200] + "中" + text[1200:]
    assert doc.stats.glued_pieces > before
    assert doc.token_ids() == hf_ids("qwen3", text)
    for pos, ins in ((600, "e"), (601, "\u0301"), (601, ""), (900, "\u1100\u1161")):
        if ins:
            doc.edit(pos, pos, ins)
            text = text[:pos] + ins + text[pos:]
        else:
            doc.edit(pos, pos + 1, "")
            text = text[:pos] + text[pos + 1:]
        assert doc.token_ids() == hf_ids("qwen3", text), (pos, ins)
    doc._check()


def test_encode_stream_and_count_equal_hf() -> None:
    """``encode_stream`` (the protocol's split and horizons over chunks) and ``count`` give
    HF's ids on non-NFC text cut anywhere, a chunk boundary inside a unit included."""
    enc = encoding("qwen3")
    rng = random.Random(355)
    for _ in range(60):
        t = "".join(_text(rng) for _ in range(4))
        cuts = sorted(rng.sample(range(len(t) + 1), min(len(t) + 1, 3)))
        chunks = [t[a:b] for a, b in zip([0, *cuts], [*cuts, len(t)])]
        want = hf_ids("qwen3", t)
        assert list(enc.encode_stream(chunks, min_batch_cp=8)) == want, t
        assert enc.count(t) == len(want)
