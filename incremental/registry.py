"""Names of the encodings livetok knows, and how each is built offline.

>>> from livetok.incremental import list_encodings
>>> "o200k_base" in list_encodings()
True
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

from .encoding import Encoding
from .load import VocabularyError, find_vocabulary, load_gpt2_files, load_tiktoken_file
from .pretokenize import PATTERNS

__all__ = ["get_encoding", "list_encodings", "register_encoding", "ALIASES"]

_SPECIALS: dict[str, dict[str, int]] = {
    "r50k_base": {"<|endoftext|>": 50256},
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}

#: other names users type for the same encodings
ALIASES = {"gpt2": "r50k_base", "gpt-4o": "o200k_base", "gpt-4": "cl100k_base"}


def _tiktoken_style(name: str) -> Callable[[], Any]:
    def build() -> Encoding:
        ranks, source = find_vocabulary(name)
        return Encoding(
            name,
            pat_str=PATTERNS[name],
            mergeable_ranks=ranks,
            special_tokens=_SPECIALS[name],
            source=source,
        )

    return build


def _bert() -> Any:
    from .wordpiece import load_bert_uncased  # optional module (issue: Fast WordPiece)

    return load_bert_uncased()


def _mistral() -> Any:
    from .sentencepiece_bpe import load_mistral_v1  # optional module (issue: SentencePiece)

    return load_mistral_v1()


_FACTORIES: dict[str, Callable[[], Any]] = {
    "o200k_base": _tiktoken_style("o200k_base"),
    "cl100k_base": _tiktoken_style("cl100k_base"),
    "r50k_base": _tiktoken_style("r50k_base"),
    "bert-base-uncased": _bert,
    "mistral-7b-v0.1": _mistral,
}
_LOADED: dict[str, Any] = {}
_LOCK = threading.Lock()
#: one lock per name being loaded: a second caller (the language server's preload thread and
#: its first didOpen) waits for the first load instead of building the vocabulary again
_LOADING: dict[str, threading.Lock] = {}


def register_encoding(name: str, factory: Callable[[], Any]) -> None:
    """Make ``get_encoding(name)`` build its encoding with ``factory()`` (lazily, once)."""
    with _LOCK:
        _FACTORIES[name] = factory
        _LOADED.pop(name, None)


def list_encodings() -> list[str]:
    """Names :func:`get_encoding` accepts (aliases not included)."""
    return sorted(_FACTORIES)


def get_encoding(name: str, *, path: str | os.PathLike[str] | None = None) -> Any:
    """The encoding called ``name``, loaded once and cached; offline.

    With ``path``, the vocabulary is read from that file instead: a ``.tiktoken`` file, or a
    GPT-2 ``encoder.json`` (its ``vocab.bpe`` beside it is checked when present); ``name`` then
    picks the pre-tokenizer pattern.

    >>> get_encoding("gpt2").name
    'r50k_base'

    Runtime complexity: ``O(vocabulary)`` the first time, ``O(1)`` after.
    """
    if not isinstance(name, str):
        raise TypeError(f"encoding name must be a str, not {type(name).__name__}")
    canonical = ALIASES.get(name, name)
    if path is not None:
        if canonical == "bert-base-uncased":
            from .wordpiece import load_wordpiece

            return load_wordpiece(os.fspath(path))
        if canonical == "mistral-7b-v0.1":
            from .sentencepiece_bpe import load_sentencepiece

            return load_sentencepiece(os.fspath(path))
        if canonical not in PATTERNS:
            raise VocabularyError(
                f"a vocabulary file needs a known pre-tokenizer; pick one of {sorted(PATTERNS)}"
            )
        p = os.fspath(path)
        if p.endswith(".json"):
            bpe = os.path.join(os.path.dirname(p), "vocab.bpe")
            ranks = load_gpt2_files(p, bpe if os.path.exists(bpe) else None)
        else:
            ranks = load_tiktoken_file(p)
        return Encoding(
            canonical,
            pat_str=PATTERNS[canonical],
            mergeable_ranks=ranks,
            special_tokens=_SPECIALS.get(canonical, {}),
            source=p,
        )
    with _LOCK:
        enc = _LOADED.get(canonical)
        if enc is not None:
            return enc
        factory = _FACTORIES.get(canonical)
        loading = _LOADING.setdefault(canonical, threading.Lock())
    if factory is None:
        raise ValueError(
            f"unknown encoding {name!r}; available: {', '.join(list_encodings())} "
            f"(aliases: {', '.join(sorted(ALIASES))})"
        )
    with loading:
        with _LOCK:
            enc = _LOADED.get(canonical)
        if enc is not None:
            return enc  # loaded by the caller we waited for
        try:
            enc = factory()
        except ImportError as exc:
            raise VocabularyError(f"encoding {canonical!r} is not available here: {exc}") from exc
        with _LOCK:
            return _LOADED.setdefault(canonical, enc)
