"""The errors of the ``tokenizer.json`` reader."""

from __future__ import annotations

from ..vocab.readers import VocabularyError

__all__ = ["UnsupportedComponent", "UnboundedComponent"]


class UnsupportedComponent(VocabularyError):
    """A part of a ``tokenizer.json`` pipeline livetok does not implement (a normalizer,
    pre-tokenizer, model or option), named with the file it is in: never approximated."""


class UnboundedComponent(UnsupportedComponent):
    """A part of a ``tokenizer.json`` whose work livetok cannot bound, refused: a regex that
    can backtrack catastrophically, one past a size or time limit, a normalizer that would
    multiply the text, more added tokens than the limit. The one-line message names the file,
    the part, the limit and how to proceed (the environment variable that moves the limit;
    docs/tokenizer-json.md, "Limits")."""
