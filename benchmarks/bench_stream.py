"""Streaming token counts: peak memory stays flat as files grow; tiktoken's time beside ours.

Files of 10 MB and 100 MB (and 1 GB with ``--sizes 10,100,1000``, on demand) are made by
concatenating real text (:func:`livetok.incremental.sp_corpus.real_text`: CJK samples, editing
traces, the standard library's sources). Each measurement runs in a fresh subprocess so its
peak resident set size (``ru_maxrss``) is its own:

* ``livetok-stream``: :func:`livetok.incremental.stream.count_stream` over 1 MiB chunks;
* ``tiktoken``: ``tiktoken.get_encoding(name).encode_ordinary(whole file)`` (the whole text in
  memory; only for the tiktoken encodings).

Usage::

    .venv/bin/python benchmarks/bench_stream.py --sizes 10,100 --encodings mistral-7b-v0.1,cl100k_base

The table printed at the end is the one in ``docs/streaming.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MB = 1_000_000


def make_file(path: Path, size_mb: int) -> None:
    """Write ``size_mb`` MB (UTF-8 bytes) of real text by repeating a 4 M code point corpus."""
    if path.exists() and path.stat().st_size >= size_mb * MB:
        return
    from livetok.incremental.sp_corpus import real_text

    block = real_text(4_000_000).encode("utf-8")
    with path.open("wb") as f:
        written = 0
        while written < size_mb * MB:
            part = block[: size_mb * MB - written]
            # subtle: never cut inside a UTF-8 sequence
            while part and (part[-1] & 0xC0) == 0x80:
                part = part[:-1]
            if part and part[-1] >= 0xC0:
                part = part[:-1]
            f.write(part)
            written += len(part)


def _get(name: str):
    if name == "mistral-7b-v0.1":
        from livetok.incremental.sentencepiece_bpe import load_mistral_v1

        return load_mistral_v1()
    from livetok.incremental import get_encoding

    return get_encoding(name)


def one(mode: str, name: str, path: str) -> dict:
    """Run one measurement in this process and return its figures."""
    enc = None
    if mode == "livetok-stream":
        from livetok.incremental.stream import StreamStats, count_stream
        from livetok.server.cmd_count import read_chunks

        enc = _get(name)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        stats = StreamStats()
        t = time.perf_counter()
        n = count_stream(enc, read_chunks(path, 1 << 20), stats=stats)
        dt = time.perf_counter() - t
        extra = {"max_buffer_cp": stats.max_buffer_cp}
    elif mode == "tiktoken":
        import tiktoken

        # tiktoken would download its vocabulary; build it from livetok's offline copy instead
        from livetok.incremental.load import find_vocabulary
        from livetok.incremental.pretokenize import PATTERNS

        ranks, _source = find_vocabulary(name)
        enc = tiktoken.Encoding(name, pat_str=PATTERNS[name], mergeable_ranks=ranks,
                                special_tokens={})
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            n = len(enc.encode_ordinary(f.read()))
        dt = time.perf_counter() - t
        extra = {}
    else:
        raise ValueError(mode)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"mode": mode, "encoding": name, "tokens": n, "seconds": round(dt, 2),
            "peak_rss_mb": round(peak / 1024, 1), "rss_before_mb": round(base / 1024, 1), **extra}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100", help="file sizes in MB (default 10,100)")
    ap.add_argument("--encodings", default="mistral-7b-v0.1,cl100k_base")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--one", nargs=3, metavar=("MODE", "ENCODING", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)))
        return
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        path = Path(args.dir) / f"livetok-bench-{size}MB.txt"
        make_file(path, size)
        for name in args.encodings.split(","):
            modes = ["livetok-stream"] + ([] if name == "mistral-7b-v0.1" else ["tiktoken"])
            for mode in modes:
                proc = subprocess.run(
                    [sys.executable, __file__, "--one", mode, name, str(path)],
                    capture_output=True, text=True, env=os.environ,
                )
                if proc.returncode:
                    print(proc.stderr, file=sys.stderr)
                    continue
                row = json.loads(proc.stdout.strip().splitlines()[-1])
                row["size_mb"] = size
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print("| file | encoding | counter | tokens | time (s) | peak RSS (MB) | RSS after load (MB) |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['size_mb']} MB | {r['encoding']} | {r['mode']} | {r['tokens']:,} | "
              f"{r['seconds']} | {r['peak_rss_mb']} | {r['rss_before_mb']} |")


if __name__ == "__main__":
    main()
