"""Incremental document benchmark: per-edit latency, build time, memory, widening counters.

Writes ``docs/benchmarks-document.md`` and ``docs/img/bench_document.png``::

    .venv/bin/python benchmarks/bench_document.py            # full run (several minutes)
    .venv/bin/python benchmarks/bench_document.py --quick    # smoke run (seconds)
    .venv/bin/python benchmarks/bench_document.py --base-edits 0   # whole traces in the bases

What is measured (o200k_base, one process):

* every shared editing trace (``../shared/traces``) replayed edit by edit into a ``Document``:
  latency of each ``doc.edit`` call (median, p99), then the same trace replayed in the middle of
  100 KB, 1 MB and 10 MB of real text (the first ``--base-edits`` patches of each trace, to keep
  the run short), and the ratio of the 10 MB and 100 KB medians;
* random single-character edits (insert or delete one ASCII letter / space / newline, uniform
  positions, seeded) in the 10 MB document, and tiktoken re-encoding the whole text after a
  sample of the same edits, side by side: the speed-up of incremental over full re-encoding;
* edits inside one long piece (a line of CJK letters without spaces, a line of ``ACGT``),
  between real text, beside tiktoken re-encoding the whole text;
* the initial build of a ``Document`` beside ``enc.encode`` and tiktoken on the same text;
* memory per token of a 10 MB document (``tracemalloc``), beside the text as a ``str``;
* the Algorithm 1 counters (``doc.stats``) of each replay;
* a cProfile of the random-edit loop (top functions by cumulative time).

Every replay ends with a check: the document's text equals the expected text and its token
ids equal tiktoken's encoding of it (a benchmark that measured a wrong result is worthless).

A/B of checkouts (:func:`ab_size`, issue 35's no-regression check): ``--checkout
NAME=PATH`` twice (or more) runs only that and rewrites only its section of the page: the random edits
at 1 MB and 10 MB (``--ab-sizes``) timed in a child process per checkout (``_ab.py``), the
checkouts alternating round by round::

    .venv/bin/python benchmarks/bench_document.py --checkout before=../ab_old \\
        --checkout after=../ab_new [--ab-rounds 20] [--ab-edits 250]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import gc
import io
import pstats
import random
import string
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as C

ENCODING = "o200k_base"


@dataclass
class Config:
    standalone_edits: int  # 0: whole trace
    base_edits: int  # 0: whole trace
    bases: list[int]  # document sizes (code points) the traces are replayed in; last = "big"
    random_edits: int
    tk_samples: int
    build_small: int
    build_small_reps: int
    profile_edits: int
    memory: bool
    long_chars: int  # ASCII letters in the long-line input (the CJK line has a third)
    long_edits: int


FULL = Config(standalone_edits=0, base_edits=10_000, bases=[100 * C.KB, 1 * C.MB, 10 * C.MB],
              random_edits=2000, tk_samples=20, build_small=1 * C.MB, build_small_reps=5,
              profile_edits=2000, memory=True, long_chars=1_000_000, long_edits=40)
QUICK = Config(standalone_edits=300, base_edits=150, bases=[10 * C.KB, 100 * C.KB],
               random_edits=200, tk_samples=3, build_small=10 * C.KB, build_small_reps=2,
               profile_edits=100, memory=True, long_chars=30_000, long_edits=6)


# -- helpers -----------------------------------------------------------------------------------


def stats_of(doc: Any) -> dict[str, int]:
    st = getattr(doc, "stats", None)
    if st is None:
        return {}
    if dataclasses.is_dataclass(st):
        return {f.name: getattr(st, f.name) for f in dataclasses.fields(st)}
    return {k: v for k, v in vars(st).items() if isinstance(v, int)}


def stats_delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items()}


def mid_point(base: str) -> int:
    """The middle of ``base``, moved back to a line start (as ``livetok replay --base``)."""
    mid = len(base) // 2
    nl = base.rfind("\n", 0, mid)
    return nl + 1 if nl >= 0 else mid


def apply_patches(s: str, patches: list[tuple[int, int, str]]) -> str:
    for pos, ndel, ins in patches:
        s = s[:pos] + ins + s[pos + ndel:]
    return s


@dataclass
class Replay:
    trace: str
    context: int  # base size in code points (0: the trace alone)
    edits: int
    final_chars: int
    lat: list[float]  # seconds per edit (wall)
    cpu: list[float]  # seconds per edit (this thread's CPU time)
    total: float
    stats: dict[str, int]
    verified: bool
    build: float = float("nan")


def lat_summary(lat: list[float]) -> dict[str, float]:
    return {"median": C.median(lat), "p90": C.percentile(lat, 90), "p99": C.percentile(lat, 99),
            "max": max(lat) if lat else float("nan"),
            "mean": sum(lat) / len(lat) if lat else float("nan")}


def replay(doc: Any, patches: list[tuple[int, int, str]],
           offset: int) -> tuple[list[float], list[float], float]:
    """Apply ``patches`` (shifted by ``offset``) timing each ``doc.edit`` call: wall time and
    the thread's CPU time (which leaves out time the process spent descheduled)."""
    lat: list[float] = []
    cpu: list[float] = []
    append = lat.append
    cappend = cpu.append
    edit = doc.edit
    clock = time.perf_counter
    tclock = time.thread_time
    gc.unfreeze()  # the collector sees every object again, as in an editor (see _common.timed)
    t0 = clock()
    for pos, ndel, ins in patches:
        s = pos + offset
        t = clock()
        c = tclock()
        edit(s, s + ndel, ins)
        c2 = tclock()
        append(clock() - t)
        cappend(c2 - c)
    return lat, cpu, clock() - t0


def verify(doc: Any, expected: str, tk: Any) -> bool:
    if doc.text != expected:
        print("MISMATCH: document text differs from the expected text", file=sys.stderr)
        return False
    if doc.token_ids() != tk.encode_ordinary(expected):
        print("MISMATCH: token ids differ from tiktoken's encoding of the text", file=sys.stderr)
        return False
    return True


# -- sections ----------------------------------------------------------------------------------


def load_traces() -> list[Any]:
    from livetok.server.cli.traces import load_trace

    return [load_trace(p) for p in sorted(C.TRACES.glob("*.json*"))] if C.TRACES.is_dir() else []


