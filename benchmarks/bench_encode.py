"""Encoder benchmark: livetok ``Encoding.encode`` beside tiktoken and puretiktoken.

Writes ``docs/benchmarks-encode.md`` and ``docs/img/bench_encode.png``::

    .venv/bin/python benchmarks/bench_encode.py            # full run (several minutes)
    .venv/bin/python benchmarks/bench_encode.py --quick    # smoke run (seconds)
    .venv/bin/python benchmarks/bench_encode.py --quick --out /tmp/b   # elsewhere

What is timed, all in this one process on the same strings (except where stated):

* real text (prefixes of the standard library corpus, see ``_common.real_text``), o200k_base
  and cl100k_base: livetok cold (piece cache cleared before the run), warm (the run right
  after, same text) and primed (the cache holding only the pieces of a *different* 10 MB of the
  corpus, see ``primer_text``), tiktoken ``encode_ordinary`` (no piece cache), puretiktoken
  ``encode_ordinary`` cold and warm (it caches pieces too). Runs are interleaved so drift in
  machine load hits every encoder alike;
* adversarial single-piece inputs (``"a" * N``, CJK letters, ``"-" * N``, ``" " * N``) and a
  size sweep of each, to fit the growth exponent (log-log slope). puretiktoken is super-linear
  on long pieces, so it runs in a child process on a ladder of small sizes that stops once a run
  takes too long, and the full size is attempted with a timeout;
* ``livetok count FILE`` on a 10 MB file against the same count by tiktoken, both as
  subprocesses (wall time, vocabulary loading included), counts compared.

Every result is checked: livetok's ids must equal tiktoken's (and puretiktoken's).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import _common as C

# -- configuration ---------------------------------------------------------------------------


@dataclass
class Config:
    real: dict[str, list[int]]  # encoding -> sizes (code points)
    reps: Callable[[int], int]  # size -> repetitions for real text
    adversarial: list[tuple[str, str, int, int]]  # (kind, label, main size, sweep points)
    point_budget: float  # seconds of livetok runs per sweep point before stopping repeats
    point_reps: int
    warm_max_cold: float  # do warm runs of an adversarial input only if cold median < this
    pt_floor: int  # smallest puretiktoken ladder size
    pt_stop_after: float  # the ladder stops after a run longer than this
    pt_ladder_limit: float  # a ladder run is interrupted after this many seconds
    pt_main_timeout: float  # limit of the full-size run (0: do not attempt it)
    primer_chars: int  # size of the other text that primes the cache for the "primed" runs
    count_size: int
    count_reps: int
    count_no_progress: bool
    count_startup: bool


FULL = Config(
    real={"o200k_base": [10 * C.KB, 100 * C.KB, 1 * C.MB, 10 * C.MB],
          "cl100k_base": [10 * C.KB, 100 * C.KB, 1 * C.MB]},
    reps=lambda n: 20 if n <= 10 * C.KB else 10 if n <= 100 * C.KB else 5 if n <= C.MB else 3,
    adversarial=[
        ("a", '`"a" * N`', 100_000, 5),
        ("cjk", "CJK letters, no spaces (1 MB UTF-8)", 333_333, 5),
        ("dash", '`"-" * N` (one punctuation character)', 200_000, 5),
        ("space", '`" " * N`', 1_000_000, 4),
    ],
    point_budget=15.0,
    point_reps=3,
    warm_max_cold=5.0,
    pt_floor=200,
    pt_stop_after=2.0,
    pt_ladder_limit=30.0,
    pt_main_timeout=10.0,
    primer_chars=10 * C.MB,
    count_size=10 * C.MB,
    count_reps=3,
    count_no_progress=True,
    count_startup=True,
)

QUICK = Config(
    real={"o200k_base": [10 * C.KB]},
    reps=lambda n: 2,
    adversarial=[
        ("a", '`"a" * N`', 2_000, 2),
        ("cjk", "CJK letters, no spaces", 1_000, 2),
        ("dash", '`"-" * N` (one punctuation character)', 2_000, 2),
        ("space", '`" " * N`', 2_000, 2),
    ],
    point_budget=0.2,
    point_reps=1,
    warm_max_cold=0.2,
    pt_floor=200,
    pt_stop_after=0.02,
    pt_ladder_limit=1.0,
    pt_main_timeout=0.3,
    primer_chars=100 * C.KB,
    count_size=20 * C.KB,
    count_reps=1,
    count_no_progress=False,
    count_startup=False,
)


def adversarial_text(kind: str, n: int) -> str:
    if kind == "a":
        return "a" * n
    if kind == "dash":
        return "-" * n
    if kind == "space":
        return " " * n
    if kind == "cjk":
        return C.cjk_text(n)
    raise ValueError(kind)


# -- real text -------------------------------------------------------------------------------


@dataclass
class RealRow:
    encoding: str
    n: int
    nbytes: int
    tokens: int
    reps: int
    t: dict[str, list[float]]
    equal: bool
    cache_after: int = 0
    cpu: dict[str, list[float]] = field(default_factory=dict)


KEYS = ("lt_cold", "lt_warm", "lt_primed", "tk", "pt_cold", "pt_warm")


def primer_text(n_chars: int, after: int) -> str:
    """The last ``n_chars`` code points of the corpus, but none of its first ``after`` (the
    real-text sizes are prefixes of it): other files of the standard library, for the
    "primed" runs. Shorter (even empty) when the corpus is too small; the report gives the
    size used."""
    corpus = C.whole_corpus()
    return corpus[max(after, len(corpus) - n_chars):]


def bench_real(name: str, sizes: list[int], reps_of: Callable[[int], int], log: C.Log,
               primer: str) -> list[RealRow]:
    import puretiktoken

    enc = C.livetok_encoding(name)
    tk = C.tiktoken_ref(enc)
    pt = puretiktoken.get_encoding(name)
    # the pieces livetok learns from other text: a long-lived process (the language server,
    # `livetok count` of several files) has seen other text before this one
    C.clear_cache(enc)
    enc.encode(primer)
    primed = dict(enc._cache)

    def prime() -> None:
        C.clear_cache(enc)
        enc._cache.update(primed)

    rows = []
    for n in sizes:
        text = C.real_text(n)
        reps = reps_of(n)
        t: dict[str, list[float]] = {k: [] for k in KEYS}
        cpu: dict[str, list[float]] = {k: [] for k in KEYS}
        equal = True
        tokens = 0
        cache_after = 0
        for r in range(reps):
            outs = {}
            for k, before, call in (("lt_cold", lambda: C.clear_cache(enc), enc.encode),
                                    ("lt_warm", None, enc.encode),
                                    ("lt_primed", prime, enc.encode),
                                    ("tk", None, tk.encode_ordinary),
                                    ("pt_cold", lambda: C.clear_cache(pt), pt.encode_ordinary),
                                    ("pt_warm", None, pt.encode_ordinary)):
                if before is not None:
                    before()
                dt, c, outs[k] = C.timed_cpu(lambda: call(text))
                t[k].append(dt)
                cpu[k].append(c)
                if k == "lt_warm":
                    cache_after = len(enc._cache)
            if r == 0:
                b = outs["tk"]
                equal = all(v == b for v in outs.values())
                tokens = len(b)
            del outs
        row = RealRow(name, n, C.utf8_len(text), tokens, reps, t, equal, cache_after, cpu)
        rows.append(row)
        log(f"{name} real {C.fmt_size(n)}: livetok cold {C.fmt_s(C.median(t['lt_cold']))} "
            f"warm {C.fmt_s(C.median(t['lt_warm']))} primed {C.fmt_s(C.median(t['lt_primed']))}, "
            f"tiktoken {C.fmt_s(C.median(t['tk']))}, "
            f"puretiktoken cold {C.fmt_s(C.median(t['pt_cold']))} "
            f"warm {C.fmt_s(C.median(t['pt_warm']))}; equal={equal}")
    return rows


def real_table(rows: list[RealRow]) -> str:
    out = []
    for r in rows:
        m = {k: C.median(v) for k, v in r.t.items()}
        cell = lambda k: f"{C.fmt_mbps(r.nbytes, m[k])} ({C.fmt_s(m[k])})"  # noqa: E731
        out.append([
            C.fmt_size(r.n), f"{r.nbytes:,}", f"{r.tokens:,}", r.reps,
            cell("lt_cold"), cell("lt_warm"), cell("lt_primed"), cell("tk"), cell("pt_cold"),
            cell("pt_warm"),
            C.fmt_ratio(m["lt_cold"] / m["tk"]), C.fmt_ratio(m["lt_warm"] / m["tk"]),
            C.fmt_ratio(m["lt_primed"] / m["tk"]),
            C.fmt_ratio(m["lt_cold"] / m["pt_cold"]), C.fmt_ratio(m["lt_warm"] / m["pt_warm"]),
            "yes" if r.equal else "**NO**",
        ])
    return C.md_table(
        ["text", "UTF-8 bytes", "tokens", "runs", "livetok cold", "livetok warm",
         "livetok primed", "tiktoken", "puretiktoken cold", "puretiktoken warm", "lt/tk cold",
         "lt/tk warm", "lt/tk primed", "lt/pt cold", "lt/pt warm", "ids equal"],
        out)


def real_cpu_table(rows: list[RealRow]) -> str:
    out = []
    for r in rows:
        m = {k: C.median(v) for k, v in r.cpu.items()}
        out.append([C.fmt_size(r.n)] + [C.fmt_s(m[k]) for k in KEYS] + [
            C.fmt_ratio(m["lt_cold"] / m["tk"]), C.fmt_ratio(m["lt_warm"] / m["tk"]),
            C.fmt_ratio(m["lt_primed"] / m["tk"]),
            C.fmt_ratio(m["lt_cold"] / m["pt_cold"]), C.fmt_ratio(m["lt_warm"] / m["pt_warm"])])
    return C.md_table(
        ["text", "livetok cold", "livetok warm", "livetok primed", "tiktoken",
         "puretiktoken cold", "puretiktoken warm", "lt/tk cold", "lt/tk warm", "lt/tk primed",
         "lt/pt cold", "lt/pt warm"], out)


# -- adversarial inputs and sweeps -----------------------------------------------------------


@dataclass
class Point:
    n: int
    nbytes: int
    lt: list[float] = field(default_factory=list)
    lt_cpu: list[float] = field(default_factory=list)
    lt_warm: list[float] = field(default_factory=list)
    tk: list[float] = field(default_factory=list)
    tk_fail: str = ""
    tokens: int = 0
    equal_tk: bool | None = None


@dataclass
class AdvResult:
    kind: str
    label: str
    main: int
    pieces: int
    points: list[Point]
    pt: C.PeerRun
    pt_equal: bool | None
    warm_note: str = ""
    pt_cmp: tuple[int, float, float] | None = None  # (size, livetok median, puretiktoken)


def _try_tiktoken(tk: Any, s: str) -> tuple[float, Any, str]:
    try:
        dt, ids = C.timed(lambda: tk.encode_ordinary(s))
        return dt, ids, ""
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - pyo3's PanicException is a BaseException
        kind = "panic" if "panic" in type(exc).__name__.lower() else type(exc).__name__
        msg = str(exc)
        m = re.search(r"`Err` value: (.*)$", msg)
        return float("nan"), None, f"{kind} ({(m.group(1) if m else msg)[:50]})"


def bench_adversarial(cfg: Config, log: C.Log) -> list[AdvResult]:
    enc = C.livetok_encoding("o200k_base")
    tk = C.tiktoken_ref(enc)
    results = []
    for kind, label, main, npts in cfg.adversarial:
        sizes = [main >> k for k in range(npts - 1, -1, -1)]
        points = []
        for n in sizes:
            s = adversarial_text(kind, n)
            p = Point(n, C.utf8_len(s))
            spent = 0.0
            while len(p.lt) < cfg.point_reps and (not p.lt or spent < cfg.point_budget):
                C.clear_cache(enc)
                dt, cpu, a = C.timed_cpu(lambda: enc.encode(s))
                p.lt.append(dt)
                p.lt_cpu.append(cpu)
                spent += dt
                dt, b, fail = _try_tiktoken(tk, s)
                if fail:
                    p.tk_fail = fail
                else:
                    p.tk.append(dt)
                if len(p.lt) == 1:
                    p.tokens = len(a)
                    p.equal_tk = None if b is None else a == b
                del a, b
            points.append(p)
            log(f"{kind} {n:,} chars: livetok {C.fmt_s(C.median(p.lt))} x{len(p.lt)}, "
                f"tiktoken {C.fmt_s(C.median(p.tk)) if p.tk else p.tk_fail}; equal={p.equal_tk}")
        top = points[-1]
        s = adversarial_text(kind, main)
        warm_note = ""
        if C.median(top.lt) < cfg.warm_max_cold:
            for _ in range(len(top.lt)):
                C.clear_cache(enc)
                enc.encode(s)
                dt, _ids = C.timed(lambda: enc.encode(s))
                top.lt_warm.append(dt)
        else:
            warm_note = f"not run (cold run > {cfg.warm_max_cold:g} s)"
        pieces = len(enc.pieces(s))
        results.append(AdvResult(kind, label, main, pieces, points, C.PeerRun(), None, warm_note))

    # puretiktoken in one child process: a ladder of small sizes per input, then the full size
    jobs = []
    for kind, _label, main, _n in cfg.adversarial:
        ladder = sorted({main >> k for k in range(1, 20) if (main >> k) >= cfg.pt_floor})
        jobs.append((kind, ladder, main if cfg.pt_main_timeout > 0 else None))
    budget = sum(cfg.pt_ladder_limit * 2 + cfg.pt_main_timeout for _ in jobs) + 60
    log(f"puretiktoken child: ladders + full sizes (limit {cfg.pt_main_timeout:g} s each)")
    runs = C.puretiktoken_subprocess("o200k_base", jobs, stop_after=cfg.pt_stop_after,
                                     ladder_limit=cfg.pt_ladder_limit,
                                     main_limit=cfg.pt_main_timeout, timeout=budget)
    for r in results:
        r.pt = runs[r.kind]
        for n, h in r.pt.hashes.items():
            ok = C.ids_hash(enc.encode(adversarial_text(r.kind, n))) == h
            r.pt_equal = ok if r.pt_equal is None else r.pt_equal and ok
        if r.pt.times:  # livetok at the largest size puretiktoken finished, for a direct ratio
            n = max(r.pt.times)
            s = adversarial_text(r.kind, n)
            ts = []
            for _ in range(3):
                C.clear_cache(enc)
                ts.append(C.timed(lambda: enc.encode(s))[0])
            r.pt_cmp = (n, C.median(ts), r.pt.times[n])
        log(f"{r.kind}: puretiktoken {({k: round(v, 3) for k, v in sorted(r.pt.times.items())})} "
            f"timeouts {r.pt.timeouts} {r.pt.reason}; equal={r.pt_equal}")
    return results


def _pt_main_cell(r: AdvResult) -> tuple[str, float]:
    """Cell text and seconds (NaN if not measured) of puretiktoken at the full size."""
    if r.main in r.pt.times:
        return C.fmt_s(r.pt.times[r.main]), r.pt.times[r.main]
    ladder = [n for n in r.pt.times if n < r.main]
    largest = max(ladder) if ladder else None
    fitted = _pt_exponent(r)
    where = ""
    if largest is not None:
        where = f"; {C.fmt_s(r.pt.times[largest])} at {largest:,} chars"
        if fitted == fitted:
            est = r.pt.times[largest] * (r.main / largest) ** fitted
            where += f", ≈ {C.fmt_s(est)} extrapolated"
    if r.main in r.pt.timeouts:
        return f"timeout > {r.pt.timeouts[r.main]:g} s{where}", float("nan")
    if r.pt.reason:
        return f"{r.pt.reason}{where}", float("nan")
    return f"not run{where}", float("nan")


def _pt_exponent(r: AdvResult) -> float:
    pts = [(n, t) for n, t in sorted(r.pt.times.items()) if t >= 0.01]
    return C.loglog_slope([p[0] for p in pts], [p[1] for p in pts])


def adversarial_table(results: list[AdvResult]) -> str:
    rows = []
    for r in results:
        top = r.points[-1]
        lt = C.median(top.lt)
        ltw = C.median(top.lt_warm)
        tk = C.median(top.tk) if top.tk else float("nan")
        pt_cell, _ = _pt_main_cell(r)
        rows.append([
            r.label, f"{r.main:,}", f"{top.nbytes:,}", r.pieces, f"{top.tokens:,}", len(top.lt),
            f"{C.fmt_s(lt)} ({C.fmt_mbps(top.nbytes, lt)} MB/s)",
            f"{C.fmt_s(ltw)} ({C.fmt_mbps(top.nbytes, ltw)} MB/s)" if top.lt_warm else r.warm_note,
            f"{C.fmt_s(tk)} ({C.fmt_mbps(top.nbytes, tk)} MB/s)" if top.tk else top.tk_fail,
            pt_cell,
            C.fmt_ratio(lt / tk) if top.tk else "—",
            (f"{C.fmt_ratio(r.pt_cmp[2] / r.pt_cmp[1])} faster at {r.pt_cmp[0]:,} chars "
             f"({C.fmt_s(r.pt_cmp[1])} vs {C.fmt_s(r.pt_cmp[2])})") if r.pt_cmp else "—",
            {True: "yes", False: "**NO**", None: "—"}[top.equal_tk],
            {True: "yes", False: "**NO**", None: "—"}[r.pt_equal],
        ])
    return C.md_table(
        ["input", "chars", "UTF-8 bytes", "pieces", "tokens", "runs", "livetok cold",
         "livetok warm", "tiktoken", "puretiktoken", "lt/tk", "livetok vs puretiktoken",
         "= tiktoken", "= puretiktoken (its sizes)"],
        rows)


def sweep_tables(results: list[AdvResult]) -> tuple[str, str]:
    summary = []
    detail = []
    for r in results:
        ns = [p.n for p in r.points]
        lt = [C.median(p.lt) for p in r.points]
        lt_cpu = [C.median(p.lt_cpu) for p in r.points]
        tk = [C.median(p.tk) if p.tk else float("nan") for p in r.points]
        tk_ok = [(n, t) for n, t in zip(ns, tk) if t == t]
        e_lt = C.loglog_slope(ns, lt_cpu)
        e_lt_wall = C.loglog_slope(ns, lt)
        e_lt_last = C.loglog_slope(ns[-2:], lt_cpu[-2:])
        e_tk = C.loglog_slope([a for a, _ in tk_ok], [b for _, b in tk_ok])
        e_pt = _pt_exponent(r)
        pt_sizes = sorted(n for n, t in r.pt.times.items() if t >= 0.01)
        summary.append([
            r.label, f"{ns[0]:,} … {ns[-1]:,} ({len(ns)})", f"{e_lt:.2f}", f"{e_lt_last:.2f}",
            f"{e_lt_wall:.2f}",
            f"{e_tk:.2f}" + ("" if len(tk_ok) == len(ns) else f" ({len(tk_ok)} sizes)"),
            (f"{e_pt:.2f} ({pt_sizes[0]:,} … {pt_sizes[-1]:,})" if len(pt_sizes) >= 2 else "—"),
        ])
        by_n = {p.n: (p, t_tk) for p, t_tk in zip(r.points, tk)}
        for n in sorted(set(by_n) | set(r.pt.times) | set(r.pt.timeouts)):
            pt_cell = (C.fmt_s(r.pt.times[n]) if n in r.pt.times
                       else f"timeout > {r.pt.timeouts[n]:g} s" if n in r.pt.timeouts else "")
            if n in by_n:
                p, t_tk = by_n[n]
                detail.append([r.kind, f"{n:,}", f"{C.fmt_s(C.median(p.lt))} ×{len(p.lt)}",
                               C.fmt_s(C.median(p.lt_cpu)),
                               f"{C.fmt_s(C.median(p.lt_cpu) / n * 1000)}",
                               C.fmt_s(t_tk) if t_tk == t_tk else p.tk_fail, pt_cell])
            else:
                detail.append([r.kind, f"{n:,}", "", "", "", "", pt_cell])
        if r.pt.reason:
            detail.append([r.kind, "", "", "", "", "", r.pt.reason])
    s = C.md_table(["input", "sizes (chars)", "livetok exponent (CPU time, fit)",
                    "livetok exponent (CPU, last two sizes)", "livetok exponent (wall, fit)",
                    "tiktoken exponent (wall)",
                    "puretiktoken exponent (sizes ≥ 10 ms)"], summary)
    d = C.md_table(["input", "chars", "livetok wall (median × runs)", "livetok CPU",
                    "livetok CPU per 1K chars",
                    "tiktoken", "puretiktoken (1 run)"], detail)
    return s, d


# -- livetok count ---------------------------------------------------------------------------

TIKTOKEN_COUNT = r"""
import sys, tiktoken
from livetok.incremental.vocab.find import find_vocabulary
from livetok.incremental.bytelevel.pretokenize import PATTERNS
name, path = sys.argv[1], sys.argv[2]
ranks, _ = find_vocabulary(name)
enc = tiktoken.Encoding(name, pat_str=PATTERNS[name], mergeable_ranks=ranks, special_tokens={})
with open(path, "rb") as f:
    text = f.read().decode("utf-8", errors="replace")
