"""E2E WordPiece: pre-tokenization and WordPiece in one linear pass (Song et al., Section 4).

BERT tokenizers first cut normalized text into words (at whitespace, and around every
punctuation character) and then run WordPiece on each word. Section 4 of *Fast WordPiece
Tokenization* folds the first step into the LinMaxMatch automaton of
:mod:`livetok.incremental.wordpiece.linmaxmatch`:

*Precomputation* (Section 4, "Precomputation"): start from the LinMaxMatch trie, remove every
edge labelled with a punctuation character, add for every punctuation character ``c`` a data
node below the root whose failure pops are ``[c]`` (or ``[<unk>]`` when ``c`` is not in the
vocabulary), and send the failure links of those nodes to a special node ``r_p`` ("a
punctuation character was matched"). We also remove edges labelled with whitespace (BERT
vocabularies have none; a vocabulary that had would otherwise match across words).

*Tokenization* is Algorithm 3: run MatchLoop from the root; when it stops, the word was
tokenized if the stop is at a word boundary and the landing node is ``r``, ``r#`` or ``r_p``;
otherwise the word is ``[UNK]`` and the cursor skips to the next boundary. Then whitespace is
skipped and the next word starts.

Two details of Algorithm 3 are adjusted, both marked ``subtle`` in the code:

- ``IsWdBndry(s, i)`` counts "the previous character is punctuation" as a boundary. Right
  after a punctuation word, a word that starts with a character the trie has never seen makes
  MatchLoop return at once with ``u = r`` and no tokens; the test then passes, no token is
  emitted and the cursor never moves. We count the previous punctuation only when it belongs to
  the current word (``i > word_start``), which makes that word ``[UNK]`` as BERT does.
- ``max_input_chars_per_word`` (HF: words longer than 100 characters are ``[UNK]``) is checked
  once the word's end is known.

The automaton shares the node arrays of the LinMaxMatch trie: removing edges only makes nodes
unreachable, and a node that stays reachable spells a string without punctuation or
whitespace, whose suffixes (the candidates of Definition 1) are reachable too, so its ``f`` and
``F`` are what Algorithm 2 would compute on the reduced trie (``_check`` verifies this on small
vocabularies by recomputing).

>>> from livetok.incremental.wordpiece.linmaxmatch import LinMaxMatch
>>> lmm = LinMaxMatch({"[UNK]": 0, "john": 1, "johan": 2, "##son": 3, "s": 4, "'": 5})
>>> e2e = E2EWordPiece(lmm, punctuation="'", whitespace=" ")
>>> [lmm.id_to_token[i] for i in e2e.tokenize("john johanson's")]    # Section 4's example
['john', 'johan', '##son', "'", 's']
"""

from __future__ import annotations

from typing import Iterable, Iterator

from .linmaxmatch import NULL, ROOT, SUFFIX_ROOT, LinMaxMatch

__all__ = ["E2EWordPiece"]


