"""The baseline for ``bench_server.py``: the usual way to write a token-counting language server.

A plain pygls server that keeps documents in pygls's workspace (``TextDocument``: incremental
changes applied to a Python string) and, after every ``didChange``, encodes the whole text
with tiktoken (Rust) and sends ``livetok/didChangeTokenCount`` with the same fields as
livetok. Run it as ``python benchmarks/baseline_server.py [ENCODING]``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import livetok_encoding, tiktoken_ref  # noqa: E402

NAME = sys.argv[1] if len(sys.argv) > 1 else "o200k_base"
ENC = tiktoken_ref(livetok_encoding(NAME))
server = LanguageServer("baseline-tiktoken", "0")


def report(uri: str, version: int) -> None:
    text = server.workspace.get_text_document(uri).source
    server.protocol.notify("livetok/didChangeTokenCount", {
        "uri": uri, "version": version, "encoding": NAME,
        "tokens": len(ENC.encode_ordinary(text)), "characters": len(text)})


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(params: types.DidOpenTextDocumentParams) -> None:
    report(params.text_document.uri, params.text_document.version)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(params: types.DidChangeTextDocumentParams) -> None:
    report(params.text_document.uri, params.text_document.version)


if __name__ == "__main__":
    logging.getLogger("pygls").setLevel(logging.WARNING)
    server.start_io()
