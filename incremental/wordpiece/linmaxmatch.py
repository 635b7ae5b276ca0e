"""LinMaxMatch: linear-time single-word WordPiece (Song et al., *Fast WordPiece Tokenization*).

WordPiece cuts a word greedily: take the longest prefix that is in the vocabulary, then the
longest continuation prefixed with the suffix indicator ``##``, and so on; if at some point no
prefix matches, the whole word is ``[UNK]`` (Section 3.1; this is "MaxMatch"). The original
implementation (Google's BERT, HuggingFace ``tokenizers``) tries ever shorter prefixes and is
``O(n^2)`` per word; it is kept as the obviously-correct reference, beside the ``O(n m)`` trie
walk of Section 3.2, in :mod:`._reference` (tests and benchmarks only).

:class:`LinMaxMatch` is the paper's ``O(n)`` algorithm:

- a trie of the vocabulary with **failure links** ``f(v)`` and **failure pops** ``F(v)``
  (Definition 1): when matching cannot continue at node ``v``, the tokens ``F(v)`` are certain
  to be the next tokens of the result and matching resumes at ``f(v)``, on the same input
  character, so no input character is ever read twice;
- precomputed by **Algorithm 2** (Section 3.4): a breadth-first traversal that derives ``f(v)``
  and ``F(v)`` from the parent's ``f(u)`` and ``F(u)``;
- used by **Algorithm 1** (Section 3.3) to tokenize.

Corner cases of Section 3.3, and one deliberate departure from the paper:

- *Words that start with the suffix indicator* (``##bc`` -> ``[##b, ##c]``) and *a word equal
  to the suffix indicator*: the paper places ``r#`` (the node of ``##``) on the path from the
  root and special-cases the word ``##`` (Algorithm 1, lines 4-5). That sharing makes one node
  stand for two different states ("read ``##`` at the start of a word" and "start of a
  continuation piece"), and with a vocabulary holding a proper prefix of ``##`` it disagrees
  with the original algorithm: with ``V = {#, ###x}`` the word ``##x`` is ``[#, ###x]`` for
  Google's and HF's WordPiece but ``[UNK]`` for the paper's trie (its Definition 3 footnote 11
  defines the prefix that way on purpose). We keep two roots instead: ``r`` holds every token
  as written (what the original algorithm looks up at the start of a word), ``r#`` holds the
  continuation tokens without their ``##``. Algorithm 2 runs unchanged from both roots, the
  word ``##`` needs no special case (its node gets its failure pops like any other), and the
  result equals the original algorithm on every vocabulary (property-tested).
- *Unknown characters* stop the match loop before the end of the word -> ``[UNK]``.
- ``max_input_chars_per_word``: a word of more characters (code points, not bytes) is
  ``[UNK]`` without being matched, as in HF.

>>> vocab = {"[UNK]": 0, "a": 1, "abcdx": 2, "##b": 3, "##c": 4, "##cdy": 5, "##dz": 6}
>>> lmm = LinMaxMatch(vocab)                       # Figure 1 of the paper
>>> [lmm.id_to_token[i] for i in lmm.tokenize("abcdz")]   # Example 3
['a', '##b', '##c', '##dz']
>>> lmm.tokenize("abcd"), lmm.tokenize("abcz")           # Example 4
([0], [0])
"""

from __future__ import annotations

from collections import deque
from typing import Dict, List, Mapping, Tuple

__all__ = ["LinMaxMatch", "NULL", "ROOT", "SUFFIX_ROOT", "Tables"]

#: the null node (``f(v) = ∅``)
NULL = -1

#: :meth:`LinMaxMatch.tables`: children, token, fail, pops, parent and depth of every node
Tables = Tuple[List[Dict[str, int]], List[int], List[int], List[Tuple[int, ...]], List[int],
               List[int]]

#: node ids of the two roots: ``r`` (start of a word) and ``r#`` (start of a continuation)
ROOT = 0
SUFFIX_ROOT = 1


