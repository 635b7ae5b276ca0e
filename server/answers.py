"""Requests, and how every LSP handler is registered.

Handlers are plain functions ``handler(ls, params)`` under a decorator naming their LSP
method, as in pygls's examples (``@server.feature``). A server is made per connection
(``livetok serve --tcp``, the demo's websockets), so :func:`feature` and :func:`request`
record them in :data:`FEATURES`, and each ``LivetokServer`` registers those with pygls's own
``self.feature`` when it is created (``docs/architecture.md`` says why).

A request handler returns its answer; :func:`_answer` gives it at once, or at the request's
place in its document's backlog while the document is busy with background work, and maps
livetok's errors to JSON-RPC errors in one place (:func:`_compute`):

=============================  ===========================================
``UnknownDocument``            ``InvalidParams`` (-32602): open it first
``PositionError``              ``InvalidParams`` (-32602): names the bound
``DocumentUnavailable``        ``RequestFailed`` (-32803): how to re-sync
=============================  ===========================================
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, Callable, Generator, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from . import features
from .documents import DocumentUnavailable, OpenDocument, UnknownDocument
from .positions import PositionError
from .protocol import LIST_ENCODINGS, REQUEST_FAILED, TOKEN_COUNT

if TYPE_CHECKING:
    from .app import LivetokServer

__all__ = ["FEATURES", "feature", "request", "uri_of"]

_LEGEND = types.SemanticTokensLegend(token_types=features.SEMANTIC_TOKEN_TYPES,
                                     token_modifiers=[])
_MARKDOWN_IDS = frozenset({"markdown", "md", "mdx"})

F = TypeVar("F", bound=Callable[..., Any])
#: ``heavy(ls, od)``: answering takes time linear in a big document (see :func:`_answer`)
Heavy = Callable[["LivetokServer", OpenDocument], bool]
#: the handlers every new server registers: (LSP method, options, ``handler(ls, params)``)
FEATURES: list[tuple[str, Any, Callable[..., Any]]] = []


def feature(method: str, options: Any = None) -> Callable[[F], F]:
    """pygls's ``@server.feature(method, options)`` for a server made per connection:
    ``handler(ls, params)`` is registered on every :class:`LivetokServer` created after."""

    def record(handler: F) -> F:
        FEATURES.append((method, options, handler))
        return handler

    return record


def request(method: str, options: Any = None, *, heavy: Heavy | None = None,
            ) -> Callable[[F], F]:
    """:func:`feature` for a request: ``handler(ls, params)`` returns the answer, which
    :func:`_answer` gives at once or at the request's place in its document's backlog."""

    def record(handler: F) -> F:
        FEATURES.append((method, options, functools.partial(_answer, handler=handler,
                                                             heavy=heavy)))
        return handler

    return record


def _compute(handler: Callable[..., Any], ls: LivetokServer, params: Any) -> Any:
    """``handler(ls, params)``, with livetok's document errors as JSON-RPC errors."""
    try:
        return handler(ls, params)
    except (UnknownDocument, PositionError) as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc
    except DocumentUnavailable as exc:
        raise JsonRpcException(message=str(exc), code=REQUEST_FAILED) from exc


def _outcome(handler: Callable[..., Any], ls: LivetokServer, params: Any) -> tuple[bool, Any]:
    """``(True, answer)`` or ``(False, error)``: computed off the loop, settled on it."""
    try:
        return True, _compute(handler, ls, params)
    except Exception as exc:  # answered as the error it is, on the loop's thread
        return False, exc


