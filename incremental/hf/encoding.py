"""A ``tokenizer.json`` pipeline as a livetok encoding (:class:`TokenizerJsonEncoding`): the
incremental contract on top of HuggingFace's pipeline (:mod:`.pipeline`, which runs
``Tokenizer::encode`` on a whole text: added tokens, normalizer, pre-tokenizer, model).

**Pieces** (the :class:`~livetok.incremental.piece_encoding.PieceEncoding` contract) are spans of the
*original* text that can be encoded alone, found by :meth:`TokenizerJsonEncoding.split`:

* every added-token split is a boundary on both sides, except that when the pipeline depends
  on a segment's start (``Prepend``, ``Metaspace`` always, ``ByteLevel`` add_prefix_space) the
  token and the first piece after it are one piece (its ids then depend on nothing before it,
  and an edit that makes or breaks the token re-encodes what follows);
* inside a sub-segment, the pre-tokenizer's restartable cuts
  (:meth:`~.pretokenizers.PreTokenizer.cuts`) in normalized text, mapped back to the original
  only where the alignment is clean (no source character shared across the cut) and the
  normalizer's :meth:`cut_ok` holds (the normalized halves concatenate to the whole), or,
  for a ``Precompiled`` normalizer, a :class:`.precompiled.VerifiedCut` proves it inside a
  grapheme cluster (XLM-R's emoji ZWJ, mapped to a space: its context is wide, so every
  piece's horizon reaches its end plus that context, for dominance), read with no context
  left of the piece's own start so that the split from a boundary depends on the text
  after it only;
* inside a pre-token of a pipeline whose pre-tokenizer is *local* (none, ``Split`` on one
  literal character, ``Metaspace``: Gemma, Llama 2), the model's :meth:`cuts` (positions no
  BPE token can span; ``sentencepiece.encoding``'s ``_joinable`` argument);
* no boundary inside or at the edges of a discarded ``single_word`` candidate, nor inside
  overlapping ``rstrip`` splits (the piece then holds what HF's scan would see).

A piece is encoded by running the whole pipeline on it (:meth:`encode_piece`), as if it were a
text; ``at_text_start`` and a leading added token say whether its first segment is a segment
start. The concatenation over :meth:`split` equals :meth:`encode`, which equals HF's.

**Horizon** of the piece ``[s, e)``: the maximum of

* ``e + L + 1`` where ``L`` is the longest added token (the scan that proves no token starts
  before ``e`` and finds the one at ``e`` reads ``L`` characters from each start; ``+ 1`` for
  ``single_word``'s and ``rstrip``'s look at the next character), extended through the
  whitespace after ``e`` when some token has ``lstrip``; when ``e`` ends the segment, the end
  of the added-token split there plus ``L + 1``;
* the pre-tokenizer's horizon (:meth:`~.pretokenizers.PreTokenizer.horizon`) of the last
  pre-tokenizer piece inside ``[s, e)``, in normalized coordinates, mapped back: to the first
  position ``q`` at or after the source of that normalized offset where the normalizer may cut,
  plus the normalizer's ``context`` (what ``cut_ok`` reads); reaching the sub-segment's end
  makes it the segment end's term above; for local pre-tokenizers ``e + 2`` instead;
* ``e + context`` (``cut_ok`` at ``e``) for a normalizer that changes text.

*Sound*: each term bounds what one decision about ``[s, e)`` reads (the scan for added tokens,
the normalization up to a clean cut, the pre-tokenizer's own horizon, the model's pair test
at ``e``), and nothing left of ``s`` is read (boundaries are decided from their piece's start).
*Dominated*: for pieces ``j < i``, ``e_j + K <= s_i + K <= e_i + K`` for the additive terms
(``K >= 4`` counts the ``+ 4`` slack), and the pre-tokenizer's horizon of a piece's last
pre-tokenizer piece dominates the earlier ones' by the pre-tokenizer's own dominance; mapping
back is monotone (the alignment is non-decreasing and the cut scan moves right).

**Tight horizon** (the pipelines of every byte-level file: no ``lstrip``/``rstrip``/
``single_word``, no segment-start merge, a pre-tokenizer without prepends and without model
cuts, one set of added tokens, or two that scan as one (:func:`.added.one_scan`); the rule above
for the others). Write ``K(q) = q + k(q) + 1`` where ``k(q)`` is the longest prefix of an
added token matching at ``q`` (0 when ``text[q]`` starts none): the trie's walk from ``q``
reads exactly ``text[q:K(q)]``, and whether a token starts at ``q`` (and which) is a function
of it. The horizon of the piece at ``s`` is ``max(B(s), T(s))`` with

* ``B(s) = s + min(r, L - 1) + 1``, ``r`` the run of characters that occur in some token
  after its first (the *infix* run): a prefix walk from ``q < s`` that spans ``s`` reads an
  infix of a token from ``s``, so every ``K(q)`` with ``q < s`` is ``<= max(B(s), s + 1)``;
* if a token starts at ``s``: ``T = K(s)`` (the piece is that token);
* else, with ``Y`` what the pre-tokenizer and normalizer read of the piece as if its segment
  went on (the pre-tokenizer's horizon; ``+ 2`` when a normalizer leaves ``text[s:Y]`` as it
  is, ``transparent``: its ``_orig_horizon`` term; the piece machinery without the token
  terms otherwise) and ``M`` the first token start after ``s``: ``T = max(Y + 1, K(q) for
  q in [s, Y])`` when ``M > Y`` (no token ends the segment before the reads do, so the piece
  is the pre-tokenizer's, and certifying that reads ``K(q)`` for each ``q <= Y``), else
  ``T = max(K(q) for q in [s, M])`` (the whole segment ``[s, M)`` and the token at ``M``).

*Sound*: each case lists every read the decision makes. *Dominated*: for pieces ``j < i``,
terms ``K(q)`` with ``q < s_i`` are ``<= max(B(s_i), s_i + 1)``; ``B`` is non-decreasing
along a run (a run through ``s_i`` continues from it) so ``B(s_j) <= max(B(s_i), s_i + 1)``;
terms with ``q >= s_i`` lie in ``[s_i, Z_j]`` (``Z = min(Y, M)``) and ``Z_j <= Z_i`` within a
segment (``Y`` is non-decreasing: the pre-tokenizer's reach grows with its cut, and the
normalizer's mapping is monotone; ``M`` is shared) and ``Z_j <= M_j = s_i`` when ``i`` is the
token that ends ``j``'s segment. Computing it costs the pre-tokenizer's horizon, one search
for the tokens' first characters over ``[s, Y]`` and a trie walk at each hit (tokens start
with ``<`` or ``[`` in the real files), where the rule above re-ran the piece machinery and
added ``L + 1`` (~30 characters, ~8 pieces of walk in Llama 3) to every piece end.
``tests/unit/test_hf_horizon.py`` checks soundness and dominance on generated text, and that
a horizon without the token reads fails the check.

One concept: the pieces of a pipeline and their horizons, whose soundness and dominance are
proved together over the same scan (``_scan``, ``_map_back``, ``_orig_horizon``, the tight
rule); split apart, each half of a proof would live away from the code it is about.

Runtime complexity: encoding is ``O(n)`` splitting and normalization plus the model on each
pre-token (cached); an edit re-splits and re-encodes only the pieces near it.
"""

