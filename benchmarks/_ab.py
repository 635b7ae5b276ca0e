"""A/B of two checkouts of this repository in one run: their code side by side, one harness.

Shared by ``bench_open.py`` (a fresh server's first count), ``bench_server.py --checkout``
(a keystroke through the server) and ``bench_document.py --checkout`` (an edit in process)::

    git worktree add --detach ../ab_old 121e51a   # never a checkout inside the working tree
    git worktree add --detach ../ab_new HEAD      # committed code only, not work in progress
    .venv/bin/python benchmarks/bench_server.py --checkout before=../ab_old \\
        --checkout after=../ab_new

How a checkout runs: in this venv (its dependencies), from a temporary folder on
``PYTHONPATH`` that gives the checkout's ``incremental/`` and ``server/`` their import names
(two symlinks, :func:`import_root`), started through :data:`BOOT`, which drops the editable
install's import hook first, so that no module of this repository stands in for one the
checkout lacks. Each checkout has its own vocabulary cache folder (``LIVETOK_CACHE_DIR``).
The harness (the client, the edits, the references) is this repository's, the same for both.

The edits in process run in :func:`edit_worker`, this file run through :data:`BOOT` in a
child process per checkout: it builds the checkout's ``Document`` of a text and times the
edits it is sent, one round at a time, so that the caller can alternate the checkouts round
by round. It imports only the checkout's ``livetok.incremental`` and the standard library
(``_common`` imports modules an old checkout may lack).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

#: the module a checkout's process runs (``python -m``): it drops the editable install's
#: import hooks (setuptools' ``_EditableFinder``, which maps a name the checkout lacks to this
#: repository's module: an old checkout would import today's ``livetok.server.lsp``), then
#: runs the script given as its first argument as ``__main__``, or else the checkout's
#: ``livetok.server`` as ``python -m livetok.server`` does
BOOT = "livetok_ab_boot"
BOOT_SOURCE = """import runpy, sys
sys.meta_path[:] = [f for f in sys.meta_path if "Editable" not in getattr(f, "__name__", "")]
sys.path_hooks[:] = [h for h in sys.path_hooks if "Editable" not in getattr(h, "__qualname__", "")]
sys.path_importer_cache.clear()
if len(sys.argv) > 1:
    sys.argv[:] = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
else:
    runpy.run_module("livetok.server", run_name="__main__", alter_sys=True)
"""


def import_root(checkout: Path, tmp: Path, name: str) -> Path:
    """A folder that gives ``checkout``'s two packages their import names, and holds
    :data:`BOOT`."""
    root = tmp / f"path-{name}" / "livetok"
    root.mkdir(parents=True)
    for pkg in ("incremental", "server"):
        (root / pkg).symlink_to(checkout.resolve() / pkg, target_is_directory=True)
    (root.parent / f"{BOOT}.py").write_text(BOOT_SOURCE, encoding="utf-8")
    return root.parent


@dataclass
class Checkout:
    """One side of an A/B: its name in the tables, its folder, and how to run its code."""

    name: str
    path: Path
    #: the environment of its processes (``PYTHONPATH``, ``LIVETOK_CACHE_DIR``)
    env: dict[str, str]
    #: the working folder of its processes (a temporary one: not the repository's root)
    cwd: Path

    def argv(self, *script: str) -> list[str]:
        """The command of a process of this checkout: its server, or ``script`` (a file and
        its arguments) run as ``__main__``."""
        return [sys.executable, "-m", BOOT, *script]


def checkouts(specs: Sequence[str], tmp: Path, error: Callable[[str], NoReturn],
              ) -> list[Checkout]:
    """The checkouts of ``--checkout NAME=PATH`` options (``error``: argparse's, called with
    what to fix), each with its import root and cache folder under ``tmp``."""
    out: list[Checkout] = []
    for spec in specs:
        name, _, path = spec.partition("=")
        checkout = Path(path)
        if not name or not (checkout / "incremental").is_dir() \
                or not (checkout / "server").is_dir():
            error(f"--checkout {spec}: not NAME=PATH of a livetok checkout (no incremental/ "
                  "and server/ there); make one with `git worktree add --detach ../ab_old REV`")
        if any(c.name == name for c in out):
            error(f"--checkout {spec}: the name {name!r} is given twice; name each side")
        paths = [str(import_root(checkout, tmp, name)), os.environ.get("PYTHONPATH", "")]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)),
                   LIVETOK_CACHE_DIR=str(tmp / f"cache-{name}"))
        env.pop("LIVETOK_CACHE", None)
        out.append(Checkout(name, checkout, env, tmp))
    if len(out) < 2:
        error("give --checkout NAME=PATH twice (or more): the first is the reference")
    return out


def describe(checkout: Path) -> str:
    """``checkout``'s commit, and whether its two packages have uncommitted changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True,
                              text=True, timeout=30).stdout.strip()

    rev = git("rev-parse", "--short", "HEAD") or "?"
    dirty = git("status", "--porcelain", "--", "incremental", "server")
    return rev + (" + uncommitted changes" if dirty else "")


