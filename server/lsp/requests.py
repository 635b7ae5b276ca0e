"""The request handlers: token counts, encodings, hover, code lenses, semantic tokens.

Each is ``handler(ls, params)`` under :func:`.handlers.request`, which answers it at once or
at its place in its document's backlog and maps livetok's errors to JSON-RPC errors. What a
handler shows is computed by :mod:`.views`; the answers the stdio front gives too
(``livetok/tokenCount``, hover, code lenses) are :mod:`.answers`'s, shared with the front.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from livetok.server.lsp import answers, views
from livetok.server.lsp.capabilities import SEMANTIC_TOKEN_TYPES
from livetok.server.lsp.views import MARKDOWN_IDS
from livetok.server.lsp.positions import PositionError
from livetok.server.lsp.answers import field_of
from livetok.server.lsp.handlers import request
from livetok.server.lsp.protocol import LIST_ENCODINGS, TOKEN_COUNT

if TYPE_CHECKING:
    from livetok.server.lsp.session import LivetokServer

__all__: list[str] = []  # handlers only: registered by importing this module

_LEGEND = types.SemanticTokensLegend(token_types=list(SEMANTIC_TOKEN_TYPES), token_modifiers=[])


# -- requests ------------------------------------------------------------------------------------


@request(TOKEN_COUNT)
def token_count(ls: LivetokServer, params: Any) -> dict[str, Any]:
    """``livetok/tokenCount``: the document's count, and a range's with ``range``."""
    # custom params arrive as pygls's namedtuples (or dicts): read them field by field
    if params is None or field_of(params, "textDocument") is None:
        raise JsonRpcInvalidParams(
            'livetok/tokenCount takes {"textDocument": {"uri": ...}, "range"?: Range}')
    return answers.token_count(ls.document(params), params)


@request(LIST_ENCODINGS)
def list_encodings(ls: LivetokServer, params: Any) -> dict[str, Any]:
    """``livetok/listEncodings``: the encodings a picker offers (the built-in names and the
    models found in the local Hugging Face cache, each with one line about it), the default
    encoding of the settings (``current``) and the ``tokenizer`` setting. Params are ignored."""
    from livetok.incremental.names.registry import describe_encodings

    settings = ls.settings
    return {
        "encodings": [{"name": n, "description": d} for n, d in describe_encodings()],
        "current": settings.default_encoding,
        "tokenizer": settings.tokenizer,
    }


@request(types.TEXT_DOCUMENT_HOVER)
def hover(ls: LivetokServer, params: types.HoverParams) -> dict[str, Any] | None:
    return answers.hover(ls.document(params), params)


@request(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False),
         heavy=lambda ls, od: od.language_id in MARKDOWN_IDS)
def code_lens(ls: LivetokServer, params: types.CodeLensParams) -> list[dict[str, Any]]:
    return answers.code_lens(ls.document(params), params, ls.settings, ls.budgets.lenses)


# with the legend as options, pygls advertises {legend, full: true, range: true}
@request(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, _LEGEND,
         heavy=lambda ls, od: ls.settings.semantic_tokens)
def semantic_tokens_full(ls: LivetokServer,
                         params: types.SemanticTokensParams) -> types.SemanticTokens:
    od = ls.document(params)
    if not ls.settings.semantic_tokens:
        od.ready()
        return types.SemanticTokens(data=[])
    return types.SemanticTokens(data=views.semantic_tokens(od, 0, od.length))


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
    return types.SemanticTokens(data=views.semantic_tokens(od, start, end))
