"""Streaming token counts: peak memory stays flat as files grow; tiktoken's time beside ours.

Files of 10 MB, 100 MB and 1 GB (``--sizes``; the largest only for the ``--largest-for``
encodings) are made by concatenating real text
(:func:`livetok.incremental.sp_corpus.real_text`: CJK samples, editing traces, the standard
library's sources). Each measurement runs in a fresh subprocess so its
peak resident set size (``VmHWM``) is its own:

* ``livetok-stream``: :func:`livetok.incremental.stream.count_stream` over 1 MiB chunks;
* ``tiktoken``: ``encode_ordinary(whole file)`` (the whole text in memory; only for the
  tiktoken encodings), for files up to ``--whole-max`` MB;
* ``tiktoken-slices``: for bigger files, where the whole text and its list of ids would not
  fit beside other work (1 GB of text is a 4 GB ``str`` once it holds a CJK character, and
  250 M ids are about 9 GB of Python ints), ``encode_ordinary`` of 32 MB slices cut after a
  ``\n`` that is followed by a non-white-space character. Such a point is a piece boundary of
  the OpenAI patterns (no alternative matches a line break followed by a non-space), so the
  summed count is the whole file's; the 100 MB rows check that by running both modes.

Usage (``scripts/bench.sh stream`` runs the default)::

    .venv/bin/python benchmarks/bench_stream.py --sizes 10,100,1000

The table goes into ``docs/streaming.md`` between the ``bench:`` markers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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


_CUT = re.compile(r"\n(?=[^\s])")


def _last_cut(text: str) -> int:
    """End of the last ``\n`` followed by a non-space character in ``text`` (0 if none)."""
    start = max(0, len(text) - 1_000_000)
    while True:
        last = 0
        for m in _CUT.finditer(text, start):
            last = m.end()
        if last or start == 0:
            return last
        start = max(0, start - 10_000_000)


def _tiktoken(name: str):
    import tiktoken

    # tiktoken would download its vocabulary; build it from livetok's offline copy instead
    from livetok.incremental.load import find_vocabulary
    from livetok.incremental.pretokenize import PATTERNS

    ranks, _source = find_vocabulary(name)
    return tiktoken.Encoding(name, pat_str=PATTERNS[name], mergeable_ranks=ranks,
                             special_tokens={})


def _peak_rss_kb() -> int:
    """This process's peak resident set (``VmHWM``), in KiB.

    Not ``ru_maxrss``: Linux carries that over ``fork`` + ``exec``, so a child would report
    its parent's size whenever the parent was bigger."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def one(mode: str, name: str, path: str) -> dict:
    """Run one measurement in this process and return its figures."""
    enc = None
    if mode == "livetok-stream":
        from livetok.incremental.stream import StreamStats, count_stream
        from livetok.server.cmd_count import read_chunks

        enc = _get(name)
        base = _peak_rss_kb()
        stats = StreamStats()
        t = time.perf_counter()
        n = count_stream(enc, read_chunks(path, 1 << 20), stats=stats)
        dt = time.perf_counter() - t
        extra = {"max_buffer_cp": stats.max_buffer_cp}
    elif mode == "tiktoken":
        enc = _tiktoken(name)
        base = _peak_rss_kb()
        t = time.perf_counter()
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            n = len(enc.encode_ordinary(f.read()))
        dt = time.perf_counter() - t
        extra = {}
    elif mode == "tiktoken-slices":
        enc = _tiktoken(name)
        base = _peak_rss_kb()
        t = time.perf_counter()
        n = 0
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            rest = ""
            while True:
                block = f.read(32 * MB)
                text = rest + block
                if not block:
                    n += len(enc.encode_ordinary(text))
                    break
                cut = _last_cut(text)
                n += len(enc.encode_ordinary(text[:cut]))
                rest = text[cut:]
        dt = time.perf_counter() - t
        extra = {}
    else:
        raise ValueError(mode)
    peak = _peak_rss_kb()
    return {"mode": mode, "encoding": name, "tokens": n, "seconds": round(dt, 2),
            "peak_rss_mb": round(peak / 1024, 1), "rss_before_mb": round(base / 1024, 1), **extra}


