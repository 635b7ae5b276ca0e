"""Which encoding a document gets, whether it may be loaded, and loading it: the session's
:class:`Encodings` (``ls.encodings``).

A document's encoding name comes from a budget file's rule, else from the settings
(:meth:`Encodings.choice`); the one trust rule (:meth:`Encodings.refusal`, ``docs/security.md``)
says whether it may be read at all. Loading happens off the event loop when it takes time
(:meth:`Encodings.ready` answers None then): the worker thread loads it, as it builds a big
document (``background.py``). A name that cannot be used falls back to the default encoding,
and the user is told once per name until the settings change (:meth:`Encodings.unavailable`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from livetok.incremental import PieceEncoding, get_encoding
from livetok.incremental.names.registry import is_file_name

from livetok.server.lsp.documents import EncodingChoice
from livetok.server.lsp.settings import DEFAULT_ENCODING, workspace_folders

if TYPE_CHECKING:
    from livetok.server.lsp.session import LivetokServer

__all__ = ["Encodings", "mark_ready"]

log = logging.getLogger(__name__)

#: encoding names whose failure was shown that the session remembers (see ``Encodings``)
_MAX_SHOWN_FAILURES = 64
#: encoding names this process has loaded (``get_encoding`` returns them at once): another
#: name is loaded in the worker thread (:meth:`Encodings.ready`)
_READY: set[str] = set()


def mark_ready(name: str) -> None:
    """Remember that ``get_encoding(name)`` returns at once from now on (it was loaded)."""
    _READY.add(name)


class Encodings:
    """A session's encoding choice, trust and loading; it shows a failure once per name.

    Holds the server it serves: its settings, budget files, workspace folders and worker
    thread are read at each call (the settings are replaced whole when they change).
    """

    def __init__(self, ls: LivetokServer) -> None:
        self._ls = ls
        #: encodings whose failure to load the user was shown (once each, until the
        #: settings change): a workspace of documents gives one message, not one each; the
        #: latest :data:`_MAX_SHOWN_FAILURES` names only (a client naming ever new unknown
        #: encodings must not grow the server)
        self._shown_failures: dict[str, None] = {}

    def show_failures_again(self) -> None:
        """After the settings or the workspace folders changed: a name that fails is shown
        again (:meth:`unavailable`)."""
        self._shown_failures.clear()

    def choice(self, uri: str, language_id: str) -> EncodingChoice:
        """The encoding name a document gets (a budget file's rule, else the settings') and
        why it must not be loaded (None: it may).

        Runtime complexity: ``O(globs)``; a path name adds ``O(components)`` system calls.
        """
        ls = self._ls
        # a budget file's rule for the document wins: its verdicts then come from live counts
        name = ls.budgets.encoding_for(uri) or ls.settings.encoding_for(uri, language_id)
        return EncodingChoice(name, self.refusal(name))

    def refusal(self, name: str) -> str | None:
        """Why the encoding ``name`` must not be loaded, or None: the one trust rule
        (:meth:`.Settings.refusal`, :func:`livetok.server.trust.tokenizer_refusal`) over every
        workspace folder of the session, not only the first. Every way an encoding name enters
        the session asks here: documents, ``livetok.compare``, the workspace map, the preload.

        Runtime complexity: ``O(1)`` for a name that is not a path; else ``O(path components
        * folders)`` system calls.
        """
        try:
            folders = workspace_folders(self._ls.workspace.folders)
        except RuntimeError:  # no workspace before initialize (unit tests)
            folders = ()
        return self._ls.settings.refusal(name, folders)

    def trusted(self, name: str, what: str) -> str:
        """``name`` when :meth:`refusal` lets it in, else the default encoding, the user told
        why as for a document (:meth:`unavailable`: shown once). ``what`` names what is
        counted ("the workspace map").

        Runtime complexity: as :meth:`refusal`.
        """
        refusal = self.refusal(name)
        if refusal is None:
            return name
        self.unavailable(name, what, ValueError(refusal))
        return DEFAULT_ENCODING

    def load(self, choice: EncodingChoice, uri: str) -> PieceEncoding:
        """The encoding ``choice`` names, or the default one when it is refused or cannot be
        loaded (the user is told why, :meth:`unavailable`). Callable from the worker thread.

        Runtime complexity: ``O(1)`` once loaded; the first time, the vocabulary's load.
        """
        try:
            if choice.refusal is not None:  # a workspace's tokenizer.json, not trusted
                raise ValueError(choice.refusal)  # (docs/security.md)
            enc: PieceEncoding = get_encoding(choice.name)
            _READY.add(choice.name)
        except Exception as exc:
            self.unavailable(choice.name, uri, exc)
            enc = get_encoding(DEFAULT_ENCODING)
            _READY.add(DEFAULT_ENCODING)
        return enc

    def ready(self, choice: EncodingChoice, uri: str) -> PieceEncoding | None:
        """The encoding of ``choice`` when getting it takes no time (a name this process has
        loaded, not a file: a file is read again when it changed), else None: the caller
        loads it in the worker thread (:meth:`load`), so that a big tokenizer.json does not
        hold up the other documents.

        Runtime complexity: ``O(1)``.
        """
        name = DEFAULT_ENCODING if choice.refusal is not None else choice.name
        if name not in _READY or is_file_name(name):
            return None
        return self.load(choice, uri)

    def unavailable(self, name: str, uri: str, exc: Exception) -> None:
        """Tell the user that ``name`` cannot be used for ``uri``: shown the first time (until
        the settings change), only logged after. Callable from the worker thread."""
        ls = self._ls
        if ls.background.in_worker():
            ls.background.post(lambda: self.unavailable(name, uri, exc))
            return
        key = "tokenizer" if name == ls.settings.tokenizer else "encoding"
        message = (f"livetok: encoding {name!r} for {uri} is unavailable ({exc}); using "
                   f"{DEFAULT_ENCODING}. Set livetok.{key} to "
                   + ("a tokenizer.json path." if key == "tokenizer"
                      else "a name the server lists (livetok/listEncodings)."))
        if name in self._shown_failures:
            ls.warn(message)
        else:  # the first time: shown, not only logged
            self._shown_failures[name] = None
            if len(self._shown_failures) > _MAX_SHOWN_FAILURES:
                del self._shown_failures[next(iter(self._shown_failures))]  # the oldest
            ls.show_error(message)

    def preload(self, name: str) -> None:
        """Load the default encoding while the client finishes its handshake, so the first
        didOpen does not wait for the vocabulary and its tables (~0.4 s for o200k_base). A didOpen that
        comes sooner waits for this load (``get_encoding`` loads each name once); a failure
        is reported by that didOpen, with the fallback, so here it is only logged. A name the
        trust rule refuses (:meth:`refusal`) is not loaded: the default encoding is, which a
        refused document falls back to."""
        try:
            if self.refusal(name) is not None:  # not read, not even parsed (docs/security.md)
                name = DEFAULT_ENCODING
            enc = get_encoding(name)
            # the per-token tables a Document needs, built on first use (~0.1 s for o200k_base)
            getattr(enc, "clean_starts", None)
            _READY.add(name)
        except Exception as exc:  # reported again, to the client, when a document needs it
            log.info("livetok: preloading %r failed: %s", name, exc)
