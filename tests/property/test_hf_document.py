"""Document edits with the tokenizer.json encodings equal a full HuggingFace encode.

The state machine of ``test_document.py`` (inserts, deletes, replaces, pastes) runs on a
:class:`Document` of each family's real file (byte-level: Llama 3, Qwen 3 with NFC, DeepSeek V3
with its three Splits and normalized added tokens; Gemma 3, Llama 2, XLM-R, BERT), with
fragments of the file's added tokens among the text typed; after every edit the ids equal
``Tokenizer.encode(text, add_special_tokens=False).ids`` and ``Document._check()`` holds. The
shared traces are replayed through a Llama 3 or a Gemma 3 document (their first transactions,
two traces with each file, by default; every trace in full with both under
``LIVETOK_SLOW=1``), and edits that make or break an added token
(typing the last ``>`` of ``<think>``) are checked one by one.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from livetok.incremental import Document

from .._hf_encodings import encoding, hf_ids, params
from .._traces import TRACE_NAMES, apply, load_txns
from ..conftest import EXAMPLES, slow_except
from .test_document import ATOMS, DocumentMachine

pytest.importorskip("tokenizers")

SLOW = os.environ.get("LIVETOK_SLOW") == "1"

ADDED = ["<think>", "<think", ">", "</think>", "<|im_start|>", "<|endoftext|>", "<unused12>",
         "<unused", "12>", "</s>", "<s>", "<s", "s>", "<mask>", "[MASK]", "[SEP]", "\n\n\n",
         "\t\t", "▁▁", "<｜User｜>", "<｜User", "｜>", "<|begin_of_text|>", "<|eot_id|>"]
HF_ATOMS = ATOMS + ADDED + ["e\u0301", "A\u030a", "\uac00\u11a8", "İ", "'LL", "  \n ", "42"]
LONG = ["中文字符测试" * 12, " " * 70, "x" * 90, "😀🎉" * 30, "1234567890" * 8, "\n" * 40,
        "thequickbrownfox" * 6]
FRAGMENT = st.lists(st.sampled_from(HF_ATOMS), max_size=10).map("".join) | st.sampled_from(LONG)
PASTE = st.lists(FRAGMENT, max_size=20).map("".join)


class _HFRef:
    """``encode_ordinary`` as HuggingFace's encode (the interface ``DocumentMachine`` asks)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def encode_ordinary(self, text: str) -> list[int]:
        return hf_ids(self.name, text)


class HFDocumentMachine(DocumentMachine):
    """``DocumentMachine`` on a tokenizer.json encoding, against HuggingFace."""

    file = "llama3"

    @initialize(text=PASTE)
    def start(self, text):  # type: ignore[override]
        self.doc = Document(text, encoding=encoding(self.file), load=self.load)
        self.text = text
        self.ref = _HFRef(self.file)

    @rule(data=st.data(), ins=FRAGMENT)
    def insert_added(self, data, ins):
        """Type text with added tokens and fragments of them."""
        p = self._pos(data)
        self.doc.edit(p, p, ins)
        self.text = self.text[:p] + ins + self.text[p:]


def _machine(name: str):
    cls = type(f"HF_{name}", (HFDocumentMachine,), {"file": name})
    return settings(max_examples=min(EXAMPLES, 6), stateful_step_count=12)(cls)


@pytest.mark.parametrize("name", params(["llama3", "qwen3", "deepseek_v3", "gemma3", "llama2",
                                         "xlmr", "bert", "gpt4o", "mistral_nemo"]))
def test_document_edits_are_exact(name: str) -> None:
    encoding(name)  # skips when the file is missing, before hypothesis starts
    _machine(name).TestCase("runTest").runTest()


@pytest.mark.parametrize("name, text, edits", [
    # typing the last ">" makes the token, deleting "<" breaks it again
    ("qwen3", "a <think", [(8, 8, ">"), (2, 3, ""), (2, 2, "<"), (9, 9, "x")]),
    ("qwen3", "x</think", [(8, 8, ">"), (1, 2, "")]),
    ("gemma3", "ab<unused1 z", [(10, 10, "2>"), (2, 3, ""), (2, 2, "<")]),
    ("gemma3", "line\n\nline", [(5, 5, "\n"), (4, 6, "")]),
    ("llama2", "</s x y", [(3, 3, ">"), (0, 1, ""), (0, 0, "<")]),
    ("llama2", "a <s>b", [(4, 5, ""), (4, 4, ">"), (5, 5, " ")]),
    ("deepseek_v3", "hi <｜User", [(8, 8, "｜>"), (3, 4, "")]),
    ("xlmr", "x <mask y", [(7, 7, ">"), (2, 3, "")]),
    ("llama3", "<|eot_id|", [(9, 9, ">"), (0, 1, "")]),
    ("bert", "a [MASK b", [(7, 7, "]"), (2, 3, "")]),
])
def test_edits_that_make_or_break_an_added_token(name, text, edits) -> None:
    enc = encoding(name)
    doc = Document(text, encoding=enc)
    for a, b, new in edits:
        doc.edit(a, b, new)
        text = text[:a] + new + text[b:]
        assert doc.token_ids() == hf_ids(name, text), (name, text)
        doc._check()


#: transactions of each trace replayed by default (all of them under LIVETOK_SLOW=1)
PREFIX = 400


# each trace with one of the two files by default (two traces each), both under slow
@pytest.mark.parametrize(("trace", "name"), slow_except(
    [(t, n) for t in TRACE_NAMES for n in ["llama3", "gemma3"]],
    {(t, ["llama3", "gemma3"][i % 2]) for i, t in enumerate(TRACE_NAMES)}))
def test_traces_replay_exactly(name: str, trace: str) -> None:
    enc = encoding(name)
    start, txns = load_txns(trace)
    if not SLOW:
        txns = txns[:PREFIX]
    doc = Document(start, encoding=enc)
    text = start
    every = max(1, len(txns) // 8)
    for k, txn in enumerate(txns, 1):
        for pos, ndel, ins in txn:
            doc.edit(pos, pos + ndel, ins)
        text = apply(text, txn)
        if k % every == 0:
            assert doc.token_ids() == hf_ids(name, text), f"{trace}: after transaction {k}"
    assert doc.text == text
    assert doc.token_ids() == hf_ids(name, text)
    doc._check()
