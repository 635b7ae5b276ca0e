"""Markdown code lens benchmark: sections and their counts on adversarial documents (issue 15).

Writes ``docs/benchmarks-markdown.md``::

    .venv/bin/python benchmarks/bench_markdown.py            # full sizes (about a minute)
    .venv/bin/python benchmarks/bench_markdown.py --quick    # smaller sizes (seconds)

What is measured (o200k_base, one process), for two inputs at doubling sizes:

* **long heading**: ``# a``, ``N`` spaces, ``b`` and a line break (the old heading regular
  expression backtracked over the spaces: quadratic);
* **many headings**: ``N`` lines ``## h`` (the old section ends searched the later headings
  for each heading: quadratic).

For each, an ``OpenDocument`` is built as the server builds one (untimed), then the code lens
request is timed as the server answers it after an edit: ``features.markdown_sections`` (the
whole text read, sections found; the version is bumped before each run so the per-version
cache does not answer) and ``features.code_lenses`` (one ``count_range`` per section). Each
size runs ``--reps`` times; the tables give the medians of wall time (and CPU time: on a
shared machine the wall time includes waits for a core) and the growth exponent, the
least-squares slope of log(time) against log(size): 1.0 is linear, 2.0 quadratic.

**Before**: the same request answered by the implementation before the fix, read from git
(``server/budgets/markdown.py`` and ``server/lsp/views.py`` at ``--before``), one run per size until a
run takes longer than ``--before-budget`` seconds. Its lenses must equal the current ones
(and a sample of the counts equals tiktoken's), else the benchmark fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import _common as C

ENCODING = "o200k_base"
#: the last commit before issue 15's linear-time sections and lenses
BEFORE = "4679b62"
# subtle: from 4,000 spaces on, as count_range encodes a range under 2,048 characters whole
FULL_SIZES = {"long heading": [4_000, 8_000, 16_000, 32_000],
              "many headings": [5_000, 10_000, 20_000, 40_000, 80_000]}
#: small sizes run more than --reps times, until this many seconds are spent (at most _MAX_REPS)
_MIN_SECONDS = 0.5
_MAX_REPS = 200
QUICK_SIZES = {"long heading": [4_000, 8_000, 16_000], "many headings": [2_500, 5_000, 10_000]}
WHAT = {"long heading": ("spaces", "`# a` + N spaces + `b`"),
        "many headings": ("headings", "N lines `## h`")}


def make_text(kind: str, n: int) -> str:
    if kind == "long heading":
        return "# a" + " " * n + "b\n"
    return "## h\n" * n


@dataclass
class Point:
    """One size of one input: medians of the current code, one run of the old one."""

    n: int
    chars: int
    sections: int
    secs_wall: list[float] = field(default_factory=list)  # markdown_sections
    lens_wall: list[float] = field(default_factory=list)  # code_lenses
    total_wall: list[float] = field(default_factory=list)
    total_cpu: list[float] = field(default_factory=list)
    before: float | None = None  # seconds of the old implementation (one run)
    before_cpu: float | None = None
    before_note: str = ""  # why it did not run
    same_as_before: bool | None = None
    checked_tiktoken: bool = False


def _no_share(title: str) -> str:
    """A lens title without its share of the context window (`` · 0.1% of 128,000-token context``)."""
    return re.sub(r" · [^·]* of [\d,]+-token context$", "", title)


def load_before(rev: str) -> tuple[Callable[[str], Any], Callable[..., Any]] | str:
    """``(sections, code_lenses)`` of revision ``rev``, or why they cannot be loaded.

    The two files are read with ``git show`` and run as modules of ``livetok.server`` (so the
    old ``features.py`` imports today's ``config``, ``documents`` and ``positions``).
    """
    mods = {}
    for name in ("markdown", "features"):
        try:
            src = subprocess.run(["git", "show", f"{rev}:server/{name}.py"], cwd=C.ROOT,
                                 capture_output=True, text=True, timeout=30, check=True).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            return f"not run: `git show {rev}:server/{name}.py` failed ({type(exc).__name__})"
        spec = importlib.util.spec_from_loader(f"livetok.server._before_{name}", loader=None)
        assert spec is not None
        mod = importlib.util.module_from_spec(spec)
        mod.__package__ = "livetok.server"
        sys.modules[spec.name] = mod  # dataclasses look their module up there
        try:
            exec(compile(src, f"{rev}:server/{name}.py", "exec"), mod.__dict__)  # noqa: S102
        except Exception as exc:  # noqa: BLE001 - an old file that no longer runs: say so
            return f"not run: {rev}:server/{name}.py does not load today ({exc})"
        mods[name] = mod
    return mods["markdown"].sections, mods["features"].code_lenses


def run_current(od: Any, settings: Any) -> list[Any]:
    """The code lens request as the server answers it, for a new version of ``od``."""
    from livetok.server.lsp import views as features

    od.version += 1  # as after an edit: the section cache is out of date
    return features.code_lenses(od, settings, features.markdown_sections(od))


def bench_point(kind: str, n: int, reps: int, enc: Any, tk: Any,
                before: tuple[Callable[[str], Any], Callable[..., Any]] | None, log: C.Log) -> Point:
    from livetok.server.lsp import views as features
    from livetok.server.lsp.settings import Settings
    from livetok.server.lsp.documents import OpenDocument

    text = make_text(kind, n)
    od = OpenDocument("file:///bench.md", "markdown", 1, text, enc)
    settings = Settings()
    lenses = run_current(od, settings)
    p = Point(n, len(text), len(lenses) - 1)
    spent = 0.0
    while len(p.total_wall) < reps or (spent < _MIN_SECONDS and len(p.total_wall) < _MAX_REPS):
        od.version += 1
        wall_s, secs = C.timed(lambda: features.markdown_sections(od))
        wall_l, _ = C.timed(lambda: features.code_lenses(od, settings, secs))
        wall, cpu, _ = C.timed_cpu(lambda: run_current(od, settings))
        p.secs_wall.append(wall_s)
        p.lens_wall.append(wall_l)
        p.total_wall.append(wall)
        p.total_cpu.append(cpu)
        spent += wall_s + wall_l + wall
    # the counts are checked on a sample of sections against tiktoken
    secs = features.markdown_sections(od)
    sample = list(range(0, len(secs), max(1, len(secs) // 20)))
    p.checked_tiktoken = all(
        lenses[i + 1].title == f"{len(tk.encode_ordinary(text[secs[i].start_cp:secs[i].end_cp])):,}"
        " tokens in this section" for i in sample)
    if before is not None:
        old_sections, old_lenses = before
        wall, cpu, old = C.timed_cpu(lambda: old_lenses(od, settings, old_sections(od.text())))
        p.before, p.before_cpu = wall, cpu
        # the first lens's context share is rounded as the editors round it since issue 19
        # ('<0.1%' where the old code said '0.0%'): compared without that share
        p.same_as_before = [(x.line, _no_share(x.title)) for x in old] == [
            (x.line, _no_share(x.title)) for x in lenses]
    log(f"{kind} N={n:,}: median {C.fmt_s(C.median(p.total_wall))}"
        + (f", before {C.fmt_s(p.before)}" if p.before is not None else ""))
    return p


def bench_kind(kind: str, sizes: list[int], reps: int, enc: Any, tk: Any,
               before: tuple[Callable[[str], Any], Callable[..., Any]] | str, budget: float,
               log: C.Log) -> list[Point]:
    """The sizes of one input in order; the old implementation stops after a run over
    ``budget`` seconds (``before`` is then why it did not run)."""
    points = []
    for n in sizes:
        p = bench_point(kind, n, reps, enc, tk, None if isinstance(before, str) else before, log)
        if isinstance(before, str):
            p.before_note = before.split(":")[0]  # the reason is in the method section
        elif p.before is not None and p.before > budget:
            before = f"skipped: a smaller N took over {budget:g} s"
        points.append(p)
    return points


def growth(points: list[Point], times: Callable[[Point], float | None]) -> str:
    pts = [(p.n, t) for p in points if (t := times(p)) is not None]
    return "—" if len(pts) < 2 else f"{C.loglog_slope([a for a, _ in pts], [b for _, b in pts]):.2f}"


def render(results: dict[str, list[Point]], args: argparse.Namespace, info: dict[str, str],
           elapsed: float, command: str, before_note: str) -> str:
    out: list[str] = []
    w = out.append
    w("# Markdown code lens benchmark\n")
    w("Time to answer `textDocument/codeLens` for a Markdown document: its sections "
      "(`features.markdown_sections`) and one count per section (`features.code_lenses`), on two "
      "adversarial inputs at doubling sizes (issue 15). Generated by `benchmarks/bench_markdown.py`"
      f"{' (**quick run**: small sizes, not for citing)' if args.quick else ''}; re-run with:\n")
    w("```\n.venv/bin/python benchmarks/bench_markdown.py          # full, about a minute\n"
      ".venv/bin/python benchmarks/bench_markdown.py --quick  # smaller sizes, seconds\n```\n")
    w("## Method\n")
    w(f"- Encoding {ENCODING}. The `OpenDocument` is built as the server builds one (not timed). "
      "Each run bumps its version (as an edit does) so the per-version section cache does not "
      f"answer; {args.reps} runs per size at least, more for small sizes until "
      f"{_MIN_SECONDS:g} s is spent (at most {_MAX_REPS}, column *runs*), medians of the wall time (`time.perf_counter`, garbage "
      "collector off during the call) and of the process CPU time.\n"
      "- *sections* and *counts* are the two steps timed alone, *code lenses* the whole request. "
      "The long heading starts at 4,000 spaces: `count_range` encodes a range under 2,048 "
      "characters whole, which would time the encoder rather than the lenses.\n"
      "- Growth exponent: least-squares slope of log(median time) against log(N); 1.0 is linear, "
      "2.0 quadratic.\n"
      f"- *before*: the implementation of commit `{args.before}` (`server/budgets/markdown.py` and "
      "`server/lsp/views.py` read with `git show`), one run per size, stopped after a run over "
      f"{args.before_budget:g} s. {before_note}\n"
      "- **Checked**: the lenses (line and title) equal the old implementation's where it ran, and "
      "a sample of 20 section counts equals tiktoken's `encode_ordinary` of the section's text.\n")
    for kind, points in results.items():
        unit, desc = WHAT[kind]
        w(f"## {kind[0].upper() + kind[1:]}: {desc}\n")
        rows = []
        for p in points:
            ratio = (C.fmt_ratio(p.before_cpu / C.median(p.total_cpu))
                     if p.before_cpu is not None else "—")
            same = ("—" if p.same_as_before is None else "yes" if p.same_as_before else "**NO**")
            rows.append([f"{p.n:,}", C.fmt_size(p.chars), f"{p.sections:,}", f"{len(p.total_wall)}",
                         C.fmt_s(C.median(p.secs_wall)), C.fmt_s(C.median(p.lens_wall)),
                         C.fmt_s(C.median(p.total_wall)), C.fmt_s(C.median(p.total_cpu)),
                         C.fmt_s(p.before) if p.before is not None else p.before_note or "—",
                         C.fmt_s(p.before_cpu) if p.before_cpu is not None else "—", ratio, same, "yes" if p.checked_tiktoken else "**NO**"])
        rows.append(["growth exponent", "", "", "", growth(points, lambda p: C.median(p.secs_wall)),
                     growth(points, lambda p: C.median(p.lens_wall)),
                     growth(points, lambda p: C.median(p.total_wall)),
                     growth(points, lambda p: C.median(p.total_cpu)),
                     growth(points, lambda p: p.before), growth(points, lambda p: p.before_cpu),
                     "", "", ""])
        w(C.md_table([f"N ({unit})", "text", "sections", "runs", "sections (median)", "counts (median)",
                      "code lenses (median)", "code lenses CPU", "before", "before CPU",
                      "before ÷ now (CPU)",
                      "same lenses as before", "counts = tiktoken"], rows) + "\n")
    w("## Machine\n")
    w(C.machine_section(info, elapsed, command) + "\n")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (smoke test)")
    ap.add_argument("--out", default=str(C.DOCS),
                    help="folder for benchmarks-markdown.md (default: docs/)")
    ap.add_argument("--reps", type=int, default=None, help="runs per size (default 5, quick 3)")
    ap.add_argument("--before", default=BEFORE, help="git revision of the old implementation "
                    "('' to skip it)")
    ap.add_argument("--before-budget", type=float, default=10.0,
                    help="seconds of one old run past which the larger sizes skip it")
    args = ap.parse_args(argv)
    args.reps = args.reps or (3 if args.quick else 5)
    command = " ".join(["benchmarks/bench_markdown.py", *(sys.argv[1:] if argv is None else argv)])
    info = C.machine_info()
    log = C.Log()
    log(f"{command}: {info['cpu']}, {info['nproc']} cores, load {info['load']}")
    before = load_before(args.before) if args.before else "not run (`--before ''`)"
    enc = C.livetok_encoding(ENCODING)
    tk = C.tiktoken_ref(enc)
    before_note = f"The old implementation was {before}." if isinstance(before, str) else ""
    if before_note:
        log(before_note)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    results = {kind: bench_kind(kind, ns, args.reps, enc, tk, before, args.before_budget, log)
               for kind, ns in sizes.items()}
    md = render(results, args, info, log.elapsed, command, before_note)
    C.write_text(Path(args.out) / "benchmarks-markdown.md", md)
    print(md)
    bad = [p for ps in results.values() for p in ps
           if p.same_as_before is False or not p.checked_tiktoken]
    if bad:
        print("MISMATCH: lenses differ from the old implementation or tiktoken (see the tables)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
