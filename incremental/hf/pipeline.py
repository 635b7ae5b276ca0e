"""HuggingFace's ``tokenizer.json`` pipeline run on a whole text (:class:`TokenizerJsonPipeline`).

**Encoding** follows HuggingFace ``tokenizers``' ``Tokenizer::encode`` with
``add_special_tokens=False`` (no post-processor, padding or truncation):

1. added tokens with ``normalized: false`` split the raw text (:mod:`.added`); each text
   between two of them is a *segment*;
2. the normalizer normalizes each segment on its own (``Prepend`` acts at a segment's start);
3. added tokens with ``normalized: true`` split each normalized segment into *sub-segments*;
4. the pre-tokenizer cuts each sub-segment into pre-tokens (``Metaspace``'s and ``ByteLevel``'s
   prefixes at a sub-segment's start, ``Metaspace`` ``first`` only at the text's start);
5. the model turns each pre-token into ids (byte-level pipelines: its UTF-8 bytes spelled
   with GPT-2's characters).

:meth:`~TokenizerJsonPipeline.decode` applies the file's ``decoder`` (:mod:`.decoders`). What
makes the pipeline incremental (pieces that can be encoded alone, their horizons, the piece
cache: the :class:`~livetok.incremental.piece_encoding.PieceEncoding` contract) is
:class:`.encoding.TokenizerJsonEncoding`, which runs this pipeline on each piece.

Runtime complexity: ``O(n)`` splitting and normalization plus the model on each pre-token.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from itertools import accumulate
from typing import Iterator, Protocol, Sequence

from ..text import require_str, sanitize
from .added import AddedMatcher, AddedToken
from .decoders import Decoder, decode_id, decode_tokens
from .errors import UnsupportedComponent
from .model_section import Model, byte_level_map

__all__ = ["TokenizerJsonPipeline", "Sections", "NormalizerLike", "PreTokenizerLike"]


class NormalizerLike(Protocol):
    """What the pipeline and its encoding use of a normalizer (:mod:`.normalizers`): the
    pipeline normalizes, the pieces (:mod:`.encoding`) ask where it may cut."""

    context: int
    changes_text: bool

    def normalize(self, text: str, *, segment_start: bool = True) -> str: ...

    def normalize_aligned(self, text: str, *, segment_start: bool = True
                          ) -> tuple[str, list[int] | None]: ...

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool: ...


class PreTokenizerLike(Protocol):
    """What the pipeline and its encoding use of a pre-tokenizer (:mod:`.pretokenizers`): the
    pipeline pre-tokenizes, the pieces (:mod:`.encoding`) ask for its cuts and horizons."""

    byte_level: bool

    def pre_tokenize(self, s: str, *, first: bool, text_start: bool
                     ) -> list[tuple[str, tuple[int, int]]]: ...

    def cuts(self, s: str, pos: int = 0) -> Iterator[int]: ...

    def horizon(self, s: str, start: int, limit: int) -> int: ...


@dataclass(frozen=True)
class Sections:
    """What a pipeline runs: a ``tokenizer.json``'s sections as :mod:`.reader` builds them."""

    name: str
    #: the file (for messages)
    source: str
    normalizer: NormalizerLike | None
    pre_tokenizer: PreTokenizerLike
    model: Model
    added: Sequence[AddedToken]
    #: the file's ``decoder`` (None: the file has none, and HF joins tokens with spaces)
    decoder: Decoder | None


