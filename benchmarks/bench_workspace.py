"""The workspace token map on a generated repository of 10,000 files / 50 MB: cold (an empty
count cache), warm (the cache of a cold run), against a tiktoken script counting the same
files on the same cores, in the same run; writes ``docs/benchmarks-workspace.md``.

Every figure is a fresh process, the median of ``--runs`` runs; the variants alternate
(reference, cold, warm, then again), so a change in the machine's load falls on all of them.
Two measures per variant:

- **work**: inside the process, from the encoding loaded to the total counted (livetok:
  ``WorkspaceMap.build`` with ``jobs`` = the cores here, walk, ``.gitignore``, reading,
  hashing, cache, counting; tiktoken: reading and decoding the files its list names, then
  ``encode_ordinary_batch(texts, num_threads=cores)``);
- **command**: the wall time of the whole command as a user runs it (``livetok count -r DIR
  --format json``; the tiktoken script including its start and the vocabulary's parse).

Peak memory is the largest resident set of the process and of its forked workers
(``ru_maxrss``). The totals must be equal (livetok's map and tiktoken's count of the files
livetok counted).

Two more measures say where the cold ratio comes from: the **encode floor** (one process,
one core: livetok's ``encode`` of the first ``--floor-files`` files against tiktoken's
``encode_ordinary``, CPU seconds, nothing else timed, with the piece memo a live document
gets; the map's counting processes keep a larger one, ``counting.BULK_PIECE_CACHE``).

    .venv/bin/python benchmarks/bench_workspace.py [--runs 3] [--files 10000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as C

from livetok.server.workspace.count_store import RACY_NS

#: the start of both tiktoken scripts: ``tk``, tiktoken's o200k_base built from the file
#: livetok reads (the vocabulary path and pattern: ``sys.argv[1:3]``), parsed as
#: ``load_tiktoken_bpe`` parses it
TIKTOKEN_LOAD = r"""
import base64, gzip, json, sys, time, tiktoken
with open(sys.argv[1], "rb") as f:
    raw = f.read()
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
ranks = {base64.b64decode(t): int(r) for t, r in (ln.split() for ln in raw.splitlines() if ln)}
tk = tiktoken.Encoding("o200k_base", pat_str=sys.argv[2], mergeable_ranks=ranks, special_tokens={})
tk.encode_ordinary("warm up")
"""

#: the tiktoken reference: the files read and counted by tiktoken's own threads
TIKTOKEN_SCRIPT = TIKTOKEN_LOAD + r"""
import resource
listing, cores = sys.argv[3], int(sys.argv[4])
paths = open(listing, encoding="utf-8").read().splitlines()
t0 = time.perf_counter()
texts = []
for p in paths:
    with open(p, "rb") as f:
        texts.append(f.read().decode("utf-8", errors="replace"))
