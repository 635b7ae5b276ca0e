"""The answers the stdio front and the server both give: ``livetok/tokenCount``,
``textDocument/hover`` and ``textDocument/codeLens`` about one open document, from their params
(JSON, or the types pygls made of them) to the JSON result.

One function per request (:data:`ANSWERS`), called by the server's handlers (``requests.py``,
after they found the document) and by ``front.EarlyServer`` (before pygls is imported: this
module imports neither pygls nor lsprotocol). A param that is not what LSP says raises
:class:`~.positions.PositionError` naming the field: the server answers it as invalid params,
the front leaves the request to the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from livetok.server.lsp import views
from livetok.server.lsp.positions import PositionError

if TYPE_CHECKING:
    from livetok.server.lsp.documents import OpenDocument
    from livetok.server.lsp.settings import Settings

__all__ = ["ANSWERS", "LensFilter", "code_lens", "field_of", "hover", "range_cp", "token_count"]

#: ``lenses(od, lenses)``: the lenses shown, with the budget's (the server's ``BudgetWatch``)
LensFilter = Callable[["OpenDocument", list[views.Lens]], list[views.Lens]]


def field_of(obj: Any, name: str) -> Any:
    """``obj[name]`` for dicts, else the attribute (pygls turns untyped params into
    namedtuples).

    Runtime complexity: ``O(1)``.
    """
    if isinstance(obj, dict):
        return obj.get(name)
    if isinstance(obj, (str, int, float, bool, list)):
        return None
    return getattr(obj, name, None)


def _uinteger(value: Any, what: str) -> int:
    """``value`` if it is an integer >= 0, else :class:`PositionError` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PositionError(f"{what} must be an integer >= 0, got {value!r}")
    return value


def range_cp(od: OpenDocument, rng: Any) -> tuple[int, int]:
    """The code point span of an LSP ``Range`` (JSON or typed) in ``od``.

    Runtime complexity: two position conversions (``OpenDocument.range_to_cp``).
    """
    vals = []
    for end in ("start", "end"):
        pos = field_of(rng, end)
        if pos is None:
            raise PositionError(f"range.{end} is missing: a Range needs start and end")
        for key in ("line", "character"):
            vals.append(_uinteger(field_of(pos, key), f"range.{end}.{key}"))
    return od.range_to_cp((vals[0], vals[1], vals[2], vals[3]))


def token_count(od: OpenDocument, params: Any, settings: Settings | None = None,
                lenses: LensFilter | None = None) -> dict[str, Any]:
    """``livetok/tokenCount``: the document's count, and a range's with ``range``.

    Runtime complexity: :func:`.views.token_count`'s.
    """
    rng = field_of(params, "range")
    return views.token_count(od, range_cp(od, rng) if rng is not None else None).to_json()


def hover(od: OpenDocument, params: Any, settings: Settings | None = None,
          lenses: LensFilter | None = None) -> dict[str, Any] | None:
    """``textDocument/hover``: the token at ``position``, or None.

    Runtime complexity: :func:`.views.hover_json`'s.
    """
    pos = field_of(params, "position")
    return views.hover_json(od, _uinteger(field_of(pos, "line"), "position.line"),
                            _uinteger(field_of(pos, "character"), "position.character"))


def code_lens(od: OpenDocument, params: Any, settings: Settings | None = None,
              lenses: LensFilter | None = None) -> list[dict[str, Any]]:
    """``textDocument/codeLens``: the document's lens and, for Markdown, one per section;
    ``lenses`` adds the budget's (the server's; the front leaves a budget to the server).

    Runtime complexity: :func:`.views.code_lenses`'s, plus the Markdown sections' parse.
    """
    assert settings is not None, "code lenses follow the settings (the context window)"
    secs = views.markdown_sections(od) if od.language_id in views.MARKDOWN_IDS else None
    shown = views.code_lenses(od, settings, secs)
    return views.lenses_json(lenses(od, shown) if lenses is not None else shown)


#: the answers by request method: ``answer(od, params, settings, lenses)``
ANSWERS: dict[str, Callable[..., Any]] = {
    "livetok/tokenCount": token_count,
    "textDocument/hover": hover,
    "textDocument/codeLens": code_lens,
}