class TokenizerJsonPipeline:
    """A ``tokenizer.json`` pipeline: ids equal HuggingFace's ``Tokenizer.encode(text,
    add_special_tokens=False).ids``, text equal to its ``Tokenizer.decode(ids,
    skip_special_tokens=False)``.
    """

    def __init__(self, sections: Sections) -> None:
        normalizer, source = sections.normalizer, sections.source
        self.name = sections.name
        self.source = source
        self.decoder = sections.decoder
        self.normalizer = normalizer if normalizer is not None and normalizer.changes_text else None
        #: the normalizer object whatever it does (``normalize`` is still called when present)
        self._norm_any = normalizer
        self.pre_tokenizer = sections.pre_tokenizer
        self.model = model = sections.model
        self.byte_level = sections.pre_tokenizer.byte_level
        self.added = list(sections.added)
        norm = [t for t in self.added if t.normalized]
        self._raw = AddedMatcher([t for t in self.added if not t.normalized])
        for t in norm:
            p = normalizer.normalize(t.content) if normalizer is not None else t.content
            if p != t.content:
                raise UnsupportedComponent(
                    f"{source}: added token {t.content!r} has normalized=true and the normalizer "
                    f"turns it into {p!r}: not implemented (livetok matches normalized added "
                    "tokens only where the normalizer leaves them as they are)")
        #: the ``normalized: true`` tokens, matched in normalized text (which leaves them as
        #: they are: their patterns are their contents)
        self._norm_tokens = AddedMatcher(norm)
        ids = list(model.token_to_id.values()) + [t.id for t in self.added]
        self.n_vocab = max(ids, default=-1) + 1
        self._added_by_id = {t.id: t for t in self.added}
        #: token id -> (bytes, characters starting in it, spelling) for byte-level pipelines
        self._byte_info: dict[int, tuple[int, int, str]] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} n_vocab={self.n_vocab}>"

    def _pretoken_ids(self, pt: str, want_lens: bool) -> tuple[list[int], list[int]]:
        """The model's ids of one pre-token and the pre-token characters each covers."""
        model = self.model
        if self.byte_level:
            mapped = byte_level_map(pt)
            ids = model.tokenize(mapped)
            if not want_lens:
                return ids, []
            # when the tokens spell the pre-token (always, but for an unknown token), each
            # covers its own bytes: the characters whose first byte it holds, per token
            info = self._byte_info
            try:
                rows = [info[i] for i in ids]
            except KeyError:
                rows = [info.get(i) or self._token_byte_info(i) for i in ids]
            if all(r[0] for r in rows) and "".join([r[2] for r in rows]) == mapped:
                return ids, [r[1] for r in rows]
            blens = model.token_lengths(mapped, ids)
            data = pt.encode("utf-8")
            lens = []
            k = 0
            for bl in blens:
                # a character goes to the token holding its first byte
                lens.append(sum(1 for b in data[k:k + bl] if b & 0xC0 != 0x80))
                k += bl
            return ids, lens
        ids = model.tokenize(pt)
        return ids, (model.token_lengths(pt, ids) if want_lens else [])

    def _token_byte_info(self, token_id: int) -> tuple[int, int, str]:
        """``(bytes, lead bytes, spelling)`` of a byte-level model token (``(0, 0, "")``: not
        a byte-level spelling), cached."""
        tok = self.model.id_to_token[token_id] if 0 <= token_id < len(
            self.model.id_to_token) else None
        row = (0, 0, "")
        if tok:
            data = _unmap_bytes(tok)
            if len(data) == len(tok) and _byte_spelled(tok):
                row = (len(data), sum(1 for b in data if b & 0xC0 != 0x80), tok)
        self._byte_info[token_id] = row
        return row

    def _sub_segment(self, sub: str, first: bool, text_start: bool, want: bool,
                     ids: list[int], starts: list[int], base: int) -> None:
        """Steps 4-5 on one sub-segment: ids appended to ``ids``; with ``want``, each token's
        start offset in normalized coordinates (``base`` + offset in ``sub``) to ``starts``."""
        for pt, (s, e) in self.pre_tokenizer.pre_tokenize(sub, first=first, text_start=text_start):
            pids, lens = self._pretoken_ids(pt, want)
            ids.extend(pids)
            if want:
                _token_starts(lens, len(pt) - (e - s), base + s, base + e, starts)

    def _segment(self, seg: str, seg_start: bool, text_start: bool, want: bool,
                 ids: list[int], cps: list[int]) -> None:
        """Steps 2-5 on one segment; with ``want``, the original code points of each token
        appended to ``cps`` (summing to ``len(seg)``)."""
        norm_obj = self._norm_any
        align: list[int] | None = None
        if norm_obj is None:
            norm = seg
        elif want and self.normalizer is not None:
            norm, align = norm_obj.normalize_aligned(seg, segment_start=seg_start)
        else:
            norm = norm_obj.normalize(seg, segment_start=seg_start)
        starts: list[int] = []
        k0 = len(ids)
        pos = 0
        first = seg_start
        for m in self._norm_tokens.find(norm) if self._norm_tokens else ():
            if m.start > pos:
                self._sub_segment(norm[pos:m.start], first, text_start and pos == 0, want,
                                  ids, starts, pos)
            ids.append(m.token.id)
            if want:
                starts.append(min(max(m.start, pos), len(norm)))
            pos = max(pos, m.end)
            first = True
        if pos < len(norm):
            self._sub_segment(norm[pos:], first, text_start and pos == 0, want, ids, starts, pos)
        if not want:
            return
        # normalized starts -> original code points per token
        n_tok = len(ids) - k0
        if n_tok == 0:
            return
        if align is None:
            orig = starts
        elif max(starts) < len(align):
            orig = list(map(align.__getitem__, starts))
        else:
            last = len(align) - 1
            orig = [align[min(j, last)] for j in starts]
        orig[0] = 0
        # per token, the original code points to the next token's start (C loops)
        widths = list(map(operator.sub, orig[1:], orig[:-1]))
        widths.append(len(seg) - orig[-1])
        if min(widths) < 0:
            widths = [max(0, w) for w in widths]
        cps.extend(widths)
        # subtle: clamping can only happen for a non-monotone mapping; keep the sum exact
        diff = len(seg) - sum(cps[len(cps) - n_tok:])
        if diff:
            cps[len(cps) - n_tok] += diff

    def _run(self, text: str, *, seg_start: bool, text_start: bool, want: bool
             ) -> tuple[list[int], list[int]]:
        """The whole pipeline on ``text``: ids, and with ``want`` the code points of ``text``
        each covers. ``seg_start``: ``text`` starts a segment (the text's start, or right after
        an added token); ``text_start``: it starts the whole text."""
        ids: list[int] = []
        cps: list[int] = []
        pos = 0
        for m in self._raw.find(text) if self._raw else ():
            if m.start > pos:
                self._segment(text[pos:m.start], seg_start if pos == 0 else True,
                              text_start and pos == 0, want, ids, cps)
            ids.append(m.token.id)
            if want:
                cps.append(max(0, m.end - max(m.start, pos)))
            pos = max(pos, m.end)
        if pos < len(text):
            self._segment(text[pos:], seg_start if pos == 0 else True,
                          text_start and pos == 0, want, ids, cps)
        return ids, cps

    # -- the whole text --------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, equal to HuggingFace's ``encode(text,
        add_special_tokens=False).ids``.

        Runtime complexity: ``O(n)`` splitting and normalization plus the model on each
        pre-token (cached).
        """
        require_str(text, "encode")
        return self._run(sanitize(text), seg_start=True, text_start=True, want=False)[0]

    def count(self, text: str) -> int:
        """Number of tokens of ``text``. Runtime complexity: as :meth:`encode`."""
        return len(self.encode(text))

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes ``token_id`` stands for (byte-level tokens: their bytes; others: UTF-8,
        ``▁`` kept as it is; byte-fallback ``<0xXX>``: that byte).

        Runtime complexity: ``O(len(token))``.
        """
        t = self._added_by_id.get(token_id)
        if t is not None:
            return t.content.encode("utf-8")
        tok = self.model.id_to_token[token_id] if 0 <= token_id < len(
            self.model.id_to_token) else None
        if tok is None:
            raise ValueError(f"token id {token_id} is not in {self.name} (0..{self.n_vocab - 1})")
        if self.byte_level:
            return _unmap_bytes(tok)
        if len(tok) == 6 and tok.startswith("<0x") and tok.endswith(">"):
            try:
                return bytes([int(tok[3:5], 16)])
            except ValueError:
                pass
        return tok.encode("utf-8")

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` as HuggingFace's ``Tokenizer.decode(ids, skip_special_tokens=False)``
        gives it: each id's token string (an added token's content, else the model's entry)
        through the file's ``decoder`` (:mod:`.decoders`; Llama 2's ``▁Hello`` becomes
        ``Hello``), or joined with spaces when the file has none.

        Special tokens are kept, as tiktoken's ``decode`` keeps them (``<s>`` decodes to
        ``<s>``) and as every id :meth:`encode` gives must decode; their contents go through
        the decoder like any token, as in HF. An id that neither the added tokens nor the model
        hold is skipped, as HF skips it.

        >>> from livetok.incremental.hf.reader import tokenizer_from_dict
        >>> enc = tokenizer_from_dict({"model": {"type": "BPE", "vocab": {"\u2581a": 0,
        ...     "\u2581b": 1}, "merges": []}, "decoder": {"type": "Metaspace",
        ...     "replacement": "\u2581"}}, name="toy", source="toy.json")
        >>> enc.decode([0, 1, 0])
        'a b a'

        Raises :class:`~.errors.UnsupportedComponent` naming the decoder and the file when the
        file's ``decoder`` is one livetok does not implement (the encoding loads and counts
        all the same); ``TypeError`` for an id that is not an integer, ``ValueError`` for one
        outside ``0..2**32 - 1`` (HF's ``u32``).

        Runtime complexity: ``O(total length of the tokens)``.
        """
        return decode_tokens(self.decoder, [t for t in map(self._token_string, ids)
                                            if t is not None])

    def _token_string(self, token_id: int) -> str | None:
        """HF's token string of ``token_id`` (``simple_id_to_token``, else the model's
        ``id_to_token``; None: neither holds it)."""
        i = decode_id(token_id)
        t = self._added_by_id.get(i)
        if t is not None:
            return t.content
        table = self.model.id_to_token
        return table[i] if i < len(table) else None


def _token_starts(lens: Sequence[int], extra: int, pos: int, end: int, starts: list[int]
                  ) -> None:
    """Append to ``starts`` the normalized offset where each token of one pre-token starts:
    ``lens`` the pre-token characters each covers, the first ``extra`` of them a prefix the
    pre-tokenizer put in front (no source), ``pos`` and ``end`` the pre-token's span (a start
    never passes ``end``).

    Runtime complexity: ``O(len(lens))``, a Python step per token only while ``extra`` lasts
    (a C ``accumulate`` after it: a long pre-token's tens of thousands of tokens).
    """
    k = 0
    n = len(lens)
    while k < n and extra > 0:
        w = lens[k]
        starts.append(pos)
        take = min(w, extra)
        extra -= take
        pos = min(end, pos + w - take)
        k += 1
    if k >= n:
        return
    run = list(accumulate(lens[k:n - 1], initial=pos))
    if run[-1] <= end:
        starts.extend(run)
        return
    for w in lens[k:]:
        starts.append(pos)
        pos = min(end, pos + w)


_BYTE_DECODER: dict[str, int] | None = None


def _byte_spelled(tok: str) -> bool:
    """Whether every character of ``tok`` is one of GPT-2's byte characters."""
    dec = _BYTE_DECODER
    assert dec is not None  # (set by _unmap_bytes, called first)
    return all(c in dec for c in tok)


def _unmap_bytes(tok: str) -> bytes:
    """The bytes a byte-level token's characters stand for."""
    global _BYTE_DECODER
    if _BYTE_DECODER is None:
        from ..vocab.readers import gpt2_byte_decoder
        _BYTE_DECODER = gpt2_byte_decoder()
    dec = _BYTE_DECODER
    try:
        return bytes(dec[c] for c in tok)
    except KeyError:
        return tok.encode("utf-8")
