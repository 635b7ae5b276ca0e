"""How far Algorithm 1 of *Formalizing BPE Tokenization* widens on SentencePiece BPE.

:func:`glue_edit` is the paper's Algorithm 1 (:func:`~livetok.incremental.glue.glue_one_step`,
one old token per widening step; the statement and the proof are in :mod:`..glue`) on one
normalized string with :func:`~..sentencepiece.bpe.sp_bpe`. Corollary 2 needs Lemma 2,
which holds for SentencePiece's order too: the queue order restricted to one token's span —
score, then position — is that span's own order. :func:`measure_widening`
(``python -m livetok.incremental.analysis.widening``) makes random edits inside long spans of
real text — whole lines, *without* the piece split, i.e. the paper's setting of a text with no
pre-tokenization — and reports how many widening steps each edit needed. The numbers are in
``docs/sentencepiece.md``.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Sequence

from ..glue import glue_one_step
from ..sentencepiece.bpe import sp_bpe
from ..sentencepiece.encoding import SentencePieceEncoding

__all__ = ["glue_edit", "measure_widening"]

_Span = tuple[int, int]


def _tokens(enc: SentencePieceEncoding, s: str) -> list[_Span]:
    return sp_bpe(s, enc._piece_ids, enc._neg_scores, enc._unused)


def glue_edit(
    enc: SentencePieceEncoding,
    old: str,
    old_spans: Sequence[_Span],
    start: int,
    end: int,
    new_text: str,
) -> tuple[list[_Span], int]:
    """Token spans of ``old[:start] + new_text + old[end:]`` by Algorithm 1, and its widenings.

    ``old`` is a normalized string and ``old_spans`` its :func:`sp_bpe` tokens.

    Runtime complexity: ``O((w + k) log (w + k))`` per step for a window of ``w`` code points
    around the edit, ``k`` steps.
    """
    new = old[:start] + new_text + old[end:]
    delta = len(new_text) - (end - start)
    left = [sp for sp in old_spans if sp[1] <= start]  # tau_1, a prefix of the old tokens
    right = [(s + delta, e + delta) for s, e in old_spans if s >= end]  # tau_2, shifted

    def encode(ws: int, we: int) -> list[_Span]:
        return [(s + ws, e + ws) for s, e in _tokens(enc, new[ws:we])]

    g = glue_one_step(
        encode,
        [(k, sp[0], sp) for k, sp in reversed(list(enumerate(left)))],
        [(k, sp[1], sp) for k, sp in enumerate(right)],
        0,
        len(new),
    )
    out = left[: g.left or 0] + list(g.tokens)
    if g.right is not None:
        out += right[g.right + 1 :]
    return out, g.widenings


def measure_widening(
    enc: SentencePieceEncoding,
    spans_text: Sequence[str],
    *,
    edits: int = 2000,
    seed: int = 0,
    verify: bool = True,
) -> Counter[int]:
    """Histogram ``{steps: edits}`` of Algorithm 1 widenings for random small edits.

    Each edit picks a text, a position, and inserts, deletes or replaces 1-3 code points
    (taken from the same text, so the script does not change). With ``verify`` every glued
    result is checked against a full re-encode.

    Runtime complexity: ``O(edits · L log L)`` for texts of ``L`` code points.
    """
    rng = random.Random(seed)
    hist: Counter[int] = Counter()
    norm = [enc.normalize(t, at_text_start=False) for t in spans_text if len(t) >= 8]
    if not norm:
        raise ValueError("measure_widening needs texts of at least 8 code points")
    cache: dict[int, list[tuple[int, int]]] = {}
    for _ in range(edits):
        k = rng.randrange(len(norm))
        s = norm[k]
        spans = cache.get(k)
        if spans is None:
            spans = cache[k] = _tokens(enc, s)
        a = rng.randrange(len(s))
        kind = rng.choice(("insert", "delete", "replace"))
        n = rng.randint(1, 3)
        src = rng.randrange(len(s))
        ins = s[src : src + n] if kind != "delete" else ""
        b = a if kind == "insert" else min(len(s), a + n)
        got, steps = glue_edit(enc, s, spans, a, b, ins)
        if verify:
            new = s[:a] + ins + s[b:]
            assert got == _tokens(enc, new), (s, a, b, ins)
        hist[steps] += 1
    return hist


def _main() -> None:  # pragma: no cover - measurement script
    import argparse

    from ..sentencepiece.encoding import load_mistral_v1
    from ..samples.corpora import cjk_texts, real_text

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edits", type=int, default=3000)
    ap.add_argument("--min-len", type=int, default=40)
    args = ap.parse_args()
    enc = load_mistral_v1()
    latin = [ln for ln in real_text(400_000).splitlines()[200:] if len(ln) >= args.min_len]
    cjk = [ln for t in cjk_texts() for ln in t.splitlines() if len(ln) >= args.min_len // 2]
    for label, texts in (("Latin (traces, stdlib)", latin), ("CJK (cjkencodings)", cjk)):
        hist = measure_widening(enc, texts, edits=args.edits)
        total = sum(hist.values())
        mean = sum(k * v for k, v in hist.items()) / total
        print(f"{label}: {len(texts)} lines, {total} edits, mean {mean:.2f} steps")
        for k in sorted(hist):
            print(f"  {k:3d} steps: {hist[k]:6d}  ({100 * hist[k] / total:5.1f}%)")


if __name__ == "__main__":  # pragma: no cover
    _main()
