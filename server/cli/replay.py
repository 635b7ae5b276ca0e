"""``livetok replay TRACE``: replay an editing trace into a Document, verify, and time it.

A bad trace or base document is one line ``livetok replay: FILE: what is wrong``, exit
status 2 (:func:`~livetok.server.cli.traces.load_trace` checks the trace's size, nesting, shape
and positions before anything is replayed), and so is a ``--reference`` that cannot verify
the encoding; a replay that disagrees with the reference is exit status 1.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Callable

from livetok.incremental import Document, Encoding, PieceEncoding, get_encoding
from livetok.incremental.vocab.readers import read_limited
from livetok.incremental.env_limits import size_limit

from livetok.server.cli.main import INPUT_ERRORS, Subparsers, add_encoding_arguments, encoding_name, input_error
from livetok.server.cli.traces import Trace, iter_patches, load_trace

#: the most bytes ``--base`` may hold (``LIVETOK_MAX_BASE_BYTES``): the document built from
#: it keeps its tokens and indexes, tens of bytes per character
MAX_BASE_BYTES = 64 << 20


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "replay",
        help="replay an editing trace, verify tokens against a full encode, report latency",
        description="Replay TRACE (.json or .json.gz, the editing-traces format) edit by edit "
        "into an incremental Document, optionally in the middle of a large base document, "
        "checking the token ids against a full re-encode every N edits and at the end.",
    )
    p.add_argument("trace", metavar="TRACE")
    add_encoding_arguments(p)
    p.add_argument("--verify-every", type=int, default=0, metavar="N",
                   help="compare with a full encode every N edits (0: only at the end)")
    p.add_argument("--base", metavar="FILE",
                   help="replay inside this document: the trace's text is inserted in its middle")
    p.add_argument("--reference", choices=["auto", "tiktoken", "livetok"], default="auto",
                   help="what verifies: tiktoken when installed (auto), or livetok's own full encode")
    return p


#: a full-text encoder to verify against, and its name
Reference = tuple[Callable[[str], list[int]], str]


def reference_encoder(enc: PieceEncoding, which: str = "auto") -> Reference:
    """A full-text encoder to verify against, and its name: tiktoken for a byte-level BPE
    encoding when installed (``auto``) or asked for (``tiktoken``), else livetok's own full
    encode. Raises ``ValueError`` when ``tiktoken`` is asked for and cannot serve ``enc``,
    naming the option to use instead.

    >>> from livetok.incremental import get_encoding
    >>> reference_encoder(get_encoding("bert-base-uncased"))[1]
    'livetok (full encode)'

    Runtime complexity: ``O(1)``, plus tiktoken's build of ``enc``'s ranks when it is used.
    """
    if which in ("auto", "tiktoken") and isinstance(enc, Encoding) and enc.tiktoken_equivalent:
        try:
            import tiktoken
        except ImportError:
            if which == "tiktoken":
                raise ValueError("--reference tiktoken: tiktoken is not installed; "
                                 "pip install tiktoken, or use --reference livetok") from None
        else:
            ref = tiktoken.Encoding(
                f"ref-{enc.name}", pat_str=enc.pat_str, mergeable_ranks=enc.mergeable_ranks,
                special_tokens=enc.special_tokens,
            )
            return ref.encode_ordinary, "tiktoken"
    if which == "tiktoken":  # subtle: falling back here would report a check not made
        raise ValueError(f"--reference tiktoken cannot verify {enc.name}: tiktoken builds "
                         "byte-level BPE encodings only (such as o200k_base); use "
                         "--reference livetok (its own full encode) or auto")
    return enc.encode, "livetok (full encode)"


def _read_base(path: str) -> str:
    """The text of ``--base``, read with a bound (undecodable bytes become U+FFFD)."""
    env = "LIVETOK_MAX_BASE_BYTES"
    raw = read_limited(path, size_limit(env, MAX_BASE_BYTES), what="base document", env=env,
                       error=ValueError)
    return raw.decode("utf-8", errors="replace")


def _load(args: argparse.Namespace) -> tuple[PieceEncoding, Reference, Trace, str] | int:
    """The encoding, its reference, the trace and the base text of the command, or the exit
    status of its error."""
    if args.verify_every < 0:
        print("livetok replay: --verify-every takes 0 (only at the end) or a number of edits",
              file=sys.stderr)
        return 2
    encoding = encoding_name("replay", args)
    if isinstance(encoding, int):
        return encoding
    name = args.tokenizer
    try:
        enc = get_encoding(encoding)
    except INPUT_ERRORS as exc:
        return input_error("replay", exc, name)
    try:
        reference = reference_encoder(enc, args.reference)
    except ValueError as exc:
        print(f"livetok replay: {exc}", file=sys.stderr)
        return 2
    try:
        name = args.trace
        trace = load_trace(args.trace)
        if not trace.patches:
            raise ValueError(f"{args.trace}: the trace has no patches: nothing to replay")
        name = args.base
        base = _read_base(args.base) if args.base else ""
    except INPUT_ERRORS as exc:
        return input_error("replay", exc, name)
    return enc, reference, trace, base


def run(args: argparse.Namespace) -> int:
    loaded = _load(args)
    if isinstance(loaded, int):
        return loaded
    enc, (encode_ref, ref_name), trace, base = loaded
    mid = len(base) // 2
    # keep the base's halves on line boundaries so the trace starts on a fresh line
    nl = base.rfind("\n", 0, mid)
    mid = nl + 1 if nl >= 0 else mid
    text0 = base[:mid] + trace.start + base[mid:]
    t = time.perf_counter()
    doc = Document(text0, encoding=enc)
    build = time.perf_counter() - t
    times: list[float] = []
    mirror = text0 if args.verify_every else None
    checks = 0
    for k, (s, e, ins) in enumerate(iter_patches(trace, mid), 1):
        t = time.perf_counter()
        doc.edit(s, e, ins)
        times.append(time.perf_counter() - t)
        if mirror is not None:
            mirror = mirror[:s] + ins + mirror[e:]
            if k % args.verify_every == 0:
                checks += 1
                if doc.token_ids() != encode_ref(mirror):
                    print(f"MISMATCH after edit {k} ({s}, {e}, {ins!r})", file=sys.stderr)
                    return 1
    final = doc.text
    expected = base[:mid] + trace.end + base[mid:]
    if final != expected:
        print("MISMATCH: replayed text differs from the trace's endContent", file=sys.stderr)
        return 1
    checks += 1
    if doc.token_ids() != encode_ref(final):
        print("MISMATCH: final token ids differ from a full encode", file=sys.stderr)
        return 1
    total = sum(times)
    q = statistics.quantiles(times, n=100) if len(times) > 1 else times * 99
    print(f"trace      {trace.name}: {len(times)} edits, {len(final)} chars final"
          + (f" inside {len(base)} chars of {args.base}" if base else ""))
    print(f"encoding   {enc.name}; verified {checks}x against {ref_name}: OK")
    print(f"build      {build * 1e3:.1f} ms for {len(text0)} chars")
    print(f"edits/s    {len(times) / total:,.0f}")
    print(f"latency    p50 {q[49] * 1e6:.1f} us  p90 {q[89] * 1e6:.1f} us  "
          f"p99 {q[98] * 1e6:.1f} us  max {max(times) * 1e6:.1f} us")
    print(f"tokens     {doc.token_count}")
    return 0
