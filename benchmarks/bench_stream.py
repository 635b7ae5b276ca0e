"""Streaming token counts: peak memory stays flat as files grow; tiktoken's time beside ours.

Files of 10 MB, 100 MB and 1 GB (``--sizes``) are made by concatenating real text
(:func:`livetok.incremental.samples.corpora.real_text`: CJK samples, editing traces, the standard
library's sources). Each measurement runs in a fresh subprocess so its peak resident set size
(``VmHWM``) is its own:

* ``livetok-stream``: :func:`livetok.incremental.stream.count_stream` over 1 MiB chunks;
* ``livetok-cli``: ``livetok count --stream --no-progress -e ENC FILE`` as a command (at the
  ``--cli-sizes``), timed from start to exit, interpreter start and vocabulary load included;
* ``tiktoken``: ``encode_ordinary(whole file)`` (the whole text and its list of ids in
  memory; only for the tiktoken encodings). 1 GB of this text is a 4 GB ``str`` (it holds
  characters above U+FFFF) and 234 M ids are about 9 GB of Python ints, so this runs only
  when ``MemAvailable`` leaves room for it (``--whole-gb-per-gb`` estimates the need), and a
  watchdog kills any measurement that brings ``MemAvailable`` under ``--mem-floor-gb``;
* ``tiktoken-slices``: ``encode_ordinary`` of slices of at most 32 M code points (a quarter
  of the file when that is smaller) cut after a ``\n`` that is followed by a
  non-white-space character. Such a point is a piece boundary of the OpenAI patterns (no
  alternative matches a line break followed by a non-space), so the summed count must be the
  whole file's; every size runs both modes where memory allows and the summary flags any
  difference;
* ``sentencepiece``: ``SentencePieceProcessor.encode(whole file)`` for ``mistral-7b-v0.1``
  (files up to ``--sp-max`` MB; it cannot be sliced exactly: every slice would get its own
  dummy-prefix space).

Usage (``scripts/bench.sh stream`` runs the default)::

    nice -n 10 .venv/bin/python benchmarks/bench_stream.py --sizes 10,100,1000

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
    from livetok.incremental.samples.corpora import real_text

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
        from livetok.incremental.sentencepiece.encoding import load_mistral_v1

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
    from livetok.incremental.vocab.find import find_vocabulary
    from livetok.incremental.bytelevel.pretokenize import PATTERNS

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
        from livetok.server.cli.count import read_chunks

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
    elif mode.startswith("tiktoken-slices"):
        slice_cp = int(mode.partition(":")[2] or 32 * MB)
        enc = _tiktoken(name)
        base = _peak_rss_kb()
        t = time.perf_counter()
        n = 0
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            rest = ""
            while True:
                block = f.read(slice_cp)
                text = rest + block
                if not block:
                    n += len(enc.encode_ordinary(text))
                    break
                cut = _last_cut(text)
                n += len(enc.encode_ordinary(text[:cut]))
                rest = text[cut:]
        dt = time.perf_counter() - t
        extra = {"slice_cp": slice_cp}
    elif mode == "sentencepiece":
        import sentencepiece as spm

        from livetok.incremental.vocab.find import find_mistral_v1

        sp = spm.SentencePieceProcessor(model_file=str(find_mistral_v1()))
        base = _peak_rss_kb()
        t = time.perf_counter()
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            n = len(sp.encode(f.read()))
        dt = time.perf_counter() - t
        extra = {}
    elif mode == "livetok-cli":
        cli = str(Path(sys.executable).with_name("livetok"))
        cmd = [cli, "count", "--stream", "--no-progress", "-e", name, path]
        base = _peak_rss_kb()  # this launcher's own size: a floor of the child's ru_maxrss
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        out = proc.stdout.read()  # type: ignore[union-attr]
        _pid, status, usage = os.wait4(proc.pid, 0)
        dt = time.perf_counter() - t
        if status:
            raise RuntimeError(f"{cmd} exited with {status}")
        n = int(out.split()[0])
        # ru_maxrss of a child is at least its parent's size at exec (see _peak_rss_kb), and
        # this parent has imported nothing yet, so it is the CLI's own peak
        return {"mode": mode, "encoding": name, "tokens": n, "seconds": round(dt, 2),
                "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "rss_before_mb": None,
                "launcher_rss_mb": round(base / 1024, 1), "command": " ".join(cmd[1:])}
    else:
        raise ValueError(mode)
    peak = _peak_rss_kb()
    return {"mode": mode, "encoding": name, "tokens": n, "seconds": round(dt, 2),
            "peak_rss_mb": round(peak / 1024, 1), "rss_before_mb": round(base / 1024, 1), **extra}


DOC = Path(__file__).resolve().parent.parent / "docs" / "streaming.md"


def _mem_available_kb() -> int:
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def _run_child(mode: str, name: str, path: Path, floor_kb: int) -> dict:
    """Run ``--one MODE NAME PATH`` in a fresh interpreter, killing it if memory runs low."""
    proc = subprocess.Popen([sys.executable, __file__, "--one", mode, name, str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    low = _mem_available_kb()
    while proc.poll() is None:
        avail = _mem_available_kb()
        low = min(low, avail)
        if avail < floor_kb:
            proc.kill()
            proc.wait()
            return {"error": f"killed: MemAvailable fell to {avail // 1024} MB"}
        time.sleep(0.2)
    out, err = proc.communicate()
    if proc.returncode:
        return {"error": (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
    row = json.loads(out.strip().splitlines()[-1])
    row["min_mem_available_mb"] = low // 1024
    return row


LABELS = {
    "livetok-stream": "livetok `count_stream`",
    "livetok-cli": "`livetok count --stream` (CLI)",
    "tiktoken": "tiktoken, whole file",
    "tiktoken-slices": "tiktoken, slices",
    "sentencepiece": "sentencepiece, whole file",
}


def _label(r: dict) -> str:
    mode = r["mode"].partition(":")[0]
    text = LABELS.get(mode, mode)
    if mode == "tiktoken-slices":
        text += f" of ≤ {r['slice_cp']:,} cp"
    return text


def _size_label(size_mb: int) -> str:
    return f"{size_mb / 1000:g} GB" if size_mb >= 1000 else f"{size_mb} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100,1000", help="file sizes in MB (default 10,100,1000)")
    ap.add_argument("--encodings", default="cl100k_base,o200k_base,mistral-7b-v0.1")
    ap.add_argument("--largest-for", default="cl100k_base,o200k_base,mistral-7b-v0.1",
                    help="encodings run at the largest size too (the others stop below it)")
    ap.add_argument("--whole-gb-per-gb", type=float, default=16.0,
                    help="estimated peak of a whole-file tiktoken encode, GB per GB of text; "
                         "run it only when MemAvailable exceeds that plus --mem-floor-gb")
    ap.add_argument("--mem-floor-gb", type=float, default=4.0,
                    help="kill a measurement when MemAvailable falls below this")
    ap.add_argument("--sp-max", type=int, default=100,
                    help="largest file (MB) sentencepiece encodes (whole) beside Mistral")
    ap.add_argument("--cli-sizes", default="100", help="sizes (MB) to run the CLI at")
    ap.add_argument("--cli-encoding", default="cl100k_base")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--keep-files", action="store_true", help="do not delete the files >= 1 GB")
    ap.add_argument("--no-docs", action="store_true", help="print the table only")
    ap.add_argument("--one", nargs=3, metavar=("MODE", "ENCODING", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)))
        return
    sizes = sorted(int(x) for x in args.sizes.split(","))
    largest_for = set(args.largest_for.split(","))
    cli_sizes = {int(x) for x in args.cli_sizes.split(",") if x}
    floor_kb = int(args.mem_floor_gb * 1024 * 1024)
    rows: list[dict] = []
    notes: list[str] = []
    started = time.time()
    load0 = os.getloadavg()
    for size in sizes:
        path = Path(args.dir) / f"livetok-bench-{size}MB.txt"
        make_file(path, size)
        with path.open(encoding="utf-8", newline="") as f:
            n_cp = sum(len(block) for block in iter(lambda: f.read(32 * MB), ""))
        for name in args.encodings.split(","):
            if size == sizes[-1] and len(sizes) > 1 and name not in largest_for:
                continue
            modes = ["livetok-stream"]
            if size in cli_sizes and name == args.cli_encoding:
                modes.append("livetok-cli")
            if name == "mistral-7b-v0.1":
                if size <= args.sp_max:
                    modes.append("sentencepiece")
            else:
                need_kb = int(args.whole_gb_per_gb * size / 1000 * 1024 * 1024)
                avail = _mem_available_kb()
                if avail >= need_kb + floor_kb:
                    modes.append("tiktoken")
                else:
                    notes.append(f"- {name} {_size_label(size)}: tiktoken on the whole file not "
                                 f"run (needs about {need_kb >> 20} GB, {avail >> 20} GB "
                                 "available).")
                modes.append(f"tiktoken-slices:{min(32 * MB, n_cp // 4)}")
            for mode in modes:
                row = _run_child(mode, name, path, floor_kb)
                row.update(mode=row.get("mode", mode), encoding=name, size_mb=size)
                if "error" in row:
                    notes.append(f"- {name} {_size_label(size)} {mode}: {row['error']}")
                    print(json.dumps(row), file=sys.stderr, flush=True)
                    continue
                rows.append(row)
                print(json.dumps(row), flush=True)
        if size >= 1000 and not args.keep_files:
            path.unlink()  # a GB of scratch text
    table = ["| file | encoding | counter | tokens | time (s) | MB/s | peak RSS (MB) "
             "| RSS after load (MB) | largest buffer (cp) |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        rate = r["size_mb"] / r["seconds"] if r["seconds"] else 0
        buf = f"{r['max_buffer_cp']:,}" if "max_buffer_cp" in r else "—"
        after = r["rss_before_mb"] if r.get("rss_before_mb") is not None else "—"
        table.append(f"| {_size_label(r['size_mb'])} | {r['encoding']} | {_label(r)} | "
                     f"{r['tokens']:,} | {r['seconds']} | {rate:.1f} | {r['peak_rss_mb']} | "
                     f"{after} | {buf} |")
    summary = []
    for name in args.encodings.split(","):
        mine = [r for r in rows if r["encoding"] == name and r["mode"] == "livetok-stream"]
        if len(mine) >= 2:
            lo, hi = mine[0], mine[-1]
            summary.append(f"- {name}: peak RSS {lo['peak_rss_mb']} MB at "
                           f"{_size_label(lo['size_mb'])}, {hi['peak_rss_mb']} MB at "
                           f"{_size_label(hi['size_mb'])} of text "
                           f"({hi['peak_rss_mb'] - lo['peak_rss_mb']:+.1f} MB for "
                           f"{hi['size_mb'] // lo['size_mb']}x the text).")
        for r in mine:
            ref = [t for t in rows if t["encoding"] == name and t["size_mb"] == r["size_mb"]
                   and t is not r]
            same = [t for t in ref if t["tokens"] == r["tokens"]]
            for t in ref:
                if t["tokens"] != r["tokens"]:
                    summary.append(f"- **MISMATCH** {name} {_size_label(r['size_mb'])}: "
                                   f"{_label(t)} {t['tokens']:,} != livetok {r['tokens']:,}")
            if same:
                summary.append(f"- {name} {_size_label(r['size_mb'])}: livetok's count equals "
                               + "; ".join(_label(t) for t in same) + ".")
    load1 = os.getloadavg()
    meta = (f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))} by "
            f"`benchmarks/bench_stream.py --sizes {args.sizes}` in {time.time() - started:.0f} s "
            f"on a shared 2-core machine (other work may run beside it; load average "
            f"{load0[0]:.2f} at the start, {load1[0]:.2f} at the end; times are wall clock and "
            "include waits for a core). Each row is its own subprocess; *RSS after load* is "
            "the resident set before counting starts (interpreter, vocabulary), *peak RSS* the "
            "maximum during the run (`VmHWM`; for the CLI row the command's `ru_maxrss`, "
            "start-up and vocabulary load included, and its time is the whole command's).")
    block = "\n".join([meta, "", *table, "", *summary, *notes])
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
