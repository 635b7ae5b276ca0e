"""Random edits shared by the document tests: one random edit anywhere (delete up to ``most``
characters or insert a text, 50/50, always an insert into an empty text, at a uniform place),
and typing inside a long line checked against the reference after every key."""

from __future__ import annotations

import random
from typing import Any, Callable


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


def type_in_span(rng: random.Random, doc: Any, text: str, lo: int, length: int, *,
                 alphabet: str, other: str, n: int,
                 reference: Callable[[str], list[int]]) -> str:
    """``n`` random one-character edits inside ``text[lo:lo + length]`` (a long line), applied
    to ``doc`` (whose text is ``text``): an insert of a character from ``alphabet`` or
    ``other`` (half each), or a delete, 50/50 (always an insert into an empty span); after
    each, ``doc``'s ids must equal ``reference`` of the new text. Returns the final text."""
    for _ in range(n):
        if length == 0 or rng.random() < 0.5:
            p = lo + rng.randrange(length + 1)
            ch = rng.choice(alphabet if rng.random() < 0.5 else other)
            doc.edit(p, p, ch)
            text = text[:p] + ch + text[p:]
            length += 1
        else:
            p = lo + rng.randrange(length)
            doc.edit(p, p + 1, "")
            text = text[:p] + text[p + 1:]
            length -= 1
        assert doc.token_ids() == reference(text), text[max(0, lo - 5):lo + length + 5]
    return text
