"""Open documents: one core :class:`~livetok.incremental.Document` per URI, its line index and
the client's version, with the recovery rules that keep one bad document from hurting others.

Nothing here knows about pygls or lsprotocol: changes come in as :class:`TextChange` (LSP
line/column in the negotiated unit), and errors are :class:`DocumentError` subclasses that
the protocol layer turns into JSON-RPC errors.

Recovery rules (each logged through the ``warn`` callback):

- a change whose range lies past the end of the document is clamped to the end (as VS Code
  does with its own model), a reversed range is swapped;
- a version that does not increase is adopted anyway: the client's text is the truth and it
  says it made this change;
- a change that the protocol layer could not even decode leaves the document *out of sync*:
  requests on it fail with ``RequestFailed`` until a full-text change (or reopening) re-syncs;
- the core raising on an edit (a bug, or text it cannot handle) rebuilds that document from
  its text with the edit applied; if even that fails the document is *broken*: its text is
  still tracked, requests on it fail with ``RequestFailed`` naming the error, and it is
  rebuilt again on the next full-text change.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, Sequence

from livetok.incremental import Document, PieceEncoding, sanitize

from livetok.server.lsp.compare_records import Compared, ComparedCount
from livetok.server.lsp.lineindex import LineIndex
from livetok.server.lsp.memory import return_free_memory, settle_big_build
from livetok.server.parallel_open import PARALLEL_MIN_CHARS, parallel_block_tokens
from livetok.server.lsp.positions import LineCol, PositionCodec, PositionError
from livetok.server.lsp.region import EditRegion

if TYPE_CHECKING:
    from livetok.server.budgets.markdown import Section

__all__ = [
    "COUNT_FIRST_MAX",
    "Compared",
    "ComparedCount",
    "CountCallback",
    "DocumentError",
    "DocumentFactory",
    "DocumentUnavailable",
    "EncodingChoice",
    "OpenDocument",
    "Patch",
    "TextChange",
    "UnknownDocument",
]

log = logging.getLogger(__name__)

#: ``(start_line, start_col, end_line, end_col)`` in the codec's unit
LspRange = tuple[int, int, int, int]
#: builds the core document of a text (tests pass one that fails)
DocumentFactory = Callable[[str, PieceEncoding], Document]
#: code points per block of a handed-over text (see ``OpenDocument._build_handed``)
_HANDOFF_BLOCK = 1 << 20
#: a handed-over text at least this long is followed by settle_big_build (gc.freeze)
_SETTLE_CHARS = 1 << 22
#: a handed-over text's uncut tail longer than this takes the rest of the text whole
_MAX_TAIL = 1 << 25
#: texts up to this many code points are counted before their structure is built (``on_count``);
#: the encode pass holds every piece's ids until then, about a pointer a piece
COUNT_FIRST_MAX = 1 << 24
#: gets ``(tokens, characters)`` of a new document's text as soon as they are known
CountCallback = Callable[[int, int], None]


class EncodingChoice(NamedTuple):
    """The encoding name a document was given (by a budget file or the settings) and why
    it must not be loaded (None: it may). Two equal choices give the same encoding."""

    name: str
    refusal: str | None = None


def _safe_blocks(parts: list[str], blocks_of: Callable[[str, int], Iterator[str]],
                 ) -> Iterator[str]:
    """The text of ``parts`` (emptied as it goes) as sanitized blocks of about
    ``_HANDOFF_BLOCK`` code points cut where no piece can span: each part is cut with the
    uncut tail of the one before, which waits for the next part. A tail that grows past
    ``_MAX_TAIL`` (a text with no cut point for that long) takes the rest of the parts whole.

    Runtime complexity: ``O(total length)`` (``O(n * _MAX_TAIL / part)`` in the worst case).
    """
    parts.reverse()
    tail = ""
    while parts:
        text = tail + parts.pop()
        if len(text) > _MAX_TAIL:
            parts.reverse()
            text += "".join(parts)
            parts.clear()
        # sanitized block by block (one C call over a 400 MB str held the interpreter lock
        # for ~0.1 s); the cuts read only ASCII characters, which sanitizing never changes
        cut = list(blocks_of(text, _HANDOFF_BLOCK))
        tail = cut.pop() if parts else ""
        yield from map(sanitize, cut)
    if tail:
        yield sanitize(tail)


class DocumentError(Exception):
    """A request about a document that cannot be answered; the message says what to do."""


class UnknownDocument(DocumentError):
    """The URI is not open (maps to InvalidParams)."""


class DocumentUnavailable(DocumentError):
    """The document is open but out of sync or broken (maps to RequestFailed)."""


class TextChange(NamedTuple):
    """One ``TextDocumentContentChangeEvent``: a range replacement, or the full text (a
    named tuple: one is made per keystroke, and a frozen dataclass costs more to make)."""

    text: str
    range: LspRange | None = None


class Patch(NamedTuple):
    """An applied change in code points: ``text[pos:pos + n_deleted] = inserted``."""

    pos: int
    n_deleted: int
    inserted: str


class OpenDocument:
    """A document the client has open: text, tokens, lines and version.

    >>> from livetok.incremental import get_encoding
    >>> od = OpenDocument("file:///a.txt", "plaintext", 1, "hello\\nworld",
    ...                   get_encoding("o200k_base"))
    >>> od.apply([TextChange("big ", (1, 0, 1, 0))], 2)
    [Patch(pos=6, n_deleted=0, inserted='big ')]
    >>> od.doc.text, od.version, od.doc.token_count
    ('hello\\nbig world', 2, 4)

    ``built``, an ``OpenDocument`` of ``text`` with ``encoding`` made already (by the stdio
    front, ``front.py``): its core document and line index are kept rather than made again.

    ``compare`` (``livetok.compare``): the document is also kept as one more core
    ``Document`` per compared encoding (:attr:`compared`), edited with it on every change,
    so each compared count is incremental and exact too.

    Runtime complexity: see :meth:`apply`.
    """

    def __init__(
        self,
        uri: str,
        language_id: str,
        version: int,
        text: str | list[str],
        encoding: PieceEncoding,
        codec: PositionCodec | None = None,
        *,
        document_factory: DocumentFactory = Document,
        warn: Callable[[str], None] = log.warning,
        max_size: int | None = None,
        on_count: CountCallback | None = None,
        choice: EncodingChoice | None = None,
        built: OpenDocument | None = None,
        compare: Sequence[Compared] = (),
    ) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self.encoding = encoding
        #: what named ``encoding`` (the server compares it after a settings change: the same
        #: choice keeps the document as it is); ``encoding`` may be the default after a failure
        self.choice = choice
        self.codec = codec or PositionCodec("utf-16")
        #: the changes of the batch being applied that the core has not been given yet
        self._region: EditRegion | None = None
        #: the recovery messages of the batch being applied: ``kind -> (first, how many)``
        self._notes: dict[str, tuple[str, int]] = {}
        #: seconds the last batch of changes took, and the last batch that started on a long
        #: line (None: none yet): ``pending.py`` merges a slow document's changes and sends
        #: its next batch to the worker thread
        self.apply_seconds = 0.0
        self.long_line_seconds: float | None = None
        self._factory = document_factory
        self._warn = warn
        #: ``livetok.maxDocumentSize``: longer texts are tracked but not tokenized
        self.max_size = max_size
        #: set while the text is over ``max_size`` (the message of its diagnostic)
        self.too_large: str | None = None
        #: why requests cannot be answered (None when in sync and tokenized)
        self.out_of_sync: str | None = None
        self.broken: str | None = None
        self._broken_text: str | None = None
        #: the core document; None while broken or too large (:meth:`ready` says why)
        self.doc: Document | None = None
        #: ``doc``'s token count, as the last build or edit gave it (publishing a count reads
        #: it here, not from the core)
        self.token_count = 0
        #: ``encoding.name``, read once
        self.encoding_name = encoding.name
        #: ``uri`` and ``encoding.name`` in JSON, for a count's text (``publishing.count_message``)
        self.uri_json = json.dumps(uri)
        self.encoding_json = json.dumps(self.encoding_name)
        #: ``features.markdown_sections``'s ``(version, sections)``
        self.sections_cache: tuple[int, list[Section]] | None = None
        #: the encodings ``livetok.compare`` lists, and the document's count under each
        #: (empty while broken or too large: rebuilt with the document)
        self.compare = tuple(compare)
        self.compared: list[ComparedCount] = []
        #: the line index; built after the text is counted (``on_count``)
        self.lines: LineIndex
        if built is not None and built.doc is not None:  # the stdio front's, of this text
            self.doc, self.token_count, self.lines = built.doc, built.token_count, built.lines
            assert isinstance(text, str)
            if self.compare:
                self.compared = self.compare_counts(self.compare, text)
        elif isinstance(text, list):  # handed over in parts (see _build_handed)
            self._build_handed(text, on_count)
        else:
            self._build(text, on_count)
            self.lines = LineIndex(text)

    # -- state -------------------------------------------------------------------------------

    def _build(self, text: str, on_count: CountCallback | None = None) -> None:
        """The core document of ``text`` (or the broken or too-large state); with ``on_count``
        the count is given to it before the token sequence is built (:meth:`_count_first`)."""
        if self.max_size is not None and len(text) > self.max_size:
            # tracked as text, like a broken document, so that offsets stay right; counted
            # again after a full-text change (or a reopen) within the limit
            self.doc = None
            self.too_large = self.broken = (
                f"{len(text):,} characters, over livetok.maxDocumentSize ({self.max_size:,}): "
                "not counted; raise the setting to count it")
            self._broken_text = text
            self.compared = []
            self._warn(f"livetok: {self.uri} is too large to count ({self.broken})")
            return
        self.too_large = None
        try:
            if self._count_first(on_count, len(text)):
                assert on_count is not None
                self.doc = Document.from_blocks([sanitize(text)], self.encoding,
                                                on_count=lambda n: on_count(n, len(text)))
            else:
                self.doc = self._factory(text, self.encoding)
            self.token_count = self.doc.token_count
            self.broken = None
            self._broken_text = None
        except Exception as exc:  # the core failed on this text: keep the text, report it
            log.exception("tokenizing %s failed", self.uri)
            self.doc = None
            self.compared = []
            self.broken = f"{type(exc).__name__}: {exc}"
            self._broken_text = text
            self._warn(f"livetok could not tokenize {self.uri} ({self.broken}); "
                       "it keeps tracking the text and retries on the next full-text change")
            return
        if self.compare:
            self.compared = self.compare_counts(self.compare, text)

    def _count_first(self, on_count: CountCallback | None, n: int) -> bool:
        """Whether a text of ``n`` code points is counted before its structure is built:
        with a callback, the core's own ``Document`` (tests pass failing factories) and at
        most :data:`COUNT_FIRST_MAX` code points (beyond, the build keeps its memory bound)."""
        return on_count is not None and self._factory is Document and n <= COUNT_FIRST_MAX

    def _build_handed(self, parts: list[str], on_count: CountCallback | None = None) -> None:
        """Build from ``parts``, consecutive pieces of the text that the caller holds nowhere
        else (the list is emptied): the document is built from blocks re-cut where no piece
        can span (``Encoding.iter_blocks``, ``Document.from_blocks``), so the whole text is
        never one ``str`` beside the document. The line index is built from the same blocks,
        after the count (``on_count``).

        A ``str`` takes 1, 2 or 4 bytes a character, by its widest one: 100 MB of text with a
        single emoji is 400 MB as one ``str`` and ~100 MB as 1 MB blocks. Measured in
        ``docs/benchmarks-large.md``.
        """
        blocks_of = getattr(self.encoding, "iter_blocks", None)
        n = sum(map(len, parts))
        if (blocks_of is None or self._factory is not Document
                or (self.max_size is not None and n > self.max_size)):
            text = "".join(parts)
            parts.clear()
            self._build(text, on_count)
            self.lines = LineIndex(text)
            return
        blocks = list(_safe_blocks(parts, blocks_of))
        settle = settle_big_build if n >= _SETTLE_CHARS else return_free_memory
        first = on_count if self._count_first(on_count, n) else None
        try:
            tokens = (parallel_block_tokens(self.encoding, blocks)
                      if first is not None and n >= PARALLEL_MIN_CHARS else None)
            if tokens is not None:  # the encode pass was done by forked processes
                assert first is not None
                first(sum(len(t[0]) for t in tokens), n)
                self.doc = Document.from_block_tokens(blocks, tokens, self.encoding)
                del tokens
            else:
                # the build's freed lists stay in the C heap: give them back every 16 MB or so
                self.doc = Document.from_blocks(
                    blocks, self.encoding,
                    after_block=lambda i: settle() if i % 16 == 15 else None,
                    on_count=None if first is None else lambda count: first(count, n))
            self.token_count = self.doc.token_count
            self.broken = self._broken_text = self.too_large = None
        except Exception:  # the core failed: build from the whole text, which reports it
            log.exception("tokenizing %s by blocks failed", self.uri)
            self._build("".join(blocks))
        else:
            if self.compare:
                self.compared = self.compare_counts(self.compare)
        # sanitizing kept every code point and line break where it was
        self.lines = LineIndex.from_parts(blocks)
        del blocks
        settle()

    @property
    def length(self) -> int:
        """Length in code points. Runtime complexity: ``O(1)``."""
        return self.lines.length

    def read(self, start_cp: int, end_cp: int) -> str:
        """``text[start_cp:end_cp]`` (while a batch is applied: of the text with the changes
        applied so far). Runtime complexity: ``O(log n + (end - start))``."""
        if self._region is not None:
            return self._region.read(start_cp, end_cp)
        return self._read_base(start_cp, end_cp)

    def _read_base(self, start_cp: int, end_cp: int) -> str:
        """``text[start_cp:end_cp]`` of the text the core (or the broken text) holds."""
        if self.doc is not None:
            return self.doc.slice(start_cp, end_cp)
        assert self._broken_text is not None
        return self._broken_text[start_cp:end_cp]

    def text(self) -> str:
        """The whole text. Runtime complexity: ``O(n)``: not for per-keystroke paths."""
        if self.doc is not None:
            return self.doc.text
        assert self._broken_text is not None
        return self._broken_text

    def ready(self) -> Document:
        """The core document, or :class:`DocumentUnavailable` saying how to recover."""
        if self.out_of_sync is not None:
            raise DocumentUnavailable(
                f"{self.uri} is out of sync ({self.out_of_sync}); send a full-text "
                "didChange or close and reopen the document"
            )
        if self.doc is None:
            raise DocumentUnavailable(
                f"livetok could not tokenize {self.uri} ({self.broken}); a full-text "
                "didChange or reopening retries"
            )
        return self.doc

    def _check(self) -> None:
        """Assert that the line index, the core document and the recovery state agree.

        Runtime complexity: ``O(n)`` (compares the line index with the whole text).
        """
        text = self.text()
        try:
            assert self.lines.length == len(text), "line index length differs from the text"
            assert (self.doc is None) == (self.broken is not None), "broken flag out of date"
            if self.doc is not None:
                assert self.doc.length == len(text)
                assert self.token_count == self.doc.token_count, "stale token count"
                self.doc._check()
                for cc in self.compared:
                    if cc.doc is not None:
                        assert cc.doc.text == text, f"{cc.compared.name}: text differs"
                        assert cc.tokens == cc.doc.token_count, f"{cc.compared.name}: stale"
                        cc.doc._check()
            else:
                assert not self.compared, "compared documents of a broken document"
        except AssertionError:
            print("OpenDocument state:", {"uri": self.uri, "version": self.version,
                                          "out_of_sync": self.out_of_sync, "broken": self.broken,
                                          "length": self.lines.length, "text": text[:200]})
            raise
        self.lines._check(text)

    # -- positions ---------------------------------------------------------------------------

    def to_cp(self, line: int, col: int, *, clamp: bool = False) -> int:
        """Code point offset of an LSP position (see :meth:`PositionCodec.to_cp`)."""
        return self.codec.to_cp(self.lines, self.read, line, col, clamp=clamp)

    def to_position(self, cp_offset: int) -> LineCol:
        """LSP position of a code point offset."""
        return self.codec.to_position(self.lines, self.read, cp_offset)

    def range_to_cp(self, rng: LspRange, *, clamp: bool = False) -> tuple[int, int]:
        """Code point span of an LSP range; a reversed range raises :class:`PositionError`."""
        start = self.to_cp(rng[0], rng[1], clamp=clamp)
        end = self.to_cp(rng[2], rng[3], clamp=clamp)
        if start > end:
            raise PositionError(f"range end {rng[2:]} comes before its start {rng[:2]}")
        return start, end

    # -- changes -----------------------------------------------------------------------------

    def apply(self, changes: Sequence[TextChange], version: int) -> list[Patch]:
        """Keystroke step 2: apply ``changes`` (one ``didChange``'s, or several merged,
        ``pending.py``) in order and adopt ``version``.

        Each range change becomes a code point span (:meth:`_change_span`) and goes to the line
        index; the changes that fall near each other are gathered into one replacement
        (:meth:`_replacements`, ``region.py``) that goes to ``Document.edit`` (step 3) once, so
        the core re-tokenizes the union of their windows once; a full-text change rebuilds.
        Ranges clamped or swapped are logged once per batch, with their number. Returns the
        changes as code point patches (for trace recording).

        The core is reached once per replacement, by the edit; its result gives the new count.

        Runtime complexity: per range change ``O(log n + len(text) + B + n / B)`` for the line
        index (plus the region's string work, ``region.py``), plus one core edit per
        replacement; a full-text change rebuilds, ``O(n)``.
        """
        if version <= self.version:
            self._warn(
                f"{self.uri}: version {version} does not increase on {self.version}; "
                "applying the change anyway (the client's text is the reference)"
            )
        patches: list[Patch] = []
        self._notes = {}
        try:
            if len(changes) == 1 and self.doc is not None and self._keystroke(changes[0], patches):
                return patches
            for start, end, text in self._replacements(changes, patches):
                if self.doc is not None:
                    try:
                        self.token_count = self.doc.edit(start, end, text).token_count
                    except Exception as exc:  # rebuilds the compared documents too
                        self._recover(self.doc, start, end, text, exc)
                    else:
                        if self.compared:  # livetok.compare: the same edit in each
                            self._edit_compared(start, end, text)
                else:
                    assert self._broken_text is not None
                    self._broken_text = self._broken_text[:start] + text + self._broken_text[end:]
        finally:
            self._region = None
            self.version = version
            if self._notes:
                self._tell_notes()
        return patches

    def keystroke(self, change: TextChange, version: int, max_line: int) -> Patch | None:
        """:meth:`apply` of one range change that needs nothing of a batch (the document
        counted, in sync, no ``livetok.compare``, ``version`` past the current one, the first
        line under ``max_line`` code points): ``sync.did_change_json``'s lane. None: nothing
        was done (:meth:`apply` takes it). Runtime complexity: as :meth:`_keystroke`.
        """
        patches: list[Patch] = []
        if (self.doc is None or self.out_of_sync is not None or self.compared
                or version <= self.version or not self._keystroke(change, patches, max_line)):
            return None
        self.version = version
        if self._notes:  # a reversed range, swapped
            self._tell_notes()
        return patches[0]

    def _keystroke(self, change: TextChange, patches: list[Patch],
                   max_line: int | None = None) -> bool:
        """Apply one range change whose lines exist with one call into the core: the line
        index says where its lines are (:meth:`PositionCodec.spot`), ``Document.edit_at``
        converts the columns on the core's text, edits, and gives back what the line index
        needs; False (nothing done) for another change, which :meth:`_replacements` takes,
        or one whose first line is ``max_line`` code points or longer.

        Runtime complexity: ``O(log n + B + n / B)`` for the line index plus the core edit.
        """
        rng = change.range
        if rng is None:
            return False
        sl, sc, el, ec = rng
        lines = self.lines
        if not (0 <= sl < lines.line_count and 0 <= el < lines.line_count and sc >= 0
                and ec >= 0):
            return False  # clamped or refused: the general path says so
        doc = self.doc
        assert doc is not None
        spot = self.codec.spot
        span = lines.span_flags(sl)
        if max_line is not None and span[1] - span[0] >= max_line:
            return False
        a = spot(span, sc)
        b = a if (el, ec) == (sl, sc) else spot(span if el == sl else lines.span_flags(el), ec)
        text = change.text
        breaks = "\n" in text or "\r" in text
        try:
            placed = doc.edit_at(a, b, text, self.codec.unit, breaks)
        except Exception:
            return False  # the general path converts again, and recovers (_recover)
        start, end = placed.start, placed.end
        if placed.swapped:
            self._note("reversed", f"{self.uri}: change range {rng} is reversed; swapped")
        line = sl if sl == el and not placed.swapped and not (
            start == span[0] > 0 and end == span[1]) else -1
        if breaks or (line < 0 and not lines.within_line(start, end)):
            lines.replace(start, end, text, before=placed.before, after=placed.after)
        elif line >= 0:
            lines.resize_line(line, len(text) - (end - start), text)
        else:
            lines.replace_within_line(start, end, text)
        patches.append(Patch(start, end - start, text))
        self.token_count = placed.result.token_count
        if self.compared:  # livetok.compare: the same edit in each
            self._edit_compared(start, end, text)
        return True

    def _replacements(self, changes: Sequence[TextChange], patches: list[Patch],
                      ) -> Iterator[tuple[int, int, str]]:
        """The changes as replacements of the text the core holds, ``(start, end, text)``,
        each yielded when the next change is far from it (or at the end); the caller gives
        each to the core before this goes on. Meanwhile :meth:`read` reads through the open
        region. The line index and ``patches`` follow every change."""
        region: EditRegion | None = None
        single = len(changes) == 1  # the keystroke: no region needed
        for change in changes:
            text = change.text
            if change.range is None:  # the whole text: what the region held is replaced too
                self._region = region = None
                patches.append(Patch(0, self.lines.length, text))
                self._rebuild(text)
                continue
            start, end, line = self._change_span(change.range)
            if region is not None and not region.near(start, end):
                yield region.replacement()
                self._region = region = None
            # typing inside a line needs nothing read beside the edit (the common case)
            breaks = "\n" in text or "\r" in text
            in_line = not breaks and (line >= 0 or self.lines.within_line(start, end))
            if not in_line:
                before = self.read(start - 1, start) if start > 0 else ""
                after = self.read(end, end + 1) if end < self.lines.length else ""
            if single:
                pass
            elif region is None:
                self._region = region = EditRegion(self._read_base, start, end, text)
            else:
                region.replace(start, end, text)
            if in_line and line >= 0:
                self.lines.resize_line(line, len(text) - (end - start), text)
            elif in_line:
                self.lines.replace_within_line(start, end, text)
            else:
                self.lines.replace(start, end, text, before=before, after=after)
            patches.append(Patch(start, end - start, text))
            if single:
                yield start, end, text
        if region is not None:
            yield region.replacement()

    def _note(self, kind: str, message: str) -> None:
        """Keep a recovery message of the batch being applied: told once per kind, with how
        many changes it concerned (:meth:`_tell_notes`)."""
        seen = self._notes.get(kind)
        self._notes[kind] = (message, 1) if seen is None else (seen[0], seen[1] + 1)

    def _tell_notes(self) -> None:
        for message, n in self._notes.values():
            self._warn(message if n == 1 else f"{message} (and {n - 1:,} more change(s) of "
                       "this didChange batch alike)")
        self._notes = {}

    def compare_counts(self, compare: Sequence[Compared],
                       text: str | None = None) -> list[ComparedCount]:
        """The document (whose text is ``text``, read from the core when None) counted under
        each of ``compare``: a core ``Document`` each, but none for the document's own
        encoding, whose count is shared. An encoding the core fails on is left out, and the
        user told. Changes nothing here (the worker thread builds them for a busy document:
        :meth:`use_compare` then keeps them).

        Runtime complexity: ``O(n)`` per compared encoding (a full encode each).
        """
        if self.doc is None:
            return []
        out = []
        for c in compare:
            if c.encoding is self.encoding:
                out.append(ComparedCount(c, None))
                continue
            if text is None:
                text = self.doc.text
            try:
                out.append(ComparedCount(c, Document(text, c.encoding)))
            except Exception as exc:
                log.exception("tokenizing %s with %s failed", self.uri, c.name)
                self._warn(f"livetok: {self.uri} cannot be counted with {c.name} "
                           f"({type(exc).__name__}: {exc}); it is left out of livetok.compare "
                           "for this document")
        return out

    def use_compare(self, compare: Sequence[Compared], counts: list[ComparedCount]) -> None:
        """Keep ``counts`` (:meth:`compare_counts` of ``compare``, of the current text).

        Runtime complexity: ``O(1)``.
        """
        self.compare = tuple(compare)
        self.compared = counts

    def _edit_compared(self, start: int, end: int, text: str) -> None:
        """Keystroke step 3 again, for each document of :attr:`compared` (a document with
        ``livetok.compare`` only). One the core fails on is rebuilt from the text the
        document's own edit left (and left out when that fails too).

        Runtime complexity: one ``Document.edit`` per compared encoding.
        """
        for cc in self.compared:
            doc = cc.doc
            if doc is None:
                continue
            try:
                cc.tokens = doc.edit(start, end, text).token_count
            except Exception as exc:
                log.exception("edit (%d, %d) failed on %s with %s; rebuilding it", start, end,
                              self.uri, cc.compared.name)
                self._warn(f"{self.uri}: the {cc.compared.name} count failed on an edit "
                           f"({type(exc).__name__}: {exc}); rebuilding it from the text")
                assert self.doc is not None
                again = self.compare_counts([cc.compared], self.doc.text)
                if again:
                    cc.doc, cc.tokens = again[0].doc, again[0].tokens
                else:
                    self.compared = [x for x in self.compared if x is not cc]

    def _rebuild(self, text: str) -> None:
        """A full-text change: a new line index and document (re-synchronises one out of sync)."""
        self.lines = LineIndex(text)
        self._build(text)
        if self.out_of_sync is not None:
            self._warn(f"{self.uri}: re-synchronised from the full text")
            self.out_of_sync = None

    def _change_span(self, rng: LspRange) -> tuple[int, int, int]:
        """The code point span of a change's range, and its line when the range lies inside
        one line's content in the sense of ``LineIndex.within_line`` (else -1): a range on one
        line, the common case, is converted with one look at the line index."""
        sl, sc, el, ec = rng
        if sl == el and 0 <= sl < self.lines.line_count and sc >= 0 and ec >= 0:
            span = self.lines.span_flags(sl)
            in_line = self.codec.in_line
            start = in_line(span, self.read, sc)
            end = start if ec == sc else in_line(span, self.read, ec)
            if start <= end:
                inside = not (start == span[0] > 0 and end == span[1])
                return start, end, sl if inside else -1
        last = self.lines.line_count - 1
        if sl > last or el > last:
            self._note("clamped", f"{self.uri}: change range {rng} runs past the last line "
                       f"({last}); clamped to the end of the document")
        to_cp = self.codec.to_cp
        start = to_cp(self.lines, self.read, sl, sc, clamp=True)
        end = start if (el, ec) == (sl, sc) else to_cp(self.lines, self.read, el, ec, clamp=True)
        if start > end:
            self._note("reversed", f"{self.uri}: change range {rng} is reversed; swapped")
            start, end = end, start
        return start, end, -1

    def _recover(self, doc: Document, start: int, end: int, new_text: str,
                 exc: Exception) -> None:
        """The core raised on an edit: rebuild this document from its text with the edit."""
        log.exception("edit (%d, %d) failed on %s; rebuilding it", start, end, self.uri)
        self._warn(f"{self.uri}: the tokenizer failed on an edit ({type(exc).__name__}: {exc}); "
                   "rebuilding the document from its text")
        try:
            old = doc.text
            # the line index holds the edit already
            assert len(old) - (end - start) + len(new_text) == self.length, \
                "core text length differs from the line index"
        except Exception:
            # subtle: the core's text is unusable too; nothing else holds the text, so the
            # document can only be re-synchronised by the client
            log.exception("cannot read %s back from the core", self.uri)
            self.out_of_sync = "the tokenizer lost the text after an internal error"
            self.doc = None
            self._broken_text = "\0" * self.length  # placeholder keeping offsets valid
            self.broken = "internal error"
            return
        self._build(old[:start] + new_text + old[end:])


class EarlyDocument(NamedTuple):
    """A document the stdio front built from a ``didOpen`` before the server existed
    (``front.py``); the server keeps its ``Document`` when it handles the same ``didOpen``."""

    version: int
    text: str
    od: OpenDocument
