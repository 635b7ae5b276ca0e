"""Added tokens: HuggingFace's ``AddedVocabulary::extract_and_normalize`` splitting.

A ``tokenizer.json`` lists *added tokens* (``added_tokens``) on top of the model's vocabulary:
special tokens (``<|begin_of_text|>``) and plain ones (Qwen's ``<think>``, Gemma's 6,406
``<unusedN>``, ``\\n``/``\\t``/``▁`` runs and HTML tags). HuggingFace ``tokenizers``
(``tokenizer/added_vocabulary.rs``) finds them *before* the pipeline runs, in two passes:

1. the tokens with ``normalized: false`` are matched in the raw text; the text between two
   matches is a *segment*, which the normalizer then normalizes on its own;
2. the tokens with ``normalized: true`` are matched in each normalized segment (their
   patterns are their contents normalized), cutting it into *sub-segments*.

Each pass is an Aho-Corasick scan, ``MatchKind::LeftmostLongest``, non-overlapping: the
leftmost position where some token starts, the longest token there, then on from its end.
Options then act on each match as ``find_matches`` does:

* ``single_word``: the match is *discarded* unless the character before it (in the scanned
  string) and the one after it are no word characters (``\\w`` of Rust's ``regex``); the scan
  still goes on from the discarded match's end (nothing inside it is looked at again);
* ``lstrip``: the match takes the whitespace before it, back to the previous match's end;
* ``rstrip``: the match takes the whitespace after it; the scan still goes on from the
  token's own end, so a following match can start inside that whitespace and the two splits
  overlap (HF then encodes those characters twice; :class:`Match` keeps them as HF has them).

HuggingFace encodes special tokens as their ids too (``split_special_tokens`` is false by
default), so for counting the two kinds differ in nothing.

:class:`AddedMatcher` does the scan with one compiled pattern of the standard ``re`` module:
a trie of the contents written as nested groups whose greedy ``?`` makes the first match
found at a position the longest (Gemma 3's 6,415 tokens: compiled in ~0.1 s; docs/startup.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import regex

from ..env_limits import size_limit
from .errors import UnboundedComponent, UnsupportedComponent

__all__ = ["AddedToken", "Match", "AddedMatcher", "TokenReads", "char_set", "parse_added_tokens",
           "trie_pattern", "token_rows", "tokens_of_rows", "MAX_ADDED_TOKENS",
           "check_added_count", "one_scan", "join_dropped", "drop_inside"]

#: the most added tokens livetok reads from a file (``LIVETOK_MAX_ADDED_TOKENS``): their
#: matcher is compiled on every load, 5-8 s for 100,000 (1,000,000: 190 s); the real files
#: the tests read have at most 6,415 (Gemma 3), speech models add some 65,000
MAX_ADDED_TOKENS = 100_000
_ADDED_ENV = "LIVETOK_MAX_ADDED_TOKENS"

#: Rust ``regex``'s Unicode ``\w`` (what ``single_word`` tests one character with)
_WORD = regex.compile(r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]")
#: Rust ``regex``'s Unicode ``\s`` (what ``lstrip`` / ``rstrip`` take)
_SPACE_RUN_END = regex.compile(r"\p{White_Space}*")
_SPACE_RUN_START = regex.compile(r"\p{White_Space}*", flags=regex.REVERSE)


@dataclass(frozen=True, slots=True)
class AddedToken:
    """One entry of ``added_tokens``."""

    content: str
    id: int
    special: bool = False
    normalized: bool = False
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False


class Match(NamedTuple):
    """One added-token split: ``[start, end)`` of the scanned string (lstrip/rstrip
    whitespace included) and the token."""

    start: int
    end: int
    token: AddedToken


def parse_added_tokens(entries: object, *, source: str) -> list[AddedToken]:
    """The ``added_tokens`` list of a ``tokenizer.json``, checked.

    >>> parse_added_tokens([{"id": 5, "content": "<x>", "special": True}], source="f")
    [AddedToken(content='<x>', id=5, special=True, normalized=False, lstrip=False, rstrip=False, single_word=False)]

    Runtime complexity: ``O(number of tokens)``.
    """
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise UnsupportedComponent(f"{source}: added_tokens is a {type(entries).__name__}, "
                                   "not a list")
    check_added_count(len(entries), source=source)
    out: list[AddedToken] = []
    for k, e in enumerate(entries):
        if not isinstance(e, dict) or not isinstance(e.get("content"), str) or not isinstance(
                e.get("id"), int) or isinstance(e.get("id"), bool) or e["id"] < 0:
            raise UnsupportedComponent(
                f"{source}: added_tokens[{k}] is not an object with a string content and a "
                "non-negative integer id")
        flags: dict[str, Any] = {f: e.get(f, d) for f, d in (
            ("special", False), ("normalized", not e.get("special", False)), ("lstrip", False),
            ("rstrip", False), ("single_word", False))}
        for f, v in flags.items():
            if not isinstance(v, bool):
                raise UnsupportedComponent(f"{source}: added_tokens[{k}].{f} is {v!r}, not a "
                                           "boolean")
        out.append(AddedToken(e["content"], e["id"], **flags))
    return out


def check_added_count(n: int, *, source: str) -> None:
    """Refuse (:class:`.errors.UnboundedComponent`) a file with more than
    ``$LIVETOK_MAX_ADDED_TOKENS`` (default :data:`MAX_ADDED_TOKENS`) added tokens.

    >>> check_added_count(6_415, source="f.json")

    Runtime complexity: ``O(1)``.
    """
    limit = size_limit(_ADDED_ENV, MAX_ADDED_TOKENS, unit="tokens")
    if n > limit:
        raise UnboundedComponent(
            f"{source}: added_tokens has {n:,} tokens, more than the {limit:,} livetok reads "
            "(their matcher is built on every load, in time that grows with them); set "
            f"{_ADDED_ENV} to allow more")


def token_rows(tokens: Sequence[AddedToken]) -> list[tuple[str, int, bool, bool, bool, bool, bool]]:
    """The tokens as plain tuples (fields in order) that ``marshal`` writes.

    >>> tokens_of_rows(token_rows([AddedToken("<x>", 5, True)])) == [AddedToken("<x>", 5, True)]
    True

    Runtime complexity: ``O(number of tokens)``.
    """
    # (not dataclasses.astuple: it deep-copies every field, 0.3 s for Gemma 3's 6,415 tokens)
    return [(t.content, t.id, t.special, t.normalized, t.lstrip, t.rstrip, t.single_word)
            for t in tokens]


def tokens_of_rows(rows: Sequence[Sequence[Any]]) -> list[AddedToken]:
    """The tokens of :func:`token_rows`' tuples. Runtime complexity: ``O(number of tokens)``."""
    return [AddedToken(*row) for row in rows]


