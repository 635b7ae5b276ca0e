"""The errors of the ``tokenizer.json`` reader."""

from __future__ import annotations

from ..load import VocabularyError

__all__ = ["UnsupportedComponent"]


class UnsupportedComponent(VocabularyError):
    """A part of a ``tokenizer.json`` pipeline livetok does not implement (a normalizer,
    pre-tokenizer, model or option), named with the file it is in: never approximated."""
