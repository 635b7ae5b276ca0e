"""Editing traces in the format of Joseph Gentle's ``editing-traces`` (see ``shared/traces``).

``{"startContent": str, "endContent": str, "txns": [{"patches": [[pos, ndel, ins], ...]}]}``;
``pos`` and ``ndel`` count code points, patches of a transaction apply in order.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


@dataclass
class Trace:
    """A loaded editing trace."""

    name: str
    start: str
    end: str
    patches: list[tuple[int, int, str]]

    def replay_text(self) -> str:
        """Apply every patch to ``start`` with plain strings (the reference; O(n) per patch)."""
        s = self.start
        for pos, ndel, ins in self.patches:
            s = s[:pos] + ins + s[pos + ndel :]
        return s


def load_trace(path: str | Path) -> Trace:
    """Read a ``.json`` or ``.json.gz`` trace.

    Raises ``ValueError`` naming the file when it is not in the trace format.
    """
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        data = json.loads(raw)
        patches = [
            (int(p[0]), int(p[1]), str(p[2])) for txn in data["txns"] for p in txn["patches"]
        ]
        return Trace(path.name, data.get("startContent", ""), data.get("endContent", ""), patches)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise ValueError(
            f"{path}: not an editing trace (expected startContent/endContent/txns[].patches): {exc}"
        ) from exc


def iter_patches(trace: Trace, offset: int = 0) -> Iterator[tuple[int, int, str]]:
    """Patches as ``(start, end, inserted)`` ranges, shifted by ``offset`` code points."""
    for pos, ndel, ins in trace.patches:
        yield pos + offset, pos + offset + ndel, ins
