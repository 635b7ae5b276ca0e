"""The notifications a session handles: the lifecycle (``initialize``, ``initialized``,
``shutdown``) and document sync (``didOpen``, ``didChange``, ``didClose``, ``didSave``), with
the settings and watched-file changes.

Each is ``handler(ls, params)`` under :func:`.handlers.feature`; what they change is the
state of :class:`.session.LivetokServer`. A keystroke's handler is :func:`did_change_json`
(``docs/architecture.md``), after the transport's reader and ``SessionProtocol``.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types
from pygls.capabilities import ServerCapabilitiesBuilder

from livetok.server.lsp.bigtext import TextParts
from livetok.server.lsp.documents import OpenDocument, TextChange
from livetok.server.lsp.framing import LSP_INTEGER_MAX, lsp_uinteger
from livetok.server.lsp.handlers import feature
from livetok.server.lsp.pending import LONG_LINE, MERGE_S
from livetok.server.lsp.positions import PositionCodec, Unit
from livetok.server.lsp.settings import SettingsError, parse_settings, workspace_root

if TYPE_CHECKING:
    from livetok.incremental import PieceEncoding

    from livetok.server.lsp.session import LivetokServer

__all__: list[str] = []  # handlers only: registered by importing this module

#: a didOpen text at least this long is handed over to its document (built by blocks)
_HANDOFF_CHARS = 1 << 22


# -- lifecycle -----------------------------------------------------------------------------------


@feature(types.INITIALIZE)
def initialize(ls: LivetokServer, params: types.InitializeParams) -> None:
    """Read ``initializationOptions``, pick the position unit, start loading the encoding."""
    ls.root = workspace_root(params.workspace_folders, params.root_uri, params.root_path)
    problems: list[str] = []  # a bad value: a warning, and that setting's default
    try:
        ls.settings = parse_settings(params.initialization_options, root=ls.root,
                                     problems=problems)
    except SettingsError as exc:
        ls.settings = parse_settings(None, root=ls.root)
        ls.warn(f"livetok: ignoring initializationOptions: {exc}")
    for problem in problems:
        ls.warn(f"livetok: {problem}; using its default")
    ls.budgets.trust_tokenizers = ls.settings.trust_workspace_tokenizers
    caps = params.capabilities
    forced = ls.forced_unit or ls.settings.position_encoding
    unit = (types.PositionEncodingKind(forced) if forced is not None
            else ServerCapabilitiesBuilder.choose_position_encoding(caps))
    # PositionCodec checks the unit; LivetokProtocol.lsp_initialize announces it
    ls.codec = PositionCodec(cast(Unit, getattr(unit, "value", unit)))
    ls.progress_ok = bool(caps.window and caps.window.work_done_progress)
    ws = caps.workspace
    ls.refresh_lenses = bool(ws and ws.code_lens and ws.code_lens.refresh_support)
    ls.refresh_semantic = bool(ws and ws.semantic_tokens and ws.semantic_tokens.refresh_support)
    ls.budgets.initialize(caps)
    ls.preload = threading.Thread(target=ls.encodings.preload,
                                  args=(ls.settings.default_encoding,),
                                  name="livetok-preload", daemon=True)
    ls.preload.start()


@feature(types.INITIALIZED)
def initialized(ls: LivetokServer, params: types.InitializedParams) -> None:
    if ls.budgets.dynamic:  # ask the client to report changes of budget files
        ls.client_register_capability(ls.budgets.registration())


@feature(types.SHUTDOWN)
def shutdown(ls: LivetokServer, params: None) -> None:
    ls.background.finish_all()  # documents still being tokenized, and what waits on them
    ls.pending.apply_all(inline=True)  # changes merged meanwhile (pending.py)
    ls.publisher.publish()  # counts still pending go out before the shutdown answer
    ls.save_traces()


# -- document sync -------------------------------------------------------------------------------


@feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LivetokServer, params: types.DidOpenTextDocumentParams) -> None:
    """Open a document; a big one is tokenized in the worker thread, with progress."""
    td = params.text_document
    if ls.background.busy(td.uri):
        ls.later(td.uri, did_open, params)
        return
    if td.uri in ls.store:
        ls.warn(f"livetok: {td.uri} opened twice; replacing it with the new text")
        ls.close(td.uri)
    ls.admission.forget(td.uri)
    n_chars = len(td.text)
    why = ls.admission.not_kept(td.uri, n_chars)
    if why is not None:  # over the session's limit (livetok demo): the text is not kept
        ls.admission.drop(td.uri, why)
        return
    big = n_chars >= ls.settings.progress_threshold
    token = ls.admission.progress_begin(td.uri, len(td.text)) if big and ls.progress_ok else None
    started = time.perf_counter()
    choice = ls.encodings.choice(td.uri, td.language_id)
    ready = ls.encodings.ready(choice, td.uri)
    if ready is not None and not ls.compared.ready():
        ready = None  # livetok.compare names an encoding to load: in the worker thread too

    def build(enc: PieceEncoding) -> OpenDocument:
        built = ls.early_document(td.uri, td.version, td.text, enc)
        if built is not None:  # the stdio front made it: the text is not encoded again
            return ls.open_document(td.uri, td.language_id, td.version, td.text, enc,
                                    choice=choice, built=built)
        text: str | list[str] = td.text
        if isinstance(text, TextParts):  # a big didOpen decoded in blocks (bigtext.py)
            try:
                text = text.join() if ls.recorder is not None else text.take()
            except ValueError as exc:  # decoded only now: it was not a JSON string
                ls.warn(f"livetok: ignored the didOpen of {td.uri}: {exc}")
                raise
        elif ls.recorder is None and isinstance(text, str) and len(text) >= _HANDOFF_CHARS:
            # subtle: the params give the text up, so that the only reference left is
            # the one handed over (OpenDocument._build_handed drops it before building)
            text, td.text = [text], ""
        return ls.open_document(td.uri, td.language_id, td.version, text, enc, on_count=(
            ls.publisher.first_count(td.uri, td.version, enc.name) if big and ls.background.in_worker()
            else None), choice=choice)

    def opened(od: OpenDocument) -> None:
        if token is not None:
            n = od.doc.token_count if od.doc is not None else 0
            ls.protocol.notify(types.PROGRESS, types.ProgressParams(
                token=token, value=types.WorkDoneProgressEnd(
                    message=f"{n:,} tokens in {time.perf_counter() - started:.1f} s")))
        ls.store.add(od)
        if ls.recorder is not None:
            ls.recorder.open(td.uri, od.text())
        ls.publisher.changed(td.uri)
        if not ls.budgets.dynamic:  # no file watcher: an opened budget file is re-read
            ls.reencoder.budget_files_changed([td.uri])

    def load_and_build() -> OpenDocument:
        return build(ls.encodings.load(choice, td.uri))

    def building() -> None:  # its size counts toward the session's limit meanwhile
        ls.admission.opening(td.uri, n_chars)
        ls.background.defer(td.uri, built)  # first in its backlog: right after opened()

    def built() -> None:
        ls.admission.opened(td.uri)

    # an encoding not loaded yet may take seconds (a big tokenizer.json): loaded in the worker
    # thread, while this document's messages wait in its backlog and the others are served
    if ready is None:
        if ls.background.start(td.uri, load_and_build, opened):
            building()
            return
        ready = ls.encodings.load(choice, td.uri)
    # a big document is tokenized in the worker thread: the others keep being served
    if big and ls.background.start(td.uri, functools.partial(build, ready), opened):
        building()
    else:
        opened(build(ready))


#: LSP's ``integer`` and ``uinteger`` (a version, a line, a column): the bounds of the stdio
#: front's ``framing.lsp_integer`` / ``lsp_uinteger``, checked inline on the keystroke path (a
#: call there is one more function a keystroke runs, ``test_architecture``); a refusal's
#: message comes from ``lsp_uinteger`` (:func:`_integer`)
_INT_MIN, _INT_MAX = -LSP_INTEGER_MAX - 1, LSP_INTEGER_MAX


#: the members of a range, in ``TextChange.range``'s order
_SPAN_NAMES = ("start.line", "start.character", "end.line", "end.character")


#: ``range`` absent from a change (a full-text change), told apart from ``"range": null``
_NO_RANGE = object()


class ChangeRefused(ValueError):
    """A ``didChange`` whose params are not what LSP says; the message names the field."""


def _integer(value: Any, where: str) -> None:
    """Refuse ``value`` unless it is an LSP ``uinteger`` (the message names ``where``)."""
    if not lsp_uinteger(value):
        raise ChangeRefused(f"{where} must be an integer >= 0 up to {_INT_MAX}, not "
                            f"{_shown(value)}")


def _shown(value: Any) -> str:
    """A short, escaped excerpt of a refused value (what the client wrote is untrusted)."""
    text = json.dumps(value, ensure_ascii=True) if value is None or isinstance(
        value, (bool, int, float, str)) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def read_did_change(params: Any) -> tuple[str, int, list[TextChange], int]:
    """The one converter of a ``didChange``'s params (JSON values) into ``(uri, version,
    changes, inserted)``; :class:`ChangeRefused` says which field is not what LSP says: a
    ``text`` that is not a string, a ``line`` or ``character`` that is not an integer from 0
    to 2^31 - 1 (``"1"``, ``1.5``, ``true``), a ``version`` outside LSP's ``integer``.
    Members LSP does not define are ignored; ``rangeLength`` (deprecated) is checked, not read.

    Runtime complexity: ``O(changes)``.
    """
    td = params.get("textDocument") if type(params) is dict else None
    if type(td) is not dict:
        raise ChangeRefused("params.textDocument must be an object")
    uri = td.get("uri")
    if type(uri) is not str:
        raise ChangeRefused(f"textDocument.uri must be a string, not {_shown(uri)}")
    version = td.get("version")
    if type(version) is not int or not _INT_MIN <= version <= _INT_MAX:
        raise ChangeRefused(f"textDocument.version must be an integer from {_INT_MIN} to "
                            f"{_INT_MAX}, not {_shown(version)}")
    raw = params.get("contentChanges")
    if type(raw) is not list:
        raise ChangeRefused(f"contentChanges must be an array, not {_shown(raw)}")
    changes = []
    inserted = 0
    for i, c in enumerate(raw):
        text = c.get("text") if type(c) is dict else None
        if type(text) is not str:
            raise ChangeRefused(f"contentChanges[{i}].text must be a string, not "
                                f"{_shown(text) if type(c) is dict else _shown(c)}")
        inserted += len(text)
        rng = c.get("range", _NO_RANGE)
        if rng is _NO_RANGE:
            changes.append(TextChange(text))
            continue
        start = rng.get("start") if type(rng) is dict else None
        end = rng.get("end") if type(rng) is dict else None
        if type(start) is not dict or type(end) is not dict:
            raise ChangeRefused(f"contentChanges[{i}].range must be an object with start and "
                                "end positions")
        if "rangeLength" in c:
            _integer(c["rangeLength"], f"contentChanges[{i}].rangeLength")
        span = (start.get("line"), start.get("character"), end.get("line"), end.get("character"))
        for v in span:
            if type(v) is not int or not 0 <= v <= _INT_MAX:  # said by _integer
                for name, w in zip(_SPAN_NAMES, span):
                    _integer(w, f"contentChanges[{i}].range.{name}")
        changes.append(TextChange(text, cast("tuple[int, int, int, int]", span)))
    return uri, version, changes, inserted


@feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change_json(ls: LivetokServer, params: Any) -> bool:
    """Keystroke step 1, the one handler of every ``didChange``: its params as JSON values,
    never typed by lsprotocol (lsprotocol's typing and pygls's dispatch took about a quarter
    of a keystroke's time in the server, and lsprotocol converted what it should refuse:
    ``"text": null`` became the text ``"None"``). The session hands it a keystroke's JSON
    (``SessionProtocol.take_notification``); pygls dispatches it the rest, untyped too
    (``LivetokProtocol.get_message_type``). :func:`read_did_change`
    converts it; its changes, as :class:`TextChange`, go to :func:`apply_changes` (then step
    2, ``OpenDocument.apply``). A refused one changes nothing: the session logs why and marks
    its document out of sync (``LivetokServer.refuse_change``). Always True: handled.

    Runtime complexity: ``O(changes)`` besides :func:`apply_changes`.
    """
    try:
        uri, version, changes, inserted = read_did_change(params)
    except ChangeRefused as exc:
        ls.refuse_change(params, str(exc))
        return True
    if not (ls.protocol.alone and len(changes) == 1 and _keystroke(ls, uri, version, changes[0],
                                                                   inserted)):
        apply_changes(ls, uri, version, changes, inserted)
    return True


def _keystroke(ls: LivetokServer, uri: str, version: int, change: TextChange,
               inserted: int) -> bool:
    """The lane of a keystroke read alone (``transport.take``): its change applied and its
    count written now, when it is a range within one line and nothing else waits or watches
    (no pending batch, no count waiting to be published, the document not busy and its last
    edit quick, no trace recorded, no size bound, not a huge paste) and
    ``OpenDocument.keystroke`` takes the change; False:
    nothing was done, :func:`apply_changes` takes it. What it leaves out, the pending batch
    and ``LivetokServer.applied``, would do nothing here (``tests/unit/test_keystroke_path.py``
    checks that both ways write the same bytes).

    Runtime complexity: ``OpenDocument.keystroke``'s, plus ``O(1)``.
    """
    rng = change.range
    od = ls.store.find(uri)
    if (rng is None or rng[0] != rng[2]  # a range over lines may free a big text: applied()
            or od is None or ls.pending or ls.publisher.due or ls.recorder is not None
            or ls.max_open_chars is not None or od.apply_seconds >= MERGE_S
            or inserted >= ls.settings.progress_threshold or ls.background.busy(uri)):
        return False
    started = time.perf_counter()
    patch = od.keystroke(change, version, LONG_LINE)
    if patch is None:
        return False
    od.apply_seconds = time.perf_counter() - started
    ls.store.chars += len(patch.inserted) - patch.n_deleted
    ls.publisher.publish_now(od)
    return True


def apply_changes(ls: LivetokServer, uri: str, version: int, changes: list[TextChange],
                  inserted: int) -> None:
    """``changes`` (``inserted`` code points in all) join the document's pending batch
    (``pending.py``), applied by ``OpenDocument.apply`` (keystroke step 2; a huge paste or a
    slow document's batch in the worker thread) once the messages read so far are handled;
    :meth:`LivetokServer.applied` then has the new count published (step 5). While the
    document is busy the message waits in its backlog, where it merges with the
    ``didChange`` messages next to it.

    Runtime complexity: ``O(changes)`` besides ``OpenDocument.apply``.
    """
    if ls.background.busy(uri):
        ls.later(uri, _apply_later, (uri, version, changes, inserted), merges=True)
        return
    od = ls.store.find(uri)
    if od is None:
        if ls.admission.why(uri) is None:  # one not kept was said so once
            ls.warn(f"livetok: didChange for {uri}, which is not open; ignored "
                    "(send textDocument/didOpen first)")
        return
    ls.pending.add(od, version, changes, inserted, found=True)


def _apply_later(ls: LivetokServer, args: tuple[str, int, list[TextChange], int]) -> None:
    apply_changes(ls, *args)


@feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: LivetokServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    if ls.background.busy(uri):
        ls.background.defer(uri, functools.partial(ls.close, uri))
    else:
        ls.close(uri)


@feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: LivetokServer,
                             params: types.DidChangeConfigurationParams) -> None:
    settings = params.settings
    if not isinstance(settings, dict) or "livetok" not in settings:
        return  # not ours (clients send every section's changes here)
    problems: list[str] = []  # a bad value: a warning, and that setting left as it was
    try:
        new = parse_settings(settings["livetok"], ls.settings, root=ls.root, grant_trust=False,
                             problems=problems)
    except SettingsError as exc:
        ls.warn(f"livetok: ignoring the new settings: {exc}")
        return
    for problem in problems:
        ls.warn(f"livetok: {problem}; the setting is left as it was")
    old, ls.settings = ls.settings, new
    if ls.settings == old:
        return  # nothing changed: nothing to send
    ls.reencoder.settings_changed(old)
    if ls.refresh_semantic and new.semantic_tokens != old.semantic_tokens:
        ls.protocol.send_request(types.WORKSPACE_SEMANTIC_TOKENS_REFRESH, None)


@feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: LivetokServer,
                             params: types.DidChangeWatchedFilesParams) -> None:
    ls.reencoder.budget_files_changed([c.uri for c in params.changes])


@feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: LivetokServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.reencoder.budget_files_changed([params.text_document.uri])