def trie_pattern(words: Sequence[str]) -> str:
    """A pattern (``re`` syntax, which the ``regex`` package reads alike) matching the longest
    of ``words`` at a position: their trie as nested groups, a word that continues into
    longer ones made optional (greedy, so the longer ones are tried first).

    >>> p = re.compile(trie_pattern(["<a", "<ab", "b"]))
    >>> [m.group() for m in p.finditer("<abx<a b")]
    ['<ab', '<a', 'b']

    Runtime complexity: ``O(total length of words)``.
    """
    root: dict[str, Any] = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        # a chain of one-child nodes that end no word is their characters: read in a loop, so
        # that the recursion is as deep as the words nested in one another (31 in Gemma 3),
        # not as long as the longest word
        chain: list[str] = []
        while len(node) == 1 and "" not in node:
            ((ch, node),) = node.items()
            chain.append(re.escape(ch))
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return "".join(chain)
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return "".join(chain) + (f"(?:{body})?" if "" in node else body)

    return emit(root)


class AddedMatcher:
    """Leftmost-longest, non-overlapping matching of one set of added tokens, with the
    ``single_word`` / ``lstrip`` / ``rstrip`` rules of ``find_matches`` (module docstring).

    >>> m = AddedMatcher([AddedToken("<think>", 9), AddedToken("<th", 8)])
    >>> [(x.start, x.end, x.token.id) for x in m.find("a<think>b<thin")]
    [(1, 8, 9), (9, 12, 8)]

    ``patterns`` (default: the contents) are the strings matched; the normalized pass gives
    the contents normalized.
    """

    def __init__(self, tokens: Sequence[AddedToken], patterns: Sequence[str] | None = None
                 ) -> None:
        pats = [t.content for t in tokens] if patterns is None else list(patterns)
        assert len(pats) == len(tokens)
        #: pattern -> token; the first token of a pattern wins, as Aho-Corasick reports the
        #: lowest pattern index among equal ones
        self._by_pattern: dict[str, AddedToken] = {}
        for p, t in zip(pats, tokens):
            if p:
                self._by_pattern.setdefault(p, t)
        self.tokens = list(self._by_pattern.values())
        #: longest pattern, in code points (0 when there is none)
        self.max_len = max(map(len, self._by_pattern), default=0)
        # the standard ``re``: the same backtracking semantics for literals, groups and a
        # greedy ``?``, compiled ~4x faster than by ``regex`` (Gemma 3's trie: ~0.1 s, was
        # ~0.45 s) and scanning as fast or faster (docs/startup.md)
        self._re = re.compile(trie_pattern(list(self._by_pattern))) if self._by_pattern else None
        #: whether some token has an option that makes matches depend on their context
        self.has_options = any(t.single_word or t.lstrip or t.rstrip for t in self.tokens)
        self.has_single_word = any(t.single_word for t in self.tokens)

    def __bool__(self) -> bool:
        return self._re is not None

    def find(self, s: str, pos: int = 0, endpos: int | None = None, *,
             rejected: list[tuple[int, int]] | None = None) -> list[Match]:
        """The matches of ``s[pos:endpos]`` in order, as ``find_matches`` gives them for the
        string ``s[:endpos]`` scanned from ``pos`` (``pos`` is 0 or where an earlier scan of
        the same string left off). ``single_word`` looks at ``s[start - 1]`` and ``s[end]``
        (``s`` edges count as non-word), ``lstrip`` goes back no further than ``pos``.
        Discarded ``single_word`` candidates are appended to ``rejected``.

        Runtime complexity: ``O(len(s) - pos)`` (one C scan) plus ``O(1)`` per match.
        """
        r = self._re
        if r is None:
            return []
        n = len(s) if endpos is None else endpos
        out: list[Match] = []
        get = self._by_pattern.__getitem__
        if not self.has_options:
            return [Match(m.start(), m.end(), get(m.group())) for m in r.finditer(s, pos, n)]
        last = pos  # HF's start_offset: where the previous split ended
        for m in r.finditer(s, pos, n):
            start, stop = m.start(), m.end()
            tok = get(m.group())
            if tok.single_word:
                left_ok = start == 0 or not _WORD.match(s, start - 1)
                right_ok = stop == n or not _WORD.match(s, stop)
                if not (left_ok and right_ok):
                    if rejected is not None:
                        rejected.append((start, stop))
                    continue
            if tok.lstrip:
                ws = _SPACE_RUN_START.match(s, 0, start)
                start = max(ws.start() if ws else start, last)
            if tok.rstrip:
                ws = _SPACE_RUN_END.match(s, stop, n)
                if ws:
                    stop = ws.end()
            out.append(Match(start, stop, tok))
            last = stop
        return out