class LinMaxMatch:
    """Vocabulary trie with failure links and failure pops; Algorithms 1 and 2 of the paper.

    Nodes are integers; per node we keep its children (``dict`` char -> node), its token id
    (``-1`` unless the node's string is in the vocabulary), ``f(v)`` and ``F(v)`` (a tuple of
    token ids), its parent and its depth. Node 0 is ``r``, node 1 is ``r#``.

    >>> lmm = LinMaxMatch({"[UNK]": 0, "a": 1, "abcdx": 2, "##b": 3, "##c": 4, "##cdy": 5,
    ...                    "##dz": 6})
    >>> v = lmm.node("abcd")                       # node 6 of Figure 1
    >>> lmm.pops_of(v), lmm.string(lmm.fail[v])
    (['a', '##b'], '##cd')

    Runtime complexity: construction ``O(M m)`` for tokens of total length ``M`` and maximum
    length ``m`` (Section 3.5: the failure pops are stored as lists).
    """

    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        unk_token: str = "[UNK]",
        suffix_indicator: str = "##",
        max_input_chars_per_word: int = 100,
        tables: Tables | None = None,
    ) -> None:
        if unk_token not in vocab:
            raise ValueError(
                f"the unknown token {unk_token!r} is not in the vocabulary: pass the "
                "unk_token= the vocabulary uses (e.g. '[UNK]' or '<unk>')"
            )
        self.vocab: dict[str, int] = dict(vocab)
        self.unk_token = unk_token
        self.unk_id = self.vocab[unk_token]
        self.suffix_indicator = suffix_indicator
        self.max_input_chars_per_word = int(max_input_chars_per_word)
        self.id_to_token: dict[int, str] = {i: t for t, i in self.vocab.items()}
        self.children: list[dict[str, int]] = []
        self.token: list[int] = []
        self.fail: list[int] = []
        self.pops: list[tuple[int, ...]] = []
        self.parent: list[int] = []
        self.depth: list[int] = []
        if tables is not None:  # what tables() gave for the same vocabulary and options
            self.children, self.token, self.fail, self.pops, self.parent, self.depth = tables
            return
        self._new_node(NULL, 0)  # r
        self._new_node(NULL, 0)  # r#
        self._build_trie()
        self._precompute()

    def tables(self) -> Tables:
        """The trie, failure links and pops as plain containers (what ``marshal`` writes):
        ``LinMaxMatch(vocab, ..., tables=t)`` with the same vocabulary and options is this
        matcher again without Algorithm 2 (the vocabulary cache keeps them,
        :func:`.encoding.linmaxmatch_of`).

        Runtime complexity: ``O(1)`` (the lists themselves).
        """
        return (self.children, self.token, self.fail, self.pops, self.parent, self.depth)

    @staticmethod
    def valid_tables(value: object) -> bool:
        """Whether ``value`` has the shape of :meth:`tables`' result (six lists, one entry
        per node each).

        Runtime complexity: ``O(1)``.
        """
        return (type(value) is tuple and len(value) == 6
                and all(type(x) is list for x in value)
                and len({len(x) for x in value}) == 1 and len(value[0]) >= 2)

    # -- construction ---------------------------------------------------------------------------

    def _new_node(self, parent: int, depth: int) -> int:
        self.children.append({})
        self.token.append(-1)
        self.fail.append(NULL)
        self.pops.append(())
        self.parent.append(parent)
        self.depth.append(depth)
        return len(self.children) - 1

    def _insert(self, root: int, s: str, token_id: int) -> None:
        u = root
        for ch in s:
            v = self.children[u].get(ch)
            if v is None:
                v = self._new_node(u, self.depth[u] + 1)
                self.children[u][ch] = v
            u = v
        self.token[u] = token_id

    def _build_trie(self) -> None:
        """BuildTrie of Algorithm 2, line 1, with ``r#`` kept apart from ``r`` (module doc).

        Every token is inserted below ``r`` as written; a token ``##x`` (``x`` non-empty) is
        also inserted below ``r#`` as ``x``.
        """
        sfx = self.suffix_indicator
        for tok, tid in self.vocab.items():
            if not tok:
                continue  # the empty string is never a piece (Definition 1: p_i != epsilon)
            self._insert(ROOT, tok, tid)
            if tok.startswith(sfx) and len(tok) > len(sfx):
                self._insert(SUFFIX_ROOT, tok[len(sfx):], tid)

    def _precompute(self) -> None:
        """Failure links and failure pops by Algorithm 2 (BFS, reusing the parent's pops).

        For ``v = δ(u, c)``: if ``χ_v`` is a token, ``f(v) = r#`` and ``F(v) = [χ_v]`` (line
        7-8); otherwise follow failure links from ``z = f(u)`` until an edge labelled ``c``
        exists, collecting ``Z``; then ``f(v) = δ(z, c)`` and ``F(v) = F(u) + Z`` (lines
        10-16). BFS order guarantees ``f`` and ``F`` of shallower nodes are ready.

        Runtime complexity: ``O(M)`` failure-link steps plus ``O(M m)`` to build the pop lists.
        """
        children, fail, pops, token = self.children, self.fail, self.pops, self.token
        queue: deque[int] = deque([ROOT, SUFFIX_ROOT])  # line 2: both roots have depth 0
        while queue:
            u = queue.popleft()
            for c, v in children[u].items():
                if token[v] >= 0:  # line 7
                    fail[v], pops[v] = SUFFIX_ROOT, (token[v],)
                else:
                    z, zpops = fail[u], list[int]()  # line 10
                    while z != NULL and c not in children[z]:  # line 11
                        zpops.extend(pops[z])
                        z = fail[z]
                    if z != NULL:  # line 15
                        fail[v], pops[v] = children[z][c], pops[u] + tuple(zpops)
                queue.append(v)  # line 19

    # -- tokenization ---------------------------------------------------------------------------

    def match_loop(self, s: str, i: int, n: int) -> tuple[list[int], int, int]:
        """MatchLoop of Algorithm 1 on ``s[i:n]``, followed by the virtual end-of-word space.

        Returns ``(tokens, u, i)``: the failure pops collected, the node reached and the index
        of the first character that could not be consumed (``n`` when all were). At ``n`` the
        paper's appended whitespace has no edge anywhere, so the loop drains failure links.

        >>> lmm = LinMaxMatch({"[UNK]": 0, "a": 1, "##b": 2})
        >>> lmm.match_loop("abb", 0, 3)          # all consumed, landed on r#: success
        ([1, 2, 2], 1, 3)
        >>> lmm.match_loop("aba", 0, 3)          # stuck before the second "a" (no "##a")
        ([1, 2], 1, 2)

        Runtime complexity: ``O(n - i)`` amortized (Section 3.5: each failure transition
        lowers the depth, each character raises it by one).
        """
        children, fail, pops = self.children, self.fail, self.pops
        u = ROOT
        tokens: list[int] = []
        while i < n:
            c = s[i]
            v = children[u].get(c)
            while v is None:  # line 9
                f = fail[u]
                if f == NULL:  # line 10
                    return tokens, u, i
                tokens.extend(pops[u])  # line 11
                u = f  # line 12
                v = children[u].get(c)
            u = v  # line 14
            i += 1
        # the appended whitespace: no edge, so follow failure links to the end (lines 9-12)
        while fail[u] != NULL:
            tokens.extend(pops[u])
            u = fail[u]
        return tokens, u, i

    def tokenize(self, word: str) -> list[int]:
        """Token ids of one word by LinMaxMatch (Algorithm 1), equal to the original MaxMatch.

        >>> lmm = LinMaxMatch({"[UNK]": 0, "#": 1, "###x": 2})
        >>> lmm.tokenize("##x")                    # the paper's trie would say [UNK]
        [1, 2]

        Runtime complexity: ``O(len(word))``.
        """
        n = len(word)
        if n > self.max_input_chars_per_word:
            return [self.unk_id]
        tokens, u, i = self.match_loop(word, 0, n)  # line 1
        if i < n or (u != ROOT and u != SUFFIX_ROOT):  # line 2
            return [self.unk_id]  # line 3
        # lines 4-5 (the word equal to the suffix indicator) cannot happen with two roots: r#
        # is reached only by a failure transition, which always pops at least one token
        return tokens

    # -- inspection -----------------------------------------------------------------------------

    def node(self, s: str, *, suffix: bool = False) -> int:
        """The node of string ``s`` below ``r`` (or below ``r#`` with ``suffix=True``), or -1.

        >>> lmm = LinMaxMatch({"[UNK]": 0, "ab": 1})
        >>> lmm.token[lmm.node("ab")], lmm.node("ba")
        (1, -1)

        Runtime complexity: ``O(len(s))``.
        """
        u = SUFFIX_ROOT if suffix else ROOT
        for ch in s:
            u = self.children[u].get(ch, NULL)
            if u == NULL:
                return NULL
        return u

    def string(self, v: int) -> str:
        """``χ_v``: the string of node ``v`` (continuation nodes carry the suffix indicator).

        >>> lmm = LinMaxMatch({"[UNK]": 0, "##ab": 1})
        >>> lmm.string(lmm.node("ab", suffix=True)), lmm.string(lmm.node("##ab"))
        ('##ab', '##ab')

        Runtime complexity: ``O(depth)``.
        """
        chars = []
        while self.parent[v] != NULL:
            u = self.parent[v]
            chars.append(next(c for c, w in self.children[u].items() if w == v))
            v = u
        s = "".join(reversed(chars))
        return self.suffix_indicator + s if v == SUFFIX_ROOT else s

    def pops_of(self, v: int) -> list[str]:
        """``F(v)`` as token strings.

        >>> lmm = LinMaxMatch({"[UNK]": 0, "a": 1})
        >>> lmm.pops_of(lmm.node("a"))
        ['a']

        Runtime complexity: ``O(len(F(v)))``.
        """
        return [self.id_to_token[t] for t in self.pops[v]]

    def __len__(self) -> int:
        """Number of trie nodes (both roots included)."""
        return len(self.children)

    def _check(self) -> None:
        """Assert Definition 1 for every node by brute force (for small vocabularies in tests).

        For each node ``v``, pop longest-matching prefixes from ``χ_v`` (as the original
        MaxMatch does) until the remaining suffix is a node below ``r#``: those pops must be
        ``F(v)`` and that node ``f(v)``; if no prefix matches first, ``f(v)`` must be null.
        """
        for v in range(len(self.children)):
            want_f, want_pops = self._definition_1(v)
            got = (self.fail[v], list(self.pops[v]) if self.fail[v] != NULL else None)
            assert got == (want_f, want_pops), (
                f"node {v} {self.string(v)!r}: f, F = {got}, Definition 1 says "
                f"{(want_f, want_pops)}; children {self.children[v]}"
            )
            for c, w in self.children[v].items():
                assert self.parent[w] == v and self.depth[w] == self.depth[v] + 1, (v, c, w)

    def _definition_1(self, v: int) -> tuple[int, list[int] | None]:
        if v in (ROOT, SUFFIX_ROOT):
            return NULL, None
        s = self.string(v)
        sfx = self.suffix_indicator
        # the first pop: below r the string is matched as written, below r# as "##" + rest
        rest = s
        at_start = not self._is_suffix_node(v)
        popped: list[int] = []
        while True:
            best = None
            body = rest if at_start else rest[len(sfx):]
            for k in range(len(body), 0, -1):
                cand = body[:k] if at_start else sfx + body[:k]
                if cand in self.vocab:
                    best = (k, self.vocab[cand])
                    break
            if best is None:
                return NULL, None
            k, tid = best
            popped.append(tid)
            rest = sfx + body[k:]
            at_start = False
            w = self.node(rest[len(sfx):], suffix=True)
            if w != NULL:
                return w, popped

    def _is_suffix_node(self, v: int) -> bool:
        while self.parent[v] != NULL:
            v = self.parent[v]
        return v == SUFFIX_ROOT
