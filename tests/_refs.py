"""Reference encoders and corpora for tests (imported by test modules)."""

from __future__ import annotations

import functools

import tiktoken

from livetok.incremental import get_encoding
from livetok.incremental.samples.corpora import stdlib_text

#: ``real_text(n)``: the first ``n`` code points of the standard library's text, the corpus the
#: benchmarks read too (``livetok.incremental.samples.corpora``)
real_text = stdlib_text

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
