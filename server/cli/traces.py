"""Editing traces in the format of Joseph Gentle's ``editing-traces`` (see ``shared/traces``).

``{"startContent": str, "endContent": str, "txns": [{"patches": [[pos, ndel, ins], ...]}]}``;
``pos`` and ``ndel`` count code points, patches of a transaction apply in order.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from itertools import accumulate
from operator import add, itemgetter, sub
from pathlib import Path
from typing import Any, Iterator

from livetok.incremental.vocab.readers import MAX_JSON_DEPTH, check_json_depth, read_limited
from livetok.incremental.env_limits import size_limit

__all__ = ["Trace", "TraceError", "MAX_TRACE_BYTES", "max_trace_bytes", "load_trace",
           "iter_patches"]

#: the most bytes a trace may hold once inflated, ``LIVETOK_MAX_TRACE_BYTES`` to change it;
#: never more than 1/32 of the memory the process may use (:func:`max_trace_bytes`): parsed
#: JSON takes up to ~25 bytes per byte (``[[],[],...]``: a list object per 3 bytes)
MAX_TRACE_BYTES = 1 << 30
_ENV = "LIVETOK_MAX_TRACE_BYTES"


class TraceError(ValueError):
    """A file is not an editing trace livetok can replay; the message names the file."""


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


def max_trace_bytes() -> int:
    """The bound on a trace's inflated size: ``$LIVETOK_MAX_TRACE_BYTES`` when set, else
    ``MAX_TRACE_BYTES`` or 1/32 of the memory this process may use (the machine's, or the
    address-space limit set on the process), whichever is smaller.

    Runtime complexity: ``O(1)``.
    """
    memory = []
    try:
        memory.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        pass
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            memory.append(soft)
    except (ImportError, AttributeError, ValueError, OSError):
        pass
    default = min([MAX_TRACE_BYTES, *(m // 32 for m in memory if m > 0)])
    return size_limit(_ENV, default)


def load_trace(path: str | Path) -> Trace:
    """Read a ``.json`` or ``.json.gz`` trace, checking its size, its shape and that every
    patch stays inside the text it edits.

    Raises :class:`TraceError` (a ``ValueError``) whose message names the file and what is
    wrong with it; a gzip bomb or ``/dev/zero`` stops at :func:`max_trace_bytes`, a nesting
    deeper than ``MAX_JSON_DEPTH`` before the parser.

    Runtime complexity: ``O(file size)``.
    """
    name = str(path)
    raw = read_limited(name, max_trace_bytes(), what="trace", env=_ENV, error=TraceError)
    check_json_depth(raw, MAX_JSON_DEPTH, name, TraceError)
    try:
        data = json.loads(raw)
    except ValueError as exc:  # UnicodeDecodeError is one
        raise TraceError(f"{name}: not an editing trace: not JSON ({exc})") from None
    del raw
    if not isinstance(data, dict):
        raise TraceError(f"{name}: not an editing trace: its top level is a JSON "
                         f"{type(data).__name__}; expected {_FORMAT}")
    start, end = data.get("startContent", ""), data.get("endContent", "")
    if not isinstance(start, str) or not isinstance(end, str):
        raise TraceError(f"{name}: not an editing trace: startContent and endContent must be "
                         f"strings; expected {_FORMAT}")
    return Trace(Path(name).name, start, end, _patches(data.get("txns"), len(start), name))


_FORMAT = '{"startContent": str, "endContent": str, "txns": [{"patches": [[pos, ndel, ins]]}]}'


def _patches(txns: Any, length: int, name: str) -> list[tuple[int, int, str]]:
    """The patches of ``txns``, each checked: ``[pos, ndel, ins]`` with integers that stay
    inside the text (``length`` code points before the first patch).

    The checks run as C loops over all patches at once (``map``, ``accumulate``; traces have
    10^5-10^6 patches); only a trace that fails them is walked patch by patch, to say where.

    Runtime complexity: ``O(number of patches)``.
    """
    if type(txns) is not list:
        raise TraceError(f"{name}: not an editing trace: no list 'txns'; expected {_FORMAT}")
    if set(map(type, txns)) - {dict} or not all(map(list.__instancecheck__, (
            txn.get("patches") for txn in txns))):
        _first_bad_patch(txns, length, name)
    flat = [p for txn in txns for p in txn["patches"]]
    if not flat:
        return []
    if set(map(type, flat)) != {list} or set(map(len, flat)) != {3}:
        _first_bad_patch(txns, length, name)
    pos, ndel, ins = (list(map(itemgetter(i), flat)) for i in range(3))
    if (set(map(type, pos)) != {int} or set(map(type, ndel)) != {int}
            or set(map(type, ins)) != {str}):
        _first_bad_patch(txns, length, name)
    # the text's length before each patch, and how far past it each patch reaches
    before = accumulate(map(sub, map(len, ins), ndel), initial=length)
    if min(pos) < 0 or min(ndel) < 0 or max(map(sub, map(add, pos, ndel), before)) > 0:
        _first_bad_patch(txns, length, name)
    return list(zip(pos, ndel, ins))


def _first_bad_patch(txns: list[Any], length: int, name: str) -> None:
    """Raise :class:`TraceError` for the first patch :func:`_patches` refuses, by a walk.

    Runtime complexity: ``O(number of patches)``.
    """
    for t, txn in enumerate(txns):
        patches = txn.get("patches") if type(txn) is dict else None
        if type(patches) is not list:
            raise TraceError(f"{name}: txns[{t}] has no list 'patches'; expected {_FORMAT}")
        for k, p in enumerate(patches):
            if not (type(p) is list and len(p) == 3 and type(p[0]) is int
                    and type(p[1]) is int and type(p[2]) is str):
                raise TraceError(f"{name}: txns[{t}].patches[{k}] is {json.dumps(p)[:80]}; a "
                                 "patch is [position, deleted count, inserted text]")
            pos, ndel, ins = p
            if pos < 0 or ndel < 0 or pos + ndel > length:
                raise TraceError(
                    f"{name}: txns[{t}].patches[{k}] = [{pos}, {ndel}, ...] edits outside the "
                    f"text, which has {length:,} code points there; the trace is damaged"
                )
            length += len(ins) - ndel
    raise AssertionError("_patches refused a trace that _first_bad_patch accepts")


def iter_patches(trace: Trace, offset: int = 0) -> Iterator[tuple[int, int, str]]:
    """Patches as ``(start, end, inserted)`` ranges, shifted by ``offset`` code points."""
    for pos, ndel, ins in trace.patches:
        yield pos + offset, pos + offset + ndel, ins