def _settle(fut: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if not fut.cancelled():
        if outcome[0]:
            fut.set_result(outcome[1])
        else:
            fut.set_exception(outcome[1])


async def _wait_for(fut: asyncio.Future[Any]) -> Any:
    """Await a deferred request's answer (run by pygls as a sub-handler of a generator)."""
    return await fut


def _answer(ls: LivetokServer, params: Any, *, handler: Callable[..., Any],
            heavy: Heavy | None) -> Generator[Any, Any, Any]:
    """Answer a request at once or, when its document is busy with background work, at its
    place in that document's backlog (see ``background.py``).

    ``heavy(ls, od)`` says when answering takes time linear in a big document (the sections
    of a long Markdown file, semantic tokens of a whole big file): the answer is then
    computed in the worker thread, as a big didOpen is, so other documents are served
    meanwhile; this document's later messages wait for it, in order.

    Subtle: a generator, not a coroutine. pygls runs it synchronously up to its first
    ``yield``, so an answer that needs no waiting goes out before the next message is read;
    a coroutine would run after the messages already read, and could see later changes.
    """
    uri = uri_of(params)
    if uri is not None and heavy is not None and not ls.background.busy(uri):
        od = ls.store.find(uri)
        if od is not None and od.length >= ls.settings.progress_threshold and heavy(ls, od):
            fut_w: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            if ls.background.start(uri, functools.partial(_outcome, handler, ls, params),
                                   functools.partial(_settle, fut_w)):
                return (yield _wait_for, (fut_w,), {})
    if uri is None or not ls.background.busy(uri):
        return _compute(handler, ls, params)
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def in_turn() -> None:
        if not fut.cancelled():
            _settle(fut, _outcome(handler, ls, params))

    ls.background.defer(uri, in_turn)
    return (yield _wait_for, (fut,), {})


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` for dicts, else the attribute (pygls turns untyped params into
    namedtuples)."""
    if isinstance(obj, dict):
        return obj.get(name)
    if isinstance(obj, (str, int, float, bool, list)):
        return None
    return getattr(obj, name, None)


def uri_of(params: Any) -> str | None:
    """The ``textDocument.uri`` of request params, if there is one."""
    td = _field(params, "text_document") or _field(params, "textDocument")
    uri = _field(td, "uri")
    return uri if isinstance(uri, str) else None


def _nonneg_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise JsonRpcInvalidParams(f"{what} must be an integer >= 0, got {value!r}")
    return value


# -- requests ------------------------------------------------------------------------------------


def _range_cp(od: OpenDocument, rng: Any) -> tuple[int, int]:
    """Code point span of a Range given as lsprotocol type or as plain dict."""
    vals = []
    for end in ("start", "end"):
        pos = _field(rng, end)
        if pos is None:
            raise JsonRpcInvalidParams(f"range.{end} is missing: a Range needs start and end")
        for key in ("line", "character"):
            vals.append(_nonneg_int(_field(pos, key), f"range.{end}.{key}"))
    return od.range_to_cp((vals[0], vals[1], vals[2], vals[3]))


@request(TOKEN_COUNT)
def token_count(ls: LivetokServer, params: Any) -> dict[str, Any]:
    """``livetok/tokenCount``: the document's count, and a range's with ``range``."""
    # custom params arrive as pygls's namedtuples (or dicts): read them field by field
    if params is None or _field(params, "textDocument") is None:
        raise JsonRpcInvalidParams(
            'livetok/tokenCount takes {"textDocument": {"uri": ...}, "range"?: Range}')
    od = ls.document(params)
    rng = _field(params, "range")
    cp_range = _range_cp(od, rng) if rng is not None else None
    return features.token_count(od, cp_range).to_json()


@request(LIST_ENCODINGS)
def list_encodings(ls: LivetokServer, params: Any) -> dict[str, Any]:
    """``livetok/listEncodings``: the encodings a picker offers (the built-in names and the
    models found in the local Hugging Face cache, each with one line about it), the default
    encoding of the settings (``current``) and the ``tokenizer`` setting. Params are ignored."""
    from livetok.incremental.registry import describe_encodings

    settings = ls.settings
    return {
        "encodings": [{"name": n, "description": d} for n, d in describe_encodings()],
        "current": settings.default_encoding,
        "tokenizer": settings.tokenizer,
    }


@request(types.TEXT_DOCUMENT_HOVER)
def hover(ls: LivetokServer, params: types.HoverParams) -> types.Hover | None:
    od = ls.document(params)
    pos = params.position
    info = features.hover(od, od.to_cp(pos.line, pos.character), pos.line)
    if info is None:
        return None
    start, end = od.to_position(info.start_cp), od.to_position(info.end_cp)
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=info.markdown),
        range=types.Range(start=types.Position(*start), end=types.Position(*end)))


@request(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False),
         heavy=lambda ls, od: od.language_id in _MARKDOWN_IDS)
def code_lens(ls: LivetokServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    od = ls.document(params)
    secs = features.markdown_sections(od) if od.language_id in _MARKDOWN_IDS else None
    out = []
    for lens in ls.budgets.lenses(od, features.code_lenses(od, ls.settings, secs)):
        p = types.Position(lens.line, 0)
        out.append(types.CodeLens(range=types.Range(start=p, end=p),
                                  command=types.Command(title=lens.title, command="")))
    return out


# with the legend as options, pygls advertises {legend, full: true, range: true}
@request(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, _LEGEND,
         heavy=lambda ls, od: ls.settings.semantic_tokens)
def semantic_tokens_full(ls: LivetokServer,
                         params: types.SemanticTokensParams) -> types.SemanticTokens:
    od = ls.document(params)
    if not ls.settings.semantic_tokens:
        od.ready()
        return types.SemanticTokens(data=[])
    return types.SemanticTokens(data=features.semantic_tokens(od, 0, od.length))


@request(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, _LEGEND)
def semantic_tokens_range(ls: LivetokServer,
                          params: types.SemanticTokensRangeParams) -> types.SemanticTokens:
    od = ls.document(params)
    if not ls.settings.semantic_tokens:
        od.ready()
        return types.SemanticTokens(data=[])
    r = params.range
    start = od.to_cp(r.start.line, r.start.character)
    end = od.to_cp(r.end.line, r.end.character, clamp=True)
    if start > end:
        raise PositionError(f"range end {r.end} comes before its start {r.start}")
    return types.SemanticTokens(data=features.semantic_tokens(od, start, end))
