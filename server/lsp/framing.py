"""The LSP base protocol's framing (``Content-Length`` headers over a byte stream) and the
bounds of a message.

:class:`Framer` splits the stream of stdio and TCP into message bodies and finds its feet again
after a bad frame. :func:`refusal` says why a parsed message is refused whole, and
:func:`lsp_integer` / :func:`lsp_uinteger` whether a number is within LSP's bounds: the stdio
front (``front.py``) and the full server (``protocol.py``) call the same functions, so that
neither answers what the other refuses. This module imports neither pygls nor lsprotocol, so
that the front can read ``initialize`` before those are imported.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Literal, NamedTuple

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "LSP_INTEGER_MAX",
    "MAX_JSON_DEPTH",
    "Frame",
    "Framer",
    "Refusal",
    "deep_refusal",
    "lsp_integer",
    "lsp_uinteger",
    "nesting_exceeds",
    "refusal",
]

#: ``livetok serve --max-message-size``'s default: a 100 MB document as a JSON string (CJK text
#: escaped as ``\\uXXXX`` doubles in size) fits with room to spare
DEFAULT_MAX_MESSAGE_BYTES = 512 << 20
#: arrays/objects a message may nest: the deepest real client message measured is 8 levels (an
#: ``initialize`` from VS Code 1.65, Neovim 0.6-0.11 or Emacs 29; a didChange is 6), so 64
#: leaves room for settings and command arguments, far below the parser's recursion limit
MAX_JSON_DEPTH = 64


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests arrays/objects more than ``limit`` levels deep.

    >>> nesting_exceeds({"a": [1, {"b": "[[[["}]}, 3), nesting_exceeds([[[[]]]], 3)
    (False, True)

    Runtime complexity: ``O(containers and their items)``, stopping at the first container
    too deep; strings are not looked into, so a 10 MB ``didOpen`` costs a handful of steps.
    """
    stack = [(value, 1)] if type(value) in (dict, list) else []
    while stack:
        container, depth = stack.pop()
        if depth > limit:
            return True
        for item in container.values() if type(container) is dict else container:
            if type(item) is dict or type(item) is list:  # json.loads makes exactly these
                stack.append((item, depth + 1))
    return False


#: LSP's ``integer`` is -2^31 .. 2^31 - 1, its ``uinteger`` 0 .. 2^31 - 1 (lsprotocol checks both)
LSP_INTEGER_MAX = (1 << 31) - 1


def lsp_integer(value: Any) -> bool:
    """Whether ``value`` is an LSP ``integer`` (a document version): a JSON integer, not a
    boolean, float or string, from -2^31 to 2^31 - 1.

    >>> lsp_integer(-1), lsp_integer(1 << 31), lsp_integer(True), lsp_integer(1.0)
    (True, False, False, False)

    Runtime complexity: ``O(1)``.
    """
    return type(value) is int and -LSP_INTEGER_MAX - 1 <= value <= LSP_INTEGER_MAX


def lsp_uinteger(value: Any) -> bool:
    """Whether ``value`` is an LSP ``uinteger`` (a line, a column): an integer from 0 to 2^31 - 1.

    >>> lsp_uinteger(0), lsp_uinteger(-1), lsp_uinteger((1 << 31) - 1), lsp_uinteger(1 << 31)
    (True, False, True, False)

    Runtime complexity: ``O(1)``.
    """
    return type(value) is int and 0 <= value <= LSP_INTEGER_MAX


class Refusal(NamedTuple):
    """Why a message is refused whole, before its method or params are read: JSON-RPC's
    ``InvalidRequest`` (-32600), answered under ``msg_id`` (None: JSON null); ``silent``: a
    notification, which nobody can be answered for (``method`` names it, for the log)."""

    msg_id: int | str | None
    reason: str
    silent: bool = False
    method: str | None = None


def _valid_id(value: Any) -> bool:
    """An id LSP allows: an integer or a string (JSON-RPC's ``1.5``, ``true``, a list: not)."""
    return type(value) is int or type(value) is str


