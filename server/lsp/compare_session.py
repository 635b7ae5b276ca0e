"""``livetok.compare`` for a session: :class:`Comparisons` (``ls.compared``) loads the
encodings the settings list (in the worker thread when one must be read), tells the user once
of one that cannot be used, and builds a document's compared counts again when the list
changes. The records themselves are ``compare_records.py``'s (``docs/protocol.md``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from livetok.incremental import get_encoding
from livetok.incremental.names.catalog import find_model, model_encoding
from livetok.incremental.names.registry import is_file_name

from livetok.server.lsp.compare_records import Compared, ComparedCount
from livetok.server.lsp.encodings import mark_ready

if TYPE_CHECKING:
    from livetok.server.lsp.documents import OpenDocument
    from livetok.server.lsp.session import LivetokServer

__all__ = ["CompareCounts", "Comparisons"]


#: ``livetok.compare``'s encodings and a document's counts under them
CompareCounts = tuple[tuple[Compared, ...], list[ComparedCount]]


class Comparisons:
    """The encodings ``livetok.compare`` lists, loaded for the current settings (``ls.compared``).

    ``loaded`` maps each name to its :class:`Compared` (None: it failed, and the user was
    told once); :meth:`reset` empties it when the settings or the trust rule change.
    """

    def __init__(self, ls: LivetokServer) -> None:
        self._ls = ls
        self._loaded: dict[str, Compared | None] = {}

    def reset(self) -> None:
        """Forget the loaded encodings: they are loaded again, and a failure shown again."""
        self._loaded = {}

    def ready(self) -> bool:
        """Whether every encoding ``livetok.compare`` lists is loaded (or failed) already, so
        that a document can be built with them now; else the worker thread loads them
        (:meth:`encodings`), as it loads a document's own encoding.

        Runtime complexity: ``O(compared)``.
        """
        return all(name in self._loaded for name in self._ls.settings.compare)

    def encodings(self) -> tuple[Compared, ...]:
        """The encodings ``livetok.compare`` lists, loaded (the first time: callable from the
        worker thread), in order; one that cannot be loaded is left out, and the user is told
        once (until the settings change) how to fix it.

        Runtime complexity: ``O(compared)`` once loaded; the first time, their loads.
        """
        cache = self._loaded
        out = []
        for name in self._ls.settings.compare:
            if name not in cache:
                try:
                    cache[name] = self._load(name)
                except Exception as exc:
                    cache[name] = None
                    self._unavailable(name, exc)
            found = cache[name]
            if found is not None:
                out.append(found)
        return tuple(out)

    def _load(self, name: str) -> Compared:
        """The encoding ``name`` of ``livetok.compare``: refused as ``livetok.encoding``'s
        names are (an untrusted workspace tokenizer.json), a model's tokenizer, or for a model
        the catalog marks ≈ its stand-in, never labelled exact (``note`` says why)."""
        refusal = self._ls.encodings.refusal(name)
        if refusal is not None:
            raise ValueError(refusal)
        model = None if is_file_name(name) else find_model(name)
        if model is None or model.exact:
            enc = get_encoding(name)
            mark_ready(name)
            return Compared(name, enc)
        stand_in = model_encoding(name, approximate=True)
        assert stand_in is not None  # a model's name
        note = (f"≈ {model.title}: counted with the stand-in {model.encoding}, not the "
                f"model's own tokenizer. {model.why}")
        return Compared(name, get_encoding(stand_in), exact=False, note=note)

    def _unavailable(self, name: str, exc: Exception) -> None:
        """Tell the user that ``name`` of ``livetok.compare`` is left out (shown once)."""
        ls = self._ls
        if ls.background.in_worker():
            ls.background.post(lambda: self._unavailable(name, exc))
            return
        ls.show_error(f"livetok: livetok.compare: {name!r} is left out ({exc}). Fix or "
                      "remove it in livetok.compare: a name the server lists "
                      "(livetok/listEncodings), a model's name (`livetok models`) or a "
                      "tokenizer.json path.")

    def counts(self, od: OpenDocument) -> CompareCounts:
        """``livetok.compare``'s encodings (loaded when needed) and ``od``'s counts under
        them; callable from the worker thread while ``od`` is busy."""
        compare = self.encodings()
        return compare, od.compare_counts(compare)

    def rebuild(self, od: OpenDocument) -> None:
        """After ``livetok.compare`` changed: ``od``'s compared counts built again; in the
        worker thread (``od`` busy meanwhile) when an encoding must be loaded or the document
        is big, as a didOpen would be."""
        ls = self._ls
        uri = od.uri
        if ls.store.find(uri) is not od:
            return  # replaced or closed meanwhile: its successor has the current ones
        assert not ls.background.busy(uri), "a busy document's work builds its compared counts"

        def use(counts: CompareCounts) -> None:
            od.use_compare(*counts)
            ls.publisher.changed(uri)

        build = functools.partial(self.counts, od)
        if not self.ready() or od.length >= ls.settings.progress_threshold:
            if ls.background.start(uri, build, use):
                return
        use(build())
