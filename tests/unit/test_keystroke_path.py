"""The keystroke's short cuts say what the general path says: a read that is one whole frame
(``Framer.whole``, ``transport.take``) is handled as ``feed`` and ``pump`` handle it, and a
count written from its text (``publishing.count_message``) is the ``json.dumps`` of the
notification the general path builds (``views.token_count``)."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental import get_encoding
from livetok.server.lsp import views
from livetok.server.lsp.documents import OpenDocument, TextChange
from livetok.server.lsp.framing import Framer
from livetok.server.lsp.protocol import DID_CHANGE_TOKEN_COUNT
from livetok.server.lsp.publishing import count_message
from livetok.server.lsp.session import LivetokServer, create_server
from livetok.server.lsp.transport import pump, take

TEXT = "naïve café 😀 東京\nsecond line here\n\nfourth, last\n"


def _framed(msg: dict[str, Any] | bytes) -> bytes:
    body = msg if isinstance(msg, bytes) else json.dumps(msg).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


# -- Framer.whole ----------------------------------------------------------------------------


def test_whole_takes_exactly_one_plain_frame() -> None:
    frame = _framed({"jsonrpc": "2.0", "method": "x"})
    body = frame.partition(b"\r\n\r\n")[2]
    assert Framer().whole(frame) == body
    assert Framer().whole(frame.replace(b"Content-Length: ", b"content-length:")) == body
    for other in (frame[:-1], frame + b"C", frame + frame,  # part of one, more than one
                  b"Content-Type: x\r\n" + frame,  # another header: the general reader's
                  b"Content-Length: 02\r\n\r\n{}"[:-1]):
        assert Framer().whole(other) is None, other
    assert Framer(max_message_bytes=len(body) - 1).whole(frame) is None  # over the limit


def test_whole_takes_nothing_while_a_frame_is_under_way() -> None:
    frame = _framed({"jsonrpc": "2.0", "method": "x"})
    f = Framer()
    assert f.whole(frame[:5]) is None
    f.feed(frame[:5])  # bytes wait in the buffer: the next read is not a frame of its own
    assert f.whole(frame[5:]) is None
    f.feed(frame[5:])
    assert [fr.body for fr in f.frames()] == [frame.partition(b"\r\n\r\n")[2]]
    assert f.whole(frame) is not None  # the buffer is empty again


# -- take = feed + pump ----------------------------------------------------------------------


class _Bytes:
    """A writer keeping the bytes written."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        pass


_SESSIONS: list[tuple[LivetokServer, _Bytes]] = []


def _sessions() -> list[tuple[LivetokServer, _Bytes]]:
    """Two initialized servers, made once (each example opens documents of its own)."""
    if not _SESSIONS:
        for _ in range(2):
            server = create_server()
            out = _Bytes()
            server.protocol.set_writer(out)
            f = Framer()
            f.feed(_framed({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"capabilities": {}}})
                   + _framed({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            assert pump(f, server.protocol, "test")
            _SESSIONS.append((server, out))
    return _SESSIONS


def _stream(rnd: random.Random, uri: str) -> list[bytes]:
    """Framed messages: a didOpen, keystrokes (some refused by the converter), requests, and
    frames the reader must answer or skip."""
    frames = [_framed({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "plaintext", "version": 1, "text": TEXT}}})]
    lines = TEXT.split("\n")
    version = 1
    for _ in range(rnd.randrange(5, 30)):
        kind = rnd.random()
        version += rnd.choice([1, 1, 1, 2, 0])  # 0: a version that does not increase
        changes = []
        for _ in range(rnd.choice([1, 1, 1, 2])):  # two changes: the general way
            line = rnd.randrange(len(lines))
            col = rnd.randrange(len(lines[line]) + 2)
            end_line = rnd.choice([line, line, line, min(line + 1, len(lines) - 1)])
            end_col = rnd.choice([col, col, col + 1, max(col - 2, 0)])  # some reversed
            changes.append({"range": {"start": {"line": line, "character": col},
                                      "end": {"line": end_line, "character": end_col}},
                            "text": rnd.choice(["x", "\n", "😀", "", "ab", "\r\n", "é\r"])})
        params: dict[str, Any] = {"textDocument": {"uri": uri, "version": version},
                                  "contentChanges": changes}
        if kind < 0.05:
            params["contentChanges"][0]["text"] = None  # refused: out of sync
        elif kind < 0.1:
            frames.append(b"Content-Length: x\r\n\r\n{}")  # a bad frame: an error answer
            continue
        elif kind < 0.15:
            frames.append(_framed(b'{"jsonrpc": "2.0", "id": 5, "method": "livetok/tokenCount"'))
            continue
        elif kind < 0.25:
            frames.append(_framed({"jsonrpc": "2.0", "id": 100 + version,
                                   "method": "livetok/tokenCount",
                                   "params": {"textDocument": {"uri": uri}}}))
            continue
        frames.append(_framed({"jsonrpc": "2.0", "method": "textDocument/didChange",
                               "params": params}))
    return frames