class TokenReads:
    """What a horizon reads of a set of added tokens (``hf/encoding.py``, module docstring,
    *Horizon*): the trie of their contents (``token``: a token starts here; leftmost-longest
    by ``finditer``), the trie of all their prefixes (``prefix``: how far the scan's walk from
    a position reads), their first characters, and a run of the characters they hold after
    their first (``infix``, capped at ``L - 1``).

    >>> t = TokenReads(["<a>", "<ab>"])
    >>> [m.span() for m in t.token.finditer("x<ab><a>")], t.prefix.match("<ax", 0).end()
    ([(1, 5), (5, 8)], 2)
    """

    def __init__(self, contents: list[str]) -> None:
        self.first = frozenset(c[0] for c in contents)
        self.first_re = re.compile(char_set(self.first))
        self.token = re.compile(trie_pattern(contents))
        self.prefix = re.compile(trie_pattern(sorted({c[:i] for c in contents
                                                      for i in range(1, len(c) + 1)})))
        longest = max(map(len, contents))
        inner = {ch for c in contents for ch in c[1:]}
        self.infix = (re.compile(f"{char_set(inner)}{{0,{longest - 1}}}") if inner else None)

    def lead(self, text: str, start: int) -> tuple[int, int | None]:
        """The tight horizon's first terms at ``start`` (``start < len(text)``): ``b``, past the
        token characters from ``start`` (a token containing them would be read through them),
        and the whole horizon when the piece at ``start`` is a token (decided by the trie's
        walk from there), else None.

        Runtime complexity: ``O(L)`` for the longest token ``L``, C calls.
        """
        b = start + 1
        if self.infix is not None:
            b = self.infix.match(text, start).end() + 1  # type: ignore[union-attr]
        if text[start] in self.first and self.token.match(text, start) is not None:
            return b, max(b, self.prefix.match(text, start).end() + 1)  # type: ignore[union-attr]
        return b, None

    def bound(self, text: str, start: int, limit: int, b: int, y: int) -> int:
        """The tight horizon of the piece at ``start`` from its first term ``b`` (:meth:`lead`)
        and ``y``, what the pre-tokenizer read as if the segment went on: a token starting
        inside what it read ends the segment there (its reads stop at the token), and each
        token candidate's walk is read.

        Runtime complexity: ``O(y - start)``, one C scan for first characters.
        """
        n = len(text)
        best = max(b, y + 1)
        seen = b
        # (positions past ``limit`` need no look: a token starting there gives more than it)
        for m in self.first_re.finditer(text, start, min(n, y + 1, limit + 1)):
            q = m.start()
            k_end = self.prefix.match(text, q).end() + 1  # type: ignore[union-attr]
            if q > start and self.token.match(text, q) is not None:
                return max(seen, k_end)  # the segment ends at q: its reads stop there
            seen = max(seen, k_end)
            best = max(best, k_end)
        return best


