"""``server/lsp/region.py``: a batch's changes gathered into one replacement must read and
replace exactly as applying the changes one by one to a string does (seeded)."""

from __future__ import annotations

import random

from livetok.server.lsp.region import EditRegion


def test_random_changes_match_a_string() -> None:
    rng = random.Random(20261207)
    for _ in range(2000):
        base = "".join(rng.choice("abc d\n😀") for _ in range(rng.randint(0, 200)))
        text = base
        region = None
        for _ in range(rng.randint(1, 25)):
            start = rng.randint(0, len(text))
            end = min(len(text), start + rng.choice([0, 0, 1, 3, 40]))
            new = rng.choice(["", "x", "yz", "\n", "😀", "hello " * rng.randint(0, 3)])
            if region is None:
                region = EditRegion(lambda a, b: base[a:b], start, end, new)
            else:
                region.replace(start, end, new)
            text = text[:start] + new + text[end:]
            a = rng.randint(0, len(text))
            b = rng.randint(a, len(text))
            assert region.read(a, b) == text[a:b]
            lo, hi, replacement = region.replacement()
            assert base[:lo] + replacement + base[hi:] == text
            assert region.end() == lo + len(replacement)


def test_near_means_within_the_gap_bound() -> None:
    region = EditRegion(lambda a, b: "", 5000, 5000, "x")
    assert region.near(5001 + 1024, 5001 + 1024) and region.near(5000 - 1024, 5000 - 1024)
    assert not region.near(5001 + 1025, 5001 + 1025)
    assert not region.near(5000 - 1025 - 1, 5000 - 1025)
