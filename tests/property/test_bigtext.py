"""A big didOpen's text decoded in blocks (``server/lsp/bigtext.py``): the blocks join to what
``json.loads`` gives, the rest of the message is the same, and whatever the module is not sure
of is left to ``json.loads``."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.server.lsp import bigtext
from livetok.server.lsp.lineindex import LineIndex, naive_lines

EXAMPLES = int(os.environ.get("LIVETOK_EXAMPLES", "200"))

# lines of text with what JSON escapes (quotes, backslashes, control characters, astral
# characters written as surrogate pairs) and what it does not (CJK, combining marks)
_TEXT = st.lists(st.lists(st.sampled_from(
    list("ab \t\"\\/é中😀\u0301\u2028\r\x00\ud800") + ["\\n", "\\\\n", "\n"]), max_size=12)
    .map("".join), max_size=30).map("\n".join)


def _body(text: str, *, ensure_ascii: bool, text_first: bool) -> bytes:
    td = {"text": text, "uri": "file:///t", "languageId": "python", "version": 3} if text_first \
        else {"uri": "file:///t", "languageId": "python", "version": 3, "text": text}
    msg = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": td}}
    return json.dumps(msg, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")


@settings(max_examples=EXAMPLES, deadline=None)
@given(_TEXT, st.booleans(), st.booleans(), st.integers(1, 40))
def test_blocks_join_to_what_json_loads_gives(text, ensure_ascii, text_first, block):
    body = _body(text, ensure_ascii=ensure_ascii, text_first=text_first)
    old = bigtext.BLOCK_BYTES
    bigtext.BLOCK_BYTES = block
    try:
        try:
            want = json.loads(body)
        except ValueError:
            want = None
        got = bigtext.split_text_member(body)
    finally:
        bigtext.BLOCK_BYTES = old
    if want is None:  # not JSON (a lone surrogate written raw): json.loads reports it
        if got is not None:  # a text decoded later (the body's last member) says so then
            with pytest.raises(ValueError):
                got[1].take()
        return
    assert got is not None
    message, text_parts = got
    assert len(text_parts) >= len(want["params"]["textDocument"]["text"])
    blocks = text_parts.take()
    assert "".join(blocks) == want["params"]["textDocument"]["text"]
    want["params"]["textDocument"]["text"] = bigtext.PLACEHOLDER
    assert message == want
    LineIndex.from_parts(list(blocks))._check("".join(blocks))


def test_other_messages_and_lookalikes_are_left_to_json_loads():
    change = {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": "file:///t", "version": 2},
        "contentChanges": [{"text": "a\nb\n"}]}}
    assert bigtext.split_text_member(json.dumps(change).encode()) is None
    # a "text" member that is not the document's text
    odd = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "note": {"text": "x\ny\n"}, "textDocument": {"uri": "file:///t", "text": "z\n"}}}
    assert bigtext.split_text_member(json.dumps(odd).encode()) is None
    assert bigtext.split_text_member(b'{"method": "textDocument/didOpen", "text": "a\\n') is None


def test_text_parts_size_and_take():
    parts = bigtext.TextParts(["ab\n", "c😀"])
    assert len(parts) == 5 and str.__len__(parts) == 0
    assert parts.take() == ["ab\n", "c😀"] and parts.parts == [] and parts.take() == []


def test_the_last_member_is_decoded_later():
    """A body whose text is its last member (VS Code's order) is split without reading the
    text: the message is decoded, the text only when taken."""
    text = "x = 1\n" * 10 + "é😀\n"
    body = _body(text, ensure_ascii=False, text_first=False)
    message, parts = bigtext.split_text_member(body)
    assert parts._raw is not None and message["params"]["textDocument"]["version"] == 3
    assert "".join(parts.take()) == text and parts._raw is None
    bad = body.replace(b"x = 1", b'x = "', 1)  # a raw quote ends the string early
    message, parts = bigtext.split_text_member(bad)
    with pytest.raises(ValueError):
        parts.take()


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab\r\n")), max_size=8), max_size=8))
def test_line_index_from_parts_equals_the_joined_text(parts):
    text = "".join(parts)
    index = LineIndex.from_parts(list(parts))
    index._check(text)
    assert [(s.start_cp, s.end_cp) for s in index.lines()] == \
        [(s.start_cp, s.end_cp) for s in LineIndex(text).lines()]
    assert naive_lines(text)  # the reference has at least the last line


def test_module_examples():
    import doctest

    assert doctest.testmod(bigtext).failed == 0