def char_set(chars: frozenset[str] | set[str]) -> str:
    """A ``re`` character class of exactly ``chars``."""
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


# -- the scan's helpers for the pieces of a document (:mod:`.encoding`) ----------------------


def one_scan(raw: Sequence[AddedToken], norm: Sequence[AddedToken]) -> bool:
    """Whether the two added-token passes (raw, then normalized under an identity normalizer)
    find what one leftmost-longest scan of both finds: no raw token can start inside a
    normalized one (no raw first character after a normalized token's first), and no token of
    one set is a prefix of a token of the other (which would decide who wins at a position).

    Runtime complexity: ``O(R N)`` for ``R`` raw and ``N`` normalized tokens.
    """
    firsts = {t.content[0] for t in raw if t.content}
    if any(ch in firsts for t in norm for ch in t.content[1:]):
        return False
    a = [t.content for t in raw if t.content]
    b = [t.content for t in norm if t.content]
    return not any(x.startswith(y) or y.startswith(x) for x in a for y in b)


def join_dropped(cands: list[tuple[int, int, bool, bool]]) -> list[tuple[int, int, bool]]:
    """Drop the candidates flagged (inside a discarded ``single_word`` candidate); each one's
    horizon joins the next kept one's.

    Runtime complexity: ``O(len(cands))``.
    """
    out: list[tuple[int, int, bool]] = []
    carry: int | None = None
    for e, h, tok, drop in cands:
        if drop:
            carry = h if carry is None else (-1 if h < 0 or carry < 0 else max(carry, h))
            continue
        if carry is not None:
            h = -1 if h < 0 or carry < 0 else max(carry, h)
            carry = None
        out.append((e, h, tok))
    return out


def drop_inside(pieces: list[tuple[int, int]], spans: list[tuple[int, int]], n: int
                 ) -> list[tuple[int, int]]:
    """Drop piece ends ``e`` with ``p <= e <= q`` for a span ``(p, q)`` (not the text's end);
    a dropped end's horizon joins the next piece's.

    Runtime complexity: ``O(len(pieces) * len(spans))``.
    """
    out: list[tuple[int, int]] = []
    carry = 0
    for e, h in pieces:
        if e < n and any(p <= e <= q for p, q in spans):
            carry = max(carry, h)
            continue
        out.append((e, max(h, carry)))
        carry = 0
    return out
