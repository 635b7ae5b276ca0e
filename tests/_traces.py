"""The shared editing traces (``../shared/traces``) for tests: load one as transactions, and
cut it into a bounded replay that keeps what makes the trace what it is.

A default run cannot replay every trace in full through every path (``seph-blog1`` alone is
137,000 transactions); ``landmarks`` finds the edits a prefix would never reach (the trace's
own non-ASCII text, its pastes, multi-patch and multi-line edits) and ``trace_windows`` gives
a window of transactions around each, with the text the trace had there.
"""

from __future__ import annotations

import functools
import gzip
import json

import pytest

from .conftest import TRACES

TRACE_NAMES = ["sveltecomponent", "rustcode", "seph-blog1", "friendsforever_flat"]
#: transactions replayed around each landmark of a trace
WINDOW = 200

Patch = tuple[int, int, str]
Txn = list[Patch]


def load_txns(name: str) -> tuple[str, list[Txn]]:
    """The start text and the transactions of trace ``name`` (a new list of new transactions
    each call, read once per process); skips when it is absent."""
    start, txns = _read(name)
    return start, [list(t) for t in txns]


@functools.lru_cache(maxsize=None)
def _read(name: str) -> tuple[str, tuple[tuple[Patch, ...], ...]]:
    path = TRACES / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"shared trace {path} is absent (tests read ../shared/traces/)")
    data = json.loads(gzip.decompress(path.read_bytes()))
    return data["startContent"], tuple(tuple(tuple(p) for p in t["patches"]) for t in data["txns"])


def apply(text: str, txn: Txn) -> str:
    """``text`` after the patches ``(pos, n_deleted, inserted)`` of ``txn``, in order."""
    for pos, n_del, ins in txn:
        text = text[:pos] + ins + text[pos + n_del:]
    return text


def landmarks(start: str, txns: list[Txn]) -> dict[str, int]:
    """The transaction where a trace first does each kind of edit that a prefix may never
    reach: several patches at once, a delete across a line break, non-ASCII text; and its
    biggest insert (a paste), biggest delete and insert of the most lines."""
    found: dict[str, int] = {}
    best = {"biggest insert": (0, -1), "biggest delete": (0, -1), "most lines inserted": (0, -1)}
    text = start
    for i, txn in enumerate(txns):
        if len(txn) > 1:
            found.setdefault("several patches", i)
        for pos, n_del, ins in txn:
            if "\n" in text[pos:pos + n_del]:
                found.setdefault("delete across lines", i)
            if not (ins + text[pos:pos + n_del]).isascii():
                found.setdefault("non-ASCII", i)
            for key, size in (("biggest insert", len(ins)), ("biggest delete", n_del),
                              ("most lines inserted", ins.count("\n"))):
                if size > best[key][0]:
                    best[key] = (size, i)
            text = text[:pos] + ins + text[pos + n_del:]
    return found | {key: i for key, (_, i) in best.items() if i >= 0}


def trace_windows(start: str, txns: list[Txn], window: int = WINDOW) -> list[tuple[str, list[Txn]]]:
    """(text before, transactions) of the windows of ``window`` transactions around each
    landmark, overlapping ones merged."""
    spans: list[list[int]] = []
    for i in sorted(set(landmarks(start, txns).values())):
        a, b = max(0, i - window // 4), min(len(txns), i - window // 4 + window)
        if spans and a <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], b)
        else:
            spans.append([a, b])
    out, text, done = [], start, 0
    for a, b in spans:
        for txn in txns[done:a]:
            text = apply(text, txn)
        out.append((text, txns[a:b]))
        for txn in txns[a:b]:
            text = apply(text, txn)
        done = b
    return out


@functools.lru_cache(maxsize=None)
def named_trace_windows(name: str) -> tuple[tuple[str, tuple[Txn, ...]], ...]:
    """``trace_windows`` of trace ``name`` as ``load_txns`` reads it, computed once per process
    (the landmarks of ``seph-blog1`` take ~0.6 s); read-only."""
    start, txns = load_txns(name)
    return tuple((text, tuple(part)) for text, part in trace_windows(start, txns))
