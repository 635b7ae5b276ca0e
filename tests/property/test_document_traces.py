"""Replay the real keystroke traces of ../shared/traces into documents.

In CI every trace is verified against tiktoken every 50 edits and at the end, for o200k_base
and cl100k_base. ``LIVETOK_VERIFY_EVERY=1`` verifies after every edit (on demand: slow).
"""

from __future__ import annotations

import os

import pytest

from livetok.incremental import Document
from livetok.server.traces import load_trace

from .._refs import tiktoken_ref
from ..conftest import TRACES

TRACE_FILES = sorted(TRACES.glob("*.json.gz")) if TRACES.is_dir() else []
EVERY = int(os.environ.get("LIVETOK_VERIFY_EVERY", "50"))


def test_traces_are_present():
    if not TRACES.is_dir():
        pytest.skip(f"no shared traces folder at {TRACES} (clone livetok beside shared/)")
    assert len(TRACE_FILES) == 4


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("path", TRACE_FILES, ids=[p.name.split(".")[0] for p in TRACE_FILES])
def test_trace_replay_is_exact(path, name):
    trace = load_trace(path)
    ref = tiktoken_ref(name)
    doc = Document(trace.start, encoding=name)
    text = trace.start
    for k, (pos, ndel, ins) in enumerate(trace.patches, 1):
        doc.edit(pos, pos + ndel, ins)
        text = text[:pos] + ins + text[pos + ndel :]
        if k % EVERY == 0:
            assert doc.token_ids() == ref.encode_ordinary(text), f"after edit {k}"
    assert text == trace.end
    assert doc.text == trace.end
    assert doc.token_ids() == ref.encode_ordinary(trace.end)
    doc._check()
