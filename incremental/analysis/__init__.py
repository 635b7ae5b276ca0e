"""Tools that study tokenizers rather than run them: merge-rule analysis (proper dictionaries,
useful rules), measurements of how far an edit's re-tokenization has to widen, and the one
reader of real text (``corpus``) that tests, benchmarks, measurements and the demo's samples
share.

Nothing on the tokenizing path (the core, the families, the language server's counting)
imports this package; ``tests/unit/test_layout.py`` checks it for ``incremental/``.
"""