def bench_standalone(traces: list[Any], cfg: Config, enc: Any, tk: Any, log: C.Log) -> list[Replay]:
    from livetok.incremental import Document

    out = []
    for tr in traces:
        patches = tr.patches[: cfg.standalone_edits or None]
        doc = Document(tr.start, encoding=enc)
        before = stats_of(doc)
        lat, cpu, total = replay(doc, patches, 0)
        expected = tr.end if len(patches) == len(tr.patches) else apply_patches(tr.start, patches)
        ok = verify(doc, expected, tk)
        r = Replay(tr.name, 0, len(patches), len(expected), lat, cpu, total,
                   stats_delta(stats_of(doc), before), ok)
        out.append(r)
        s = lat_summary(lat)
        log(f"{tr.name} alone: {len(lat)} edits in {total:.1f} s, median {C.fmt_us(s['median'])} "
            f"p99 {C.fmt_us(s['p99'])}; verified={ok}")
    return out


def bench_in_bases(traces: list[Any], cfg: Config, enc: Any, tk: Any, log: C.Log,
                   big_doc_hook: Any) -> list[Replay]:
    from livetok.incremental import Document

    out = []
    for n in cfg.bases:
        base = C.real_text(n)
        mid = mid_point(base)
        C.clear_cache(enc)
        build, doc = C.timed(lambda: Document(base, encoding=enc))
        log(f"base {C.fmt_size(n)}: built in {C.fmt_s(build)} ({doc.token_count:,} tokens)")
        if n == cfg.bases[-1]:
            big_doc_hook(base, doc, build)
        for tr in traces:
            patches = tr.patches[: cfg.base_edits or None]
            if tr.start:
                doc.edit(mid, mid, tr.start)
            before = stats_of(doc)
            lat, cpu, total = replay(doc, patches, mid)
            after = stats_of(doc)
            inner = tr.end if len(patches) == len(tr.patches) else apply_patches(tr.start, patches)
            ok = verify(doc, base[:mid] + inner + base[mid:], tk)
            # restore the base for the next trace (one untimed edit)
            doc.edit(mid, mid + len(inner), "")
            ok = ok and doc.length == len(base)
            r = Replay(tr.name, n, len(patches), len(inner), lat, cpu, total,
                       stats_delta(after, before), ok, build)
            out.append(r)
            s = lat_summary(lat)
            log(f"{tr.name} in {C.fmt_size(n)}: {len(lat)} edits in {total:.1f} s, median "
                f"{C.fmt_us(s['median'])} p99 {C.fmt_us(s['p99'])}; verified={ok}")
        if n != cfg.bases[-1]:
            del doc
    return out


@dataclass
class RandomResult:
    n: int
    edits: int
    lat: list[float]
    cpu: list[float]
    sample_idx: list[int]
    tk_times: list[float]
    verified: bool
    stats: dict[str, int]
    seed: int


ALPHABET = string.ascii_letters + " \n"


def random_edits(n: int, k: int, seed: int) -> list[tuple[int, int, str]]:
    """``k`` random one-character edits, ``(start, end, new_text)``, for a text of length ``n``:
    insert (one of :data:`ALPHABET`) or delete one character, 50/50, at a uniform position."""
    rng = random.Random(seed)
    edits = []
    for _ in range(k):
        if n == 0 or rng.random() < 0.5:
            p = rng.randrange(n + 1)
            edits.append((p, p, rng.choice(ALPHABET)))
            n += 1
        else:
            p = rng.randrange(n)
            edits.append((p, p + 1, ""))
            n -= 1
    return edits


class Mirror:
    """The expected text, kept apart from the document: a list of blocks, so that an edit copies
    one block instead of the whole string (a 10 MB ``str`` holding one astral character is
    stored 4 bytes per character, and copying it costs tens of milliseconds per edit)."""

    BLOCK = 4096

    def __init__(self, text: str) -> None:
        self.blocks = [text[i:i + self.BLOCK] for i in range(0, len(text), self.BLOCK)] or [""]

    def _find(self, pos: int) -> tuple[int, int]:
        """(block index, offset in it) of ``pos``; a position between blocks goes left."""
        acc = 0
        blocks = self.blocks
        for i, b in enumerate(blocks):
            if pos <= acc + len(b):
                return i, pos - acc
            acc += len(b)
        return len(blocks) - 1, len(blocks[-1])

    def replace(self, start: int, end: int, ins: str) -> str:
        """Replace ``[start, end)`` by ``ins`` (a span within one block or across two);
        return the replaced text."""
        i, a = self._find(start)
        j, b = self._find(end)
        blocks = self.blocks
        if end > start and b == 0 and j > i:
            j, b = j - 1, len(blocks[j - 1])
        old = blocks[i][a:] + "".join(blocks[i + 1:j]) + blocks[j][:b] if j > i else blocks[i][a:b]
        blocks[i:j + 1] = [blocks[i][:a] + ins + blocks[j][b:]]
        return old

    def text(self) -> str:
        return "".join(self.blocks)


