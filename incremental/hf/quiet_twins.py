"""Local boundaries for byte-level ``tokenizer.json`` files whose split pattern has a tiktoken
*twin* (issue 35): the :class:`~livetok.incremental.piece_encoding.QuietEncoding` capability of
:class:`.bytelevel_file.AddedTokenSplit` (and through it of Qwen 3's NFC wrapper,
:mod:`.bytelevel_nfc`), so that an edit deep inside a long letter or punctuation piece (a CJK
line, an emoji line, a run of one letter) stretches the piece (``Document._stretch``) instead
of re-splitting the line to its end.

**Twins** (:data:`QUIET_TWINS`): split patterns whose quiet runs are those of a tiktoken
pattern (:meth:`.pretokenize.Pretokenizer.quiet`: letter runs and punctuation runs that a
long piece holds throughout, whose boundaries an edit deep inside cannot move):

* Llama 3's is ``cl100k_base``'s with greedy quantifiers for possessive ones and
  ``\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`` for its white-space tail: a quiet run holds no white
  space, digit or apostrophe, and its alternative (``[^\\r\\n\\p{L}\\p{N}]?\\p{L}+`` or
  `` ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*``) takes the whole run with nothing after it to backtrack
  for; Qwen 3's is Llama 3's with ``\\p{N}`` for ``\\p{N}{1,3}`` (a digit is in no quiet run);
* gpt-oss's and GPT-4o's are ``o200k_base``'s; Mistral Nemo's (Tekken) is ``o200k_base``'s
  without the contraction suffixes and with ``\\p{N}`` (the quiet letters, ``[\\p{Lm}\\p{Lo}]``,
  are in both cased classes either way; a suffix starts with ``'``).

DeepSeek V3's compiled sequence of Splits has no twin (no stretch: every edit re-splits).

**Why the stretch is exact** (the capability's conditions, as ``Document._stretch`` uses them:
an edit ``2 M`` inside an old piece, ``quiet`` asked of the new text ``2 M`` around it and of
the old text there when the edit replaced some). ``M`` (:func:`twin_margin`) is the twin's
margin (or the derivation's base and slack, if larger) plus the longest added token and 4.
*Tokens*: the old piece lies inside a segment (a token is shorter than ``4 M``), and no token
match starts inside a segment (the leftmost-longest scan would have taken it); a token of the
new text that overlaps the edit starts less than the longest token before it, inside the quiet
text, which holds no token's first character: so the scan makes the same matches and the
segment holding the piece keeps its ends. *Regex*: inside that segment (a text of its own),
the twin's argument holds for the pattern: no boundary moves or appears near the edit, and no
earlier piece's match reads the edit (what its winning alternative and the ones tried before
it read; the derived horizon, an upper bound over every alternative, can say more: a
contraction ``'s`` before a letter run is bounded by the run's end).

``tests/unit/test_hf_bytelevel_quiet.py`` checks, on each file's text, that such an edit
leaves every other piece where it was and stretches its own, and documents under edits inside
long lines against HuggingFace.

Runtime complexity: :func:`quiet_twin` a dictionary look-up (the twin built once, ~0.25 s).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from ..bytelevel.pretokenize import PATTERNS, Pretokenizer
from ..regex import Derivation

__all__ = ["QUIET_TWINS", "quiet_twin", "twin_margin"]

#: split patterns (as ``derive`` reads them from the files) -> their tiktoken twin
QUIET_TWINS: dict[str, str] = {
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+": "cl100k_base",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+": "cl100k_base",
    PATTERNS["o200k_base"]: "o200k_base",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+": "o200k_base",
}


@lru_cache(maxsize=None)
def _twin_of(name: str) -> Pretokenizer:
    """The tiktoken pre-tokenizer ``name`` (built once)."""
    return Pretokenizer(name)


def quiet_twin(pattern: str) -> Pretokenizer | None:
    """The tiktoken pre-tokenizer whose quiet runs ``pattern`` shares (:data:`QUIET_TWINS`),
    or None.

    >>> quiet_twin(PATTERNS["o200k_base"]).name, quiet_twin(r"\\s+")
    ('o200k_base', None)
    """
    name = QUIET_TWINS.get(pattern)
    return _twin_of(name) if name is not None else None


def twin_margin(twin: Pretokenizer | None, derivation: Derivation,
                contents: Sequence[str]) -> int:
    """``M`` of the capability (module docstring; 0 without a twin)."""
    if twin is None:
        return 0
    slack = derivation.base + max((r.slack for r in derivation.readers), default=0)
    return max(twin.quiet_margin, slack) + max((len(c) for c in contents), default=0) + 4
