"""The pre-tokenizer patterns: their syntax, the work of matching them, and their horizons.

A ``tokenizer.json`` ``Split`` pattern (Oniguruma's syntax, as HF ``tokenizers`` compiles it)
or a tiktoken pattern (fancy-regex's) is read once into a syntax tree, and everything livetok
needs of it is read off that tree:

* :mod:`.syntax`: the tree (:class:`Chars`, :class:`Seq`, :class:`Alt`, :class:`Repeat`,
  :class:`Group`, :class:`Look`, :class:`Anchor`, :class:`Backref`), its walks and widths, and
  its form in the ``regex`` package's syntax, which matches exactly as the pattern's engine
  does; the errors :class:`PatternError` and :class:`UnsafePattern`;
* :mod:`.charsets`: Oniguruma's character classes as ``regex`` single-character matchers, and
  what a matcher matches (the characters it names, whether two can match one character);
* :mod:`.parser`: the parser (:func:`parse`), :func:`translate`, :func:`min_width` and
  :func:`alphabet`;
* :mod:`.bounds`: what matching a pattern from a file may cost (:func:`check`: its size and
  shape, refused or scanned under a time budget) and the compiled pattern that keeps to it
  (:func:`compile_bounded`, :class:`BudgetedPattern`);
* :mod:`.horizon`: how far right of a piece's start the matcher may read (:func:`derive`,
  :class:`SplitHorizon`), the bound the document re-splits an edit's neighbourhood by.

The rest of livetok imports these names from here.
"""

from __future__ import annotations

from .bounds import (MAX_PATTERN_CHARS, BoundedRegex, BudgetedPattern, check, compile_bounded,
                     match_budget)
from .horizon import Derivation, Reader, SplitHorizon, derive
from .parser import MAX_NESTING, alphabet, min_width, parse, translate
from .syntax import (Alt, Anchor, Backref, Chars, Flavour, Group, Look, Node, PatternError, Repeat,
                     Seq, UnsafePattern)

__all__ = [
    # syntax
    "Flavour", "PatternError", "UnsafePattern", "Node", "Chars", "Seq", "Alt", "Repeat", "Group",
    "Look", "Anchor", "Backref",
    # parser
    "MAX_NESTING", "parse", "translate", "min_width", "alphabet",
    # bounds
    "MAX_PATTERN_CHARS", "check", "match_budget", "BudgetedPattern", "BoundedRegex",
    "compile_bounded",
    # horizon
    "Derivation", "Reader", "SplitHorizon", "derive",
]
