"""HuggingFace ``tokenizer.json`` pipelines (Llama 3, Qwen 3, DeepSeek V3, gpt-oss, Tekken,
Gemma, Llama 2, BERT, XLM-R, ...): one reader that builds a livetok encoding from the file's
own normalizer, pre-tokenizer, model and added tokens.

``hf`` composes the families: it may import the core and the tokenizer families
(``bytelevel``, ``wordpiece``, ``sentencepiece``) to reuse their algorithms, and no family
imports it (``tests/unit/test_layout.py``). ``normalizers``, ``pretokenizers``, ``models`` and
``decoders`` mirror the file's sections; ``added`` splits the text on added tokens;
``encoding`` puts them behind the shared ``PieceEncoding`` protocol; ``reader`` reads the file
and says what it does not implement.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..piece_encoding import PieceEncoding

__all__ = ["load_tokenizer_json", "tokenizer_from_dict"]


def load_tokenizer_json(path: str | os.PathLike[str], *, name: str | None = None) -> PieceEncoding:
    """The encoding of the ``tokenizer.json`` at ``path`` (:func:`.reader.load_tokenizer_json`;
    imported on first use, so ``import livetok.incremental.hf`` stays cheap)."""
    from .reader import load_tokenizer_json as load

    return load(path, name=name)


def tokenizer_from_dict(data: dict[str, Any], *, name: str, source: str,
                        byte_level_family: bool = True) -> PieceEncoding:
    """The encoding of a parsed ``tokenizer.json`` (:func:`.reader.tokenizer_from_dict`)."""
    from .reader import tokenizer_from_dict as build

    return build(data, name=name, source=source, byte_level_family=byte_level_family)
