"""The ``BPE`` model of a ``tokenizer.json`` with HuggingFace's merge semantics, exactly.

HuggingFace ``tokenizers`` (``models/bpe/model.rs``, ``BPE::merge_word``; ``word.rs``,
``Word::merge_all``) tokenizes one pre-token in two steps:

1. **Initial symbols**, one per character: the character's vocabulary id, looked up with
   ``continuing_subword_prefix`` before every character but the first and
   ``end_of_word_suffix`` after the last. A character not in the vocabulary becomes one
   ``<0xXX>`` token per UTF-8 byte of that looked-up string when ``byte_fallback`` is set and
   all of them exist, else ``unk_token`` (consecutive ones fused into one when ``fuse_unk``),
   else nothing at all (no ``unk_token``: the character is dropped).
2. **Merges**: the *merge rules* are the ``merges`` list, ``(a, b)`` of priority = its index,
   producing the token ``a + b`` (``b`` without the continuing prefix). Repeatedly apply the
   rule of lowest index among adjacent symbol pairs, once, at its leftmost position (a tie is
   the same pair twice), then look again. Priorities belong to the *pairs*, so a token
   reachable by several rules (gpt-oss: 446,189 merges for 200,000 tokens) has no single
   priority as in tiktoken (``bytelevel.bpe``, ranks of tokens).

   subtle: this is Definition 3 of *Formalizing BPE Tokenization* (Berglund & van der Merwe,
   ``../shared/papers/004``; "SentencePiece" semantics) over the merge list, **not** its
   Definition 4 ("HuggingFace" semantics: keep applying the rule just used, left to right,
   before a higher one it enabled). ``tokenizers`` 0.23's heap pops the lowest
   ``(rank, position)`` after every merge: with rules ``[ab a, a b]``, ``abab`` gives
   ``aba b`` (Definition 3), not ``ab ab`` (Definition 4; tested). The two differ only on
   improper dictionaries (the paper's Lemma 1).

``ignore_merges`` short-cuts step 2: a pre-token that is itself a vocabulary entry is that
one token. ``dropout`` (random merges) is not reproducible and is refused.

Symbols are token ids and a rule is an entry of one ``dict[int, int]``: key ``a * M + b``,
value ``rank * M + new_id`` (``M`` above every id), so the lowest value is the rule to apply
and its token is ``value % M``. Two implementations of step 2:

* :func:`merge_heap` — ``Word::merge_all`` itself: the priority queue over a linked list of
  *Byte Pair Encoding and Data Structures* (``../shared/papers/003``), the lists of
  :mod:`..symbols`, entries ``(value, position)`` and HuggingFace's own staleness test (the
  pair now at the entry's position must make the entry's token; the rank is not compared).
  ``O(n log n)``.
* :func:`merge_scan` — short pre-tokens (nearly all of real text) scan a list of pair values
  for its minimum in C, as ``bytelevel.bpe.scan_ids`` does: ``O(n^2)`` with a C inner loop.
  It equals the heap when no stale entry can pass the staleness test, which holds when every
  symbol's token spells the text it covers (no prefix or suffix, no merge of the unknown or a
  byte-fallback token: :attr:`BPEModel.scan_exact`); otherwise the heap is always used.

``tests/unit/test_hf_models.py`` compares both loops with each other where they must agree,
and with HuggingFace's own models on the ten real files and on random small models.

One concept: the model of one file, what :class:`BPEModel` answers its pipeline: ids, merges,
code points per token, and the cuts no merge crosses (:meth:`BPEModel.cuts`, sped up inside
solid runs), whose argument is the merge order above (Lemma 2 of the paper) and which read the
same vocabulary pairs: apart, the cuts would lose the order they rest on.
"""

from __future__ import annotations

import re
import string
from itertools import repeat
from operator import add, itemgetter, methodcaller, mul
from typing import Any, Mapping, Sequence, TypeGuard

from ..piece_memo import GenerationalCache
from ..gcpause import collector_paused
from ..pairmerge import SCAN_MAX, merge, merge_heap, merge_scan
from ..run_chunks import RunChunks
from .cut_pairs import formable_pairs, pair_cuts
from .errors import UnsupportedComponent

__all__ = ["BPEModel", "bpe_tables", "is_vocab", "id_list"]