print(len(enc.encode_ordinary(text)))
"""


def _livetok_cmd() -> list[str]:
    script = Path(sys.executable).with_name("livetok")
    return [str(script)] if script.exists() else [sys.executable, "-m", "livetok.server.cli.main"]


def _wall(cmd: list[str], timeout: float = 600) -> tuple[float, int | None, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        return dt, None, p.stderr.strip()[-200:]
    try:
        return dt, int(p.stdout.split()[0]), ""
    except (ValueError, IndexError):
        return dt, None, f"unexpected output {p.stdout[:80]!r}"


@dataclass
class CountResult:
    nbytes: int
    rows: list[list[Any]]
    counts: dict[str, int | None]
    equal: bool


def bench_count(cfg: Config, log: C.Log, tmp: Path) -> CountResult:
    text = C.real_text(cfg.count_size)
    f = tmp / f"corpus-{cfg.count_size}.txt"
    f.write_text(text, encoding="utf-8")
    empty = tmp / "empty.txt"
    empty.write_text("", encoding="utf-8")
    lt = _livetok_cmd()
    variants = [
        ("`livetok count FILE`", lt + ["count", str(f)], cfg.count_reps),
        ("`livetok count -j 1 FILE` (one process)", lt + ["count", "-j", "1", str(f)],
         cfg.count_reps),
        ("tiktoken `encode_ordinary` (same vocabulary loader)",
         [sys.executable, "-c", TIKTOKEN_COUNT, "o200k_base", str(f)], cfg.count_reps),
    ]
    if cfg.count_no_progress:
        variants.insert(2, ("`livetok count -j 1 --no-progress FILE`",
                            lt + ["count", "-j", "1", "--no-progress", str(f)], 1))
    startup = {
        "`livetok count FILE`": lt + ["count", str(empty)],
        "tiktoken `encode_ordinary` (same vocabulary loader)":
            [sys.executable, "-c", TIKTOKEN_COUNT, "o200k_base", str(empty)],
    }
    rows = []
    counts: dict[str, int | None] = {}
    for label, cmd, reps in variants:
        times = []
        n = None
        err = ""
        for _ in range(reps):
            dt, n, err = _wall(cmd)
            times.append(dt)
        st = ""
        if cfg.count_startup and label in startup:
            st_t, _, _ = _wall(startup[label])
            st = C.fmt_s(st_t)
        counts[label] = n
        m = C.median(times)
        rows.append([label, len(times), C.fmt_s(m), st, f"{n:,}" if n is not None else f"error: {err}",
                     C.fmt_mbps(C.utf8_len(text), m)])
        log(f"count {label}: {C.fmt_s(m)} x{len(times)} -> {n} {err}")
    vals = [v for v in counts.values()]
    equal = all(v is not None for v in vals) and len(set(vals)) == 1
    return CountResult(C.utf8_len(text), rows, counts, equal)


# -- plot ------------------------------------------------------------------------------------


def plot(path: Path, real: list[RealRow], adv: list[AdvResult]) -> bool:
    plt = C.pyplot()
    if plt is None:
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    o200 = [r for r in real if r.encoding == "o200k_base"]
    series = [("lt_cold", "livetok cold"), ("lt_warm", "livetok warm"), ("tk", "tiktoken"),
              ("pt_cold", "puretiktoken cold"), ("pt_warm", "puretiktoken warm")]
    width = 0.16
    for i, (k, label) in enumerate(series):
        xs = [j + (i - 2) * width for j in range(len(o200))]
        ys = [r.nbytes / C.median(r.t[k]) / 1e6 for r in o200]
        ax1.bar(xs, ys, width, label=label)
    ax1.set_xticks(range(len(o200)), [C.fmt_size(r.n) for r in o200])
    ax1.set_ylabel("throughput, MB/s (UTF-8 bytes)")
    ax1.set_title("real text (stdlib corpus), o200k_base, median")
    ax1.legend(fontsize=8)
    ax1.grid(axis="y", which="both", alpha=0.3)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(adv):
        c = colors[i % len(colors)]
        ns = [p.n for p in r.points]
        ax2.plot(ns, [C.median(p.lt) for p in r.points], "o-", color=c, label=f"livetok {r.kind}")
        tk = [(p.n, C.median(p.tk)) for p in r.points if p.tk]
        if tk:
            ax2.plot(*zip(*tk), "s--", color=c, alpha=0.7, label=f"tiktoken {r.kind}")
        pt = sorted(r.pt.times.items())
        if pt:
            ax2.plot(*zip(*pt), "^:", color=c, alpha=0.7, label=f"puretiktoken {r.kind}")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("input length (code points), one piece")
    ax2.set_ylabel("seconds (cold)")
    ax2.set_title("adversarial single-piece inputs, o200k_base")
    ax2.grid(which="both", alpha=0.3)
    ax2.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return True


# -- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few runs (smoke test)")
    ap.add_argument("--out", type=Path, default=C.DOCS,
                    help="folder for benchmarks-encode.md and img/ (default: docs/)")
    ap.add_argument("--skip-count", action="store_true", help="skip the `livetok count` section")
    ap.add_argument("--pt-timeout", type=float, default=None,
                    help="timeout (s) of puretiktoken at the full adversarial sizes (0: don't try)")
    args = ap.parse_args(argv)
    os.environ["RUST_BACKTRACE"] = "0"  # tiktoken's panic hook: no backtrace on stderr
    cfg = QUICK if args.quick else FULL
    if args.pt_timeout is not None:
        cfg.pt_main_timeout = args.pt_timeout
    log = C.Log()
    info = C.machine_info()
    command = "benchmarks/bench_encode.py" + (" --quick" if args.quick else "")
    log(f"{command}: {info['cpu']}, {info['nproc']} cores, load {info['load']}")

    real: list[RealRow] = []
    primer = primer_text(cfg.primer_chars, max(max(v) for v in cfg.real.values()))
    log(f"primer: {len(primer):,} code points of other text")
    for name, sizes in cfg.real.items():
        real += bench_real(name, sizes, cfg.reps, log, primer)
    adv = bench_adversarial(cfg, log)
    count = None
    if not args.skip_count:
        with tempfile.TemporaryDirectory() as tmp:
            count = bench_count(cfg, log, Path(tmp))

    img = args.out / "img" / "bench_encode.png"
    plotted = plot(img, real, adv)
    md = render(cfg, args, info, log.elapsed, command, real, adv, count, plotted, len(primer))
    C.write_text(args.out / "benchmarks-encode.md", md)
    ok = all(r.equal for r in real) and all(p.equal_tk is not False for r in adv for p in r.points) \
        and all(r.pt_equal is not False for r in adv) and (count is None or count.equal)
    if not ok:
        print("MISMATCH: some token ids differed between encoders (see the tables)", file=sys.stderr)
        return 1
    return 0


def render(cfg: Config, args: argparse.Namespace, info: dict[str, str], elapsed: float,
           command: str, real: list[RealRow], adv: list[AdvResult], count: CountResult | None,
           plotted: bool, primer_len: int) -> str:
    out: list[str] = []
    w = out.append
    w("# Encoder benchmarks\n")
    w("livetok's `Encoding.encode` beside tiktoken's `encode_ordinary` (Rust) and puretiktoken's "
      "`encode_ordinary` (pure Python), timed in one process on the same strings. Generated by "
      f"`benchmarks/bench_encode.py`{' (**quick smoke run**: small sizes, not for citing)' if args.quick else ''}; "
      "re-run with:\n")
    w("```\n.venv/bin/python benchmarks/bench_encode.py          # full, several minutes\n"
      ".venv/bin/python benchmarks/bench_encode.py --quick  # smoke run, seconds\n```\n")
    w("## Machine\n")
    w(C.machine_section(info, elapsed, command) + "\n")
    w("## Method\n")
    w("- Every number is a median of the stated number of runs; each run is one call with the "
      "cyclic garbage collector off during the call (a collection runs before it). The encoders "
      "run interleaved (livetok cold, livetok warm, livetok primed, tiktoken, puretiktoken cold, "
      "puretiktoken warm, then again) so changes in machine load hit all of them.\n"
      "- **cold**: the encoder's piece cache (`_cache`, in livetok and in puretiktoken) is "
      "cleared before the run; **warm**: the run right after, on the same text. tiktoken keeps "
      "no piece cache, so it has one number.\n"
      f"- **primed**: livetok's cache holds exactly the pieces it learned from encoding "
      f"{primer_len:,} code points of *other* text (the end of the corpus: other files, which "
      "the real-text sizes never reach), as in a language server or a `livetok count` of "
      "several files that has met other text first. The text itself was never encoded: its "
      "pieces that the other text lacks are encoded in the run.\n"
      "- Throughput is UTF-8 bytes / second, in MB/s (10^6 bytes). Ratios are time ratios: "
      "**lt/tk = livetok time / tiktoken time** (how many times slower livetok is); "
      "likewise lt/pt against puretiktoken (below 1: livetok is faster).\n"
      "- Every output is checked: livetok's ids equal tiktoken's and puretiktoken's "
      "(column *ids equal*).\n"
      f"- {C.corpus_note()}\n"
      f"- {C.cjk_note()}\n")
    for name in cfg.real:
        rows = [r for r in real if r.encoding == name]
        w(f"## Real text, {name}\n")
        w("Cells: MB/s (median wall time).\n")
        w(real_table(rows) + "\n")
        w("The same runs in process CPU time (`time.process_time`; leaves out waits for a core "
          "when the machine is shared), medians:\n")
        w(real_cpu_table(rows) + "\n")
        cache_rows = [r for r in rows if r.cache_after]
        if cache_rows:
            big = cache_rows[-1]
            w(f"livetok's piece cache held {big.cache_after:,} entries after the "
              f"{C.fmt_size(big.n)} warm run.\n")
    if adv:
        w("## Adversarial single-piece inputs, o200k_base\n")
        w("Each input is one pre-token (column *pieces*), so the whole input goes through one "
          "BPE call: the worst case for a piece-level tokenizer. livetok caches only short "
          "pieces, so *warm* is not expected to differ here. puretiktoken runs in a child "
          "process (it is super-linear on long pieces): on a ladder of sizes up to the first run "
          f"over {cfg.pt_stop_after:g} s, then at the full size, interrupted (SIGALRM) after "
          f"{cfg.pt_main_timeout:g} s" + (" (not attempted in this run)" if cfg.pt_main_timeout <= 0 else "")
          + "; *livetok vs puretiktoken* compares the two at the largest size puretiktoken "
          "finished (livetok: median of 3 cold runs there). "
          "The puretiktoken check compares ids at the sizes it finished.\n")
        w(adversarial_table(adv) + "\n")
        s, d = sweep_tables(adv)
        w("## Growth: size sweep of the adversarial inputs\n")
        w("Growth exponent = least-squares slope of log(time) against log(length) over the sizes "
          "(1 = linear, 2 = quadratic). livetok's exponent is fitted on the process CPU time of "
          "each run (`time.process_time`), which leaves out waits for a core on this shared "
          "machine; the wall-time fit is beside it. Median cold times of livetok (runs per size stop after "
          f"{cfg.point_budget:g} s), tiktoken at the same sizes, puretiktoken (one cold run per "
          "size, child process) on its own ladder of smaller sizes.\n")
        w(s + "\n")
        w("<details><summary>All sweep points</summary>\n")
        w(d + "\n")
        w("</details>\n")
    if count is not None:
        w(f"## `livetok count` on a {C.fmt_size(cfg.count_size)} file\n")
        w("Wall time of a whole process (interpreter start, vocabulary load, read, encode), "
          "median of the stated runs. The tiktoken side is a `python -c` script that loads the "
          "same `.tiktoken` file with livetok's loader and calls tiktoken's `encode_ordinary`. "
          "*startup* is the same command on an empty file. `livetok count` shows a progress bar "
          "(to stderr, captured) on files over 4 MB. On a file of 4 M characters or more it "
          "counts with as many processes as there are cores (at most 4; `os.sched_getaffinity`: "
          f"{C.cores_note()}), forked after the vocabulary is loaded, each encoding whole parts "
          "cut where no piece can span (`Encoding.split_blocks`); `-j 1` counts in one process, "
          "block by block (`Encoding.encode_blocks`, the blocks `encode` uses), updating the "
          "bar per block; `-j 1 --no-progress` calls `encode` once. tiktoken runs in one "
          "thread.\n")
        w(C.md_table(["command", "runs", "wall time", "startup (empty file)", "count",
                      "MB/s (wall)"], count.rows) + "\n")
        w(f"Counts equal: **{'yes' if count.equal else 'NO'}**.\n")
    if plotted:
        w("## Plot\n")
        w("![encode throughput and adversarial growth](img/bench_encode.png)\n")
    else:
        w("(No plot: matplotlib is not installed; `pip install matplotlib`.)\n")
    w(findings(real, adv, count))
    return "\n".join(out)


def findings(real: list[RealRow], adv: list[AdvResult], count: CountResult | None) -> str:
    lines = ["## Summary (computed from the tables above)\n"]
    o = [r for r in real if r.encoding == "o200k_base"]
    if o:
        for label, key in (("wall", "t"), ("CPU", "cpu")):
            m = [{k: C.median(v) for k, v in getattr(r, key).items()} for r in o]
            warm = [x["lt_warm"] / x["tk"] for x in m]
            cold = [x["lt_cold"] / x["tk"] for x in m]
            primed = [x["lt_primed"] / x["tk"] for x in m]
            ptw = [x["pt_warm"] / x["lt_warm"] for x in m]
            lines.append(
                f"- Real text, o200k_base, {C.fmt_size(o[0].n)}–{C.fmt_size(o[-1].n)} ({label} "
                f"time): livetok takes {min(cold):.2f}–{max(cold):.2f}× tiktoken's time cold, "
                f"{min(primed):.2f}–{max(primed):.2f}× primed and "
                f"{min(warm):.2f}–{max(warm):.2f}× warm; puretiktoken warm takes "
                f"{min(ptw):.2f}–{max(ptw):.2f}× livetok's warm time.")
    for r in adv:
        ns = [p.n for p in r.points]
        e = C.loglog_slope(ns, [C.median(p.lt_cpu) for p in r.points])
        lines.append(f"- {r.kind}: livetok growth exponent {e:.2f} over {ns[0]:,}–{ns[-1]:,} chars ("
                     + ("close to linear" if e < 1.3 else "super-linear, below quadratic"
                        if e < 1.75 else "**about quadratic or worse**") + ").")
    if count is not None:
        lines.append(f"- `livetok count`: counts {'equal' if count.equal else 'DIFFER'}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
