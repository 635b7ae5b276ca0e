"""The character pairs a BPE token can span, and the cuts they give (``BPEModel.cuts``): a
position whose two neighbouring characters occur together inside no token a symbol can be is
a place no merge crosses (the ``_joinable`` argument of ``sentencepiece.encoding``; Lemma 2
of *Formalizing BPE Tokenization*, ``../shared/papers/004``).
"""

from __future__ import annotations

from itertools import chain, compress, repeat
from operator import add, itemgetter, not_
from typing import Any, Mapping

from ..gcpause import collector_paused

__all__ = ["joinable_pairs", "formable_pairs", "pair_cuts"]


def joinable_pairs(vocab: Mapping[str, int]) -> frozenset[str]:
    """The two-character strings that occur inside some token of ``vocab`` (what
    :meth:`BPEModel.cuts` tests; Gemma 3: 34,012 pairs, ~0.4 s to find).

    >>> sorted(joinable_pairs({"abc": 0, "b": 1}))
    ['ab', 'bc']

    Runtime complexity: ``O(total length of the tokens)``, in C.
    """
    with collector_paused():
        tokens = list(vocab)
        tails = map(itemgetter(slice(1, None)), tokens)
        # every token's adjacent pairs, all in C: map(add, t, t[1:]) per token
        return frozenset(chain.from_iterable(map(map, repeat(add), tokens, tails)))


def formable_pairs(tables: Mapping[str, Any]) -> frozenset[str]:
    """The two-character strings a symbol of :class:`BPEModel` can span: those inside the
    tokens the merges make (a symbol is one character's token, a byte-fallback token or a
    fused unknown, or a merge's result, which spells its two parts), when no rule merges the
    unknown or a byte-fallback token and ``ignore_merges`` is off; else those inside any
    token (:func:`joinable_pairs`). Llama 2's ``<0x00>`` .. ``<0xFF>`` hold every pair of
    digits, but no merge makes them: a line of digits is cut at every digit.

    >>> from livetok.incremental.hf.bpe import bpe_tables
    >>> sorted(formable_pairs(bpe_tables({"vocab": {"a": 0, "b": 1, "ab": 2, "<0x00>": 3},
    ...                                   "merges": ["a b"]}, source="t")))
    ['ab']

    Runtime complexity: ``O(R + total length of the merged tokens)``, in C.
    """
    vocab: dict[str, int] = tables["vocab"]
    if tables["merged_specials"] or tables["ignore_merges"]:
        return joinable_pairs(vocab)
    m = max(vocab.values(), default=-1) + 1
    made = set(map(m.__rmod__, tables["rules"].values()))
    return joinable_pairs({t: 0 for t, i in vocab.items() if i in made})


def pair_cuts(s: str, lo: int, hi: int, pairs: frozenset[str]) -> list[int]:
    """The positions ``lo <= c < hi`` (``lo >= 1``) whose pair ``s[c - 1:c + 1]`` is in no
    token, in C: a string per pair and a set lookup each (~30-90 ms per million).

    Runtime complexity: ``O(hi - lo)``.
    """
    seg = s[lo - 1:hi]
    return list(compress(range(lo, hi), map(not_, map(pairs.__contains__,
                                                      map(add, seg, seg[1:])))))
