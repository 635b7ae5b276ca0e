"""Tools that study tokenizers rather than run them: merge-rule analysis (proper dictionaries,
useful rules) and measurements of how far an edit's re-tokenization has to widen.

Nothing on the runtime path imports this package.
"""