#: pre-tokens longer than this are not kept in the cache (HF's ``MAX_LENGTH`` is 256 bytes)
_CACHE_MAX = 256
#: :meth:`BPEModel.cuts` looks for solid runs in pre-tokens longer than this
_RUNS_FROM = 64
#: the shortest solid run looked for (shorter ones cost more Python work than they save)
_RUN_MIN = 32
#: at most this many character classes of solid runs
_MAX_CLASSES = 12
#: short runs of one class in a row after which the rest of a span is not looked into
_SHORT_MAX = 16


def _flag(spec: Mapping[str, Any], key: str) -> bool:
    value = spec.get(key)
    return bool(value) if value is not None else False


def _affix(spec: Mapping[str, Any], key: str) -> str | None:
    """A prefix/suffix option: ``None`` and ``""`` both mean none (Qwen 3 and GPT-4o write
    ``""``; HuggingFace then formats the empty string in, which changes nothing)."""
    value = spec.get(key)
    return value or None


def bpe_tables(spec: Mapping[str, Any], *, source: str) -> dict[str, Any]:
    """What :class:`BPEModel` keeps of a ``BPE`` section, checked, as plain values that
    ``marshal`` writes (the vocabulary cache keeps them, :mod:`.reader`): the vocabulary, the
    rule table, the options and whether a rule merges the unknown or a byte-fallback token.

    >>> t = bpe_tables({"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}, source="t")
    >>> t["rules"], t["merged_specials"]
    ({1: 2}, False)

    Runtime complexity: ``O(V + R)`` for ``V`` tokens and ``R`` merges (C calls mostly).
    """
    dropout = spec.get("dropout")
    if dropout not in (None, 0, 0.0):
        raise UnsupportedComponent(
            f"{source}: model BPE with dropout={dropout!r}: not implemented (random "
            "merges cannot be counted exactly); set dropout to null"
        )
    vocab = spec.get("vocab")
    if not is_vocab(vocab):
        raise UnsupportedComponent(
            f"{source}: model BPE: 'vocab' must be an object of token -> integer id (>= 0)"
        )
    unk_token: str | None = spec.get("unk_token")
    prefix = _affix(spec, "continuing_subword_prefix")
    byte_fallback = _flag(spec, "byte_fallback")
    firsts, seconds, results = _read_merges(spec.get("merges"), prefix, source)
    with collector_paused():
        rules, a_ids, b_ids = _rule_table(vocab, firsts, seconds, results, source)
    specials = {i for i in _byte_ids(vocab) if i is not None} if byte_fallback else set()
    unk_id = vocab.get(unk_token) if unk_token is not None else None
    if unk_id is not None:
        specials.add(unk_id)
    return {
        "vocab": vocab,
        "rules": rules,
        "unk_token": unk_token,
        "prefix": prefix,
        "suffix": _affix(spec, "end_of_word_suffix"),
        "fuse_unk": _flag(spec, "fuse_unk"),
        "byte_fallback": byte_fallback,
        "ignore_merges": _flag(spec, "ignore_merges"),
        "merged_specials": not (specials.isdisjoint(a_ids) and specials.isdisjoint(b_ids)),
    }


def _byte_ids(vocab: Mapping[str, int]) -> list[int | None]:
    """The ids of ``<0x00>``..``<0xFF>`` (None where the vocabulary lacks one)."""
    return [vocab.get(f"<0x{b:02X}>") for b in range(256)]


