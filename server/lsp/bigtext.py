"""The text of a big ``didOpen``, decoded from the message in blocks instead of one ``str``.

``json.loads`` of a 100 MB ``didOpen`` builds the document as one ``str``, which CPython
stores at the width of its widest character: one emoji makes it 4 bytes a character, 400 MB,
held beside the message's 100 MB of bytes, and decoded in one C call that keeps every other
document waiting (~0.8 s). :func:`split_text_member` decodes the ``text`` member of such a
message in blocks of about a megabyte, each its own ``str`` as narrow as its own characters,
and the rest of the message (with a placeholder for the text) as usual; the server then builds
the document from the blocks (:class:`TextParts`, ``OpenDocument``).

Blocks are cut right after an escaped line break (``\\n`` in the JSON text, an unescaped
backslash before it): such a cut splits no escape, no UTF-8 sequence and no surrogate pair, so
the blocks decode alone, to the text that ``json.loads`` gives. Each block is decoded by the
``json`` module's own string scanner (``json.decoder.scanstring``), which also finds where the
member ends. A message this module is not sure of (no ``"text"`` member found where expected,
no escaped line break at all, a member that is not the document's text) is left to
``json.loads``: the result is the same, only slower and bigger.
"""

from __future__ import annotations

import json
import re
from json import decoder as _json_decoder
from typing import Any, Callable

#: ``json``'s own string scanner: ``scanstring(s, end, strict)`` decodes the string literal
#: that starts after the quote at ``end - 1`` into ``(value, index after its closing quote)``.
#: Public at run time but missing from typeshed's ``json.decoder`` stub, hence the ignore.
scanstring: Callable[[str, int, bool], tuple[str, int]] = (
    _json_decoder.scanstring  # type: ignore[attr-defined]
)

__all__ = ["TextParts", "split_text_member", "MIN_BYTES"]

#: bodies at least this long are decoded by blocks
MIN_BYTES = 4 << 20
#: raw bytes per block (cut at the next escaped line break after this many)
BLOCK_BYTES = 1 << 20
#: stands for the text in the rest of the message (not a text an editor sends)
PLACEHOLDER = "\x00livetok:text-parts\x00"

_TEXT_MEMBER = re.compile(rb'"text"\s*:\s*"')
#: the end of a body whose last member (of the last member, of the last member) is a string
_LAST_MEMBER = re.compile(rb'"\s*\}\s*\}\s*\}\s*\Z')
#: an escaped line break whose backslash is not itself escaped (an even run before it)
_ESCAPED_NL = re.compile(rb"(?<!\\)(?:\\\\)*\\n")


class TextParts(str):
    """The text of a ``didOpen`` as blocks: a ``str`` whose value is empty but whose ``len`` is
    the text's (or, before a lazy text is decoded, its size in the message, an upper bound), so
    that size checks see the real size.

    Subtle: only code that knows this class may read the text (``join`` gives it whole); the
    server takes the blocks with :meth:`take` and builds the document from them. A lazy one
    holds the message's bytes and decodes its blocks in :meth:`take`, which the server calls
    in its worker thread: the message thread then only decodes the rest of the message.
    """

    parts: list[str]
    length: int
    _raw: tuple[bytes, int, int] | None

    def __new__(cls, parts: list[str], raw: tuple[bytes, int, int] | None = None) -> TextParts:
        self = super().__new__(cls, "")
        self.parts = parts
        self._raw = raw
        self.length = raw[2] - raw[1] if raw is not None else sum(map(len, parts))
        return self

    def __len__(self) -> int:
        return self.length

    def join(self) -> str:  # type: ignore[override]
        """The whole text as one ``str``."""
        return "".join(self.take())

    def take(self) -> list[str]:
        """The blocks, which this object then forgets (so they are freed as they are used);
        a ``ValueError`` when a lazy text turns out not to be a JSON string.

        Runtime complexity: ``O(len(text))`` for a lazy text, else ``O(1)``.
        """
        if self._raw is not None:
            body, start, end = self._raw
            self._raw = None
            decoded = _decode_member(body, start)
            # the string must end at the quote the message was decoded with, not before
            if decoded is None or decoded[2] - len(decoded[1].encode("utf-8", "surrogatepass")) \
                    != end + 1:
                raise ValueError("the text of the didOpen is not a valid JSON string")
            self.parts = decoded[0]
        parts, self.parts = self.parts, []
        return parts


