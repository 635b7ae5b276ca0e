"""What the server announces in its ``initialize`` answer: one table, read by the stdio front
(``front.initialize_result``, which answers before pygls is imported) and by the server
(``lifecycle.SessionProtocol.lsp_initialize``).

The table is plain JSON, without pygls or lsprotocol, so that the front reads it at no import
cost. It is what pygls's ``ServerCapabilitiesBuilder`` writes for the handlers the server
registers (``requests.py``, ``sync.py``, ``workspace_counts.py``) and their options:
``tests/unit/test_server_parts.py`` builds it that way and compares, so a handler added
without its row here (or a row without its handler) fails there.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["SEMANTIC_TOKEN_TYPES", "announced", "json_at"]

#: the semantic token types livetok colours tokens with: two standard types so that every
#: theme colours them differently; tokens alternate (``views.semantic_tokens``)
SEMANTIC_TOKEN_TYPES = ("keyword", "string")


def json_at(value: Any, *path: str) -> Any:
    """``value[path[0]][path[1]]...``, or None where a step is missing or not an object."""
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def announced(client_capabilities: Mapping[str, Any], unit: str) -> dict[str, Any]:
    """The server's capabilities for a client that sent ``client_capabilities`` (JSON), with
    position unit ``unit``: a fresh dict per call.

    The client changes one thing besides the unit: pygls writes ``willSave`` and
    ``willSaveWaitUntil`` as ``client_value and False``: false when the client said anything,
    left out when it said nothing (livetok handles neither request).

    >>> announced({}, "utf-16")["textDocumentSync"]
    {'openClose': True, 'change': 2, 'save': True}
    >>> announced({"textDocument": {"synchronization": {"willSave": True}}}, "utf-8")[
    ...     "textDocumentSync"]["willSave"]
    False

    Runtime complexity: ``O(1)``.
    """
    sync: dict[str, Any] = {"openClose": True, "change": 2, "save": True}
    for key in ("willSave", "willSaveWaitUntil"):
        if json_at(client_capabilities, "textDocument", "synchronization", key) is not None:
            sync[key] = False
    return {
        "positionEncoding": unit,
        "textDocumentSync": sync,
        "hoverProvider": True,
        "codeLensProvider": {"resolveProvider": False},
        "executeCommandProvider": {"commands": []},
        "semanticTokensProvider": {
            "legend": {"tokenTypes": list(SEMANTIC_TOKEN_TYPES), "tokenModifiers": []},
            "range": True,
            "full": True,
        },
        "workspace": {
            "workspaceFolders": {"supported": True, "changeNotifications": True},
            "fileOperations": {},
        },
    }