def _read_merges(merges: Any, prefix: str | None, source: str
                 ) -> tuple[list[str], list[str], list[str]]:
    """``(firsts, seconds, results)`` of the merges list (``"a b"`` strings or pairs)."""
    if not isinstance(merges, list):
        raise UnsupportedComponent(f"{source}: model BPE: 'merges' must be a list")
    with collector_paused():
        split = _split_strings(merges)
        if split is not None:
            firsts, seconds = split
            ok = True
        else:
            # pairs as tokenizers >= 0.20 writes them (Gemma 3: 514,906) are taken as they are
            pairs = merges if set(map(type, merges)) == {list} else [
                m.split(" ") if isinstance(m, str) else m for m in merges]
            ok = set(map(type, pairs)) <= {list, tuple} and set(map(len, pairs)) <= {2}
            if ok:
                firsts = list(map(itemgetter(0), pairs))
                seconds = list(map(itemgetter(1), pairs))
                ok = set(map(type, firsts)) | set(map(type, seconds)) <= {str}
    if not ok:
        bad = next(
            (k, m) for k, (m, p) in enumerate(zip(merges, pairs))
            if not isinstance(p, (list, tuple)) or len(p) != 2
            or not all(isinstance(x, str) for x in p)
        )
        raise UnsupportedComponent(
            f"{source}: model BPE: merge {bad[0]} ({bad[1]!r}) is not two tokens "
            "('a b' with one space, or a pair [a, b]); HuggingFace refuses the file too"
        )
    if prefix is None:
        tails = seconds
    else:
        plen = len(prefix.encode("utf-8"))
        tails = [b[len(prefix):] if b.startswith(prefix) else _strip_bytes(b, plen, source)
                 for b in seconds]
    results = list(map(add, firsts, tails))
    return firsts, seconds, results


def _rule_table(
    vocab: Mapping[str, int], firsts: list[str], seconds: list[str], results: list[str],
    source: str,
) -> tuple[dict[int, int], list[int], list[int]]:
    """``({a * M + b: rank * M + new_id}, a ids, b ids)``: the last rank where a pair
    repeats (as the ``HashMap`` HuggingFace collects the merges into keeps)."""
    vget = vocab.get
    # -1 for a string not in the vocabulary: min() finds one in C (``None in ids`` compares
    # each int with None through the slow path)
    a_ids = list(map(vget, firsts, repeat(-1)))
    b_ids = list(map(vget, seconds, repeat(-1)))
    new_ids = list(map(vget, results, repeat(-1)))
    for name, ids, strings in (("token", a_ids, firsts), ("token", b_ids, seconds),
                               ("merged token", new_ids, results)):
        if min(ids, default=0) < 0:
            k = ids.index(-1)
            raise UnsupportedComponent(
                f"{source}: model BPE: merge {k} ({firsts[k]!r}, {seconds[k]!r}): "
                f"{name} {strings[k]!r} is not in the vocabulary; HuggingFace refuses "
                "the file too"
            )
    m = max(vocab.values(), default=-1) + 1
    keys = map(add, map(mul, a_ids, repeat(m)), b_ids)
    values = map(add, map(mul, range(len(new_ids)), repeat(m)), new_ids)
    return dict(zip(keys, values)), a_ids, b_ids


