"""Replay the real keystroke traces of ../shared/traces into documents.

Default run: a bounded replay of each trace with o200k_base or cl100k_base (two traces each;
every trace with both under ``LIVETOK_SLOW=1``): its first 4,000 transactions (10,000 under
``LIVETOK_SLOW=1``) and a window around each landmark of ``tests/_traces.py``, opened at the
text the trace had there, verified against tiktoken every 50 edits and at the end; the full
traces in both encodings on demand (``LIVETOK_SLOW=1``: ~30 s with o200k_base on an idle
2-core machine, ``seph-blog1`` alone 137,000 edits). ``LIVETOK_VERIFY_EVERY=1`` verifies after
every edit (slow).
"""

from __future__ import annotations

import os

import pytest

from livetok.incremental import Document, get_encoding
from livetok.server.cli.traces import load_trace

from .._refs import tiktoken_ref
from .._traces import TRACE_NAMES, Patch, load_txns, named_trace_windows
from ..conftest import SLOW, TRACES, slow_except

TRACE_FILES = sorted(TRACES.glob("*.json.gz")) if TRACES.is_dir() else []
EVERY = int(os.environ.get("LIVETOK_VERIFY_EVERY", "50"))
#: transactions of each trace replayed from its start by the bounded replay (10,000 under
#: LIVETOK_SLOW=1, beside the whole traces)
PREFIX = 10_000 if SLOW else 4_000


def test_traces_are_present():
    if not TRACES.is_dir():
        pytest.skip(f"no shared traces folder at {TRACES} (clone livetok beside shared/)")
    assert len(TRACE_FILES) == 4
    assert sorted(TRACE_NAMES) == sorted(p.name.split(".")[0] for p in TRACE_FILES)


def replay_exact(start: str, patches: list[Patch], name: str) -> Document:
    """``Document(start)`` after ``patches``, checked against tiktoken every ``EVERY`` edits
    and at the end."""
    ref = tiktoken_ref(name)
    doc = Document(start, encoding=get_encoding(name))
    text = start
    for k, (pos, ndel, ins) in enumerate(patches, 1):
        doc.edit(pos, pos + ndel, ins)
        text = text[:pos] + ins + text[pos + ndel :]
        if k % EVERY == 0:
            assert doc.token_ids() == ref.encode_ordinary(text), f"after edit {k}"
    assert doc.text == text
    assert doc.token_ids() == ref.encode_ordinary(text)
    doc._check()
    return doc


@pytest.mark.slow
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("path", TRACE_FILES, ids=[p.name.split(".")[0] for p in TRACE_FILES])
def test_trace_replay_is_exact(path, name):
    """LIVETOK_SLOW=1: each trace in full (the default run replays each bounded, in the same
    encodings, below)."""
    trace = load_trace(path)
    doc = replay_exact(trace.start, trace.patches, name)
    assert doc.text == trace.end


# each trace with one encoding by default (two with each), every pair under slow
@pytest.mark.parametrize(("trace", "name"), slow_except(
    [(t, n) for t in TRACE_NAMES for n in ["o200k_base", "cl100k_base"]],
    {("rustcode", "o200k_base"), ("seph-blog1", "o200k_base"),
     ("sveltecomponent", "cl100k_base"), ("friendsforever_flat", "cl100k_base")}))
def test_trace_prefix_and_landmarks_are_exact(trace, name):
    start, txns = load_txns(trace)
    replay_exact(start, [p for txn in txns[:PREFIX] for p in txn], name)
    for text, part in named_trace_windows(trace):
        replay_exact(text, [p for txn in part for p in txn], name)
