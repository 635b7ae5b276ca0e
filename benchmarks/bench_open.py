"""A/B of a fresh server's first count of a big document: two checkouts (or more), alternating.

Writes ``docs/benchmarks-open.md`` (``--out``; ``--no-page`` only prints), keeping the page's
hand-written ``## Findings`` section::

    git worktree add ../ab_old c12906e          # never a checkout inside the working tree
    git worktree add --detach ../ab_new HEAD    # committed code only, not work in progress
    .venv/bin/python benchmarks/bench_open.py --checkout c12906e=../ab_old \\
        --checkout HEAD=../ab_new [--size 10000000] [--rounds 3] [--open-jobs default \\
        --open-jobs 2] [--client plain] [--pipelined]

Each checkout's server runs in this venv (its dependencies) as ``_ab.py`` says: a temporary
folder on ``PYTHONPATH`` gives the checkout's ``incremental/`` and ``server/`` their import
names, and the server starts through ``_ab.BOOT``, which drops the editable install's import
hook first. Each checkout has its own vocabulary cache folder (``LIVETOK_CACHE_DIR``),
filled by one untimed run: a round is a fresh server with a warm cache, as an editor's second
start is.

One run (:func:`first_count`): spawn, ``initialize`` answered, ``initialized`` and the
``didOpen`` of the document (a prefix of the real-text corpus, ``_common.real_text``) written
back to back, then ``livetok/tokenCount``; the clock runs from writing the ``didOpen`` to
reading the answer (``--pipelined``: everything written at the spawn, the clock from the
spawn). Beside the wall time, the CPU time of the server's process tree over the same span
(:func:`tree_cpu`), which a loaded machine inflates far less than the wall time. The
checkouts alternate, the order flipping every round; every count is checked against tiktoken.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _ab  # noqa: E402
import _common as C  # noqa: E402
from bench_server import Client  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")

#: the client capabilities of ``initialize``: ``--client plain`` declares only the position
#: unit; ``--client editor`` also the work-done progress and refreshes an editor declares
#: (VS Code's), so that the server reports a big didOpen's progress
CLIENTS: dict[str, dict[str, Any]] = {
    "plain": {"general": {"positionEncodings": ["utf-16"]}},
    "editor": {"general": {"positionEncodings": ["utf-16"]},
               "window": {"workDoneProgress": True},
               "workspace": {"codeLens": {"refreshSupport": True},
                             "semanticTokens": {"refreshSupport": True}}},
}


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            kids += [int(k) for k in task.read_text().split()]
    return kids


def tree_cpu(pid: int) -> float:
    """CPU seconds of the process tree rooted at ``pid``: each process's utime + stime (its
    threads, the ended ones too) + cutime + cstime (its reaped children), from
    ``/proc/<pid>/stat``."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            # after the ")": state is field 3 (1-based), utime 14 ... cstime 17
            total += sum(int(x) for x in fields[11:15]) / TICK
            todo += _children(p)
    return total


@dataclass
class Side:
    name: str
    checkout: _ab.Checkout
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    #: ``didOpen`` -> the ``livetok/didChangeTokenCount`` of version 1, when it came first
    notified: list[float] = field(default_factory=list)
    #: ``shutdown`` sent -> the process ended (after ``exit``)
    ending: list[float] = field(default_factory=list)
    ok: bool = True


async def first_count(side: Side, text: str, expected: int, log: C.Log,
                      capabilities: dict[str, Any], pipelined: bool = False,
                      ) -> tuple[float, float]:
    """One fresh server of ``side``: ``didOpen`` of ``text`` -> the tokenCount answer (wall and
    the server's CPU seconds). ``pipelined``: ``initialize``, ``initialized``, ``didOpen`` and
    the request are written at once after the spawn, and the clocks run from the spawn."""
    spawned = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *side.checkout.argv(), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, limit=1 << 26,
        env=side.checkout.env, cwd=side.checkout.cwd)
    client = Client(proc)
    try:
        init = asyncio.ensure_future(client.request("initialize", {
            "processId": os.getpid(), "rootUri": None, "capabilities": capabilities}))
        await asyncio.sleep(0)  # (the request is written)
        if not pipelined:
            await init
        client.notify("initialized", {})
        uri = "file:///bench/open.txt"
        cpu0 = 0.0 if pipelined else tree_cpu(proc.pid)
        sent = client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "plaintext", "version": 1, "text": text}})
        if pipelined:
            sent = spawned
        answer = await client.request("livetok/tokenCount", {"textDocument": {"uri": uri}})
        wall = time.perf_counter() - sent
        cpu = tree_cpu(proc.pid) - cpu0
        early = client.counts.get(1)
        side.notified.append(early[0] - sent if early is not None else float("nan"))
        tokens = answer.get("result", {}).get("tokens") if isinstance(answer.get("result"), dict) \
            else None
        if tokens != expected:
            side.ok = False
            log(f"  WRONG COUNT from {side.name}: {answer} != {expected}")
        ended = time.perf_counter()
        await client.request("shutdown", None)
        client.notify("exit", None)
        await asyncio.wait_for(proc.wait(), 120)
        side.ending.append(time.perf_counter() - ended)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        client.reader.cancel()
    return wall, cpu