class BPEModel:
    """A ``tokenizer.json`` ``BPE`` model: ids equal HuggingFace's ``BPE::tokenize``.

    >>> spec = {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "ba": 3},
    ...         "merges": ["b a", "a b"]}
    >>> bpe = BPEModel(spec, source="t.json")
    >>> bpe.tokenize("abab"), bpe.token_lengths("abab", [0, 3, 1]), bpe.cuts("abab")
    ([0, 3, 1], [1, 2, 1], [])

    Runtime complexity: construction ``O(V + R)`` for ``V`` tokens and ``R`` merges;
    :meth:`tokenize` ``O(n log n)`` per pre-token of ``n`` characters, a dictionary hit when
    cached.
    """

    supports_glue = True

    def __init__(self, spec: Mapping[str, Any], *, source: str, byte_level: bool = False) -> None:
        self._setup(bpe_tables(spec, source=source), source, byte_level)

    @classmethod
    def from_tables(cls, tables: Mapping[str, Any], *, source: str, byte_level: bool = False
                    ) -> BPEModel:
        """The model of the section that :func:`bpe_tables` read into ``tables`` (already
        checked: from the vocabulary cache, nothing is read again).

        Runtime complexity: ``O(V)`` (the id list).
        """
        model = cls.__new__(cls)
        model._setup(tables, source, byte_level)
        return model

    def _setup(self, tables: Mapping[str, Any], source: str, byte_level: bool) -> None:
        self.source = source
        self.byte_level = byte_level
        vocab: dict[str, int] = tables["vocab"]
        self.token_to_id = vocab
        self.unk_token: str | None = tables["unk_token"]
        self.prefix: str | None = tables["prefix"]
        self.suffix: str | None = tables["suffix"]
        self.fuse_unk: bool = tables["fuse_unk"]
        self.byte_fallback: bool = tables["byte_fallback"]
        self.ignore_merges: bool = tables["ignore_merges"]
        #: the merge rules ``{a * M + b: rank * M + new_id}``
        self.rules: dict[int, int] = tables["rules"]
        #: M: every id is below it (rule keys are a * M + b)
        self.m = max(vocab.values(), default=-1) + 1
        self.id_to_token = id_list(vocab)
        self.unk_id = vocab.get(self.unk_token) if self.unk_token is not None else None
        # byte_fallback: the ids of <0x00>..<0xFF> (None where the vocabulary lacks one)
        self._byte_ids: list[int | None] = _byte_ids(vocab) if self.byte_fallback else []
        merged_specials: bool = tables["merged_specials"]
        self._merged_specials = merged_specials
        #: every symbol's token spells its text, so :func:`merge_scan` equals the heap
        self.scan_exact = self.prefix is None and self.suffix is None and not merged_specials
        # how an unknown character joins its neighbours, for cuts(): "never", "unknown"
        # (fused with unknown neighbours only) or "any" (cannot be cut next to)
        all_bytes = self.byte_fallback and None not in self._byte_ids
        if merged_specials:
            self._unknown_joins = "any"
        elif all_bytes:
            self._unknown_joins = "never"
        elif self.unk_token is not None and not self.byte_fallback:
            self._unknown_joins = "unknown" if self.fuse_unk else "never"
        else:
            self._unknown_joins = "any"  # dropped characters, or a partial byte table
        #: the pairs of :meth:`joinable_pairs` (given in ``tables`` when the pipeline cuts
        #: every piece with them: :mod:`.reader` caches them then)
        self._pairs: frozenset[str] | None = tables.get("pairs")
        #: the solid runs' regexes of :meth:`_run_cuts` (built on first use)
        self._solid: tuple[re.Pattern[str], dict[str, re.Pattern[str]],
                           re.Pattern[str]] | None = None
        #: ignore_merges: token id -> whether the merges build it (see :meth:`_merges_build`)
        self._built: dict[int, bool] = {}
        self._cache: GenerationalCache[str, tuple[int, ...]] = GenerationalCache()
        self._lens_cache: GenerationalCache[str, tuple[tuple[int, ...], tuple[int, ...]]]
        self._lens_cache = GenerationalCache()
        self._last_long: tuple[tuple[str, bool], tuple[tuple[int, ...], tuple[int, ...]]] | None
        self._last_long = None
        #: long runs of one character cut into the chunks they repeat, not merged (Gemma 3)
        self._runs = RunChunks(self._merged) if self.scan_exact else None

    # -- tokenization ---------------------------------------------------------------------------

    def _initial(self, s: str, lens: list[int] | None) -> list[int]:
        """The initial symbols of ``s`` (``BPE::merge_word``'s loop), their character counts
        appended to ``lens`` when given (byte-fallback tokens: the character on the first)."""
        vget = self.token_to_id.get
        if self.prefix is None and self.suffix is None:
            ids = list(map(vget, s))
            if None not in ids:
                if lens is not None:
                    lens.extend(repeat(1, len(s)))
                return ids  # type: ignore[return-value]
        out: list[int] = []
        unk: list[int] | None = None  # [unk id, characters] not yet added
        dropped = 0  # characters of dropped unknowns, given to the next symbol
        last = len(s) - 1
        for k, ch in enumerate(s):
            key = ch
            if k and self.prefix is not None:
                key = self.prefix + key
            if k == last and self.suffix is not None:
                key += self.suffix
            tid = vget(key)
            if tid is not None:
                if unk is not None:
                    _add(out, lens, unk[0], unk[1])
                    unk = None
                _add(out, lens, tid, 1 + dropped)
                dropped = 0
                continue
            if self.byte_fallback:
                bids = [self._byte_ids[b] for b in key.encode("utf-8")]
                if None not in bids:
                    # subtle: HuggingFace adds these before a pending unknown (no flush here)
                    for j, bid in enumerate(bids):
                        _add(out, lens, bid, 1 + dropped if j == 0 else 0)  # type: ignore[arg-type]
                    dropped = 0
                    continue
            if self.unk_token is None:
                dropped += 1
                continue
            if self.unk_id is None:
                raise UnsupportedComponent(
                    f"{self.source}: model BPE: unk_token {self.unk_token!r} is not in the "
                    f"vocabulary, and {ch!r} needs it (HuggingFace fails on this text too)"
                )
            if unk is not None and self.fuse_unk:
                unk[1] += 1 + dropped
            else:
                if unk is not None:
                    _add(out, lens, unk[0], unk[1])
                unk = [self.unk_id, 1 + dropped]
            dropped = 0
        if unk is not None:
            _add(out, lens, unk[0], unk[1])
        if dropped and lens:
            lens[-1] += dropped  # trailing dropped characters: to the last symbol
        return out

    def _whole(self, s: str, lens: list[int] | None) -> list[int]:
        """Initial symbols and merges of ``s`` (no ``ignore_merges`` short cut, no cuts); the
        symbols' character counts appended to ``lens`` when given; a long opening run of one
        character is cut into chunks (:mod:`..run_chunks`)."""
        got = self._runs.encode(s, lens) if self._runs is not None else None
        return got if got is not None else self._merged(s, lens)

    def _merged(self, s: str, lens: list[int] | None) -> list[int]:
        own: list[int] | None = None if lens is None else []
        ids = self._initial(s, own)
        if self.scan_exact:
            merge(ids, self.rules, self.m, own)  # the engine's choice of loop (runs, chunks)
        else:
            merge_heap(ids, own, self.rules, self.m)
        if lens is not None and own is not None:
            lens += own
        return ids

    def _encode(self, s: str, lens: list[int] | None = None, *, split: bool = True) -> list[int]:
        """The ids of ``s`` (``lens``: its character counts appended). A long pre-token (a
        Gemma line: its pre-tokenizer never splits) is tokenized piece by piece between its
        :meth:`cuts`, each piece from the cache: the same ids (the cuts' guarantee)."""
        if not s:
            return []
        if self.ignore_merges:
            tid = self.token_to_id.get(s)
            if tid is not None:
                if lens is not None:
                    lens.append(len(s))
                return [tid]
        if split and len(s) > _CACHE_MAX:
            cuts = self.cuts(s)
            if cuts:
                out: list[int] = []
                bounds = [0, *cuts, len(s)]
                for a, b in zip(bounds, bounds[1:]):
                    if lens is None:
                        out += self._cached(s[a:b], split=False)
                    else:
                        ids, piece_lens = self._cached_lens(s[a:b], split=False)
                        out += ids
                        lens += piece_lens
                return out
        return self._whole(s, lens)

    def _cached(self, s: str, *, split: bool = True) -> tuple[int, ...]:
        hit = self._cache.get(s)
        if hit is None:
            hit = self._cache.recall(s)
            if hit is None:
                if len(s) > _CACHE_MAX:
                    return self._long(s, split)[0]
                hit = tuple(self._encode(s, split=split))
                self._cache.put(s, hit)
        return hit

    def _long(self, s: str, split: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(ids, character counts)`` of a pre-token too long for the caches, the last one
        kept: a pipeline asks for a long pre-token's ids, then for their lengths (one merge
        instead of two; a glued window of a long Llama 2 line is such a pre-token)."""
        last = self._last_long
        if last is not None and last[0] == (s, split):
            return last[1]
        lens: list[int] = []
        hit = (tuple(self._encode(s, lens, split=split)), tuple(lens))
        self._last_long = ((s, split), hit)
        return hit

    def _cached_lens(self, s: str, *, split: bool = True) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(ids, character counts)`` of ``s``, kept apart from the ids' cache (only
        :meth:`token_lengths` asks, and tracking counts costs the merge loop a little)."""
        if len(s) > _CACHE_MAX:
            return self._long(s, split)
        hit = self._lens_cache.recall(s)
        if hit is None:
            lens: list[int] = []
            hit = (tuple(self._encode(s, lens, split=split)), tuple(lens))
            if len(s) <= _CACHE_MAX:
                self._lens_cache.put(s, hit)
        return hit

    def tokenize(self, pretoken: str) -> list[int]:
        """HuggingFace's ``BPE::tokenize`` ids of one pre-token (byte-level pipelines: the
        byte-mapped string, see :func:`.models.byte_level_map`).

        >>> BPEModel({"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]},
        ...          source="t.json").tokenize("abba")
        [2, 1, 0]

        Runtime complexity: ``O(n log n)`` for ``n`` characters; a dictionary hit when cached.
        """
        return list(self._cached(pretoken))

    def token_lengths(self, pretoken: str, ids: Sequence[int]) -> list[int]:
        """Characters of ``pretoken`` each id of ``ids`` (its :meth:`tokenize`) covers.

        Byte-fallback tokens of one character: the character on the first, 0 on the others;
        characters dropped as unknown (no ``unk_token``) go to the symbol after them (before
        them at the end). ``ValueError`` if ``ids`` is not the pre-token's tokenization.

        >>> bpe = BPEModel({"vocab": {"a": 0, "<0xC3>": 1, "<0xA9>": 2}, "merges": [],
        ...                 "byte_fallback": True}, source="t.json")
        >>> bpe.tokenize("aé"), bpe.token_lengths("aé", [0, 1, 2])
        ([0, 1, 2], [1, 1, 0])

        Runtime complexity: as :meth:`tokenize`.
        """
        got, lens = self._cached_lens(pretoken)
        if tuple(ids) != got:
            raise ValueError(
                "token_lengths: ids are not the tokenization of this pre-token; pass the ids "
                "tokenize(pretoken) returned"
            )
        return list(lens)

    # -- cuts -----------------------------------------------------------------------------------

    def joinable_pairs(self) -> frozenset[str]:
        """The two-character strings that occur inside some vocabulary token (built once).

        Runtime complexity: ``O(total length of the tokens)``.
        """
        if self._pairs is None:
            self._pairs = formable_pairs({"vocab": self.token_to_id, "rules": self.rules,
                                          "merged_specials": self._merged_specials,
                                          "ignore_merges": self.ignore_merges})
        return self._pairs

    def cuts(self, pretoken: str) -> list[int] | None:
        """Positions ``0 < c < len`` where no token can span: the two characters around ``c``
        occur together in no vocabulary token (nor fuse as unknowns), so ``tokenize(pretoken)
        == tokenize(pretoken[:c]) + tokenize(pretoken[c:])`` for any subset of the cuts.

        Why: a merge only forms a token that spells its two parts, so no symbol ever covers a
        pair found in no token, and with HuggingFace's order (rule index, then position) the
        merges of each side are that side's own (the ``_joinable`` argument of
        ``sentencepiece.encoding``; Lemma 2 of *Formalizing BPE Tokenization*). Unknown
        characters: byte-fallback ones never merge (when no rule uses a byte token), fused
        unknowns join unknown neighbours, dropped ones (no ``unk_token``) join anything.
        ``ignore_merges``: a piece between cuts that is a token the merges do not build would be
        one token alone, so a cut beside it is dropped. None with a continuing-subword prefix
        or an end-of-word suffix (the first and last characters are looked up differently).

        >>> bpe = BPEModel({"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
        ...                source="t.json")
        >>> bpe.cuts("abba")
        [2, 3]

        Runtime complexity: ``O(n)`` for ``n`` characters (plus a BPE per piece that is a
        token, with ``ignore_merges``); the pair test skips the inside of solid runs in
        pre-tokens over 64 characters (:meth:`_run_cuts`: the same cuts).
        """
        if self.prefix is not None or self.suffix is not None:
            return None
        pairs = self.joinable_pairs()
        n = len(pretoken)
        if n > _RUNS_FROM:
            out = self._run_cuts(pretoken, pairs)
        else:
            out = pair_cuts(pretoken, 1, n, pairs)
        joins = self._unknown_joins
        if joins != "never" and out:
            vocab = self.token_to_id
            if joins == "any":  # an unknown character on either side: no cut
                out = [c for c in out
                       if pretoken[c - 1] in vocab and pretoken[c] in vocab]
            else:  # "unknown": two unknowns fuse
                out = [c for c in out
                       if pretoken[c - 1] in vocab or pretoken[c] in vocab]
        if self.ignore_merges and out:
            out = self._drop_shortcut_cuts(pretoken, out)
        return out

    def _run_cuts(self, s: str, pairs: frozenset[str]) -> list[int]:
        """The pair test of :meth:`cuts`, skipping the inside of *solid runs*.

        Characters are put in *classes* (:meth:`_solid_classes`): sets of ASCII characters
        whose every ordered pair (a character with itself too) occurs in a token. A solid run
        is a span of at least :data:`_RUN_MIN` characters of one class: every adjacent pair
        in it occurs in a token, so no position strictly inside it is a cut. The runs are
        found by C calls: a span of at least :data:`_RUN_MIN` class characters (any classes),
        then the span's runs of one class each, each a match of its first character's class
        (runs shorter than :data:`_RUN_MIN` are not skipped; after :data:`_SHORT_MAX` of them
        in a row, neither is the rest of the span: Llama 2's ``ACGT`` letters fall in three
        classes). Only the positions outside runs (from one run's last character to the next
        run's first) go through the plain pair test, so the result is the plain test's (a test
        compares them). A line of a million ``ACGT`` letters is one run in Gemma 3: ~1-3 ms
        instead of a million pair lookups (~30-90 ms). A span that starts with a run of one
        class is found with that run by one match (a group per class), and its runs go on from
        there: a span of one class is read once, not twice (issue 35: an edit re-split to a
        1,000,000-character line's end).

        Runtime complexity: ``O(n)`` in C; Python work per class change inside the spans.
        """
        n = len(s)
        out: list[int] = []
        spans, of_class, rest = self._solid_classes()
        prev = 1  # the first position not yet tested
        pos = 0
        while True:
            m = spans.search(s, pos)
            if m is None:
                break
            i, end = m.span()
            if m.lastindex is not None:  # a run of one class starts the span: [i, end)
                if i >= prev:
                    out += pair_cuts(s, prev, i + 1, pairs)
                prev = i = end
                end = n  # (the span goes on while its characters have a class)
            short = 0
            while i < end:  # the span's runs of one class each
                a = i
                rx = of_class.get(s[a])
                if rx is None:
                    break  # the span's end
                i = rx.match(s, a, end).end()  # type: ignore[union-attr]
                if i - a < _RUN_MIN:
                    short += 1  # (a short run: tested with the rest)
                    if short > _SHORT_MAX:  # classes alternate: the rest of the span too
                        i = rest.match(s, i).end()  # type: ignore[union-attr]
                        break
                    continue
                short = 0
                if a >= prev:  # test prev..a (a: the pair entering the run)
                    out += pair_cuts(s, prev, a + 1, pairs)
                prev = i  # (positions a+1..i-1 are inside the run)
            pos = i
        if prev < n:
            out += pair_cuts(s, prev, n, pairs)
        return out

    def _solid_classes(self) -> tuple[re.Pattern[str], dict[str, re.Pattern[str]],
                                      re.Pattern[str]]:
        """The classes of :meth:`_run_cuts` (built once): the span regex (at least
        :data:`_RUN_MIN` characters of any class) and, per class character, its class's
        regex, and a run of class characters (the span's rest after its first run). Classes
        are grown greedily over the printable ASCII characters, lower-case letters,
        upper-case letters and digits first: a character joins the first class whose every
        member pairs with it both ways (and it with itself), else starts one (at most
        :data:`_MAX_CLASSES`, and one more for SentencePiece's ``▁``: a line of spaces)."""
        if self._solid is None:
            pairs = self.joinable_pairs()
            order = (string.ascii_lowercase + string.ascii_uppercase + string.digits
                     + string.punctuation + "\u2581")
            classes: list[list[str]] = []
            for c in order:
                if c + c not in pairs:
                    continue
                for k in classes:
                    if all(c + d in pairs and d + c in pairs for d in k):
                        k.append(c)
                        break
                else:
                    if len(classes) < _MAX_CLASSES or c == "\u2581":
                        classes.append([c])
            of_class: dict[str, re.Pattern[str]] = {}
            for k in classes:
                rx = re.compile("[" + "".join(map(re.escape, k)) + "]+")
                of_class.update(dict.fromkeys(k, rx))
            members = "".join(map(re.escape, sorted(of_class)))
            # (the look-behind: a start inside a shorter span fails at once instead of
            # re-reading the span's rest; a group per class: a span that starts with a long
            # run of one class is matched as that run, the rest read by ``rest``)
            runs = "".join(f"([{''.join(map(re.escape, k))}]{{{_RUN_MIN},}})|" for k in classes)
            spans = re.compile(f"(?<![{members}])(?:{runs}[{members}]{{{_RUN_MIN},}})"
                               if members else "(?!)")
            self._solid = (spans, of_class, re.compile(f"[{members}]*" if members else ""))
        return self._solid

    def _drop_shortcut_cuts(self, s: str, cuts: list[int]) -> list[int]:
        """Drop cuts beside pieces that ``ignore_merges`` would make one token where the merges
        make others (until every piece is one the merges tokenize the same way)."""
        k = 0
        while k <= len(cuts):
            a = cuts[k - 1] if k else 0
            b = cuts[k] if k < len(cuts) else len(s)
            piece = s[a:b]
            if (a or b < len(s)) and not self._merges_build(piece):
                del cuts[k if k < len(cuts) else k - 1]
                k = max(k - 1, 0)
                continue
            k += 1
        return cuts

    def _merges_build(self, piece: str) -> bool:
        """Whether ``tokenize(piece)`` is what the merges make of it: True unless ``piece`` is
        a token (the ``ignore_merges`` short cut) that the merges do not build (memoized per
        token: at most one BPE per vocabulary entry)."""
        tid = self.token_to_id.get(piece)
        if tid is None:
            return True
        ok = self._built.get(tid)
        if ok is None:
            ok = self._built[tid] = self._whole(piece, None) == [tid]
        return ok

    def _check(self) -> None:
        """Assert the tables agree (for tests): ids, rules and cached tokenizations."""
        for tok, i in self.token_to_id.items():
            assert self.id_to_token[i] == tok, (tok, i)
        m = self.m
        for key, val in self.rules.items():
            assert 0 <= key // m < m and 0 <= val % m < m, (key, val)
        for piece, ids in self._cache.items():
            assert list(ids) == self._encode(piece), (piece, ids)
        for piece, (ids, lens) in self._lens_cache.items():
            assert ids == self._cached(piece) and len(lens) == len(ids), (piece, ids, lens)
            assert sum(lens) == len(piece) or not ids, (piece, lens)

    def __repr__(self) -> str:
        return (f"<BPEModel {self.source!r} tokens={len(self.token_to_id)} "
                f"merges={len(self.rules)}>")