@given(st.randoms(use_true_random=False))
def test_take_handles_a_read_as_feed_and_pump_do(rnd: random.Random) -> None:
    """The same reads (whole frames, parts of one, several at once) handed to ``take`` and to
    ``feed`` + ``pump``: the same bytes written, the same document."""
    uri = f"file:///a{rnd.getrandbits(64)}.txt"
    stream = b"".join(_stream(rnd, uri))
    cuts: list[bytes] = []
    i = 0
    while i < len(stream):
        if rnd.random() < 0.6:  # up to the end of the next frame: a read of one message
            nxt = stream.find(b"Content-Length", i + 1)
            j = len(stream) if nxt < 0 else nxt
        else:
            j = min(len(stream), i + rnd.randrange(1, 400))
        cuts.append(stream[i:j])
        i = j
    (fast, fast_out), (slow, slow_out) = _sessions()
    fast_out.data.clear()
    slow_out.data.clear()
    fast_framer, slow_framer = Framer(), Framer()
    for data in cuts:
        assert take(fast_framer, fast.protocol, "test", data)
        slow_framer.feed(data)
        assert pump(slow_framer, slow.protocol, "test")
    assert bytes(fast_out.data) == bytes(slow_out.data)
    a, b = fast.store.get(uri), slow.store.get(uri)
    assert a.text() == b.text() and a.token_count == b.token_count
    assert a.out_of_sync == b.out_of_sync


# -- count_message ---------------------------------------------------------------------------


@given(st.text(max_size=40), st.integers(-(1 << 31), (1 << 31) - 1))
def test_count_message_is_the_json_of_the_count(uri: str, version: int) -> None:
    enc = get_encoding("o200k_base")
    od = OpenDocument(uri, "plaintext", version, TEXT, enc)
    expected = json.dumps({"jsonrpc": "2.0", "method": DID_CHANGE_TOKEN_COUNT,
                           "params": views.token_count(od).to_json()})
    assert count_message(od) == expected
    od.apply([TextChange("more 😀", (1, 3, 1, 3))], version)
    assert count_message(od) == json.dumps({"jsonrpc": "2.0", "method": DID_CHANGE_TOKEN_COUNT,
                                            "params": views.token_count(od).to_json()})


def test_count_message_leaves_the_other_counts_to_the_general_path() -> None:
    enc = get_encoding("o200k_base")
    od = OpenDocument("file:///a.txt", "plaintext", 1, TEXT, enc)
    od.out_of_sync = "a didChange could not be decoded"
    assert count_message(od) is None  # views.token_count says why
    too_large = OpenDocument("file:///b.txt", "plaintext", 1, TEXT, enc, max_size=3)
    assert too_large.doc is None and count_message(too_large) is None
