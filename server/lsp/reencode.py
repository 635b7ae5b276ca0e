"""What a change of settings, budget files or workspace folders redoes for the open documents:
:class:`Reencoder` (``ls.reencoder``).

Only what the change feeds is redone (:meth:`Reencoder.all`): a document whose encoding choice
or ``maxDocumentSize`` verdict changed is built again (in the worker thread when its encoding
must be loaded, the document busy meanwhile, as for a didOpen); the others keep their
documents and get their budget diagnostics or compared counts again where those inputs changed.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from livetok.incremental import PieceEncoding

    from livetok.server.lsp.compare_session import CompareCounts
    from livetok.server.lsp.documents import EncodingChoice, OpenDocument
    from livetok.server.lsp.session import LivetokServer
    from livetok.server.lsp.settings import Settings

__all__ = ["Reencoder"]


def _encoding_inputs(settings: Settings) -> tuple[Any, ...]:
    """The settings ``Encodings.choice`` reads: when they are equal, every document keeps its
    encoding (a new setting that names encodings must be added here)."""
    return (settings.encoding, settings.tokenizer, settings.encoding_by_language,
            settings.encoding_by_glob, settings.trust_workspace_tokenizers, settings.root,
            settings.relative_paths)


def _compare_inputs(settings: Settings) -> tuple[Any, ...]:
    """The settings ``Comparisons.encodings`` reads: when they are equal, the compared
    encodings loaded stay."""
    return (settings.compare, settings.trust_workspace_tokenizers, settings.root,
            settings.relative_paths)


class Reencoder:
    """The session's documents built or checked again after a change of what feeds them."""

    def __init__(self, ls: LivetokServer) -> None:
        self._ls = ls

    def settings_changed(self, old: Settings) -> None:
        """After ``didChangeConfiguration``: redo for each document only what the settings
        that changed feed (:meth:`all`); a change no document depends on (semantic tokens,
        the context window) sends nothing per document.

        Runtime complexity: ``O(1)`` when no encoding, limit or budget setting changed.
        """
        ls = self._ls
        new = ls.settings
        ls.budgets.trust_tokenizers = new.trust_workspace_tokenizers
        ls.encodings.show_failures_again()  # a setting named again is shown again
        compare = _compare_inputs(new) != _compare_inputs(old)
        if compare:  # loaded again, and a failure shown again
            ls.compared.reset()
        self.all(encodings=_encoding_inputs(new) != _encoding_inputs(old),
                 limits=new.max_document_size != old.max_document_size,
                 budgets=(new.budget != old.budget or new.trust_workspace_tokenizers
                          != old.trust_workspace_tokenizers),
                 compare=compare)

    def budget_files_changed(self, uris: list[str]) -> None:
        """Re-read the budget files among ``uris``; every document's budgets are checked again."""
        if self._ls.budgets.changed(uris):
            self.all(encodings=True, limits=False, budgets=True)

    def workspace_folders_changed(self) -> None:
        """After ``workspace/didChangeWorkspaceFolders``: what the trust rule
        (``Encodings.refusal``) says of a ``tokenizer.json`` may have changed with the folders,
        so each document's encoding and ``livetok.compare``'s are chosen (and loaded) again; a
        name now refused is shown again.

        Runtime complexity: ``O(documents)`` choices, plus the rebuilds.
        """
        self._ls.compared.reset()
        self._ls.encodings.show_failures_again()
        self.all(encodings=True, limits=False, budgets=False, compare=True)

    def all(self, *, encodings: bool = True, limits: bool = True,
            budgets: bool = True, compare: bool = False) -> None:
        """After a settings or budget file change: with ``encodings`` (what names encodings
        changed) a document whose encoding choice changed, and with ``limits`` one whose
        ``maxDocumentSize`` verdict changed, is rebuilt and counted again; with ``budgets``
        (the budget setting, the trust in tokenizers or a budget file changed) the others'
        budget diagnostics are computed again, and sent where they differ; with ``compare``
        (``livetok.compare`` changed) each document's compared counts are built again and its
        count sent. Nothing else is sent per document; code lenses are asked for again (one
        request).

        Runtime complexity: ``O(documents)`` choices, plus the rebuilds and budget checks;
        ``O(1)`` when all four are false.
        """
        ls = self._ls
        if encodings or limits or budgets or compare:
            for od in list(ls.store):
                work = functools.partial(self._reencode, od.uri, encodings, budgets, compare)
                if ls.background.busy(od.uri):
                    ls.background.defer(od.uri, work)
                else:
                    work()
        if ls.refresh_lenses:
            ls.protocol.send_request(types.WORKSPACE_CODE_LENS_REFRESH, None)

    def _reencode(self, uri: str, encodings: bool, budgets: bool, compare: bool = False) -> None:
        """:meth:`all` for one document; an encoding that needs loading is loaded in the
        worker thread, as for a didOpen (the document waits). A document built again gets
        the current compared encodings; one kept, with ``compare``, gets them too
        (``Comparisons.rebuild``)."""
        ls = self._ls
        od = ls.store.find(uri)
        if od is None:
            return
        limit = ls.settings.max_document_size
        flips = (limit is not None and od.length > limit) != (od.too_large is not None)
        choice = od.choice
        if encodings or choice is None:
            choice = ls.encodings.choice(od.uri, od.language_id)
        if choice == od.choice and not flips:
            self._replace(od, choice, budgets, None, compare)
            return
        enc = ls.encodings.ready(choice, uri)
        if enc is None or not ls.compared.ready():
            def load_and_rebuild() -> tuple[OpenDocument | None, bool, CompareCounts | None]:
                fresh = self._rebuilt(od, choice, ls.encodings.load(choice, uri), flips)
                # subtle: od kept, its compared counts are built here too: deferred to its
                # backlog, they would come after the messages that arrived meanwhile
                return fresh, False, (ls.compared.counts(od) if fresh is None and compare
                                      else None)

            if ls.background.start(uri, load_and_rebuild, lambda result: self._replace(
                    od, choice, budgets, *result)):
                return
            enc = ls.encodings.load(choice, uri)
        self._replace(od, choice, budgets, self._rebuilt(od, choice, enc, flips), compare)

    def _rebuilt(self, od: OpenDocument, choice: EncodingChoice, enc: PieceEncoding,
                 flips: bool) -> OpenDocument | None:
        """``od`` built again with ``enc`` (and the current limit), or None when neither its
        encoding nor its ``maxDocumentSize`` verdict changes (``flips``). Runs in the worker
        thread when ``enc`` had to be loaded: ``od`` is busy then, nothing else touches it."""
        if enc is od.encoding and not flips:
            return None
        fresh = self._ls.open_document(od.uri, od.language_id, od.version, od.text(), enc,
                                       choice=choice)
        fresh.out_of_sync = od.out_of_sync
        return fresh

    def _replace(self, od: OpenDocument, choice: EncodingChoice, budgets: bool,
                 fresh: OpenDocument | None, compare: bool = False,
                 counts: CompareCounts | None = None) -> None:
        """Put ``fresh`` in ``od``'s place and have it counted; without one, ``od`` stays
        (another name for the same encoding: an alias, a fallback) and with ``budgets`` its
        budget diagnostics are checked again, with ``counts`` (built in the worker thread)
        or ``compare`` (built now, ``Comparisons.rebuild``) its compared counts replaced."""
        ls = self._ls
        if fresh is not None:
            ls.store.add(fresh)
            ls.publisher.changed(od.uri)
            return
        od.choice = choice
        od.max_size = ls.settings.max_document_size  # from the next full-text change
        if budgets:
            ls.publisher.changed(od.uri, count=False)
        if counts is not None:
            od.use_compare(*counts)
            ls.publisher.changed(od.uri)
        elif compare:
            ls.compared.rebuild(od)