def is_vocab(vocab: object) -> TypeGuard[dict[str, int]]:
    """Whether ``vocab`` is a ``dict`` of strings to integer ids ``>= 0`` (C-speed checks)."""
    if not isinstance(vocab, dict):
        return False
    return (set(map(type, vocab)) <= {str} and set(map(type, vocab.values())) <= {int}
            and min(vocab.values(), default=0) >= 0)


def id_list(vocab: Mapping[str, int]) -> list[str | None]:
    """The token of each id ``0..max`` (None where no token has the id).

    >>> id_list({"a": 0, "c": 2})
    ['a', None, 'c']

    Runtime complexity: ``O(V)``.
    """
    out: list[str | None] = [None] * (max(vocab.values(), default=-1) + 1)
    for tok, i in vocab.items():
        out[i] = tok
    return out


def _split_strings(merges: list[Any]) -> tuple[list[str], list[str]] | None:
    """``(firsts, seconds)`` of merges that are all ``"a b"`` strings with one space and no
    newline, in a few C calls (one join and one split instead of a ``split`` per merge); None
    for anything else (pairs, or a string to look at one by one).

    >>> _split_strings(["a b", "ab c"]), _split_strings([["a", "b"]])
    ((['a', 'ab'], ['b', 'c']), None)
    """
    if not merges or set(map(type, merges)) != {str}:
        return None
    joined = "\n".join(merges)
    if joined.count("\n") != len(merges) - 1 or set(map(methodcaller("count", " "), merges)) != {1}:
        return None
    parts = joined.replace(" ", "\n").split("\n")
    return parts[0::2], parts[1::2]


def _add(ids: list[int], lens: list[int] | None, tid: int, n: int) -> None:
    ids.append(tid)
    if lens is not None:
        lens.append(n)


def _strip_bytes(b: str, n: int, source: str) -> str:
    """``b`` without its first ``n`` UTF-8 bytes, as HuggingFace strips the continuing prefix's
    length from a merge's second token even when the token does not start with it."""
    try:
        return b.encode("utf-8")[n:].decode("utf-8")
    except UnicodeDecodeError:
        raise UnsupportedComponent(
            f"{source}: model BPE: merge token {b!r} does not start with the "
            "continuing_subword_prefix and cannot be cut after its length (HuggingFace fails)"
        ) from None

