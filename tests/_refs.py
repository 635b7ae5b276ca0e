"""Reference encoders and corpora for tests (imported by test modules)."""

from __future__ import annotations

import functools
import sysconfig
from pathlib import Path

import tiktoken

from livetok.incremental import get_encoding

BPE_NAMES = ["o200k_base", "cl100k_base", "r50k_base"]


@functools.lru_cache(maxsize=None)
def tiktoken_ref(name: str) -> tiktoken.Encoding:
    """tiktoken built offline from the same vocabulary (``get_encoding`` would download)."""
    enc = get_encoding(name)
    return tiktoken.Encoding(
        f"ref_{name}",
        pat_str=enc.pat_str,
        mergeable_ranks=enc.mergeable_ranks,
        special_tokens=enc.special_tokens,
    )


@functools.lru_cache(maxsize=None)
def real_text(min_chars: int) -> str:
    """At least ``min_chars`` of real text: the standard library's sources, sorted, then its
    ``.txt``/``.rst`` docs and test data with non-ASCII text."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(root.rglob("*.py")) + sorted(root.rglob("*.txt"))
    parts: list[str] = []
    total = 0
    for p in files:
        if "site-packages" in p.parts:
            continue
        try:
            t = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(t)
        total += len(t)
        if total >= min_chars:
            break
    return "".join(parts)