from __future__ import annotations

import re
from typing import Callable, Iterator, Sequence

import regex

from ..piece_memo import GenerationalCache
from ..glue import GLUE_MIN_CP
from ..stream import EncodeStreamMixin
from .added import Match, TokenReads, char_set, drop_inside, join_dropped, one_scan
from .pipeline import Sections, TokenizerJsonPipeline
from .precompiled import verified_cut

__all__ = ["TokenizerJsonEncoding"]

#: pieces longer than this are not kept in the per-piece cache
_CACHE_MAX = 256
#: code points scanned past ``limit`` before :meth:`TokenizerJsonEncoding.horizon` grows
_HORIZON_MARGIN = 64
#: a split's first piece this long has its horizon found by one scan of the text from it, not
#: by regions grown 4x (a 1,000,000-character XLM-R line: ~10 regions, the last the whole line)
_KEEP_SCAN = 4096
_WHITESPACE = regex.compile(r"\p{White_Space}*")


class TokenizerJsonEncoding(TokenizerJsonPipeline, EncodeStreamMixin):
    """A ``tokenizer.json`` pipeline as a livetok encoding; ids equal HuggingFace's
    ``Tokenizer.encode(text, add_special_tokens=False).ids``.

    Built by :func:`.reader.load_tokenizer_json` / :func:`.reader.tokenizer_from_dict`, which
    read the file and decide the flags below from its sections; :meth:`decode` applies the
    file's ``decoder`` (:mod:`.decoders`) and equals HuggingFace's ``Tokenizer.decode(ids,
    skip_special_tokens=False)``. The pipeline itself is :class:`.pipeline.TokenizerJsonPipeline`;
    this class adds the pieces, their horizons and the piece cache.
    """

    def __init__(self, sections: Sections, *, segment_start_matters: bool,
                 local_pre_tokenizer: bool, charwise_normalizer: bool, use_model_cuts: bool
                 ) -> None:
        super().__init__(sections)
        model, pre_tokenizer = sections.model, sections.pre_tokenizer
        raw = [t for t in self.added if not t.normalized]
        norm = [t for t in self.added if t.normalized]
        #: longest added token (code points) in either pass, for the horizon
        self._max_added = max(self._raw.max_len, self._norm_tokens.max_len)
        self._lstrip = any(t.lstrip for t in raw)
        self._merge = segment_start_matters
        self._local = local_pre_tokenizer
        self._model_cuts = use_model_cuts and local_pre_tokenizer
        self._ctx = self.normalizer.context if self.normalizer is not None else 0
        #: cuts a ``Precompiled`` normalizer proves by normalizing (XLM-R's emoji lines)
        self._verify = verified_cut(self.normalizer)
        if self._verify is not None:
            self._ctx = max(self._ctx, self._verify.context)
        #: Algorithm 1 inside a piece: the piece's ids are the model's on its normalized text
        #: with a character-for-character normalizer, no pre-token boundary and no segment
        #: start inside it, and no added token in it. Where segment starts matter (Llama 2's
        #: ``Prepend``), only a piece that opens with an added token has one inside (the
        #: token and the piece after it are one piece): :meth:`glue_ok` refuses those
        self.supports_glue = bool(
            model.supports_glue and charwise_normalizer and local_pre_tokenizer
            and not self._raw.has_options
            and not self._norm_tokens.has_options and not self.byte_level
            and self._max_added < GLUE_MIN_CP)
        self._cache: GenerationalCache[tuple[str, bool], tuple[tuple[int, ...], tuple[int, ...]]]
        self._cache = GenerationalCache()
        #: the last piece too long for the cache: a document asks for its ids, then for
        #: their code points (``token_cp_lens``)
        self._last_long: tuple[tuple[str, bool], tuple[tuple[int, ...], tuple[int, ...]]] | None
        self._last_long = None
        #: the last text split (not under the tight rule) whose first piece from ``pos`` is
        #: long: ``(text, pos)``, read by :meth:`_region_horizon`
        self._long_first: tuple[str, int] | None = None
        #: the tight horizon applies (module docstring, *Horizon*): no token options, no
        #: merge, a pre-tokenizer without prepends, and one set of added tokens (or two that
        #: scan as one: :func:`.added.one_scan`)
        self._tight = bool(
            self._verify is None and not self._raw.has_options
            and not self._norm_tokens.has_options and not self._merge
            and not getattr(pre_tokenizer, "has_prepend", True)
            and (not self._norm_tokens or (self.normalizer is None and one_scan(raw, norm))))
        #: ``transparent(text, a, b)`` of the normalizer, when it has one and the pieces are
        #: the pre-tokenizer's (no model cuts)
        self._transparent: Callable[[str, int, int], bool] | None = None if self._model_cuts \
            else getattr(self.normalizer, "transparent", None)
        #: pieces are the pre-tokenizer's cuts between the tokens where the text is left alone
        self._pre_only = self.normalizer is None and not self._model_cuts
        self._tok: TokenReads | None = None
        #: ``one_pretoken`` of the pre-tokenizer (a text it certainly leaves whole), if any
        self._one_pretoken: Callable[[str], bool] = getattr(
            pre_tokenizer, "one_pretoken", lambda s: False)
        self._tok_ready = False
        #: :class:`~livetok.incremental.piece_encoding.QuietEncoding` (:meth:`quiet`): offered by
        #: the glued pipelines whose pieces are the model's cuts (Gemma): ``M`` covers the
        #: longest added token's scan, the normalizer's context and the local pre-tokenizer's
        #: reads (0: not offered)
        self.quiet_margin = 0
        self._quiet_chars: re.Pattern[str] | None = None
        self._quiet_norm_chars: re.Pattern[str] | None = None
        #: the added tokens' first characters (:meth:`glue_ok`)
        self._added_firsts = frozenset(t.content[0] for t in self.added if t.content)
        if self.supports_glue and self._model_cuts and not getattr(model, "ignore_merges", True):
            self.quiet_margin = self._max_added + self._ctx + 8
            # (a normalized token's pattern is its content: the pipeline refuses others);
            # first characters only: a token covering a position M or more inside the text
            # (M is above the longest token) starts inside it
            # (tokens matched on the raw text are looked for there, normalized ones in the
            # normalized text)
            chars = {t.content[0] for t in self.added if t.content and not t.normalized}
            self._quiet_chars = re.compile(char_set(chars)) if chars else None
            nchars = {t.content[0] for t in self.added if t.content and t.normalized}
            self._quiet_norm_chars = re.compile(char_set(nchars)) if nchars else None

    def glue_ok(self, head: str) -> bool:
        """Whether Algorithm 1 may glue inside a piece that starts with ``head`` (its first
        ``GLUE_MIN_CP`` code points): always, unless segment starts matter and an added token
        may start the piece (then a window starting right after the token would be encoded
        without the segment start's ``Prepend``): refused when the piece starts with a
        token's first character.

        Runtime complexity: ``O(1)``.
        """
        return not self._merge or head[:1] not in self._added_firsts

    # -- PieceEncoding -------------------------------------------------------------------------

    def _piece(self, piece: str, at_text_start: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
        key = (piece, at_text_start)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache.recall(key)
            if hit is None:
                last = self._last_long
                if last is not None and last[0] == key:
                    return last[1]  # a long piece asked again (its ids, then its lengths)
                fast = self._run_plain_piece(piece) if self._tight else None
                if fast is not None:
                    ids, cps = fast
                else:
                    ids, cps = self._run(piece, seg_start=at_text_start,
                                         text_start=at_text_start, want=True)
                hit = (tuple(ids), tuple(cps))
                if len(piece) <= _CACHE_MAX:
                    self._cache.put(key, hit)
                else:
                    self._last_long = (key, hit)
        return hit

    def _run_plain_piece(self, piece: str) -> tuple[list[int], list[int]] | None:
        """:meth:`_run` on a piece without added-token characters whose normalization is the
        identity (no normalizer, or ``transparent`` on it), under the tight rule's conditions
        (no prepend: segment starts do not matter): the model on each pre-token, whose
        pre-tokens tile the piece (else None: the general way). The same ids and code points
        (a test compares them)."""
        tk = self._tok if self._tok_ready else self._token_reads()
        if tk is not None and tk.first_re.search(piece) is not None:
            return None
        tr = self._transparent
        if not self._pre_only and (tr is None or not tr(piece, 0, len(piece))):
            return None
        if self._one_pretoken(piece):
            # the usual piece: one pre-token (of the normalized text, which is the piece: no
            # normalizer, or a transparent one on it), the model's ids of it (as the loop below)
            ids, cps = self._pretoken_ids(piece, True)
            return (ids, cps) if ids else None
        ids = []
        cps = []
        pos = 0
        for pt, (a, b) in self.pre_tokenizer.pre_tokenize(piece, first=False, text_start=False):
            if a != pos or b - a != len(pt):
                return None
            pids, lens = self._pretoken_ids(pt, True)
            if not pids:
                return None
            ids += pids
            cps += lens
            pos = b
        if pos != len(piece) or not ids:
            return None
        return ids, cps

    def encode_piece(self, piece: str, *, at_text_start: bool = False) -> Sequence[int]:
        """Token ids of one piece of :meth:`split` (the pipeline run on it alone).

        Runtime complexity: as :meth:`encode` on the piece; a dictionary hit when cached.
        """
        return self._piece(piece, at_text_start)[0]

    def token_cp_lens(self, piece: str, ids: Sequence[int], *, at_text_start: bool = False
                      ) -> list[int]:
        """Original code points of ``piece`` each token of ``ids`` covers.

        Runtime complexity: as :meth:`encode_piece`.
        """
        got, cps = self._piece(piece, at_text_start)
        if tuple(ids) != got:
            if not ids and not got:
                return []
            # a glued window's tokens (Algorithm 1): encoded afresh
            got2, cps2 = self._run(piece, seg_start=at_text_start, text_start=at_text_start,
                                   want=True)
            if list(ids) != got2:
                raise ValueError(
                    "token_cp_lens: ids are not the encoding of this piece; pass the ids that "
                    "encode_piece(piece, at_text_start=...) returned for the same piece")
            return cps2
        return list(cps)

    def split(self, text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
        """Yield ``(start_cp, end_cp)`` of the pieces of ``text[pos:]`` (``pos`` a boundary).

        >>> from livetok.incremental.hf.reader import tokenizer_from_dict  # doctest: +SKIP

        Runtime complexity: ``O(len(text) - pos)`` (computed at once, yielded lazily).
        """
        sub = text[pos:] if pos else text
        if self._tight:
            yield from self._split_tight(sub, pos)
            return
        a = pos
        pieces = self._scan(sub, False)
        if pieces and pieces[0][0] >= _KEEP_SCAN:
            # an edit asks next for the horizon of this long piece (the window's one long
            # piece, when it resyncs at that piece's end): noted for _region_horizon
            self._long_first = (text, pos)
        for e, _h in pieces:
            yield a, pos + e
            a = pos + e

    def _split_tight(self, sub: str, pos: int) -> Iterator[tuple[int, int]]:
        """:meth:`split` under the tight rule's conditions, lazily: the added tokens (one
        leftmost-longest scan: :func:`.added.one_scan`) and, between them, the pre-tokenizer's cuts
        when the normalizer is the identity or leaves the segment alone (``transparent``:
        every character its own normal form and every cut allowed, so ``_map_back`` keeps
        every cut), else :meth:`_segment_pieces` on that segment. The same pieces as
        :meth:`_scan` (a test compares them)."""
        tk = self._tok if self._tok_ready else self._token_reads()
        n = len(sub)
        cuts = self.pre_tokenizer.cuts
        tr = self._transparent
        plain = self._pre_only
        a = 0
        seg_start = False
        matches = tk.token.finditer(sub) if tk is not None and tk.first_re.search(sub) else ()
        for m in (*matches, None):
            b = n if m is None else m.start()
            if b > a:
                seg = sub[a:b]
                if plain or (tr is not None and tr(seg, 0, len(seg))):
                    prev = a
                    for c in cuts(seg):
                        yield pos + prev, pos + a + c
                        prev = a + c
                else:
                    prev = a
                    for e, _ in self._segment_pieces(sub, a, b, seg_start, False, 0, 0, []):
                        yield pos + prev, pos + e
                        prev = e
            if m is not None:
                yield pos + b, pos + m.end()
                a = m.end()
                seg_start = True

    def horizon(self, text: str, start: int, limit: int) -> int:
        """Upper bound on what deciding the piece at ``start`` reads (module docstring), or
        ``>= limit``.

        Runtime complexity: ``O(h - start)`` for the region scanned; with the tight rule, a
        few C calls (the pre-tokenizer's horizon, one character-class search).
        """
        n = len(text)
        if start >= n:
            return n + 1
        if not self._tight:
            return self._region_horizon(text, start, limit, True)
        tk = self._tok if self._tok_ready else self._token_reads()
        b = start + 1
        if tk is not None:
            b, whole = tk.lead(text, start)
            if whole is not None:
                return whole
        # y: what the pre-tokenizer (and normalizer) read, as if the segment went on
        tr = self._transparent
        if self._pre_only:
            y = self.pre_tokenizer.horizon(text, start, limit)
        elif tr is not None and tr(text, start, min(n, (
                hb := self.pre_tokenizer.horizon(text, start, limit)) + 2)):
            y = hb + 2  # the normalizer's term on text it leaves alone (module docstring)
        else:
            y = self._region_horizon(text, start, limit, False)
        if tk is None:
            return max(b, y)
        return tk.bound(text, start, limit, b, y)

    def quiet(self, text: str) -> bool:
        """``QuietEncoding.quiet``: ``text`` holds no added token's first character (so no
        token match starts in it, and one that starts before it ends before ``M``: ``M``
        exceeds the longest token), and neither the
        pre-tokenizer nor the model cuts its normalized form ``M`` or more from its ends.

        *Locality* (the capability's condition 2), for the pipelines that offer it (glued:
        a character-for-character normalizer, a local pre-tokenizer, no token options, no
        segment-start dependence; pieces cut by the model, without ``ignore_merges``): a
        boundary is an added token's edge (the leftmost-longest scan decides a match from the
        characters it spans, and a chain of overlapping candidates runs only through token
        characters), a pre-tokenizer cut (one character's class) or a model cut (the pair
        test, :meth:`.bpe.BPEModel.cuts`), each accepted by the normalizer's ``cut_ok`` on a
        window of its context from the previous cut, which in a quiet stretch lies further
        than that. *Horizon* (condition 1): the tight rule's terms are at most the piece's end
        plus the longest token, the normalizer's context and 4 (module docstring).

        Runtime complexity: ``O(len(text))``, a few C calls and the pair test.
        """
        m = self.quiet_margin
        if m <= 0:
            return False
        qc = self._quiet_chars
        if qc is not None and qc.search(text) is not None:
            return False
        norm_obj = self._norm_any
        norm = norm_obj.normalize(text, segment_start=False) if norm_obj is not None else text
        nqc = self._quiet_norm_chars
        if len(norm) != len(text) or (nqc is not None and nqc.search(norm) is not None):
            return False
        lo, hi = m, len(text) - m
        if any(lo <= c <= hi for c in self.pre_tokenizer.cuts(norm, 0)):
            return False
        cuts = self.model.cuts(norm)
        return cuts is not None and not any(lo <= c <= hi for c in cuts)

    def _token_reads(self) -> TokenReads | None:
        """The added-token regexes of the tight horizon (built on first use)."""
        contents = [t.content for t in self._raw.tokens + self._norm_tokens.tokens]
        self._tok = TokenReads(contents) if contents else None
        self._tok_ready = True
        return self._tok

    def _region_horizon(self, text: str, start: int, limit: int, tok: bool) -> int:
        """The horizon from the piece machinery (:meth:`_scan`) on a region grown 4x; with
        ``tok`` False, without the added-token terms (a segment that ends at a token at
        ``M`` gives ``M + 1``: the tight rule adds the token reads)."""
        n = len(text)
        long_first = self._long_first
        if tok and long_first is not None and long_first[0] is text and long_first[1] == start:
            # split found a long first piece here: the regions below would grow 4x to the
            # text's end, each one scanned; the whole of it at once (its normalization is
            # the split's, kept by the normalizer) gives a horizon of the real text
            size = n - start
        else:
            # the first piece's reads are usually a few characters past its start (plus the
            # longest added token with ``tok``): a small region first, grown 4x
            size = min(max(limit, start + 1) - start,
                       (self._max_added if tok else 0) + 8) + _HORIZON_MARGIN // 2
        while True:
            t_end = min(n, start + size)
            region = text[start:t_end]
            pieces = self._scan(region, True, tok)
            e, h = pieces[0]
            if self._verify is not None:
                # (the verified cuts' wide context: every piece reads it past its end, so a
                # piece ending at an added token dominates the cut terms before it)
                h = max(h, e + self._ctx + 1)
            if h < len(region):
                return start + h
            if t_end >= n:
                return max(start + h, n + 1)
            if t_end >= limit:
                return t_end + 1  # it reads past the region, which reaches the limit
            size *= 4

    # -- pieces ----------------------------------------------------------------------------------

    def _scan(self, text: str, want_h: bool, tok: bool = True) -> list[tuple[int, int]]:
        """The pieces of ``text`` scanned from its start (a piece boundary): ``(end, horizon)``
        each (horizon 0 unless ``want_h``). ``len(text)`` is taken as the text's end. With
        ``tok`` False the horizons leave out the added-token terms (:meth:`_region_horizon`)."""
        n = len(text)
        if n == 0:
            return []
        big = self._max_added + 1 if tok and (self._raw or self._norm_tokens) else 0
        out: list[tuple[int, int]] = []
        rejected: list[tuple[int, int]] = []
        raw: list[Match] = self._raw.find(text, rejected=rejected) if self._raw else []
        a = 0
        seg_start = False  # the scan's start is never taken as a segment start (memoryless)
        merge_pending = False
        for k in range(len(raw) + 1):
            m = raw[k] if k < len(raw) else None
            b = n if m is None else m.start
            if m is not None and b < a:
                # an rstrip split overlapping the previous one: one piece holds both
                prev_e, prev_h = out.pop() if out else (0, 0)
                out.append((m.end, max(prev_h, self._after(text, m.end, big, want_h))))
                a = m.end
                continue
            if b > a:
                seg_end_h = n + 1 if m is None else (m.end + big + 1 if tok else m.start + 1)
                pieces = self._segment_pieces(text, a, b, seg_start, want_h, seg_end_h, big,
                                              rejected)
                if merge_pending and pieces and out:
                    _, th = out.pop()
                    e0, h0 = pieces[0]
                    pieces[0] = (e0, max(h0, th))
                out.extend(pieces)
            merge_pending = False
            if m is not None:
                out.append((m.end, self._after(text, m.end, big, want_h) if want_h else 0))
                a = m.end
                seg_start = True
                merge_pending = self._merge
        if rejected:
            out = drop_inside(out, rejected, n)
        return out

    def _after(self, text: str, e: int, big: int, want_h: bool) -> int:
        """The added-token term of the horizon of a piece ending at ``e``."""
        if not want_h:
            return 0
        h = e + big + 1 if big else e + 1
        if self._lstrip:
            m = _WHITESPACE.match(text, e)
            if m is not None and m.end() > e:
                h = max(h, m.end() + big + 1)
        return h

    def _segment_pieces(self, text: str, a: int, b: int, seg_start: bool, want_h: bool,
                        seg_end_h: int, big: int, rejected: list[tuple[int, int]]
                        ) -> list[tuple[int, int]]:
        """The pieces tiling the segment ``text[a:b]``: ``(end, horizon)`` in ``text``'s
        coordinates."""
        seg = text[a:b]
        norm_obj = self.normalizer
        align: list[int] | None = None
        if norm_obj is None:
            norm = seg if self._norm_any is None else self._norm_any.normalize(
                seg, segment_start=seg_start)
            if len(norm) != len(seg):
                raise AssertionError(f"{self.source}: the identity normalizer changed the text")
        else:
            norm, align = norm_obj.normalize_aligned(seg, segment_start=seg_start)
        # normalized-coordinate candidates: (end, horizon in normalized coords or -1 = reaches
        # the segment's end, is_token_end)
        cands: list[tuple[int, int, bool]] = []
        nrej: list[tuple[int, int]] = []
        pos = 0
        first = seg_start
        nbig = self._norm_tokens.max_len + 1 if self._norm_tokens else 0
        for m in self._norm_tokens.find(norm, rejected=nrej) if self._norm_tokens else ():
            if m.start > pos:
                cands.extend(self._sub_cuts(norm[pos:m.start], pos, first, want_h, nbig,
                                            m.end + nbig))
            elif m.start < pos and cands:
                cands.pop()  # overlapping rstrip splits: one piece
            cands.append((m.end, m.end + nbig, True))
            pos = max(pos, m.end)
            first = True
        if pos < len(norm):
            cands.extend(self._sub_cuts(norm[pos:], pos, first, want_h, nbig, -1))
        elif cands:
            # the segment ends with a token: its end is the segment's end
            e, _, tok = cands[-1]
            cands[-1] = (e, -1, tok)
        if not cands:
            return [(b, seg_end_h if want_h else 0)]
        # merge a segment-start-dependent sub-segment's first piece into the token before it
        if self._merge and self._norm_tokens:
            merged: list[tuple[int, int, bool]] = []
            for c in cands:
                if merged and merged[-1][2] and merged[-1][0] < len(norm):
                    e0, h0, _ = merged.pop()
                    h = -1 if (h0 < 0 or c[1] < 0) else max(h0, c[1])
                    merged.append((c[0], h, c[2]))
                else:
                    merged.append(c)
            cands = merged
        if nrej:
            keep = []
            for c in cands:
                # an end inside a discarded candidate is dropped (its horizon joins the next)
                drop = c[0] < len(norm) and any(p <= c[0] <= q for p, q in nrej)
                keep.append((c[0], c[1], c[2], drop))
            cands = join_dropped(keep)
        return self._map_back(text, a, b, seg, norm, align, cands, want_h, seg_end_h, big,
                              seg_start)

    def _sub_cuts(self, sub: str, base: int, first: bool, want_h: bool, nbig: int,
                  end_h: int) -> list[tuple[int, int, bool]]:
        """Candidate piece ends inside one sub-segment (normalized coordinates, ``base`` its
        offset), each with its horizon (-1: reaches the segment's end; ``end_h`` is the
        horizon of the sub-segment's end).

        Only the first candidate of a scan gets the pre-tokenizer's own horizon (``horizon``
        asks about the first piece only); later ones get -1, an over-estimate, which is sound
        (they only matter when a dropped cut joins them to the first piece)."""
        pre = self.pre_tokenizer
        n = len(sub)
        ends = [c for c in pre.cuts(sub) if 0 < c < n]
        if self._model_cuts:
            more = set(ends)
            for pt, (s, e) in pre.pre_tokenize(sub, first=False, text_start=False):
                if e - s < 2:
                    continue
                shift = len(pt) - (e - s)
                if shift < 0:
                    continue
                mc = self.model.cuts(pt)
                if mc:
                    more.update(s + c - shift for c in mc if c - shift > 0)
            ends = sorted(c for c in more if 0 < c < n)
        out: list[tuple[int, int, bool]] = []
        prev = 0
        for c in ends + [n]:
            if not want_h:
                out.append((base + c, 0, False))
            elif c == n:
                out.append((base + c, end_h, False))
            else:
                if self._local:
                    h = c + 2
                elif base == 0 and (prev == 0 or self._tight):
                    # (the tight rule: every candidate its own horizon, so that a piece whose
                    # first cuts the normalizer refuses gets the last merged one's, not the end)
                    hb = pre.horizon(sub, prev, n + 1)
                    h = -1 if hb >= n else hb
                else:
                    h = -1
                if h >= 0:
                    h = base + max(h, c + nbig) if nbig else base + h
                out.append((base + c, h, False))
            prev = c
        return out

    def _map_back(self, text: str, a: int, b: int, seg: str, norm: str,
                  align: list[int] | None, cands: list[tuple[int, int, bool]], want_h: bool,
                  seg_end_h: int, big: int, seg_start: bool = True) -> list[tuple[int, int]]:
        """Candidates in normalized coordinates -> pieces of the original text: only clean
        ends where the normalizer may cut (decided from the piece's own start).

        A cut's window starts at the piece's start or inside it; only a window at the start
        of a segment the scan takes as one (``seg_start``: after an added token; never the
        scan's own start, as for a re-split from a boundary inside a segment, so both scans
        decide alike) is a segment start for ``Sequence.cut_ok``'s Prepend."""
        out: list[tuple[int, int]] = []
        nlen = len(norm)
        norm_obj = self.normalizer
        ctx = self._ctx
        prev = 0  # the previous accepted end, segment-relative
        h_acc = 0
        memo = [0, -1]  # _orig_horizon's scan so far (its docstring)
        for j, hn, _tok in cands:
            # the horizon of this candidate, in original coordinates
            if want_h:
                if hn < 0 or hn >= nlen and j < nlen:
                    h = seg_end_h
                elif j >= nlen:
                    h = seg_end_h
                else:
                    h = a + self._orig_horizon(seg, align, hn, memo)
                if big:
                    h = max(h, self._after(text, a + (j if align is None else
                                                      (align[j] if j < nlen else len(seg))),
                                           big, True))
                h_acc = max(h_acc, h)
            if j >= nlen:
                out.append((b, max(h_acc, seg_end_h) if want_h else 0))
                prev = len(seg)
                h_acc = 0
                continue
            if align is None:
                i = j
            else:
                if j <= 0 or align[j - 1] >= align[j]:
                    continue
                i = align[j]
            if i <= prev:
                continue
            if norm_obj is not None:
                lo = max(prev, i - ctx)
                hi = min(len(seg), i + ctx)
                if not self._cut_ok(seg[lo:hi], i - lo, seg_start and lo == 0):
                    continue
                if want_h:
                    h_acc = max(h_acc, a + i + ctx + 1)
            out.append((a + i, h_acc if want_h else 0))
            prev = i
            h_acc = 0
        return out

    def _orig_horizon(self, seg: str, align: list[int] | None, hn: int,
                      memo: list[int] | None = None) -> int:
        """Original offset (in ``seg``) up to which reading decides ``norm[:hn]``: past the
        first place ``q >= align[hn]`` where the normalizer may cut.

        ``memo`` ``[p0, q0]``, kept by the caller across the candidates of one segment: no
        place in ``[p0, q0)`` may be cut, and ``q0`` may (or is ``len(seg)``), so a later
        ``p`` in ``[p0, q0]`` gets ``q0`` without a scan. Without it, a segment where the
        normalizer may cut nowhere (XLM-R's Precompiled maps the ZWJ of emoji sequences to a
        space, so an emoji line has no cut) re-scanned to its end for each of its
        candidates: quadratic (issue 35, an edit on a 100,000-character emoji line ran for
        minutes).

        Runtime complexity: ``O(q - p)`` cut tests; over one segment's candidates in
        increasing order with one ``memo``, ``O(len(seg))`` in all.
        """
        if align is None:
            return hn
        p = align[hn]
        ctx = self._ctx
        if memo is not None and memo[0] <= p <= memo[1]:
            return memo[1] + ctx + 1
        norm_obj = self.normalizer
        assert norm_obj is not None
        q = p
        while q < len(seg):
            lo = max(0, q - ctx)
            if self._cut_ok(seg[lo:min(len(seg), q + ctx)], q - lo, True):
                break
            q += 1
        if memo is not None:
            memo[0], memo[1] = p, q
        return q + ctx + 1

    def _cut_ok(self, w: str, i: int, start: bool) -> bool:
        """``cut_ok`` of the normalizer on the window ``w``, or a cut
        :class:`.precompiled.VerifiedCut` proves there (a wider window accepts what a
        narrower one does, so :meth:`_orig_horizon` finds the cuts :meth:`_map_back` makes).

        Runtime complexity: ``O(context)``; a dictionary hit for a verified window seen before.
        """
        norm_obj = self.normalizer
        assert norm_obj is not None
        v = self._verify
        return norm_obj.cut_ok(w, i, start=start) or (v is not None and v.ok(w, i))

    # -- invariants ------------------------------------------------------------------------------

    def _check(self) -> None:
        """Assert the cached pieces are consistent (for tests)."""
        for (piece, _first), (ids, cps) in self._cache.items():
            assert len(ids) == len(cps) and sum(cps) == len(piece), (piece, ids, cps)

