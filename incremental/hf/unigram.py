"""The ``Unigram`` model of a ``tokenizer.json`` (T5, XLM-R), exactly as HuggingFace's
``Unigram::encode`` (``models/unigram/model.rs``, ``encode_optimized``, after SentencePiece's
``unigram_model.cc``).

Viterbi over the pieces' scores: ``best[e]`` is the best total score of a segmentation of the
first ``e`` characters. Left to right over start positions ``s`` (character boundaries), and
for each start over the vocabulary pieces that begin there *shortest first* (the order of the
trie's common-prefix search), the candidate ``score(piece) + best[s]`` replaces ``best[e]``
only when ``e`` has none yet or the candidate is *strictly* greater: on ties the earliest
start wins, then the shortest piece. A start with no one-character piece also offers the
unknown piece over that character with score ``min_score - 10`` (``K_UNK_PENALTY``).
Backtracking from the end gives the pieces; consecutive pieces whose id is ``unk_id`` are
fused into one string (``fuse_unk`` is always on). Each string becomes the id the vocabulary
gives it (the last id of a string listed twice, as HuggingFace's map keeps), else, with
``byte_fallback``, one ``<0xXX>`` id per byte when all exist, else ``unk_id``.

Scores are added in the same order as Rust's ``f64`` (Python floats are IEEE doubles), so
ties and near-ties resolve identically. Code points stand for UTF-8 bytes: the order of
starts and lengths is the same.
"""

from __future__ import annotations

import operator
import os
import threading
from typing import Any, Literal, Mapping, Sequence

from ..piece_memo import GenerationalCache
from .errors import UnsupportedComponent
from .unigram_window import UnigramWindow

__all__ = ["UnigramModel", "UNK_PENALTY", "unigram_tables"]

#: ``K_UNK_PENALTY`` of ``model.rs``: the unknown piece scores this much below the lowest
UNK_PENALTY = 10.0
#: pre-tokens longer than this are not cached
_CACHE_MAX = 256


