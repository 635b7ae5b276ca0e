"""A random one-edit step shared by the document tests: delete up to ``most`` characters or
insert a text, 50/50 (always an insert into an empty text), at a uniform place."""

from __future__ import annotations

import random
from typing import Any


def random_edit(rng: random.Random, doc: Any, text: str, new: str, most: int = 1) -> str:
    """Apply one random edit to ``doc`` (whose text is ``text``) and return the new text:
    delete 1 to ``most`` characters, or insert ``new``."""
    if text and rng.random() < 0.5:
        a = rng.randrange(len(text))
        b = min(len(text), a + rng.randint(1, most))
        doc.edit(a, b, "")
        return text[:a] + text[b:]
    a = rng.randint(0, len(text))
    doc.edit(a, a, new)
    return text[:a] + new + text[a:]
