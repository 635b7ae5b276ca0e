"""Should the byte-level family's BPE run on the pair engine? (issue 36, item 3)

``bytelevel/bpe.py`` merges tiktoken ranks with loops keyed by ``bytes`` (a pair's key is one
concatenation); ``pairmerge.py`` runs the same loops over a pair-rule table keyed by ints
(``rules[a * M + b] = priority * M + new_id``). A tiktoken vocabulary compiles to such a table:
every split ``u + v`` of a token ``w`` into two tokens is a rule of priority ``rank(w)``
(ties are one token's splits, leftmost first in both). This script compiles o200k_base's and
cl100k_base's ranks that way, checks that both engines give the same ids on every piece, and
times them (``time.process_time``, the median of alternating rounds, caches bypassed: every
piece is merged from its bytes) on

* the distinct pieces of real text that are not themselves tokens (what a document's cache
  misses run: the standard library's text, as the other benchmarks);
* long pieces: a line of CJK letters, random ``ACGT``, one letter repeated.

Usage: ``.venv/bin/python benchmarks/bench_pair_engine.py [--chars N] [--rounds R]``; prints
a Markdown table (the numbers in ``docs/algorithms.md``, section 3).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from typing import Callable

from livetok.incremental import get_encoding
from livetok.incremental.bytelevel import bpe
from livetok.incremental.pairmerge import merge
from livetok.incremental.samples.corpora import stdlib_text

import _common as C


def pair_table(ranks: dict[bytes, int]) -> tuple[dict[int, int], int]:
    """The pair-rule table of tiktoken ``ranks``: ``(u, v) -> rank(u + v) * M + id(u + v)``
    for every token ``u + v`` and split of it into two tokens."""
    m = max(ranks.values()) + 1
    rules: dict[int, int] = {}
    for w, r in ranks.items():
        for k in range(1, len(w)):
            a = ranks.get(w[:k])
            b = ranks.get(w[k:])
            if a is not None and b is not None:
                key = a * m + b
                val = r * m + r
                if val < rules.get(key, val + 1):
                    rules[key] = val
    return rules, m


def _timed(fn: Callable[[bytes], list[int]], pieces: list[bytes]) -> float:
    t = time.process_time()
    for p in pieces:
        fn(p)
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", type=int, default=2_000_000, help="real text read (code points)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per row")
    args = ap.parse_args()
    rng = random.Random(36)
    text = stdlib_text(args.chars)
    rows = []
    print(f"load {os.getloadavg()}")
    for name in ("o200k_base", "cl100k_base"):
        enc = get_encoding(name)
        ranks = enc.mergeable_ranks
        t0 = time.process_time()
        rules, m = pair_table(ranks)
        build = time.process_time() - t0
        byte_ids = [ranks[bytes([b])] for b in range(256)]

        def by_pairs(data: bytes) -> list[int]:
            ids = list(map(byte_ids.__getitem__, data))
            merge(ids, rules, m)
            return ids

        def by_bytes(data: bytes) -> list[int]:
            return bpe.bpe_encode(data, ranks)

        distinct = {text[s:e].encode() for s, e in enc.split(text)}
        misses = sorted(p for p in distinct if p not in ranks)
        cases = {
            f"distinct pieces of real text, not tokens ({len(misses):,})": misses,
            "CJK letters, 64 KB (one piece)": [C.cjk_text(22_000).encode()[:65_536]],
            "random ACGT, 64 KB": ["".join(rng.choices("ACGT", k=65_536)).encode()],
            "one letter, 100,000": [b"a" * 100_000],
        }
        for label, pieces in cases.items():
            for p in pieces:  # the same ids (also warms both paths' memos)
                assert by_pairs(p) == by_bytes(p), (name, p[:40])
            tb, tp = [], []
            for _ in range(args.rounds):
                tb.append(_timed(by_bytes, pieces))
                tp.append(_timed(by_pairs, pieces))
            b, p = statistics.median(tb), statistics.median(tp)
            rows.append((name, label, b, p))
        print(f"{name}: pair table {len(rules):,} rules, built in {build:.2f} s CPU")
    print("\n| encoding | pieces | bytes keys (`bpe.py`) | pair table (`pairmerge`) | pair / bytes |")
    print("| :--- | :--- | ---: | ---: | ---: |")
    for name, label, b, p in rows:
        print(f"| `{name}` | {label} | {C.fmt_s(b)} | {C.fmt_s(p)} | {p / b:.2f}x |")
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