total = sum(map(len, tk.encode_ordinary_batch(texts, num_threads=cores)))
work = time.perf_counter() - t0
print(json.dumps({"work": work, "tokens": total,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

#: livetok's map, timed inside the process (the encoding loaded first, as the reference's)
LIVETOK_SCRIPT = r"""
import json, resource, sys, time
from pathlib import Path
from livetok.incremental import get_encoding
from livetok.server.workspace.counting import Encodings
from livetok.server.workspace.tokenmap import WorkspaceMap
root, cores = Path(sys.argv[1]), int(sys.argv[2])
get_encoding("o200k_base").encode("warm up")
t0 = time.perf_counter()
m = WorkspaceMap(root, Encodings(["o200k_base"]), jobs=cores)
m.build()
work = time.perf_counter() - t0
if len(sys.argv) > 3:  # the files counted, for the reference
    Path(sys.argv[3]).write_text("\n".join(str(p) for p, _n in m.tree.files()), encoding="utf-8")
print(json.dumps({"work": work, "tokens": m.tree.root.tokens[0], "files": m.tree.root.files,
                  "rss": max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                             resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)}))
"""

#: the encode floor: one process, one core, the same texts, CPU time of the encode alone
FLOOR_SCRIPT = TIKTOKEN_LOAD + r"""
from livetok.incremental import get_encoding
lt = get_encoding("o200k_base")
lt.encode("warm up")
paths = open(sys.argv[3], encoding="utf-8").read().splitlines()[:int(sys.argv[4])]
texts = [open(p, "rb").read().decode("utf-8", errors="replace") for p in paths]
t = time.process_time(); a = sum(len(tk.encode_ordinary(x)) for x in texts); tk_s = time.process_time() - t
t = time.process_time(); b = sum(len(lt.encode(x)) for x in texts); lt_s = time.process_time() - t
print(json.dumps({"tiktoken": tk_s, "livetok": lt_s, "equal": a == b, "files": len(texts),
                  "bytes": sum(len(x.encode()) for x in texts)}))
"""

#: runs a command and reports its wall time and the largest resident set of its processes
WRAP = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True)
wall = time.perf_counter() - t
print(json.dumps({"wall": wall, "rc": p.returncode, "out": p.stdout.decode()[-2000:],
                  "err": p.stderr.decode()[-2000:],
                  "rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def make_repo(root: Path, n_files: int, size: int) -> tuple[int, int]:
    """``n_files`` text files of ``size`` code points of the corpus, every one different, in
    nested folders (up to 4 deep), with a ``.gitignore`` leaving out one folder of them (it
    is walked past, never read). Returns (files, bytes) written outside the ignored folder."""
    text = C.whole_corpus()
    n = len(text)
    total = 0
    (root / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text("ignored/\n*.tmp\n")
    for i in range(n_files):
        # a second pass over the corpus starts half a file further: no two files are equal
        start = (i * size + (size // 2) * ((i * size) // n)) % (n - size)
        body = f"# file {i}\n" + text[start:start + size]
        parts = [f"d{i % 10}", f"e{(i // 10) % 10}", f"f{(i // 100) % 10}"][: 1 + i % 3]
        p = root.joinpath(*parts, f"file{i}.py")
        p.parent.mkdir(parents=True, exist_ok=True)
        data = body.encode("utf-8", errors="replace")
        p.write_bytes(data)
        total += len(data)
    (root / "ignored").mkdir()
    for i in range(50):
        (root / "ignored" / f"x{i}.txt").write_text("never read " * 100)
    return n_files, total


def wrapped(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", WRAP, *cmd], capture_output=True, text=True,
                         env=env, check=True)
    r: dict[str, Any] = json.loads(out.stdout)
    if r["rc"] != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed: {r['err']}")
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--size", type=int, default=5_000, help="code points a file")
    ap.add_argument("--floor-files", type=int, default=1_000,
                    help="files of the encode floor (one process, one core)")
    ap.add_argument("--quick", action="store_true", help="1,000 files, 1 run, no page")
    args = ap.parse_args()
    if args.quick:
        args.files, args.runs, args.floor_files = 1_000, 1, 200
    log = C.Log()
    info = C.machine_info()
    from livetok.server.parallel_open import available_cores

    cores = available_cores()
    enc = C.livetok_encoding("o200k_base")
    vocab = enc.source
    with tempfile.TemporaryDirectory(prefix="livetok-bench-ws-") as tmp:
        base = Path(tmp)
        repo = base / "repo"
        n_files, n_bytes = make_repo(repo, args.files, args.size)
        log(f"repository: {n_files:,} files, {n_bytes / 1e6:.1f} MB")
        # the stat index records a file only once it is RACY_NS old (docs/workspace.md): a
        # repository as a user reopens it, not one written a second ago
        time.sleep(RACY_NS / 1e9 + 0.1)
        env = {**os.environ, "LIVETOK_COUNT_CACHE_DIR": str(base / "warm-cache")}
        # the files livetok counts: what the reference counts too
        listing = base / "files.txt"
        first = json.loads(wrapped([sys.executable, "-c", LIVETOK_SCRIPT, str(repo),
                                    str(cores), str(listing)], env)["out"])
        assert first["files"] == n_files + 1, first["files"]  # and the .gitignore
        results: dict[str, list[dict[str, Any]]] = {k: [] for k in (
            "tiktoken", "tiktoken command", "cold", "warm", "cold command", "warm command",
            "floor")}
        for run in range(args.runs):
            r = wrapped([sys.executable, "-c", TIKTOKEN_SCRIPT, str(vocab), enc.pat_str,
                         str(listing), str(cores)], env)
            results["tiktoken"].append({**json.loads(r["out"]), "rss_all": r["rss"]})
            results["tiktoken command"].append(r)
            cold_env = {**env, "LIVETOK_COUNT_CACHE_DIR": str(base / f"cold-{run}")}
            r = wrapped([sys.executable, "-c", LIVETOK_SCRIPT, str(repo), str(cores)], cold_env)
            results["cold"].append({**json.loads(r["out"]), "rss_all": r["rss"]})
            r = wrapped([sys.executable, "-c", LIVETOK_SCRIPT, str(repo), str(cores)], env)
            results["warm"].append({**json.loads(r["out"]), "rss_all": r["rss"]})
            cold_env = {**env, "LIVETOK_COUNT_CACHE_DIR": str(base / f"cold-cli-{run}")}
            cli = [sys.executable, "-m", "livetok.server.cli.main", "count", "-r", str(repo),
                   "--format", "json"]
            r = wrapped(cli, cold_env)
            results["cold command"].append(r)
            r = wrapped(cli, env)
            results["warm command"].append(r)
            r = wrapped([sys.executable, "-c", FLOOR_SCRIPT, str(vocab), enc.pat_str,
                         str(listing), str(args.floor_files)], env)
            results["floor"].append(json.loads(r["out"]))
            log(f"run {run + 1}: tiktoken {results['tiktoken'][-1]['work']:.2f} s, cold "
                f"{results['cold'][-1]['work']:.2f} s, warm {results['warm'][-1]['work']:.2f} s; floor "
                f"{results['floor'][-1]['livetok']:.2f} s vs {results['floor'][-1]['tiktoken']:.2f} s")
        totals = {k: {x["tokens"] for x in v} for k, v in results.items()
                  if k in ("tiktoken", "cold", "warm")}
        equal = len(set().union(*totals.values())) == 1 and all(
            x["equal"] for x in results["floor"])
        md = page(results, totals, equal, n_files, n_bytes, cores, args)
    print("\n".join(md))
    if not args.quick:
        C.write_page(C.DOCS / "benchmarks-workspace.md", md, info, log,
                     "benchmarks/bench_workspace.py" + (f" --runs {args.runs}"
                                                        if args.runs != 3 else ""))


def page(results: dict[str, list[dict[str, Any]]], totals: dict[str, set[int]], equal: bool,
         n_files: int, n_bytes: int, cores: int, args: argparse.Namespace) -> list[str]:
    med = {k: C.median([x.get("work", x.get("wall", float("nan"))) for x in v])
           for k, v in results.items() if k != "floor"}
    floor = {k: C.median([x[k] for x in results["floor"]]) for k in ("livetok", "tiktoken")}
    floor_ratio = floor["livetok"] / floor["tiktoken"]
    f0 = results["floor"][0]
    wall = {k: C.median([x["wall"] for x in v]) for k, v in results.items() if "command" in k}
    rss = {k: max(max(x.get("rss", 0), x.get("rss_all", 0)) for x in v) / 1024
           for k, v in results.items() if k != "floor"}
    ratio_cold = med["cold"] / med["tiktoken"]
    ratio_cmd = wall["cold command"] / wall["tiktoken command"]
    rows = [
        ["tiktoken script (reference)", C.fmt_s(med["tiktoken"]), C.fmt_s(wall["tiktoken command"]),
         "1.00×", f"{rss['tiktoken']:,.0f} MB"],
        ["livetok map, cold (empty cache)", C.fmt_s(med["cold"]), C.fmt_s(wall["cold command"]),
         C.fmt_ratio(ratio_cold), f"{max(rss['cold'], rss['cold command']):,.0f} MB"],
        ["livetok map, warm (cache of a cold run)", C.fmt_s(med["warm"]),
         C.fmt_s(wall["warm command"]), C.fmt_ratio(med["warm"] / med["tiktoken"]),
         f"{max(rss['warm'], rss['warm command']):,.0f} MB"],
    ]
    tok = next(iter(totals["tiktoken"])) if totals["tiktoken"] else 0
    return [
        "# Workspace map benchmark",
        "",
        "The workspace token map (`livetok count -r`, `livetok/workspaceCounts`) of a "
        f"generated repository of {n_files:,} files, {n_bytes / 1e6:.1f} MB, beside a tiktoken "
        "script counting the same files on the same cores, measured in the same run by "
        "`benchmarks/bench_workspace.py`.",
        "",
        "## Results",
        "",
        C.md_table(["variant", "work (median)", "command (median wall)", "work / tiktoken's",
                    "peak memory"], rows, align="lrrrr"),
        "",
        f"- Totals equal (livetok's map, cold and warm, and tiktoken's count of the same "
        f"files): **{'yes' if equal else 'NO'}** ({tok:,} tokens, o200k_base).",
        f"- Cold work / tiktoken's work: **{ratio_cold:.2f}×** (the goal: at most 1.5×); "
        f"whole commands: {ratio_cmd:.2f}×.",
        f"- Warm work: **{C.fmt_s(med['warm'])}**, the whole `livetok count -r` command "
        f"{C.fmt_s(wall['warm command'])} (the goal: at most 1 s).",
        f"- The encode floor (one process, one core, CPU time of the encode alone, the first "
        f"{f0['files']:,} files, {f0['bytes'] / 1e6:.1f} MB): livetok "
        f"{C.fmt_s(floor['livetok'])}, tiktoken {C.fmt_s(floor['tiktoken'])}: "
        f"**{floor_ratio:.2f}×**, with the piece memo of a live document (livetok's encoder is "
        "Python, tiktoken's Rust); the map's counting processes keep a larger memo "
        "(`counting.BULK_PIECE_CACHE` pieces per generation), which the files of one "
        "repository share words enough to use.",
        f"- {args.runs} runs of each, alternating; {cores} cores here (`jobs` = {cores} for "
        "livetok, `num_threads` = the same for tiktoken).",
        "",
        "## Method",
        "",
        "- The repository: files of "
        f"{args.size:,} code points of the Python standard library's text (the corpus of the "
        "other benchmarks), each with its own first line and no two alike (a second pass "
        "over the corpus starts half a file further), in folders up to three deep, with a "
        "`.gitignore` that leaves out a folder of 50 more files.",
        "- **work** is timed inside the process, after the vocabulary is loaded: for livetok "
        "`WorkspaceMap.build()` (the walk with `.gitignore`, the budget file lookup, reading, "
        "SHA-256, the count cache, counting the misses in forked processes, the tree); for "
        "tiktoken reading and decoding the files of the same list and "
        "`encode_ordinary_batch(texts, num_threads=cores)`. **command** is the wall time of "
        "the process as a user runs it: `livetok count -r DIR --format json` (start, the "
        "vocabulary from livetok's cache, the map, the JSON), the tiktoken script (start, "
        "parsing the `.tiktoken` file, the count).",
        "- **cold**: a fresh count cache folder (`LIVETOK_COUNT_CACHE_DIR`) for each run: "
        "the parent walks, the forked processes read, hash and count their files; "
        "**warm**: the cache a cold run filled, files unchanged (their `stat` is in the stat "
        "index: no file is read or hashed, nothing is encoded, and `livetok count -r` loads "
        "no vocabulary). The repository is left 2 s after it is written before the first run "
        "(the stat index's racy window, docs/workspace.md).",
        "- Peak memory: the largest `ru_maxrss` of the process and of its children (the "
        "forked counting processes), over the runs.",
        "- The machine is shared with other jobs (its load average is below): absolute "
        "times move with it; the ratios compare runs made side by side.",
        "",
    ]


if __name__ == "__main__":
    main()