def deep_refusal(msg_id: Any, method: Any) -> Refusal:
    """The refusal of a message nested more than :data:`MAX_JSON_DEPTH` levels deep, with the
    id and method read from it (None where unknown); a notification's is silent.

    Runtime complexity: ``O(1)``.
    """
    reason = (f"the message nests arrays/objects more than {MAX_JSON_DEPTH} levels deep, "
              f"livetok's limit (LSP messages need about 8); send flatter params")
    if msg_id is None and isinstance(method, str):  # a notification: nobody to answer
        return Refusal(None, reason, silent=True, method=method)
    return Refusal(msg_id if _valid_id(msg_id) else None, reason)


def refusal(data: Any, shallow: bool = False) -> Refusal | None:
    """Why the parsed message ``data`` is refused whole, or None: nested more than
    :data:`MAX_JSON_DEPTH` levels deep, not a JSON object with ``"jsonrpc": "2.0"``, or an id
    that is neither an integer nor a string (JSON-RPC allows any number or null; LSP says
    integer or string, and a request whose id cannot be used is answered under id null).

    >>> refusal({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}) is None
    True
    >>> refusal({"jsonrpc": "2.0", "id": 1.5, "method": "shutdown"})[:2]
    (None, 'a message id must be an integer or a string, not float')
    >>> deep = []
    >>> for _ in range(MAX_JSON_DEPTH):
    ...     deep = [deep]
    >>> refusal({"jsonrpc": "2.0", "id": 7, "params": deep}).msg_id
    7

    ``shallow``: the caller knows ``data`` cannot nest that deep (its JSON text holds at
    most :data:`MAX_JSON_DEPTH` brackets and braces): the depth is not measured.

    Runtime complexity: ``O(containers in data)`` (:func:`nesting_exceeds`), ``O(1)`` when
    ``shallow``.
    """
    is_object = type(data) is dict
    if not shallow and nesting_exceeds(data, MAX_JSON_DEPTH):
        return deep_refusal(data.get("id") if is_object else None,
                            data.get("method") if is_object else None)
    if not is_object or data.get("jsonrpc") != "2.0":
        msg_id = data.get("id") if is_object else None
        return Refusal(msg_id if _valid_id(msg_id) else None,
                       'a message must be a JSON object with "jsonrpc": "2.0"')
    msg_id = data.get("id")
    if msg_id is not None and not _valid_id(msg_id):
        return Refusal(None, "a message id must be an integer or a string, not "
                       f"{type(msg_id).__name__}")
    return None


# -- base protocol framing -----------------------------------------------------------------------

#: ``Name: value\r\n`` (an HTTP token as the name)
_HEADER_LINE = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*\r\n", re.S)
_DIGITS = re.compile(rb"[0-9]{1,15}")
#: the header block nearly every client sends: what :meth:`Framer._header_line` reads line by
#: line (a Content-Length alone), matched at once
_PLAIN_HEADERS = re.compile(rb"Content-Length: ?([0-9]{1,15})\r\n\r\n", re.I)
#: where to pick up again after unreadable bytes: a Content-Length header, even mid-line (the
#: rest of a body cut short runs into the next header). Valid JSON cannot contain it: a raw
#: CR LF is not allowed inside a JSON string, and letters outside strings are not JSON.
_NEXT_LENGTH = re.compile(rb"content-length:[ \t]{0,64}[0-9]{1,15}[ \t]{0,64}\r\n", re.I)
#: a header line longer than this is not a header (every _NEXT_LENGTH match is shorter)
_MAX_HEADER_LINE = 1024
_PREVIEW = 60


class Frame(NamedTuple):
    """What :meth:`Framer.frames` found in the stream.

    ``message``: ``body`` is a message body. ``error``: a frame that cannot be read, to be
    answered with a parse error; ``body`` is its body when it was read whole (it may hold the
    id). ``skipped``: bytes between frames that were dropped (``reason`` says how many,
    ``body`` shows their start). ``foreign``: the stream does not start like LSP (an HTTP
    request); the connection should be closed.
    """

    kind: Literal["message", "error", "skipped", "foreign"]
    body: bytes = b""
    reason: str = ""


#: once this much of the read buffer is consumed, the rest is copied to a fresh buffer
_RELEASE_BYTES = 1 << 20