class UnigramModel:
    """A ``tokenizer.json`` ``Unigram`` model: ids equal HuggingFace's ``Unigram::tokenize``.

    >>> spec = {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0],
    ...         ["b", -1.0], ["ab", -1.5], ["abc", -4.0]]}
    >>> u = UnigramModel(spec, source="t.json")
    >>> u.tokenize("abab"), u.tokenize("abcxx"), u.token_lengths("abcxx", [4, 0])
    ([3, 3], [4, 0], [3, 2])

    Runtime complexity: construction ``O(V)``; :meth:`tokenize` ``O(n L)`` for ``n``
    characters and pieces of at most ``L`` characters.
    """

    supports_glue = False

    def __init__(self, spec: Mapping[str, Any], *, source: str) -> None:
        self._setup(unigram_tables(spec, source=source), source)

    @classmethod
    def from_tables(cls, tables: Mapping[str, Any], *, source: str) -> UnigramModel:
        """The model of the section that :func:`unigram_tables` read into ``tables`` (already
        checked: from the vocabulary cache, nothing is read again).

        Runtime complexity: ``O(1)`` (plus 256 look-ups with ``byte_fallback``).
        """
        model = cls.__new__(cls)
        model._setup(tables, source)
        return model

    def _setup(self, tables: Mapping[str, Any], source: str) -> None:
        self.source = source
        self.unk_id: int | None = tables["unk_id"]
        self.byte_fallback: bool = tables["byte_fallback"]
        self.id_to_token: list[str | None] = tables["pieces"]
        self.scores: list[float] = tables["scores"]
        #: piece -> id (the last id of a piece listed twice, as HuggingFace's map keeps)
        self.token_to_id: dict[str, int] = tables["token_to_id"]
        self.min_score = min(self.scores, default=float("inf"))
        self.unk_score = self.min_score - UNK_PENALTY
        #: for each first character, the longest piece (in characters) that starts with it
        self._longest: dict[str, int] = tables["longest"]
        self._byte_ids: list[int | None] = (
            [self.token_to_id.get(f"<0x{b:02X}>") for b in range(256)] if self.byte_fallback
            else []
        )
        self._cache: GenerationalCache[str, tuple[tuple[int, ...], tuple[int, ...]]]
        self._cache = GenerationalCache()
        #: the last long pre-token and its ``(ids, lengths)`` (:meth:`_long`)
        self._last_long: tuple[str, tuple[tuple[int, ...], tuple[int, ...]]] | None = None
        #: HuggingFace's model for long pre-tokens (False: not built yet)
        self._ref: Any = False
        #: the window re-encode of long pre-tokens (:meth:`_windows`; False: not built yet)
        self._window: UnigramWindow | None | Literal[False] = False
        self._window_lock = threading.Lock()
        #: per id, the characters its piece covers (:meth:`_char_lens`)
        self._lens: list[int] | None = None

    def pieces(self, s: str) -> list[str]:
        """The strings of the best segmentation of ``s``, unknowns fused (``Unigram::encode``).

        >>> UnigramModel({"unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]},
        ...              source="t.json").pieces("xyaz")
        ['xy', 'a', 'z']

        Runtime complexity: ``O(n L)`` for ``n`` characters, pieces of at most ``L``.
        """
        n = len(s)
        if not n:
            return []
        get = self.token_to_id.get
        scores = self.scores
        longest = self._longest.get
        unk_id, unk_score = self.unk_id, self.unk_score
        best = [0.0] * (n + 1)
        start = [-1] * (n + 1)  # -1: no path ends here yet
        ids = [0] * (n + 1)
        for i in range(n):
            till = best[i]
            single = False
            for k in range(1, min(longest(s[i], 0), n - i) + 1):
                tid = get(s[i : i + k])
                if tid is None:
                    continue
                e = i + k
                cand = scores[tid] + till
                if start[e] < 0 or cand > best[e]:
                    best[e], start[e], ids[e] = cand, i, tid
                if k == 1:
                    single = True
            if not single:
                e = i + 1
                cand = unk_score + till
                if start[e] < 0 or cand > best[e]:
                    if unk_id is None:
                        raise UnsupportedComponent(
                            f"{self.source}: model Unigram: {s[i]!r} is unknown and the model "
                            "has no unk_id (HuggingFace fails on this text too)"
                        )
                    best[e], start[e], ids[e] = cand, i, unk_id
        out: list[str] = []
        fused: list[str] = []
        e = n
        while e > 0:
            b = start[e]
            if unk_id is not None and ids[e] == unk_id:
                fused.append(s[b:e])
            else:
                if fused:
                    out.append("".join(reversed(fused)))
                    fused = []
                out.append(s[b:e])
            e = b
        if fused:
            out.append("".join(reversed(fused)))
        out.reverse()
        return out

    def _encode(self, s: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(ids, character counts)`` of one pre-token (``Unigram::tokenize``)."""
        ids, lens = self._tokens_of(self.pieces(s))
        return tuple(ids), tuple(lens)

    def _tokens_of(self, pieces: list[str]) -> tuple[list[int], list[int]]:
        """``(ids, character counts)`` of a path's piece strings (unknown runs fused): each
        string's id, else its bytes' ids (``byte_fallback``), else ``unk_id``."""
        ids: list[int] = []
        lens: list[int] = []
        get = self.token_to_id.get
        for piece in pieces:
            tid = get(piece)
            if tid is None and self.byte_fallback:
                if self._add_bytes(piece, ids, lens):
                    continue
            if tid is None:
                if self.unk_id is None:
                    raise UnsupportedComponent(
                        f"{self.source}: model Unigram: {piece!r} is unknown and the model "
                        "has no unk_id (HuggingFace fails on this text too)"
                    )
                tid = self.unk_id
            ids.append(tid)
            lens.append(len(piece))
        return ids, lens

    def _add_bytes(self, piece: str, ids: list[int], lens: list[int]) -> bool:
        """Append the byte-fallback ids of ``piece`` (each character on its first byte's
        token); False, appending nothing, when a byte token is missing."""
        byte_ids = self._byte_ids
        got = [byte_ids[b] for b in piece.encode("utf-8")]
        if None in got:
            return False
        k = 0
        for ch in piece:
            nb = len(ch.encode("utf-8"))
            for j in range(nb):
                ids.append(got[k + j])  # type: ignore[arg-type]
                lens.append(1 if j == 0 else 0)
            k += nb
        return True

    def _cached(self, s: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        if len(s) > _CACHE_MAX:
            return self._long(s)
        hit = self._cache.recall(s)
        if hit is None:
            hit = self._encode(s)
            self._cache.put(s, hit)
        return hit

    def _long(self, s: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(ids, character counts)`` of a pre-token too long for the cache, the last one
        kept (a pipeline asks for the ids, then for their lengths): by HuggingFace's own
        model when ``tokenizers`` is installed (:func:`reference_unigram`), else by
        :meth:`pieces`.

        Why the reference: an edit inside a long pre-token (a CJK paragraph, a line of one
        letter) changes the float64 prefix sums of every later position, and where
        segmentations tie (runs of one character: ``aa a`` against ``a aa``) HuggingFace
        keeps the first of the equal-scoring candidates *as rounded from those sums*, so a
        resync that assumes the scores after the edit shift by a constant can pick another
        path; no exact resync was found that beats re-running Viterbi, and Rust runs it
        ~25x faster than this module (``docs/hf-unigram.md``, measured).

        Runtime complexity: ``O(n L)``, in Rust with the reference.
        """
        last = self._last_long
        if last is not None and last[0] == s:
            return last[1]
        win = self._windows()
        # subtle: the window keeps state; a second thread that finds it busy (a workspace
        # count beside an edit) encodes whole instead of waiting or sharing it
        if win is None or not self._window_lock.acquire(blocking=False):
            hit = self._whole(s)
        else:
            try:
                ids, lens = win.edit(s, self._whole)
            finally:
                self._window_lock.release()
            hit = (tuple(ids), tuple(lens))
        self._last_long = (s, hit)
        return hit

    def _whole(self, s: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(ids, character counts)`` of a whole pre-token: by the reference when installed
        (:meth:`_long`), else by :meth:`pieces`."""
        ref = self._reference()
        return self._encode(s) if ref is None else _reference_encode(ref, s, self)

    def _windows(self) -> UnigramWindow | None:
        """The window re-encode of long pre-tokens (:mod:`.unigram_window`, built on first
        use), or None when ``LIVETOK_UNIGRAM_WINDOW=0``."""
        if self._window is False:
            self._window = None if os.environ.get("LIVETOK_UNIGRAM_WINDOW", "1") == "0" else (
                UnigramWindow(self.token_to_id, self.scores, self._longest, self.unk_id,
                              self.unk_score,
                              None if self.unk_id is None else self.id_to_token[self.unk_id],
                              self.byte_fallback, self._tokens_of))
        return self._window

    def _reference(self) -> Any:
        """HuggingFace's ``Unigram`` over this vocabulary (built on first use), or None when
        ``tokenizers`` is not installed or ``LIVETOK_UNIGRAM_REFERENCE=0``."""
        if self._ref is False:
            self._ref = reference_unigram(self)
        return self._ref

    def _char_lens(self) -> list[int]:
        """Per id, the characters its piece covers, for :func:`_reference_encode` (built on
        first use); ``-2**40`` for the ids whose tokens cover something else (``unk_id``:
        a fused run; byte-fallback ids: a share of a character), so that a sum of widths
        that holds one cannot come out as the text's length."""
        table = self._lens
        if table is None:
            poison = _POISON
            table = [len(p) if p is not None else poison for p in self.id_to_token]
            for i in [self.unk_id, *self._byte_ids]:
                if i is not None:
                    table[i] = poison
            self._lens = table
        return table

    def tokenize(self, pretoken: str) -> list[int]:
        """HuggingFace's ``Unigram::tokenize`` ids of one pre-token.

        Runtime complexity: ``O(n L)`` (see :meth:`pieces`); a dictionary hit when cached.
        """
        return list(self._cached(pretoken)[0])

    def token_lengths(self, pretoken: str, ids: Sequence[int]) -> list[int]:
        """Characters of ``pretoken`` each id of ``ids`` (its :meth:`tokenize`) covers (a fused
        unknown: all its characters; byte fallback: each character on its first byte).

        Runtime complexity: as :meth:`tokenize`.
        """
        got, lens = self._cached(pretoken)
        if list(ids) != list(got):
            raise ValueError(
                "token_lengths: ids are not the tokenization of this pre-token; pass the ids "
                "tokenize(pretoken) returned"
            )
        return list(lens)

    def cuts(self, pretoken: str) -> list[int] | None:
        """None: a Viterbi segmentation has no cut that is certain from two characters."""
        return None

    def _check(self) -> None:
        """Assert the tables agree (for tests)."""
        for p, i in self.token_to_id.items():
            assert self.id_to_token[i] == p, (p, i)
        for piece, (ids, lens) in self._cache.items():
            assert len(ids) == len(lens) and sum(lens) == len(piece), (piece, ids, lens)

    def __repr__(self) -> str:
        return f"<UnigramModel {self.source!r} pieces={len(self.id_to_token)}>"


def reference_unigram(model: UnigramModel) -> Any:
    """A ``Tokenizer`` of nothing but ``tokenizers.models.Unigram`` over ``model``'s pieces,
    scores, ``unk_id`` and ``byte_fallback`` (what ``Tokenizer.from_file`` builds from the same
    section; no normalizer, no pre-tokenizer: a text is one pre-token), or None
    when ``tokenizers`` is not installed or ``LIVETOK_UNIGRAM_REFERENCE`` is ``0``.

    Runtime complexity: ``O(V)`` (~0.3 s for XLM-R's 250,002 pieces).
    """
    if os.environ.get("LIVETOK_UNIGRAM_REFERENCE", "1") == "0":
        return None
    try:
        from tokenizers import Tokenizer
        from tokenizers.models import Unigram
    except ImportError:
        return None
    vocab = [(p if p is not None else "", sc) for p, sc in zip(model.id_to_token, model.scores)]
    return Tokenizer(Unigram(vocab, model.unk_id, model.byte_fallback))


def _reference_encode(ref: Any, s: str, model: UnigramModel | None = None
                      ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(ids, character counts)`` of ``s`` by HuggingFace's model (a ``Tokenizer`` around
    it alone); byte-fallback tokens of one piece share its offsets: each character on its
    first byte's token, 0 on the others, as :meth:`UnigramModel._add_bytes`.

    With ``model`` (its :meth:`UnigramModel._char_lens`) and ``encode_batch_fast`` (no
    offsets: 2-3x faster on a 100,000-character pre-token, whose offsets cost more than
    its ids), the counts are the pieces' lengths and each fused unknown run's
    (:func:`_unknown_widths`); else, or when those do not tile ``s``, from the offsets.

    Runtime complexity: ``O(n L)`` in Rust, ``O(tokens)`` C work here (plus the unknown
    runs' characters).
    """
    fast = getattr(ref, "encode_batch_fast", None)
    if model is not None and fast is not None:
        ids = tuple(fast([s], add_special_tokens=False)[0].ids)
        widths = list(map(model._char_lens().__getitem__, ids))
        got = widths if sum(widths) == len(s) else _unknown_widths(model, s, ids, widths)
        if got is not None and sum(got) == len(s):
            return ids, tuple(got)
    enc = ref.encode(s, add_special_tokens=False)
    ids = tuple(enc.ids)
    offs = enc.offsets
    if offs:
        starts, ends = zip(*offs)
        spans: tuple[int, ...] = tuple(map(operator.sub, ends, starts))
        if sum(spans) == len(s):  # (the spans tile s: no byte-fallback run shares one)
            return ids, spans
    lens: list[int] = []
    k = 0
    while k < len(offs):
        a, b = offs[k]
        j = k + 1
        while j < len(offs) and offs[j] == (a, b):
            j += 1
        if j > k + 1:
            for ch in s[a:b]:
                lens += [1] + [0] * (len(ch.encode("utf-8")) - 1)
        else:
            lens.append(b - a)
        k = j
    return ids, tuple(lens)


#: :meth:`UnigramModel._char_lens` of the ids whose width is not their piece's length
_POISON = -(1 << 40)


def _unknown_widths(model: UnigramModel, s: str, ids: Sequence[int], widths: list[int]
                    ) -> list[int] | None:
    """``widths`` (:meth:`UnigramModel._char_lens` of ``ids``, the tokens of ``s``) with each
    fused unknown run's width filled in, or None when one is not certain (then the offsets
    decide; also for byte-fallback ids).

    A run is the characters the Viterbi took the unknown piece for, each one without a
    one-character piece (only those offer it), and the next token's piece follows it: the
    widths ``u`` of such characters after which the next piece starts are the candidates;
    exactly one must remain (the last run takes the rest of ``s``).

    Runtime complexity: ``O(tokens)`` C work plus the runs' characters.
    """
    unk = model.unk_id
    if unk is None or widths.count(_POISON) != ids.count(unk):
        return None
    get = model.token_to_id.get
    pieces = model.id_to_token
    n, pos, done = len(ids), 0, 0
    k = ids.index(unk) if unk in ids else n
    while k < n:
        pos += sum(widths[done:k])
        j = pos
        cands = []
        if k + 1 == n:
            while j < len(s) and get(s[j]) is None:
                j += 1
            cands = [len(s) - pos] if j == len(s) > pos else []
        else:
            t = pieces[ids[k + 1]]
            if ids[k + 1] == unk or not t:
                return None
            while j < len(s) and get(s[j]) is None:
                j += 1
                if s.startswith(t, j):
                    cands.append(j - pos)
        if len(cands) != 1:
            return None
        widths[k] = cands[0]
        done = k
        try:
            k = ids.index(unk, k + 1)
        except ValueError:
            k = n
    return widths


def unigram_tables(spec: Mapping[str, Any], *, source: str) -> dict[str, Any]:
    """What :class:`UnigramModel` keeps of a ``Unigram`` section, checked, as plain values
    that ``marshal`` writes (the vocabulary cache keeps them, :mod:`.reader`): the pieces by
    id, their scores (floats), the piece -> id map, the longest piece per first character.

    >>> unigram_tables({"unk_id": 0, "vocab": [["<unk>", 0], ["ab", -1.5]]}, source="t")
    {'unk_id': 0, 'byte_fallback': False, 'pieces': ['<unk>', 'ab'], 'scores': [0.0, -1.5], 'token_to_id': {'<unk>': 0, 'ab': 1}, 'longest': {'<': 5, 'a': 2}}

    Runtime complexity: ``O(V)`` for ``V`` pieces.
    """
    vocab = spec.get("vocab")
    if not isinstance(vocab, list) or not all(
        isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
        and isinstance(e[1], (int, float)) for e in vocab
    ):
        raise UnsupportedComponent(
            f"{source}: model Unigram: 'vocab' must be a list of [piece, score] pairs"
        )
    unk_id = spec.get("unk_id")
    if unk_id is not None and not 0 <= unk_id < len(vocab):
        raise UnsupportedComponent(
            f"{source}: model Unigram: unk_id {unk_id} is not an id of the vocabulary "
            f"({len(vocab)} pieces); HuggingFace refuses the file too"
        )
    token_to_id = {p: i for i, (p, _) in enumerate(vocab)}
    longest: dict[str, int] = {}
    for p in token_to_id:
        if p and len(p) > longest.get(p[0], 0):
            longest[p[0]] = len(p)
    return {
        "unk_id": unk_id,
        "byte_fallback": bool(spec.get("byte_fallback") or False),
        "pieces": [p for p, _ in vocab],
        "scores": [float(s) for _, s in vocab],
        "token_to_id": token_to_id,
        "longest": longest,
    }
