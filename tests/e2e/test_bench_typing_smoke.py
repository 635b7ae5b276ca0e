"""Smoke test of ``benchmarks/bench_typing.py`` (issue 35 item 3), in the style of
``test_benchmarks_smoke.py``: its ``--quick`` run (lines of 2,000 characters, ``o200k_base``,
the digit line, through a real ``livetok serve``) must finish and write its table into a temporary
folder, never into ``docs/``. No timing is asserted; the script exits non-zero when a final
count differs from tiktoken's, which fails this test.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_bench_typing_quick(tmp_path: Path) -> None:
    if importlib.util.find_spec("tiktoken") is None:
        pytest.skip("tiktoken is not installed (the benchmark checks its counts against it)")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_typing.py"), "--quick",
         "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (tmp_path / "benchmarks-typing.md").read_text(encoding="utf-8")
    assert "## 2,000 characters" in md and ("| ---" in md or "| :---" in md)
    row = next(line for line in md.splitlines() if line.startswith("| `o200k_base`"))
    cells = [c.strip().strip("*") for c in row.strip("|").split("|")][1:]
    # a time each (bold when over the target; no timing is judged here), no "> 30 s"
    assert len(cells) == 1 and all(c[0].isdigit() and c.endswith("s") for c in cells), row
    assert "## Machine" in md