def run_table(sides: list[Side], text: str, expected: int, args: argparse.Namespace,
              jobs: str | None, log: C.Log) -> list[str]:
    """``args.rounds`` alternating rounds of the checkouts with ``LIVETOK_OPEN_JOBS=jobs``
    (the server's default when None); the Markdown of the table and its notes."""
    jobs = None if jobs == "default" else jobs
    for side in sides:
        side.wall, side.cpu, side.notified, side.ending = [], [], [], []
        side.checkout.env.pop("LIVETOK_OPEN_JOBS", None)
        if jobs is not None:
            side.checkout.env["LIVETOK_OPEN_JOBS"] = jobs
    loads = [_ab.load()]
    for r in range(args.rounds):
        for side in sides if r % 2 == 0 else sides[::-1]:
            wall, cpu = asyncio.run(first_count(side, text, expected, log,
                                                CLIENTS[args.client], args.pipelined))
            side.wall.append(wall)
            side.cpu.append(cpu)
            log(f"jobs {jobs or 'default'}, round {r + 1}, {side.name}: wall {wall:.2f} s, "
                f"CPU {cpu:.2f} s, count notified {side.notified[-1]:.2f} s, shutdown to "
                f"exit {side.ending[-1]:.2f} s (load {_ab.load()})")
        loads.append(_ab.load())
    ref = sides[0]

    def per_round(xs: list[float]) -> str:
        return " / ".join(f"{x:.2f}" for x in xs)

    med = C.median
    rows = [[s.name, _ab.describe(s.checkout.path), per_round(s.wall), C.fmt_s(med(s.wall)),
             f"{med(s.wall) / med(ref.wall):.2f}×", per_round(s.cpu), C.fmt_s(med(s.cpu)),
             f"{med(s.cpu) / med(ref.cpu):.2f}×", C.fmt_s(med(s.notified)),
             C.fmt_s(med(s.ending)), "yes" if s.ok else "**NO**"] for s in sides]
    title = (f"the server's default ({len(os.sched_getaffinity(0))} cores here; on 2 the server "
             "encodes in its own process)" if jobs is None else f"`LIVETOK_OPEN_JOBS={jobs}`"
             + (" (forked processes encode the blocks)" if int(jobs) > 1 else ""))
    return [f"## Open jobs: {title}", "",
            C.md_table(["checkout", "commit", "wall per round (s)", "wall median", f"/ {ref.name}",
                      "server CPU per round (s)", "CPU median", f"/ {ref.name}",
                      "count notified (median)", "`shutdown` → process ended (median)",
                      "count exact"], rows, align="llrrrrrrrrl"), "",
            f"Load average (1 / 5 / 15 min) before the first round and after each: "
            f"{'; '.join(loads)}.", ""]


FINDINGS = "## Findings"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", action="append", required=True, metavar="NAME=PATH",
                    help="a checkout of the repository (give two, or more); the first is the "
                         "reference of the ratios")
    ap.add_argument("--size", type=int, default=10_000_000, help="code points of the document")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--client", choices=sorted(CLIENTS), default="editor",
                    help="the capabilities the client declares (default: editor)")
    ap.add_argument("--pipelined", action="store_true",
                    help="write initialize, initialized, didOpen and tokenCount at once after "
                         "the spawn, the clocks running from the spawn")
    ap.add_argument("--open-jobs", action="append", metavar="N",
                    help="a table with LIVETOK_OPEN_JOBS=N, 'default' for the server's own "
                         "choice (repeatable; default: one table, the server's choice)")
    ap.add_argument("--out", type=Path, default=C.DOCS / "benchmarks-open.md")
    ap.add_argument("--no-page", action="store_true", help="print the tables, write no page")
    args = ap.parse_args()
    log = C.Log()
    info = C.machine_info()
    text = C.real_text(args.size)
    expected = len(C.tiktoken_ref(C.livetok_encoding("o200k_base")).encode_ordinary(text))
    md = ["# Opening a big document: A/B of two checkouts", "",
          f"A fresh `livetok serve` per run: `didOpen` of {C.fmt_size(args.size)} of real text "
          + ("written with `initialize` and `initialized` right after the spawn, then "
             "`livetok/tokenCount`; the time runs from the spawn "
             if args.pipelined else
             "written right after `initialized`, then `livetok/tokenCount`; the time runs from "
             "writing the `didOpen` ")
          + "to reading the answer (\"count notified\": to the first "
          "`livetok/didChangeTokenCount`, which the server sends before it builds the "
          "document's structure). The CPU column is the CPU time of the server's process tree "
          "(its threads, and the forked processes of a parallel open) over the same span, from "
          "`/proc/<pid>/stat`: on a shared machine the wall time includes the waits for a "
          f"core, the CPU time does not. The client declares the `{args.client}` capabilities "
          f"(`bench_open.CLIENTS`). {args.rounds} rounds, the checkouts alternating (the order "
          "flips every round); each checkout runs with this venv's dependencies and its own "
          "warm vocabulary cache. Written by `benchmarks/bench_open.py`.", ""]
    with tempfile.TemporaryDirectory() as tmp_name:
        sides = [Side(c.name, c) for c in _ab.checkouts(args.checkout, Path(tmp_name), ap.error)]
        for side in sides:  # fills each cache (untimed)
            asyncio.run(first_count(side, "hello", 1, log, CLIENTS[args.client]))
        for jobs in args.open_jobs or [None]:
            md += run_table(sides, text, expected, args, jobs, log)
    md += [C.corpus_note(), ""]
    command = ("python benchmarks/bench_open.py "
               + " ".join(f"--checkout {c}" for c in args.checkout)
               + f" --size {args.size} --rounds {args.rounds} --client {args.client}"
               + (" --pipelined" if args.pipelined else "")
               + "".join(f" --open-jobs {j}" for j in args.open_jobs or []))
    print("\n".join(md))
    if not args.no_page:
        C.write_page(args.out, md + C.kept_section(args.out, FINDINGS), info, log, command)
    return 0 if all(s.ok for s in sides) else 1


if __name__ == "__main__":
    sys.exit(main())