def threads_cpu(pid: int) -> float:
    """CPU seconds that the threads process ``pid`` has now have run (Linux' schedstat, in
    nanoseconds, summed over ``/proc/<pid>/task``); NaN elsewhere. The difference of two
    readings counts every thread alive at the second: a server that reads its input in a
    worker thread is charged for it (``bench_server.cpu_s`` reads the main thread only)."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):
                total += int((task / "schedstat").read_text().split()[0])
    except OSError:
        return float("nan")
    return total / 1e9


def turn(n: int, k: int) -> list[int]:
    """The order of ``n`` checkouts at turn ``k``: rotated by ``k``, so that over ``n`` turns
    each goes first, second, ... once (two checkouts alternate).

    >>> turn(3, 1)
    [1, 2, 0]
    """
    return [(k + j) % n for j in range(n)]


#: issue 35's bound on a ratio to the reference checkout ("within 10 %")
BOUND = 1.10


def ratio(x: float, ref: float) -> str:
    """``x / ref`` as a table cell, marked when it is over :data:`BOUND`."""
    r = x / ref
    return f"{r:.2f}×" + (f" (**over {BOUND:.2f}×**)" if r > BOUND else "")


def notes(checkouts: Sequence[Checkout]) -> str:
    """What the ratios are to, issue 35's bound on them, and which checkouts are one folder
    given twice (their ratio is the run's own noise)."""
    text = (f"Ratios are to `{checkouts[0].name}`; issue 35 asks for at most {BOUND:.2f}× "
            "(no regression beyond 10 %).")
    seen: dict[Path, str] = {}
    for c in checkouts:
        first = seen.setdefault(c.path.resolve(), c.name)
        if first != c.name:
            text += (f" `{c.name}` is the folder of `{first}` again: the gap between their "
                     "two ratios is this run's noise.")
    return text


def load() -> str:
    """The load average (1 / 5 / 15 min)."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def put_section(page: Path, section: list[str], before: str) -> None:
    """Put ``section`` (a heading and its lines) in place of ``page``'s section of the same
    heading, else before the line ``before`` (else at the end); the page is created when it
    is not there."""
    text = page.read_text(encoding="utf-8") if page.is_file() else ""
    body = "\n".join(section).rstrip("\n") + "\n\n"
    heading = re.escape(section[0])
    if re.search(f"^{heading}$", text, flags=re.M):
        text = re.sub(f"^{heading}\n.*?(?=^## |\\Z)", lambda _m: body, text, count=1,
                      flags=re.M | re.S)
    elif re.search(f"^{re.escape(before)}$", text, flags=re.M):
        text = re.sub(f"^(?={re.escape(before)}$)", lambda _m: body, text, count=1, flags=re.M)
    else:
        text = text + ("\n" if text and not text.endswith("\n") else "") + body
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    print(f"wrote {page}")


# -- the edits in process ----------------------------------------------------------------------


def text_digest(text: str) -> str:
    """SHA-256 of ``text`` (UTF-8, lone surrogates kept): compares two processes' texts."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EditWorker:
    """A child process holding ``checkout``'s ``Document`` of the text in ``text_file``
    under ``encoding`` (:func:`edit_worker`); :meth:`edit` times a round of edits in it."""

    def __init__(self, checkout: Checkout, text_file: Path, encoding: str) -> None:
        self.checkout = checkout
        self.proc = subprocess.Popen(
            checkout.argv(__file__, str(text_file), encoding), env=checkout.env,
            cwd=checkout.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        #: the build's wall seconds and the token count
        self.built: dict[str, Any] = self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the edit worker of {self.checkout.name} ended (exit "
                               f"{self.proc.wait()}): its error is printed above")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _ask(self, msg: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def edit(self, edits: Sequence[tuple[int, int, str]]) -> tuple[list[float], list[float]]:
        """Apply ``edits`` (``(start, end, new_text)`` in code points) in the worker: the wall
        and the thread's CPU seconds of each ``doc.edit`` call."""
        got = self._ask({"edits": list(edits)})
        return got["wall"], got["cpu"]

    def check(self) -> dict[str, Any]:
        """The worker document's token count, ``hash(tuple(ids))`` and :func:`text_digest`."""
        return self._ask({"check": True})

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def edit_worker(text_file: str, encoding: str) -> int:
    """The child of :class:`EditWorker`: build a ``Document`` of the text, say so, then answer
    one JSON line per request line. The edits are timed as ``bench_document.bench_random``
    times them: ``time.perf_counter`` and ``time.thread_time`` around each ``doc.edit``, the
    cyclic collector on (as in an editor), nothing else in the loop."""
    import gc

    from livetok.incremental import Document, get_encoding

    text = Path(text_file).read_text(encoding="utf-8", errors="surrogatepass")
    enc = get_encoding(encoding)
    t = time.perf_counter()
    doc = Document(text, encoding=enc)
    build = time.perf_counter() - t
    del text
    gc.collect()

    def say(msg: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()

    say({"build_s": build, "tokens": doc.token_count})
    edit, clock, tclock = doc.edit, time.perf_counter, time.thread_time
    for line in sys.stdin:
        msg = json.loads(line)
        if "edits" in msg:
            wall: list[float] = []
            cpu: list[float] = []
            for s, e, ins in msg["edits"]:
                t = clock()
                c = tclock()
                edit(s, e, ins)
                c2 = tclock()
                wall.append(clock() - t)
                cpu.append(c2 - c)
            say({"wall": wall, "cpu": cpu})
        else:
            ids = doc.token_ids()
            say({"tokens": len(ids), "ids_hash": hash(tuple(ids)),
                 "text_sha256": text_digest(doc.text)})
    return 0


if __name__ == "__main__":
    sys.exit(edit_worker(*sys.argv[1:3]))