class E2EWordPiece:
    """The Section 4 automaton over a :class:`~livetok.incremental.wordpiece.linmaxmatch.LinMaxMatch` trie.

    ``punctuation`` and ``whitespace`` are the characters the pre-tokenizer splits on (for BERT:
    :attr:`livetok.incremental.wordpiece.bert_normalize.BertTables.punct_chars` and ``space_chars``).

    >>> from livetok.incremental.wordpiece.linmaxmatch import LinMaxMatch
    >>> e2e = E2EWordPiece(LinMaxMatch({"[UNK]": 0, "a": 1, "##b": 2, ".": 3}),
    ...                    punctuation=".,", whitespace=" ")
    >>> e2e.tokenize("ab. ab,x")
    [1, 2, 3, 1, 2, 0, 0]

    Runtime complexity: construction ``O(trie + punctuation)``.
    """

    def __init__(
        self, lmm: LinMaxMatch, *, punctuation: Iterable[str], whitespace: Iterable[str]
    ) -> None:
        self.lmm = lmm
        self.punct: frozenset[str] = frozenset(punctuation)
        self.space: frozenset[str] = frozenset(whitespace)
        cut = self.punct | self.space
        # children without punctuation / whitespace edges (shared dicts where nothing changes)
        children = [
            d if cut.isdisjoint(d) else {c: v for c, v in d.items() if c not in cut}
            for d in lmm.children
        ]
        fail = list(lmm.fail)
        pops = list(lmm.pops)
        self.r_p = len(children)  # the special node r_p: no parent, no children, f(r_p) = null
        children.append({})
        fail.append(NULL)
        pops.append(())
        root = dict(children[ROOT])
        for c in sorted(self.punct):
            if c in self.space:
                continue
            tid = lmm.vocab.get(c, lmm.unk_id)  # chi_v = c if c in V, else <unk>
            root[c] = len(children)
            children.append({})
            fail.append(self.r_p)  # "for punctuation nodes, we set their failure links to r_p"
            pops.append((tid,))
        children[ROOT] = root
        self.children = children
        self.fail = fail
        self.pops = pops

    def tokenize(self, s: str) -> list[int]:
        """Token ids of normalized text ``s`` by Algorithm 3 (E2E WordPiece).

        >>> from livetok.incremental.wordpiece.linmaxmatch import LinMaxMatch
        >>> e2e = E2EWordPiece(LinMaxMatch({"[UNK]": 0, "a": 1}), punctuation="!", whitespace=" ")
        >>> e2e.tokenize("  a!!b a ")
        [1, 0, 0, 0, 1]

        Runtime complexity: ``O(len(s))``.
        """
        out: list[int] = []
        for _, _, toks in self.words(s):
            out.extend(toks)
        return out

    def words(
        self, s: str, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, int, list[int]]]:
        """Yield ``(word_start, word_end, token_ids)`` for each word of ``s[start:end]``.

        >>> from livetok.incremental.wordpiece.linmaxmatch import LinMaxMatch
        >>> e2e = E2EWordPiece(LinMaxMatch({"[UNK]": 0, "a": 1, "##a": 2}), punctuation="-",
        ...                    whitespace=" ")
        >>> list(e2e.words("aa -b"))
        [(0, 2, [1, 2]), (3, 4, [0]), (4, 5, [0])]

        Runtime complexity: ``O(end - start)``.
        """
        children, fail, pops = self.children, self.fail, self.pops
        punct, space = self.punct, self.space
        r_p, unk = self.r_p, self.lmm.unk_id
        max_chars = self.lmm.max_input_chars_per_word
        n = len(s) if end is None else end
        i = start
        while i < n:
            if s[i] in space:  # lines 12-13 (also leading whitespace)
                i += 1
                continue
            word_start = i
            # MatchLoop (lines 7-16 of Algorithm 1), inlined for speed
            u = ROOT
            tokens: list[int] = []
            while i < n:
                c = s[i]
                v = children[u].get(c)
                while v is None:
                    f = fail[u]
                    if f == NULL:
                        break
                    tokens.extend(pops[u])
                    u = f
                    v = children[u].get(c)
                if v is None:
                    break
                u = v
                i += 1
            else:  # the appended whitespace of line 2: drain failure links
                while fail[u] != NULL:
                    tokens.extend(pops[u])
                    u = fail[u]
            # line 5: tokenized iff at a word boundary and landed on r, r# or r_p
            # subtle: "previous char is punctuation" counts only inside this word (module doc)
            if not (
                i >= n or s[i] in space or s[i] in punct or (i > word_start and s[i - 1] in punct)
            ) or (u != SUFFIX_ROOT and u != r_p and u != ROOT):
                tokens = [unk]  # line 6
                # lines 10-11: skip the rest of the word
                while i < n and not (
                    s[i] in space or s[i] in punct or (i > word_start and s[i - 1] in punct)
                ):
                    i += 1
            if i - word_start > max_chars:  # subtle: HF's word-length limit, in characters
                tokens = [unk]
            yield word_start, i, tokens

    def words_with_spans(self, s: str) -> Iterator[tuple[int, int, int]]:
        """Yield ``(token_id, start, end)`` with each token's span in ``s``.

        A word's first token covers ``len(token)`` characters, each later one ``len(token) -
        len("##")``; ``[UNK]`` covers its whole word.

        >>> from livetok.incremental.wordpiece.linmaxmatch import LinMaxMatch
        >>> e2e = E2EWordPiece(LinMaxMatch({"[UNK]": 0, "un": 1, "##able": 2}),
        ...                    punctuation="", whitespace=" ")
        >>> list(e2e.words_with_spans(" unable"))
        [(1, 1, 3), (2, 3, 7)]

        Runtime complexity: ``O(len(s))``.
        """
        lmm = self.lmm
        sfx_len = len(lmm.suffix_indicator)
        for a, b, toks in self.words(s):
            if len(toks) == 1:
                yield toks[0], a, b
                continue
            pos = a
            for k, t in enumerate(toks):
                width = len(lmm.id_to_token[t]) - (sfx_len if k else 0)
                yield t, pos, min(b, pos + width)
                pos += width

    def _check(self) -> None:
        """Assert the automaton's invariants (prints the offending node when one fails).

        Only root edges carry punctuation, each to a childless data node whose failure link is
        ``r_p`` and whose pops are ``[c]`` or ``[<unk>]``; no edge carries whitespace; ``r_p``
        is isolated; every other node keeps the LinMaxMatch ``f`` and ``F``. (That E2E equals
        pre-tokenization followed by Algorithm 1 is property-tested in the test suite.)
        """
        lmm = self.lmm
        n_trie = len(lmm.children)
        assert self.r_p == n_trie and self.fail[self.r_p] == NULL and not self.children[self.r_p]
        for c in self.punct - self.space:
            v = self.children[ROOT][c]
            assert v > self.r_p and self.fail[v] == self.r_p and not self.children[v], (c, v)
            assert self.pops[v] == (lmm.vocab.get(c, lmm.unk_id),), (c, self.pops[v])
        cut = self.punct | self.space
        for u, d in enumerate(self.children):
            bad = cut & set(d)
            assert not bad or (u == ROOT and not bad & self.space), (u, sorted(bad))
            if u < n_trie:
                assert self.fail[u] == lmm.fail[u] and self.pops[u] == lmm.pops[u], u
                for c, v in d.items():
                    assert lmm.children[u].get(c) == v or (u == ROOT and c in self.punct), (u, c)
