"""Slow, obviously-correct WordPiece references, for tests and benchmarks only (as tiktoken
keeps ``_educational.py``): nothing on the encoding path imports this module.

* :func:`max_match_reference`: the original greedy MaxMatch of Google's BERT and HF
  ``tokenizers`` (Section 3.1 of *Fast WordPiece Tokenization*, Song et al., 2021), which tries
  ever shorter prefixes: ``O(n^2)`` per word;
* :func:`max_match_trie`: MaxMatch by a trie walk from each start (Section 3.2): ``O(n m)``.

:class:`~livetok.incremental.wordpiece.linmaxmatch.LinMaxMatch` (``O(n)``) is tested against
both, and ``benchmarks/bench_wordpiece.py`` times all three.
"""

from __future__ import annotations

from typing import Mapping

from .linmaxmatch import NULL, ROOT, SUFFIX_ROOT, LinMaxMatch

__all__ = ["max_match_reference", "max_match_trie"]


def max_match_reference(
    word: str,
    vocab: Mapping[str, int],
    *,
    unk_token: str = "[UNK]",
    suffix_indicator: str = "##",
    max_input_chars_per_word: int = 100,
) -> list[int]:
    """The original greedy MaxMatch of BERT / HF ``tokenizers`` (the reference, ``O(n^2)``).

    At each position try the whole rest of the word, then ever shorter prefixes (with
    ``suffix_indicator`` in front past the first piece), exactly as HF's
    ``WordPiece::tokenize`` does.

    >>> max_match_reference("unaffable", {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3})
    [1, 2, 3]

    Runtime complexity: ``O(n^2)`` dictionary lookups of ``O(n)`` strings for a word of ``n``
    characters.
    """
    if len(word) > max_input_chars_per_word:
        return [vocab[unk_token]]
    out: list[int] = []
    start = 0
    while start < len(word):
        end = len(word)
        found = None
        while start < end:
            sub = word[start:end]
            if start > 0:
                sub = suffix_indicator + sub
            found = vocab.get(sub)
            if found is not None:
                break
            end -= 1
        if found is None:
            return [vocab[unk_token]]
        out.append(found)
        start = end
    return out


def max_match_trie(word: str, lmm: LinMaxMatch) -> list[int]:
    """MaxMatch by walking the trie from each start (the ``O(n m)`` approach of Section 3.2).

    From the current position follow trie edges as far as the input allows, remember the last
    token node passed, emit it and restart right after it. Same result as
    :func:`max_match_reference`; used by the benchmark to show the ``m`` factor.

    >>> lmm = LinMaxMatch({"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3})
    >>> max_match_trie("unaffable", lmm)
    [1, 2, 3]

    Runtime complexity: ``O(n m)`` for a word of ``n`` characters and tokens of at most ``m``.
    """
    n = len(word)
    if n > lmm.max_input_chars_per_word:
        return [lmm.unk_id]
    children, token = lmm.children, lmm.token
    out: list[int] = []
    start, root = 0, ROOT
    while start < n:
        u, i, best, best_end = root, start, -1, start
        while i < n:
            u = children[u].get(word[i], NULL)
            if u == NULL:
                break
            i += 1
            if token[u] >= 0:
                best, best_end = token[u], i
        if best < 0:
            return [lmm.unk_id]
        out.append(best)
        start, root = best_end, SUFFIX_ROOT
    return out