def _decode_member(body: bytes, start: int) -> tuple[list[str], str, int] | None:
    """``(blocks, rest, cut)``: the JSON string member whose first byte is ``body[start]``
    decoded in blocks, and where the message goes on (``rest + body[cut:]``); None when it
    is not a valid string.

    Runtime complexity: ``O(len(member))``, in C calls of about :data:`BLOCK_BYTES` each.
    """
    blocks: list[str] = []
    pos = start
    while True:
        cut_at = _ESCAPED_NL.search(body, pos + BLOCK_BYTES)
        cut = cut_at.end() if cut_at is not None else len(body)
        try:
            chunk = body[pos:cut].decode("utf-8", "surrogatepass")  # as json.loads does
            # the artificial closing quote ends the chunk unless the member ends inside it
            value, end = scanstring(chunk + '"', 0, True)
        except ValueError:  # UnicodeDecodeError too
            return None
        if value:
            blocks.append(value)
        if end <= len(chunk):  # the member ended inside this chunk
            return blocks, chunk[end:], cut
        if cut == len(body):
            return None  # no closing quote
        pos = cut


def split_text_member(body: bytes) -> tuple[Any, TextParts] | None:
    """``(message, text)`` for a ``didOpen`` body: the message as ``json.loads`` gives it
    with its ``textDocument.text`` replaced by :data:`PLACEHOLDER`, and that text as
    :class:`TextParts` (decoded in blocks now, or later when it is the body's last member);
    None when the body is not such a message or this module is not sure of it.

    >>> body = json.dumps({"method": "textDocument/didOpen", "params": {"textDocument": {
    ...     "uri": "file:///x", "text": "a\\nb\\\\n\\u00e9\\n" * 3, "version": 1}}}).encode()
    >>> import livetok.server.lsp.bigtext as bt
    >>> bt.BLOCK_BYTES = 4
    >>> message, text = bt.split_text_member(body)
    >>> blocks = text.take()
    >>> "".join(blocks) == json.loads(body)["params"]["textDocument"]["text"], len(blocks)
    (True, 3)
    >>> message["params"]["textDocument"]["version"]
    1
    >>> bt.BLOCK_BYTES = 1 << 20

    Runtime complexity: ``O(len(body))``, in C calls of about :data:`BLOCK_BYTES` each.
    """
    if b'"textDocument/didOpen"' not in body[:4096] and b'"textDocument/didOpen"' not in body[-4096:]:
        return None
    m = _TEXT_MEMBER.search(body)
    if m is None:
        return None
    start = m.end()  # the member's first byte, after its opening quote
    tail = _LAST_MEMBER.search(body, max(0, len(body) - 64))
    blocks: list[str] | None
    if tail is not None and tail.start() >= start:
        # the text is the last member of the last members (as VS Code writes a didOpen): its
        # closing quote is the body's last one, so the text is decoded later, in take()
        blocks, rest, cut = None, "", tail.start() + 1  # the message goes on after the quote
    else:
        decoded = _decode_member(body, start)
        if decoded is None:
            return None  # json.loads reports it
        blocks, rest, cut = decoded
    try:
        head = body[:start].decode("utf-8", "surrogatepass")
        message = json.loads(head + json.dumps(PLACEHOLDER)[1:] + rest
                             + body[cut:].decode("utf-8", "surrogatepass"))
    except ValueError:
        return None
    td = message.get("params", {}).get("textDocument") if isinstance(message, dict) else None
    if not isinstance(td, dict) or td.get("text") != PLACEHOLDER \
            or message.get("method") != "textDocument/didOpen":
        return None  # the member was not the document's text
    return message, (TextParts(blocks) if blocks is not None
                     else TextParts([], (body, start, cut - 1)))