def bench_random(doc: Any, text: str, cfg: Config, tk: Any, log: C.Log, seed: int = 20251122) -> RandomResult:
    """Time the random edits in a loop that does nothing else (the expected text and the
    tiktoken timings are computed afterwards on the same texts), so that one edit's latency
    is not inflated by the caches and allocations of the bookkeeping around it."""
    edits = random_edits(len(text), cfg.random_edits, seed)
    step = max(1, len(edits) // max(1, cfg.tk_samples))
    sample = set(range(step - 1, len(edits), step)) if cfg.tk_samples else set()
    lat: list[float] = []
    cpu: list[float] = []
    counts: dict[int, int] = {}
    before = stats_of(doc)
    clock = time.perf_counter
    tclock = time.thread_time
    gc.unfreeze()
    for i, (s, e, ins) in enumerate(edits):
        t = clock()
        c = tclock()
        doc.edit(s, e, ins)
        c2 = tclock()
        lat.append(clock() - t)
        cpu.append(c2 - c)
        if i in sample:
            counts[i] = doc.token_count
    after = stats_of(doc)
    # the same texts again, for the reference: tiktoken re-encodes the whole text after the
    # sampled edits, and its count must equal the document's at that edit
    tk_times: list[float] = []
    sample_idx: list[int] = []
    mirror = Mirror(text)
    undo: list[tuple[int, int, str]] = []
    ok = True
    for i, (s, e, ins) in enumerate(edits):
        undo.append((s, s + len(ins), mirror.replace(s, e, ins)))
        if i in sample:
            full = mirror.text()
            dt, ids = C.timed(lambda: tk.encode_ordinary(full))
            gc.unfreeze()
            tk_times.append(dt)
            sample_idx.append(i)
            if counts[i] != len(ids):
                ok = False
                print(f"MISMATCH after random edit {i}: {(s, e, ins)!r}: count "
                      f"{counts[i]} != {len(ids)}", file=sys.stderr)
            del ids, full
    ok = verify(doc, mirror.text(), tk) and ok
    log(f"random edits at {C.fmt_size(len(text))}: {len(lat)} edits, median "
        f"{C.fmt_us(C.median(lat))} p99 {C.fmt_us(C.percentile(lat, 99))}; tiktoken full "
        f"{C.fmt_s(C.median(tk_times))} x{len(tk_times)}; verified={ok}")
    # undo the edits (untimed) so the caller's text still describes the document
    for s, e, ins in reversed(undo):
        doc.edit(s, e, ins)
    return RandomResult(len(text), len(edits), lat, cpu, sample_idx, tk_times, ok,
                        stats_delta(after, before), seed)


@dataclass
class LongPieceResult:
    label: str
    run_chars: int
    run_bytes: int
    n: int
    build: float
    lat: list[float]
    tk_times: list[float]
    stats: dict[str, int]
    verified: bool
    # count_range of the whole line and of its second half plus the next 3,000 characters:
    # (what, livetok median, tiktoken encode of the same substring median)
    ranges: list[tuple[str, float, float]] = field(default_factory=list)


def bench_long_pieces(cfg: Config, enc: Any, tk: Any, log: C.Log) -> list[LongPieceResult]:
    """Single-character edits (insert a letter of the line's own alphabet, or delete one)
    inside one long piece that sits between two halves of 200 K characters of real text: the
    worst place for a piece-level tokenizer, whose pieces there are the whole line."""
    from livetok.incremental import Document

    rng = random.Random(20261123)
    around = C.real_text(200_000)
    rows = []
    cjk = C.cjk_text(cfg.long_chars // 3)
    for label, run, alphabet in (
        (f"CJK letters, no spaces ({C.utf8_len(cjk):,} UTF-8 bytes)", cjk, C.cjk_text(200)),
        (f"`ACGT` letters ({C.fmt_size(cfg.long_chars)})",
         "".join(rng.choice("ACGT") for _ in range(cfg.long_chars)), "ACGT"),
    ):
        lo = len(around) // 2
        text = around[:lo] + run + "\n" + around[lo:]
        C.clear_cache(enc)
        build, doc = C.timed(lambda: Document(text, encoding=enc))
        before = stats_of(doc)
        mirror = Mirror(text)
        lat = []
        gc.unfreeze()
        for _ in range(cfg.long_edits):
            p = lo + rng.randrange(len(run) - 1)
            if rng.random() < 0.5:
                s_e_ins = (p, p, rng.choice(alphabet))
            else:
                s_e_ins = (p, p + 1, "")
            t = time.perf_counter()
            doc.edit(*s_e_ins)
            lat.append(time.perf_counter() - t)
            mirror.replace(*s_e_ins)
        after = stats_of(doc)
        final = mirror.text()
        tk_times = []
        for _ in range(3):
            dt, ids = C.timed(lambda: tk.encode_ordinary(final))
            tk_times.append(dt)
        ok = doc.text == final and doc.token_ids() == ids
        ranges = []
        line_end = lo + len(final) - len(text) + len(run)
        for what, a, b in (("the whole line (hover's paragraph)", lo, line_end),
                           ("second half of the line and 3,000 more characters",
                            (lo + line_end) // 2, line_end + 3000)):
            t_lt = [C.timed(lambda: doc.count_range(a, b)) for _ in range(3)]
            t_tk = [C.timed(lambda: tk.encode_ordinary(final[a:b])) for _ in range(3)]
            ok = ok and all(n == len(t_tk[0][1]) for _, n in t_lt)
            ranges.append((what, C.median([t for t, _ in t_lt]), C.median([t for t, _ in t_tk])))
        log(f"long piece {label}: {len(lat)} edits, median {C.fmt_s(C.median(lat))}, max "
            f"{C.fmt_s(max(lat))}; tiktoken full {C.fmt_s(C.median(tk_times))}; verified={ok}")
        rows.append(LongPieceResult(label, len(run), C.utf8_len(run), len(text), build, lat,
                                    tk_times, stats_delta(after, before), ok, ranges))
        del doc, ids
    return rows


@dataclass
class BuildRow:
    n: int
    nbytes: int
    tokens: int
    reps: int
    t: dict[str, list[float]] = field(default_factory=dict)
    equal: bool = True


def bench_build(text: str, reps: int, enc: Any, tk: Any, log: C.Log,
                first_build: tuple[float, Any] | None = None) -> BuildRow:
    from livetok.incremental import Document

    row = BuildRow(len(text), C.utf8_len(text), 0, reps,
                   {k: [] for k in ("doc", "lt_cold", "lt_warm", "tk")})
    for r in range(reps):
        if r == 0 and first_build is not None:
            dt, doc = first_build
        else:
            C.clear_cache(enc)
            dt, doc = C.timed(lambda: Document(text, encoding=enc))
        row.t["doc"].append(dt)
        C.clear_cache(enc)
        dt, a = C.timed(lambda: enc.encode(text))
        row.t["lt_cold"].append(dt)
        dt, a2 = C.timed(lambda: enc.encode(text))
        row.t["lt_warm"].append(dt)
        dt, b = C.timed(lambda: tk.encode_ordinary(text))
        row.t["tk"].append(dt)
        if r == 0:
            row.tokens = len(b)
            row.equal = a == b and a2 == b and doc.token_ids() == b
        del a, a2, b, doc
    m = {k: C.median(v) for k, v in row.t.items()}
    log(f"build {C.fmt_size(len(text))}: Document {C.fmt_s(m['doc'])}, encode cold "
        f"{C.fmt_s(m['lt_cold'])} warm {C.fmt_s(m['lt_warm'])}, tiktoken {C.fmt_s(m['tk'])} "
        f"x{reps}; equal={row.equal}")
    return row


@dataclass
class MemoryResult:
    n: int
    tokens: int
    retained: int
    peak: int
    text_str: int
    list_ids: int
    structural: int | None
    kind: int  # bytes per character of the str (1, 2 or 4: CPython's PEP 393 storage)


def _structural_size(doc: Any) -> int | None:
    """Sum of ``sys.getsizeof`` over the token sequence's chunks and index (a cross-check of
    tracemalloc; depends on the ``TokenSeq`` internals, so ``None`` when they change)."""
    try:
        seq = doc._seq
        total = sys.getsizeof(seq)
        for ch in seq.chunks:
            total += sys.getsizeof(ch) + sys.getsizeof(ch.ids) + sys.getsizeof(ch.cps)
            total += sys.getsizeof(ch.flags) + sys.getsizeof(ch.text)
            c = getattr(ch, "_cum", None)
            if c is not None:
                total += sys.getsizeof(c) + sum(sys.getsizeof(x) for x in c if x > 256)
        total += sys.getsizeof(seq.chunks)
        for name in dir(seq):
            v = getattr(seq, name, None)
            tree = getattr(v, "tree", None)
            if isinstance(tree, list):
                total += sys.getsizeof(tree) + sum(sys.getsizeof(x) for x in tree if x > 256)
        return total
    except Exception:  # noqa: BLE001 - internals changed: no cross-check
        return None


def bench_memory(text: str, enc: Any, tk: Any, log: C.Log) -> MemoryResult:
    from livetok.incremental import Document

    enc.encode(text)  # warm the piece cache first: its entries are not the document's memory
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        doc = Document(text, encoding=enc)
        _, peak = tracemalloc.get_traced_memory()
        gc.collect()
        retained, _ = tracemalloc.get_traced_memory()
        tokens = doc.token_count
        del doc
        gc.collect()
        base2, _ = tracemalloc.get_traced_memory()
        ids = tk.encode_ordinary(text)
        gc.collect()
        list_ids = tracemalloc.get_traced_memory()[0] - base2
        del ids
    finally:
        tracemalloc.stop()
    doc = Document(text, encoding=enc)
    structural = _structural_size(doc)
    del doc
    widest = max(map(ord, text)) if text else 0
    kind = 1 if widest < 256 else 2 if widest < 0x10000 else 4
    r = MemoryResult(len(text), tokens, retained - base, peak - base, sys.getsizeof(text),
                     list_ids, structural, kind)
    log(f"memory {C.fmt_size(len(text))}: retained {r.retained / r.tokens:.1f} B/token, peak "
        f"{r.peak / r.tokens:.1f} B/token, str {r.text_str / r.tokens:.1f} B/token")
    return r


def profile_random(doc: Any, text: str, k: int, top: int = 15) -> str:
    edits = random_edits(len(text), k, seed=7)
    pr = cProfile.Profile()
    pr.enable()
    for s, e, ins in edits:
        doc.edit(s, e, ins)
    pr.disable()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).strip_dirs().sort_stats("cumulative").print_stats(top)
    lines = [ln.rstrip() for ln in buf.getvalue().splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if "function calls" in ln), 0)
    return "\n".join(lines[start:])


# -- rendering ---------------------------------------------------------------------------------


def _cell(lat: list[float], cpu: list[float]) -> str:
    return (f"{C.fmt_us(C.median(lat))} / {C.fmt_us(C.percentile(lat, 99))} "
            f"({C.fmt_us(C.percentile(cpu, 99))})")


def ctx_label(n: int) -> str:
    return "alone" if n == 0 else f"in {C.fmt_size(n)}"


def render(cfg: Config, args: argparse.Namespace, info: dict[str, str], elapsed: float,
           command: str, traces: list[Any], alone: list[Replay], based: list[Replay],
           rnd: RandomResult | None, longs: list[LongPieceResult], builds: list[BuildRow],
           mem: MemoryResult | None, prof: str, plotted: bool) -> str:
    out: list[str] = []
    w = out.append
    big = cfg.bases[-1]
    w("# Incremental document benchmarks\n")
    w("Per-edit latency of `livetok.incremental.Document.edit` on real editing traces and random "
      "edits, build time, memory and the Algorithm 1 counters. Generated by "
      f"`benchmarks/bench_document.py`{' (**quick smoke run**: small sizes, not for citing)' if args.quick else ''}; "
      "re-run with:\n")
    w("```\n.venv/bin/python benchmarks/bench_document.py          # full, several minutes\n"
      ".venv/bin/python benchmarks/bench_document.py --quick  # smoke run, seconds\n```\n")
    w("## Machine\n")
    w(C.machine_section(info, elapsed, command) + "\n")
    w("## Method\n")
    w(f"- Encoding {ENCODING}. Latency is the wall time of one `doc.edit(start, end, text)` call "
      "(`time.perf_counter`), with the garbage collector on, as in an editor; the "
      "percentiles are over all edits of the replay. *CPU* is the thread's CPU time of the same "
      "call (`time.thread_time`): on a busy machine the gap between wall and CPU time is time "
      "the process spent waiting for a core. Build and encode times are medians of calls with "
      "the collector off (see `_common.timed`).\n"
      "- Traces: `../shared/traces/*.json.gz`, patches applied in order (code point positions). "
      "*alone*: the trace replayed from its start content in an empty document; *in N*: its "
      "start content inserted at a line start in the middle of N code points of real text and "
      "the patches shifted there"
      + (f" (the first {cfg.base_edits:,} patches of each trace; `--base-edits 0` replays them "
         "all)" if cfg.base_edits else "")
      + ". One document per size serves all traces: after each trace the inserted text is "
        "deleted again (one untimed edit).\n"
      "- **Checked**: after every replay the document's text equals the expected text and "
      "`doc.token_ids()` equals tiktoken's `encode_ordinary` of it (column *verified*); the "
      "random edits' token count is also checked at each tiktoken sample.\n"
      f"- {C.corpus_note()}\n")

    if alone:
        w("## Editing traces, alone\n")
        rows = []
        for r in alone:
            s = lat_summary(r.lat)
            c = lat_summary(r.cpu)
            rows.append([r.trace, f"{r.edits:,}", f"{r.final_chars:,}", C.fmt_us(s["median"]),
                         C.fmt_us(s["p90"]), C.fmt_us(s["p99"]), C.fmt_us(s["max"]),
                         C.fmt_us(s["mean"]), C.fmt_us(c["median"]), C.fmt_us(c["p99"]),
                         f"{r.edits / r.total:,.0f}" if r.total else "—",
                         "yes" if r.verified else "**NO**"])
        w(C.md_table(["trace", "edits", "final chars", "median", "p90", "p99", "max", "mean",
                      "CPU median", "CPU p99", "edits/s", "verified"], rows) + "\n")
    else:
        w(f"## Editing traces\n\nNo traces found in `{C.TRACES}`: trace sections skipped.\n")

    if based:
        w("## Editing traces inside larger documents\n")
        w("Cells: median / p99 of the wall time per edit, then (CPU) the p99 of the CPU time. "
          "The *alone* column covers the same first patches as the others. *ratio* = median in "
          "the largest document / median in the smallest.\n")
        sizes = cfg.bases
        rows = []
        for tr in traces:
            a = next((r for r in alone if r.trace == tr.name), None)
            rs = {r.context: r for r in based if r.trace == tr.name}
            if not rs:
                continue
            k = next(iter(rs.values())).edits
            cells = [tr.name, f"{k:,}"]
            cells.append(_cell(a.lat[:k], a.cpu[:k]) if a is not None else "—")
            for n in sizes:
                r = rs.get(n)
                cells.append(_cell(r.lat, r.cpu) if r else "—")
            lo, hi = rs.get(sizes[0]), rs.get(sizes[-1])
            cells.append(C.fmt_ratio(C.median(hi.lat) / C.median(lo.lat)) if lo and hi else "—")
            cells.append("yes" if all(r.verified for r in rs.values()) else "**NO**")
            rows.append(cells)
        pooled = {n: [x for r in based if r.context == n for x in r.lat] for n in sizes}
        pooled_c = {n: [x for r in based if r.context == n for x in r.cpu] for n in sizes}
        pa = [x for r in alone for x in r.lat[: cfg.base_edits or None]]
        pac = [x for r in alone for x in r.cpu[: cfg.base_edits or None]]
        rows.append(["**all traces**", f"{sum(len(r.lat) for r in based if r.context == sizes[0]):,}",
                     _cell(pa, pac) if pa else "—"]
                    + [_cell(pooled[n], pooled_c[n]) for n in sizes]
                    + [C.fmt_ratio(C.median(pooled[sizes[-1]]) / C.median(pooled[sizes[0]])), ""])
        w(C.md_table(["trace", "edits", "alone"] + [f"in {C.fmt_size(n)}" for n in sizes]
                     + [f"ratio {C.fmt_size(sizes[-1])} / {C.fmt_size(sizes[0])}", "verified"],
                     rows) + "\n")
        builds_line = ", ".join(
            f"{C.fmt_size(n)}: {C.fmt_s(next(r.build for r in based if r.context == n))}"
            for n in sizes)
        w(f"Build time of each base document (cache cleared first): {builds_line}.\n")

    if rnd is not None:
        w(f"## Random single-character edits in a {C.fmt_size(rnd.n)} document\n")
        s = lat_summary(rnd.lat)
        samp = [rnd.lat[i] for i in rnd.sample_idx]
        tkm = C.median(rnd.tk_times)
        w(f"{rnd.edits:,} edits (insert or delete one character from ASCII letters, space and "
          f"newline, 50/50, at uniformly random positions; `random.Random({rnd.seed})`). After "
          f"{len(rnd.tk_times)} of them (every {rnd.edits // max(1, len(rnd.tk_times)):,}th), "
          "tiktoken re-encoded the whole text as it stood after that edit, and its count was "
          "compared with the document's; the edits are timed in a loop that does nothing else, "
          "the tiktoken runs on the same texts right after it, in the same process.\n")
        c = lat_summary(rnd.cpu)
        rows = [
            ["livetok `doc.edit`, all edits", f"{len(rnd.lat):,}", C.fmt_us(s["median"]),
             C.fmt_us(s["p90"]), C.fmt_us(s["p99"]), C.fmt_us(s["max"]), C.fmt_us(s["mean"])],
            ["livetok `doc.edit`, all edits, CPU time", f"{len(rnd.cpu):,}", C.fmt_us(c["median"]),
             C.fmt_us(c["p90"]), C.fmt_us(c["p99"]), C.fmt_us(c["max"]), C.fmt_us(c["mean"])],
            ["livetok `doc.edit`, the sampled edits", f"{len(samp):,}", C.fmt_us(C.median(samp)),
             "", C.fmt_us(C.percentile(samp, 99)), C.fmt_us(max(samp)) if samp else "—",
             C.fmt_us(sum(samp) / len(samp)) if samp else "—"],
            ["tiktoken `encode_ordinary(whole text)` after the sampled edits",
             f"{len(rnd.tk_times):,}", C.fmt_s(tkm), "", C.fmt_s(C.percentile(rnd.tk_times, 99)),
             C.fmt_s(max(rnd.tk_times)) if rnd.tk_times else "—",
             C.fmt_s(sum(rnd.tk_times) / len(rnd.tk_times)) if rnd.tk_times else "—"],
        ]
        w(C.md_table(["what", "n", "median", "p90", "p99", "max", "mean"], rows) + "\n")
        if rnd.tk_times:
            w(f"**Speed-up of an incremental edit over a full tiktoken re-encode: "
              f"{C.fmt_ratio(tkm / C.median(samp))}** (medians over the same sampled edits; "
              f"{C.fmt_ratio(tkm / s['median'])} against the median of all edits, "
              f"{C.fmt_ratio(tkm / s['p99'])} against their p99). Verified: "
              f"**{'yes' if rnd.verified else 'NO'}**.\n")

    kept = C.kept_section(args.out / "benchmarks-document.md", AB_HEADING)
    if kept:
        w("\n".join(kept))
    if longs:
        w("## Edits inside one long piece\n")
        w(f"A line that is one piece (a pre-token) of {longs[0].run_chars:,} CJK letters, or of "
          f"{longs[-1].run_chars:,} letters `ACGT`, in the middle of 200 K characters of real text; "
          f"{len(longs[0].lat)} single-character edits at random places inside the line "
          "(insert one of the line's own letters, or delete one, 50/50). Every edit re-splits "
          "the whole line (the piece's end is the first place the split can resync) and glues "
          "the tokens around the edit (Algorithm 1). *tiktoken* re-encodes the whole final text "
          "(median of 3). *Build*: `Document(text)`, piece cache cleared. Verified: the final "
          "token ids equal tiktoken's.\n")
        rows = []
        for r in longs:
            s_ = lat_summary(r.lat)
            tkm = C.median(r.tk_times)
            rows.append([r.label, f"{r.run_chars:,}", f"{r.n:,}", C.fmt_s(r.build), len(r.lat),
                         C.fmt_s(s_["median"]), C.fmt_s(s_["p90"]), C.fmt_s(s_["max"]),
                         C.fmt_s(tkm), C.fmt_ratio(tkm / s_["median"]),
                         f"{r.stats.get('window_retries', 0):,}",
                         "yes" if r.verified else "**NO**"])
        w(C.md_table(["line", "line chars", "document chars", "build", "edits", "median", "p90",
                      "max", "tiktoken re-encode", "speed-up (median)", "`window_retries`",
                      "verified"], rows) + "\n")
        w("`doc.count_range(start, end)` in the same documents after the edits (the count of "
          "that text alone, as for hover's paragraph count and a selection): only the ends of "
          "the partial long pieces are re-encoded (Algorithm 1 at each end), beside tiktoken "
          "encoding the same substring. Medians of 3; counts checked equal.\n")
        rows = [[r.label, what, C.fmt_s(t_lt), C.fmt_s(t_tk)]
                for r in longs for what, t_lt, t_tk in r.ranges]
        w(C.md_table(["line", "range", "livetok `count_range`", "tiktoken `encode_ordinary`"],
                     rows) + "\n")

    if builds:
        w("## Initial build\n")
        w("`Document(text)` with the piece cache cleared first, beside `enc.encode(text)` cold "
          "(cache cleared) and warm (right after), and tiktoken `encode_ordinary`. Median of the "
          "stated runs.\n")
        rows = []
        for b in builds:
            m = {k: C.median(v) for k, v in b.t.items()}
            rows.append([C.fmt_size(b.n), f"{b.tokens:,}", b.reps,
                         f"{C.fmt_s(m['doc'])} ({C.fmt_mbps(b.nbytes, m['doc'])} MB/s)",
                         f"{C.fmt_s(m['lt_cold'])} ({C.fmt_mbps(b.nbytes, m['lt_cold'])} MB/s)",
                         f"{C.fmt_s(m['lt_warm'])} ({C.fmt_mbps(b.nbytes, m['lt_warm'])} MB/s)",
                         f"{C.fmt_s(m['tk'])} ({C.fmt_mbps(b.nbytes, m['tk'])} MB/s)",
                         C.fmt_ratio(m["doc"] / m["lt_cold"]), C.fmt_ratio(m["doc"] / m["tk"]),
                         "yes" if b.equal else "**NO**"])
        w(C.md_table(["text", "tokens", "runs", "Document build", "encode cold", "encode warm",
                      "tiktoken", "build / encode cold", "build / tiktoken", "ids equal"],
                     rows) + "\n")

    if mem is not None:
        w(f"## Memory of a {C.fmt_size(mem.n)} document\n")
        w("`tracemalloc` around `Document(text)` (the piece cache warmed first, so its entries "
          "are not counted): *retained* = traced memory after the build and a collection, "
          "*peak* = highest traced memory during the build, both minus the memory before. "
          "Divided by the token count.\n")
        t = mem.tokens
        rows = [
            ["Document, retained", f"{mem.retained / 1e6:,.1f} MB", f"{mem.retained / t:.1f}"],
            ["Document, peak during build", f"{mem.peak / 1e6:,.1f} MB", f"{mem.peak / t:.1f}"],
            ["the same text as a Python `str`", f"{mem.text_str / 1e6:,.1f} MB",
             f"{mem.text_str / t:.1f}"],
            ["tiktoken's ids as a `list[int]`", f"{mem.list_ids / 1e6:,.1f} MB",
             f"{mem.list_ids / t:.1f}"],
        ]
        if mem.structural is not None:
            rows.append(["Document, `sys.getsizeof` of chunks + index (cross-check)",
                         f"{mem.structural / 1e6:,.1f} MB", f"{mem.structural / t:.1f}"])
        w(C.md_table(["what", "bytes", "bytes / token"], rows) + "\n")
        w(f"{t:,} tokens, {mem.n:,} code points. CPython stores a `str` with 1, 2 or 4 bytes per "
          f"character, set by its widest character: this text takes {mem.kind} "
          "byte(s) per character"
          + (" because it holds a character above U+FFFF; the document keeps its text in "
             "chunks of a few thousand characters, each stored as narrow as its own characters "
             "allow." if mem.kind == 4 else ".") + "\n")

    counters = [r for r in alone + based if r.stats]
    if counters:
        w("## Algorithm 1 counters (`doc.stats`)\n")
        w("Counted over each replay (differences of `doc.stats` before and after). "
          "`glue_widenings` and `window_retries` count the times a window had to grow.\n")
        keys = list(counters[0].stats)
        rows = [[r.trace, ctx_label(r.context), f"{r.edits:,}"] + [f"{r.stats.get(k, 0):,}" for k in keys]
                for r in counters]
        if rnd is not None and rnd.stats:
            rows.append([f"random edits", ctx_label(rnd.n), f"{rnd.edits:,}"]
                        + [f"{rnd.stats.get(k, 0):,}" for k in keys])
        w(C.md_table(["trace", "document", "patches"] + [f"`{k}`" for k in keys], rows) + "\n")

    if prof:
        w(f"## Profile of {cfg.profile_edits:,} random edits in the {C.fmt_size(big)} document\n")
        w("cProfile (which slows Python code several-fold), top 15 by cumulative time; a separate "
          "batch of edits, not the timed one.\n")
        w("```\n" + prof + "\n```\n")

    if plotted:
        w("## Plot\n")
        w("![latency CDF per document size](img/bench_document.png)\n")
    else:
        w("(No plot: matplotlib is not installed; `pip install matplotlib`.)\n")
    w(summary(cfg, alone, based, rnd, longs, builds, mem))
    return "\n".join(out)


def summary(cfg: Config, alone: list[Replay], based: list[Replay], rnd: RandomResult | None,
            longs: list[LongPieceResult], builds: list[BuildRow], mem: MemoryResult | None) -> str:
    lines = ["## Summary (computed from the tables above)\n"]
    all_alone = [x for r in alone for x in r.lat]
    if all_alone:
        lines.append(f"- {len(all_alone):,} trace edits alone: median "
                     f"{C.fmt_us(C.median(all_alone))}, p99 {C.fmt_us(C.percentile(all_alone, 99))}.")
    sizes = cfg.bases
    lo = [x for r in based if r.context == sizes[0] for x in r.lat]
    hi = [x for r in based if r.context == sizes[-1] for x in r.lat]
    if lo and hi:
        lines.append(f"- Same trace edits in {C.fmt_size(sizes[-1])} vs {C.fmt_size(sizes[0])}: "
                     f"median {C.fmt_us(C.median(hi))} vs {C.fmt_us(C.median(lo))} "
                     f"(ratio {C.fmt_ratio(C.median(hi) / C.median(lo))}), p99 "
                     f"{C.fmt_us(C.percentile(hi, 99))} vs {C.fmt_us(C.percentile(lo, 99))}.")
    if rnd is not None and rnd.tk_times:
        lines.append(f"- Random 1-character edits at {C.fmt_size(rnd.n)}: median "
                     f"{C.fmt_us(C.median(rnd.lat))}, p99 {C.fmt_us(C.percentile(rnd.lat, 99))}; "
                     f"tiktoken re-encoding the whole text: median {C.fmt_s(C.median(rnd.tk_times))}.")
    for r in longs:
        lines.append(f"- Edits inside one long piece, {r.label}: median {C.fmt_s(C.median(r.lat))}, "
                     f"max {C.fmt_s(max(r.lat))}; tiktoken re-encoding the whole text "
                     f"{C.fmt_s(C.median(r.tk_times))}.")
    if builds:
        b = builds[-1]
        m = {k: C.median(v) for k, v in b.t.items()}
        lines.append(f"- Build of {C.fmt_size(b.n)}: {C.fmt_s(m['doc'])} "
                     f"({C.fmt_ratio(m['doc'] / m['tk'])} tiktoken's encode).")
    if mem is not None:
        lines.append(f"- Memory: {mem.retained / mem.tokens:.1f} bytes per token retained "
                     f"({mem.retained / mem.n:.2f} per character), peak "
                     f"{mem.peak / mem.tokens:.1f} during the build.")
    ok = (all(r.verified for r in alone + based) and (rnd is None or rnd.verified)
          and all(r.verified for r in longs))
    lines.append(f"- Every replay verified against tiktoken: **{'yes' if ok else 'NO'}**.")
    return "\n".join(lines) + "\n"


def plot(path: Path, cfg: Config, alone: list[Replay], based: list[Replay],
         rnd: RandomResult | None) -> bool:
    plt = C.pyplot()
    if plt is None:
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    series = []
    pa = [x for r in alone for x in r.lat[: cfg.base_edits or None]]
    if pa:
        series.append(("traces alone", pa))
    for n in cfg.bases:
        v = [x for r in based if r.context == n for x in r.lat]
        if v:
            series.append((f"traces in {C.fmt_size(n)}", v))
    if rnd is not None:
        series.append((f"random 1-char edits, {C.fmt_size(rnd.n)}", rnd.lat))
    for label, v in series:
        s = sorted(x * 1e6 for x in v)
        ys = [(i + 1) / len(s) for i in range(len(s))]
        ax1.plot(s, ys, label=f"{label} (n={len(s):,})")
    if rnd is not None and rnd.tk_times:
        ax1.axvline(C.median(rnd.tk_times) * 1e6, color="k", ls="--",
                    label=f"tiktoken full re-encode, {C.fmt_size(rnd.n)}")
    ax1.set_xscale("log")
    ax1.set_xlabel("latency per edit (µs)")
    ax1.set_ylabel("fraction of edits ≤ x")
    ax1.set_title("per-edit latency CDF, o200k_base")
    ax1.grid(which="both", alpha=0.3)
    ax1.legend(fontsize=8, loc="lower right")
    traces = sorted({r.trace for r in based})
    xs = [n for n in cfg.bases]
    for name in traces:
        rs = {r.context: r for r in based if r.trace == name}
        med = [C.median(rs[n].lat) * 1e6 for n in xs if n in rs]
        p99 = [C.percentile(rs[n].cpu, 99) * 1e6 for n in xs if n in rs]
        line, = ax2.plot(xs[: len(med)], med, "o-", label=f"{name.split('.')[0]} median")
        ax2.plot(xs[: len(p99)], p99, "s--", color=line.get_color(), alpha=0.6,
                 label=f"{name.split('.')[0]} p99 (CPU time)")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("document size (code points)")
    ax2.set_ylabel("µs per edit")
    ax2.set_title("trace edits: median (wall) and p99 (CPU time) vs document size")
    ax2.grid(which="both", alpha=0.3)
    ax2.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return True


# -- A/B of two checkouts ----------------------------------------------------------------------

#: the A/B of checkouts (``--checkout``, issue 35's no-regression check)
AB_HEADING = "## A/B against the code before issue 35"
AB_SIZES = "1000,10000"
AB_ROUNDS = 20
AB_EDITS = 250
AB_SEED = 20251122


@dataclass
class ABEdits:
    """One checkout's random edits in one document size (:func:`ab_size`)."""

    checkout: str
    commit: str
    n: int
    build: float
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    round_medians: list[float] = field(default_factory=list)
    #: the final text and ids = the parent's text and tiktoken's ids of it
    verified: bool = False


def ab_size(checkouts: list[Any], n: int, rounds: int, per_round: int, tk: Any, tmp: Path,
            log: C.Log) -> list[ABEdits]:
    """The random edits of :func:`bench_random` (same seed) in ``n`` code points of real
    text, in a worker process per checkout (``_ab.EditWorker``): ``rounds`` rounds of
    ``per_round`` edits, each round's edits timed in each checkout in turn, the order rotating
    every round (``_ab.turn``). Then each worker's text and ids are checked against
    this process's copy of the text and tiktoken's ids of it."""
    import _ab

    text = C.real_text(n)
    path = tmp / f"text-{n}.txt"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    edits = random_edits(n, rounds * per_round, AB_SEED)
    workers: list[Any] = []
    try:
        for c in checkouts:
            workers.append(_ab.EditWorker(c, path, ENCODING))
        out = [ABEdits(c.name, _ab.describe(c.path), n, w.built["build_s"])
               for c, w in zip(checkouts, workers)]
        for r in range(rounds):
            batch = edits[r * per_round:(r + 1) * per_round]
            for i in _ab.turn(len(workers), r):
                wall, cpu = workers[i].edit(batch)
                out[i].wall += wall
                out[i].cpu += cpu
                out[i].round_medians.append(C.median(wall))
        mirror = Mirror(text)
        for s, e, ins in edits:
            mirror.replace(s, e, ins)
        final = mirror.text()
        ids = tk.encode_ordinary(final)
        want = {"tokens": len(ids), "ids_hash": C.ids_hash(ids),
                "text_sha256": _ab.text_digest(final)}
        for w, res in zip(workers, out):
            res.verified = w.check() == want
    finally:
        for w in workers:
            w.close()
    log(f"A/B at {C.fmt_size(n)}: " + ", ".join(
        f"{r.checkout} median {C.fmt_us(C.median(r.wall))} CPU {C.fmt_us(C.median(r.cpu))} "
        f"verified={r.verified}" for r in out) + f" (load {_ab.load()})")
    return out


def ab_section(results: list[list[ABEdits]], checkouts: list[Any], rounds: int,
               per_round: int, info: dict[str, str], command: str) -> list[str]:
    """The page's section on :func:`ab_size`: per size and checkout the median, p99 and CPU
    median of an edit, and their ratios to the first checkout's."""
    import _ab

    rows = []
    for per_size in results:
        ref = per_size[0]
        for r in per_size:
            rows.append([
                C.fmt_size(r.n), r.checkout, r.commit, f"{len(r.wall):,}",
                f"{C.fmt_us(min(r.round_medians))} – {C.fmt_us(max(r.round_medians))}",
                f"{C.fmt_us(C.median(r.wall))} / {C.fmt_us(C.percentile(r.wall, 99))}",
                _ab.ratio(C.median(r.wall), C.median(ref.wall)),
                f"{C.fmt_us(C.median(r.cpu))} / {C.fmt_us(C.percentile(r.cpu, 99))}",
                _ab.ratio(C.median(r.cpu), C.median(ref.cpu)),
                C.fmt_s(r.build), "yes" if r.verified else "**NO**"])
    ref_name = results[0][0].checkout
    return [
        AB_HEADING,
        "",
        f"The random single-character edits above (same seed, `random.Random({AB_SEED})`) in "
        "real text, timed in each checkout's `Document` in one run: a child process per "
        "checkout holds its `Document` (`benchmarks/_ab.py`: the checkout's code, this "
        f"venv), and {rounds} rounds of {per_round} edits each are timed in one after the "
        "other, the order rotating every round (each goes first equally often); the same "
        "edits, so the same texts. "
        "Timing as above (`time.perf_counter` and `time.thread_time` around each `doc.edit`, "
        "the collector on): on a loaded machine the wall p99 is mostly the waits for a core, "
        "which the CPU p99 leaves out. Verified: each child's final text "
        "and token ids equal this process's copy of the text and tiktoken's ids of it. "
        + _ab.notes(checkouts),
        "",
        C.md_table(["document", "checkout", "commit", "edits", "round medians (min – max)",
                    "median / p99", f"median / {ref_name}", "CPU median / p99",
                    f"CPU median / {ref_name}", "build", "verified"], rows,
                   align="lllrrrrrrrl"),
        "",
        f"Measured {info.get('date', '?')} with `{command}`, load average (1/5/15 min) "
        f"{info.get('load', '?')} at the start and {_ab.load()} at the end "
        f"({info.get('nproc', '?')} cores, shared with other jobs).",
        "",
    ]


def ab_main(args: argparse.Namespace, error: Any, log: C.Log) -> int:
    """``--checkout`` given: run only the A/B and put its section in the page."""
    import tempfile

    import _ab

    info = C.machine_info()
    tk = C.tiktoken_ref(C.livetok_encoding(ENCODING))
    sizes = [int(x) * C.KB for x in args.ab_sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        checkouts = _ab.checkouts(args.checkout, Path(tmp), error)
        results = [ab_size(checkouts, n, args.ab_rounds, args.ab_edits, tk, Path(tmp), log)
                   for n in sizes]
    command = ("benchmarks/bench_document.py " + " ".join(f"--checkout {c}" for c in args.checkout)
               + f" --ab-sizes {args.ab_sizes} --ab-rounds {args.ab_rounds} --ab-edits "
               f"{args.ab_edits}")
    section = ab_section(results, checkouts, args.ab_rounds, args.ab_edits, info, command)
    print("\n".join(section))
    _ab.put_section(args.out / "benchmarks-document.md", section,
                    before="## Edits inside one long piece")
    return 0 if all(r.verified for rs in results for r in rs) else 1


# -- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few edits (smoke test)")
    ap.add_argument("--out", type=Path, default=C.DOCS,
                    help="folder for benchmarks-document.md and img/ (default: docs/)")
    ap.add_argument("--base-edits", type=int, default=None,
                    help="patches of each trace replayed inside the base documents (0: all)")
    ap.add_argument("--random-edits", type=int, default=None)
    ap.add_argument("--tiktoken-samples", type=int, default=None)
    ap.add_argument("--no-memory", action="store_true", help="skip the tracemalloc build")
    ap.add_argument("--checkout", action="append", metavar="NAME=PATH",
                    help="A/B mode: a checkout of the repository (give two; the first is the "
                    "reference of the ratios); runs only the A/B and rewrites only its section")
    ap.add_argument("--ab-sizes", default=AB_SIZES, help="A/B: sizes in KB, comma-separated")
    ap.add_argument("--ab-rounds", type=int, default=AB_ROUNDS)
    ap.add_argument("--ab-edits", type=int, default=AB_EDITS,
                    help="A/B: edits per round and checkout")
    args = ap.parse_args(argv)
    if args.checkout:
        return ab_main(args, ap.error, C.Log())
    cfg = dataclasses.replace(QUICK if args.quick else FULL)
    if args.base_edits is not None:
        cfg.base_edits = args.base_edits
    if args.random_edits is not None:
        cfg.random_edits = args.random_edits
    if args.tiktoken_samples is not None:
        cfg.tk_samples = args.tiktoken_samples
    if args.no_memory:
        cfg.memory = False
    log = C.Log()
    info = C.machine_info()
    command = "benchmarks/bench_document.py" + " ".join([""] + (argv if argv is not None else sys.argv[1:]))
    log(f"{command}: {info['cpu']}, {info['nproc']} cores, load {info['load']}")

    enc = C.livetok_encoding(ENCODING)
    tk = C.tiktoken_ref(enc)
    traces = load_traces()
    if not traces:
        log(f"no traces in {C.TRACES}: trace sections skipped")
    alone = bench_standalone(traces, cfg, enc, tk, log)

    big: dict[str, Any] = {}

    def keep_big(base: str, doc: Any, build: float) -> None:
        big.update(text=base, doc=doc, build=build)

    based = bench_in_bases(traces, cfg, enc, tk, log, keep_big)
    if not big:  # no traces: build the big document here
        from livetok.incremental import Document

        base = C.real_text(cfg.bases[-1])
        C.clear_cache(enc)
        build, doc = C.timed(lambda: Document(base, encoding=enc))
        keep_big(base, doc, build)
    rnd = bench_random(big["doc"], big["text"], cfg, tk, log)
    longs = bench_long_pieces(cfg, enc, tk, log)
    big_text, big_build, big_doc = big["text"], big["build"], big.pop("doc")
    builds = [bench_build(C.real_text(cfg.build_small), cfg.build_small_reps, enc, tk, log)]
    builds.append(bench_build(big_text, 1, enc, tk, log, first_build=(big_build, big_doc)))
    prof = profile_random(big_doc, big_text, cfg.profile_edits)
    log("profiled the random-edit loop")
    del big_doc
    mem = bench_memory(big_text, enc, tk, log) if cfg.memory else None

    img = args.out / "img" / "bench_document.png"
    plotted = plot(img, cfg, alone, based, rnd)
    md = render(cfg, args, info, log.elapsed, command, traces, alone, based, rnd, longs, builds,
                mem, prof, plotted)
    C.write_text(args.out / "benchmarks-document.md", md)
    print(prof)
    ok = (all(r.verified for r in alone + based) and rnd.verified
          and all(b.equal for b in builds) and all(r.verified for r in longs))
    if not ok:
        print("MISMATCH: a replay or build did not match tiktoken (see the tables)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