DOC = Path(__file__).resolve().parent.parent / "docs" / "streaming.md"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100,1000", help="file sizes in MB (default 10,100,1000)")
    ap.add_argument("--encodings", default="cl100k_base,o200k_base,mistral-7b-v0.1")
    ap.add_argument("--largest-for", default="cl100k_base,mistral-7b-v0.1",
                    help="encodings run at the largest size too (the others stop below it)")
    ap.add_argument("--whole-max", type=int, default=100,
                    help="largest file (MB) tiktoken encodes whole; from this size up, in slices")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--no-docs", action="store_true", help="print the table only")
    ap.add_argument("--one", nargs=3, metavar=("MODE", "ENCODING", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)))
        return
    sizes = sorted(int(x) for x in args.sizes.split(","))
    largest_for = set(args.largest_for.split(","))
    rows = []
    started = time.time()
    load0 = os.getloadavg()
    for size in sizes:
        path = Path(args.dir) / f"livetok-bench-{size}MB.txt"
        make_file(path, size)
        for name in args.encodings.split(","):
            if size == sizes[-1] and len(sizes) > 1 and name not in largest_for:
                continue
            modes = ["livetok-stream"]
            if name != "mistral-7b-v0.1":
                if size <= args.whole_max:
                    modes.append("tiktoken")
                if size >= args.whole_max:
                    modes.append("tiktoken-slices")
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
        if size == sizes[-1] and size >= 1000:
            path.unlink()  # a GB of scratch text
    table = ["| file | encoding | counter | tokens | time (s) | MB/s | peak RSS (MB) "
             "| RSS after load (MB) | largest buffer (cp) |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        label = f"{r['size_mb'] // 1000} GB" if r["size_mb"] >= 1000 else f"{r['size_mb']} MB"
        rate = r["size_mb"] / r["seconds"] if r["seconds"] else 0
        buf = f"{r['max_buffer_cp']:,}" if "max_buffer_cp" in r else "—"
        table.append(f"| {label} | {r['encoding']} | {r['mode']} | {r['tokens']:,} | "
                     f"{r['seconds']} | {rate:.1f} | {r['peak_rss_mb']} | {r['rss_before_mb']} "
                     f"| {buf} |")
    summary = []
    for name in args.encodings.split(","):
        mine = [r for r in rows if r["encoding"] == name and r["mode"] == "livetok-stream"]
        if len(mine) >= 2:
            lo, hi = mine[0], mine[-1]
            summary.append(f"- {name}: peak RSS {lo['peak_rss_mb']} MB at {lo['size_mb']} MB, "
                           f"{hi['peak_rss_mb']} MB at {hi['size_mb']} MB of text "
                           f"({hi['peak_rss_mb'] - lo['peak_rss_mb']:+.1f} MB for "
                           f"{hi['size_mb'] // lo['size_mb']}x the text).")
        for r in mine:
            ref = [t for t in rows if t["encoding"] == name and t["size_mb"] == r["size_mb"]
                   and t["mode"] != "livetok-stream"]
            for t in ref:
                if t["tokens"] != r["tokens"]:
                    summary.append(f"- **MISMATCH** {name} {r['size_mb']} MB: {t['mode']} "
                                   f"{t['tokens']:,} != livetok {r['tokens']:,}")
    load1 = os.getloadavg()
    meta = (f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))} by "
            f"`benchmarks/bench_stream.py --sizes {args.sizes}` in {time.time() - started:.0f} s "
            f"on a shared 2-core machine (load average {load0[0]:.2f} at the start, "
            f"{load1[0]:.2f} at the end; times are wall clock and include waits for a core). "
            "Each row is its own subprocess; *RSS after load* is the resident set before "
            "counting starts (interpreter, vocabulary), *peak RSS* the maximum during the run.")
    block = "\n".join([meta, "", *table, "", *summary])
    print(block)
    if not args.no_docs:
        text = DOC.read_text(encoding="utf-8")
        start, end = "<!-- bench:start -->", "<!-- bench:end -->"
        if start in text and end in text:
            head, rest = text.split(start, 1)
            text = head + start + "\n" + block + "\n" + end + rest.split(end, 1)[1]
            DOC.write_text(text, encoding="utf-8")
            print(f"updated {DOC}")
        else:
            print(f"{DOC} has no {start} ... {end} markers; not updated", file=sys.stderr)


if __name__ == "__main__":
    main()