class Framer:
    """Splits an LSP base-protocol byte stream (``Content-Length`` headers, ``\\r\\n`` line
    ends) into message bodies, and finds its feet again after a bad frame.

    A header block may hold ``Content-Length`` and ``Content-Type`` (any case). A frame whose
    length is not a number, is over ``max_message_bytes`` or is missing comes out as an
    ``error``, and reading resumes at the next ``Content-Length`` header; a frame with an
    unknown header is skipped by its length, as an ``error``. Bytes that are not a header
    where one should start (the rest of a body whose ``Content-Length`` was too small) are
    dropped up to the next ``Content-Length`` header and reported as ``skipped``. With
    ``strict_start`` (TCP), a stream whose first line is not such a header is ``foreign``.

    >>> f = Framer(max_message_bytes=1000)
    >>> f.feed(b'Content-Length: 2\\r\\n\\r\\n{}Content-Length: x\\r\\n\\r\\n{"a": 1}')
    >>> f.feed(b'Content-Length: 2\\r\\n\\r\\n[]')
    >>> [(fr.kind, fr.body) for fr in f.frames()]
    [('message', b'{}'), ('error', b''), ('skipped', b'{"a": 1}'), ('message', b'[]')]

    Runtime complexity: ``O(bytes fed)`` in all: a body is copied once when complete, a header
    line is matched once, skipped bytes are searched once (plus at most 1 KiB again per
    feed); the buffer holds at most one message and one chunk.
    """

    def __init__(self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 strict_start: bool = False) -> None:
        self.max_message_bytes = max_message_bytes
        self._strict_start = strict_start
        self._buf = bytearray()
        self._pos = 0
        self._state: Literal["headers", "body", "resync", "closed"] = "headers"
        self._first_line = True
        self._new_header_block()
        self._need = 0  # body bytes, in state "body"
        self._skipped = 0
        self._skipped_start = b""

    def _new_header_block(self) -> None:
        self._in_block = False
        self._length: int | None = None
        self._length_seen = False
        self._problem: str | None = None

    def feed(self, data: bytes) -> None:
        """Append bytes read from the stream.

        Runtime complexity: amortised ``O(len(data))``.
        """
        if self._pos and self._pos >= len(self._buf) // 2:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    def whole(self, data: bytes) -> bytes | None:
        """The body of ``data`` when it is exactly one frame with the usual header block
        (``Content-Length: N`` and the blank line, N within the limit) and nothing is buffered
        before it: a keystroke, one message per read, is taken without the buffer and the
        :meth:`frames` loop. Else None, and nothing is taken: :meth:`feed` it.

        >>> Framer().whole(b'Content-Length: 2\\r\\n\\r\\n{}')
        b'{}'
        >>> Framer().whole(b'Content-Length: 3\\r\\n\\r\\n{}') is None  # one byte short
        True

        Runtime complexity: ``O(len(data))`` (one match, one copy of the body).
        """
        if self._state != "headers" or self._in_block or self._pos != len(self._buf):
            return None
        m = _PLAIN_HEADERS.match(data)
        if m is None:
            return None
        start = m.end()
        if len(data) - start != int(m.group(1)) or len(data) - start > self.max_message_bytes:
            return None
        self._first_line = False
        return data[start:]

    def frames(self) -> Iterator[Frame]:
        """The frames complete in what was fed so far, in stream order.

        Runtime complexity: ``O(bytes consumed)``.
        """
        while True:
            if self._state == "body":
                if len(self._buf) - self._pos < self._need:
                    return
                with memoryview(self._buf) as view:  # one copy of the body, not two
                    body = bytes(view[self._pos : self._pos + self._need])
                self._pos += self._need
                if self._pos >= _RELEASE_BYTES:
                    # a big message was read: keep only what follows it, so the buffer's
                    # memory (as big as that message) goes back now, not at the next read
                    self._buf = self._buf[self._pos :]
                    self._pos = 0
                self._state, problem = "headers", self._problem
                self._new_header_block()  # before yielding: the caller may stop iterating
                yield Frame("message", body) if problem is None else Frame("error", body, problem)
            elif self._state == "resync":
                if not self._resync():
                    return
                if self._skipped:
                    yield self._skip_report()
            elif self._state == "headers":
                if not self._in_block:  # the usual block, one header: read in one match
                    m = _PLAIN_HEADERS.match(self._buf, self._pos)
                    if m is not None and int(m.group(1)) <= self.max_message_bytes:
                        self._pos = m.end()
                        self._first_line = False
                        self._state, self._need = "body", int(m.group(1))
                        continue
                step = self._header_line()
                if step is None:
                    return
                if isinstance(step, Frame):
                    yield step
            else:
                return

    def close(self) -> str | None:
        """At the end of the stream: why it ended in the middle of a frame, or None.

        Runtime complexity: ``O(1)``.
        """
        left = len(self._buf) - self._pos
        if self._state == "body":
            return (f"the input ended in the middle of a message: {left} of its "
                    f"{self._need} bytes came")
        if self._state == "resync" and self._skipped + left:
            return (f"the input ended while skipping {self._skipped + left} bytes that are "
                    "not LSP messages")
        if self._state == "headers" and (self._in_block or self._buf[self._pos :].strip()):
            return "the input ended in the middle of a message header"
        return None

    def _header_line(self) -> Frame | bool | None:
        """Read one header line: a Frame to report, True to go on, None to wait for bytes."""
        end = self._buf.find(b"\n", self._pos, self._pos + _MAX_HEADER_LINE)
        if end < 0:
            if len(self._buf) - self._pos < _MAX_HEADER_LINE:
                return None
            return self._not_a_header(bytes(self._buf[self._pos : self._pos + _PREVIEW]))
        line = bytes(self._buf[self._pos : end + 1])
        if line in (b"\r\n", b"\n"):
            self._pos = end + 1
            return self._end_of_headers() if self._in_block else True  # a stray blank line
        m = _HEADER_LINE.fullmatch(line)
        if m is None and not line.endswith(b"\r\n"):  # a header ended by a bare \n
            m = _HEADER_LINE.fullmatch(line[:-1] + b"\r\n")
            if m is not None:
                self._problem = self._problem or r"header lines must end with \r\n"
        if m is None:
            return self._not_a_header(line)
        self._pos = end + 1
        self._first_line = False
        self._in_block = True
        name, value = m.group(1).lower(), m.group(2)
        if name == b"content-length":
            if self._length_seen:
                self._length, self._problem = None, "Content-Length given twice"
            else:
                self._length_seen = True
                self._length, problem = self._parse_length(value)
                self._problem = self._problem or problem
        elif name != b"content-type" and self._problem is None:
            self._problem = (f"unknown header {m.group(1).decode('latin-1')!r} (LSP headers "
                             "are Content-Length and Content-Type)")
        return True

    def _parse_length(self, value: bytes) -> tuple[int | None, str | None]:
        if not _DIGITS.fullmatch(value):
            return None, f"Content-Length {value.decode('latin-1')!r} is not a number of bytes"
        if int(value) > self.max_message_bytes:
            return None, (f"Content-Length {int(value)} is over the limit of "
                          f"{self.max_message_bytes} bytes (livetok serve --max-message-size)")
        return int(value), None

    def _end_of_headers(self) -> Frame | bool:
        if self._length is None:  # no usable length: the body's end is unknown
            reason = self._problem or "a message needs a Content-Length header"
            self._new_header_block()
            self._state = "resync"
            return Frame("error", b"", reason)
        self._state, self._need = "body", self._length
        return True

    def _not_a_header(self, line: bytes) -> Frame | bool:
        """A line that is no header where one should be: foreign at the start of a strict
        stream, else skipped up to the next Content-Length header."""
        preview = line[:_PREVIEW]
        if self._strict_start and self._first_line:
            self._state = "closed"
            return Frame("foreign", preview,
                         f"the stream does not start with an LSP header: {preview!r}")
        was_in_block = self._in_block
        self._new_header_block()
        self._state = "resync"
        if was_in_block:  # a frame was under way: answer it
            return Frame("error", b"", f"a header line is not an LSP header: {preview!r}")
        return True

    def _resync(self) -> bool:
        """Drop bytes up to the next Content-Length header; False when it is not there yet."""
        m = _NEXT_LENGTH.search(self._buf, self._pos)
        stop = m.start() if m else max(self._pos, len(self._buf) - _MAX_HEADER_LINE)
        if stop > self._pos:
            if not self._skipped:
                self._skipped_start = bytes(self._buf[self._pos : min(stop, self._pos + _PREVIEW)])
            self._skipped += stop - self._pos
            self._pos = stop
        if m is None:
            return False
        self._state = "headers"
        return True

    def _skip_report(self) -> Frame:
        frame = Frame("skipped", self._skipped_start,
                      f"skipped {self._skipped} bytes that are not an LSP message, up to the "
                      f"next Content-Length header; they start with {self._skipped_start!r}")
        self._skipped, self._skipped_start = 0, b""
        return frame
