"""``livetok check [PATH...]``: token budgets for CI and pre-commit (``docs/budgets.md``).

Walks the paths (honouring ``.gitignore``, see :mod:`.walk`), finds each file's budget file,
applies its budgets (:mod:`.budgets`) and prints compiler-style lines for the ones exceeded::

    CLAUDE.md:1: 3,412 tokens (o200k_base), 412 over the budget of 3,000

Exit status: 0 within budgets, 1 a budget exceeded, 2 a configuration error.

The paths are a repository, untrusted input (``docs/security.md``): each file is read through
:mod:`.trust` (a regular file inside the checked folder, at most ``$LIVETOK_MAX_CHECK_BYTES``),
a walked entry that is not is passed over with a warning on stderr, a ``tokenizer.json`` a
budget file names is loaded only with ``--trust-tokenizers`` (or
``LIVETOK_TRUST_TOKENIZERS=1``), and ``--update-baseline`` writes only a baseline inside its
budget file's folder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from livetok.incremental import get_encoding
from livetok.incremental.load import size_limit

from . import trust
from .budgets import (
    MARKDOWN_SUFFIXES,
    TRUST_TOKENIZERS_ENV,
    BudgetConfig,
    ConfigError,
    ConfigFinder,
    ConfigProblem,
    TextCounter,
    Verdict,
    baseline_entries,
    check_text,
    load_baseline,
    load_config,
    write_baseline,
)
from .cli import Subparsers
from .cmd_count import PARALLEL_MIN_CHARS, count_parallel, default_jobs
from .walk import Skipped, walk

#: below this many bytes in all, files are checked in this process (forking costs more)
PARALLEL_MIN_BYTES = 1 << 20
#: the largest file ``livetok check`` reads (a 200 MB Markdown file took 3.3 GB)
MAX_CHECK_BYTES_ENV = "LIVETOK_MAX_CHECK_BYTES"
_MAX_CHECK_BYTES = 64 << 20
EXIT_OK, EXIT_OVER, EXIT_CONFIG = 0, 1, 2


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "check",
        help="check token budgets (for CI and pre-commit)",
        description="Check the token budgets of [tool.livetok] in pyproject.toml or of a "
        "livetok.toml (the closest one above each file) and of Markdown front matter "
        "(tokens: N). Folders are walked honouring .gitignore. Exit status: 0 within "
        "budgets, 1 a budget exceeded, 2 a configuration error. See docs/budgets.md.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files and folders (default: .)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: compiler-style lines (default); json: one object for tools")
    p.add_argument("--summary", action="store_true",
                   help="also print a table of every budget checked, within or over")
    p.add_argument("--config", metavar="FILE",
                   help="use this budget file for every path instead of looking for one")
    p.add_argument("--baseline", metavar="FILE",
                   help="the ratchet's file (default: the budget file's 'baseline', "
                   ".livetok-baseline.json beside it); a span over budget fails only when it "
                   "grew past its recorded count")
    p.add_argument("--update-baseline", action="store_true",
                   help="record the counts of the spans now over budget in the baseline file")
    p.add_argument("--trust-tokenizers", action="store_true",
                   help="load the tokenizer.json files that budget files name (they come with "
                   "the repository, and their regexes and normalizers run as code: only for "
                   "repositories you trust; also LIVETOK_TRUST_TOKENIZERS=1)")
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="processes for many files or a file of 4 M characters or more, on "
                   "Linux (default: the available cores, at most 4)")
    return p


@dataclass
class _Target:
    """A file to check, with what governs it."""

    path: Path
    label: str
    config: BudgetConfig | None
    baseline_file: Path
    baseline_key: str
    baseline: dict[str, int] | None = None
    #: the folder the file must resolve inside (see :func:`_boundary`)
    boundary: Path | None = None
    #: named on the command line (a failure to read it is an error, not a warning)
    named: bool = False


def _label(path: Path) -> str:
    """``path`` relative to the current folder when it is below it (as git prints paths)."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def _boundary(path: Path) -> Path:
    """The folder a checked path must resolve inside: the working folder when the path is
    below it (its folders' links resolved, not the path's own last one), else the path itself
    when it is a folder, else its folder. A repository's ``docs/x.md -> ~/.env`` is refused.

    Runtime complexity: ``O(path components)`` system calls.
    """
    cwd = trust.real(Path.cwd())
    parent = trust.real(path.absolute().parent)
    if parent == cwd or cwd in parent.parents:
        return cwd
    return trust.real(path) if path.is_dir() else parent


def _collect(paths: list[str], explicit: BudgetConfig | None, problems: list[ConfigProblem],
             warnings: list[Skipped], *, trust_tokenizers: bool = False) -> list[_Target] | None:
    """The files to check (None when a path does not exist), with their budget files; the
    walked entries passed over go to ``warnings`` when they would have been checked."""
    finder = ConfigFinder(trust_tokenizers=trust_tokenizers)
    seen: set[Path] = set()
    out: list[_Target] = []
    for name in paths:
        root = Path(name)
        if not os.path.lexists(root):
            print(f"livetok check: {name}: no such file or folder", file=sys.stderr)
            return None
        boundary = _boundary(root)
        named = not root.is_dir()
        for item in walk(root, boundary=boundary):
            path = (item.path if isinstance(item, Skipped) else item).absolute()
            if path in seen:
                continue
            seen.add(path)
            try:
                cfg = explicit if explicit is not None else finder.config_for(path)
            except ConfigError as exc:
                problems.extend(p for p in exc.problems if p not in problems)
                continue
            # read only files a rule names, or Markdown (whose front matter may set a budget)
            checked = path.suffix.lower() in MARKDOWN_SUFFIXES or (
                cfg is not None and cfg.rule_budget(path) is not None)
            if isinstance(item, Skipped):
                if checked or item.folder:
                    warnings.append(item)
                continue
            if checked:
                out.append(_Target(path, _label(path), cfg, Path(), "", boundary=boundary,
                                   named=named))
    return out


def _attach_baselines(targets: list[_Target], override: Path | None,
                      problems: list[ConfigProblem]) -> dict[Path, dict[str, dict[str, int]]]:
    """Point each target at its baseline file and its entries there; the files, loaded."""
    loaded: dict[Path, dict[str, dict[str, int]]] = {}
    for t in targets:
        if override is not None:
            bfile = override
        elif t.config is not None:
            bfile = t.config.baseline_path
        else:
            bfile = Path.cwd() / ".livetok-baseline.json"
        bfile = bfile.absolute()
        if bfile not in loaded:
            try:
                loaded[bfile] = load_baseline(bfile, _baseline_root(t, override))
            except ConfigError as exc:
                problems.extend(exc.problems)
                loaded[bfile] = {}
        try:
            key = t.path.relative_to(bfile.parent).as_posix()
        except ValueError:
            key = str(t.path)
        t.baseline_file, t.baseline_key = bfile, key
        t.baseline = loaded[bfile].get(key)
    return loaded


def _baseline_root(t: _Target, override: Path | None) -> Path | None:
    """Where ``t``'s baseline may be read and written: anywhere when the user named it
    (``--baseline``), else inside its budget file's folder (or the working folder)."""
    if override is not None:
        return None
    return t.config.root if t.config is not None else Path.cwd()


class _BigFileCounter(TextCounter):
    """Counts a whole file of 4 M characters or more with forked processes (``-j``)."""

    def __init__(self, text: str, jobs: int) -> None:
        super().__init__(text)
        self.jobs = jobs

    def __call__(self, encoding: str, start_cp: int, end_cp: int) -> int:
        if end_cp - start_cp >= PARALLEL_MIN_CHARS and self.jobs > 1:
            n = count_parallel(get_encoding(encoding), self.text[start_cp:end_cp], self.jobs)
            if n is not None:
                return n
        return super().__call__(encoding, start_cp, end_cp)


#: what checking one file gives: its verdicts and the problems of its budget files
_Result = tuple[list[Verdict], list[ConfigProblem]]


def _check_one(t: _Target, jobs: int = 1) -> _Result:
    """Verdicts of one file, or the problems that kept it from being checked (a file found by
    the walk that cannot be read safely is passed over: its problem's key is ``skipped``)."""
    try:
        text = trust.read_text(t.path, root=t.boundary, what="file to check", label=t.label,
                               limit=size_limit(MAX_CHECK_BYTES_ENV, _MAX_CHECK_BYTES),
                               env=MAX_CHECK_BYTES_ENV)
    except trust.UntrustedFile as exc:
        return [], [ConfigProblem(t.label, None, "" if t.named else "skipped",
                                  str(exc).split(": ", 1)[-1])]
    counter = _BigFileCounter(text, jobs) if len(text) >= PARALLEL_MIN_CHARS else None
    try:
        return check_text(t.path, text, t.config, label=t.label, counter=counter,
                          baseline=t.baseline), []
    except ConfigError as exc:
        return [], exc.problems


#: the targets the forked workers check: set by :func:`_check_all` before it forks them
_TARGETS: list[_Target] | None = None


def _check_index(i: int) -> tuple[int, list[Verdict], list[ConfigProblem]]:
    assert _TARGETS is not None  # set before the fork
    return (i, *_check_one(_TARGETS[i]))


def _check_all(targets: list[_Target], jobs: int) -> list[_Result]:
    """Check every target: small files by ``jobs`` forked processes when there are enough
    bytes to pay for them (Linux only, as ``livetok count -j``), big ones here with
    :func:`count_parallel`. Results in the targets' order.

    Runtime complexity: ``O(total size / jobs)`` wall time plus the start of the processes.
    """
    global _TARGETS
    results: list[_Result | None] = [None] * len(targets)
    sizes = []
    for t in targets:
        try:
            sizes.append(t.path.stat().st_size)
        except OSError:
            sizes.append(0)
    small = [i for i, n in enumerate(sizes) if n < PARALLEL_MIN_CHARS]
    pool = None
    if jobs > 1 and sys.platform.startswith("linux") and len(small) >= 2 * jobs \
            and sum(sizes[i] for i in small) >= PARALLEL_MIN_BYTES:
        _preload(targets)  # subtle: before the fork, so the workers share the vocabularies
        import multiprocessing

        _TARGETS = targets  # the workers are forked with it: nothing is pickled but results
        try:
            pool = multiprocessing.get_context("fork").Pool(jobs)
        except OSError:  # no processes to be had: check in this one
            pool = None
    try:
        if pool is not None:
            with pool:
                for i, verdicts, problems in pool.imap_unordered(_check_index, small,
                                                                 chunksize=8):
                    results[i] = (verdicts, problems)
    finally:
        _TARGETS = None
    return [_check_one(t, jobs) if r is None else r for t, r in zip(targets, results)]


def _preload(targets: Iterable[_Target]) -> None:
    names = set()
    for t in targets:
        cfg = t.config
        if cfg is None:
            names.add("o200k_base")
            continue
        names.add(cfg.encoding)
        for r in cfg.rules:
            names.update(n for n in (r.encoding, r.chunk.encoding if r.chunk else None) if n)
    for name in sorted(names):
        enc = get_encoding(name)
        enc.encode("preload the caches a first encode builds")


def _summary(verdicts: list[Verdict]) -> str:
    rows = [("file", "what", "tokens", "budget", "encoding", "status")]
    for v in verdicts:
        what = "file" if v.kind == "file" else f"{v.kind} {v.title}"
        status = "ok" if not v.over else (
            f"over by {v.tokens - v.budget:,}" + ("" if v.fails else " (baseline)"))
        rows.append((f"{v.path}:{v.line}", what, f"{v.tokens:,}", f"{v.budget:,}", v.encoding,
                     status))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    right = {2, 3}
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in
                 enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        print("livetok check: --jobs takes a number of processes, 1 or more", file=sys.stderr)
        return EXIT_CONFIG
    problems: list[ConfigProblem] = []
    warnings: list[Skipped] = []
    trusted = args.trust_tokenizers or os.environ.get(TRUST_TOKENIZERS_ENV, "") not in ("", "0")
    explicit = None
    if args.config:
        try:
            explicit = load_config(Path(args.config).absolute(), trust_tokenizers=trusted)
        except ConfigError as exc:
            return _finish(args, [], exc.problems, 0)
    targets = _collect(args.paths or ["."], explicit, problems, warnings,
                       trust_tokenizers=trusted)
    if targets is None:
        return EXIT_CONFIG
    override = Path(args.baseline) if args.baseline else None
    loaded = _attach_baselines(targets, override, problems)
    results = _check_all(targets, jobs)
    verdicts: list[Verdict] = []
    for t, (vs, ps) in zip(targets, results):
        verdicts.extend(vs)
        for p in ps:
            if p.key == "skipped":
                warnings.append(Skipped(t.path, p.message))
            else:
                problems.append(p)
    if args.update_baseline and not problems:
        try:
            verdicts = _update_baseline(targets, results, loaded, override)
        except ConfigError as exc:
            problems.extend(exc.problems)
    return _finish(args, verdicts, problems, len(targets), warnings)


def _update_baseline(targets: list[_Target], results: list[_Result],
                     loaded: dict[Path, dict[str, dict[str, int]]],
                     override: Path | None) -> list[Verdict]:
    """Record the counts of the spans over budget; the verdicts, now with those counts."""
    from dataclasses import replace

    out: list[Verdict] = []
    for t, (vs, _ps) in zip(targets, results):
        entries = baseline_entries(vs)
        files = loaded[t.baseline_file]
        if entries:
            files[t.baseline_key] = entries
        else:
            files.pop(t.baseline_key, None)
        out.extend(replace(v, baseline=entries.get(v.key)) for v in vs)
    roots = {t.baseline_file: _baseline_root(t, override) for t in targets}
    for bfile in sorted(roots):
        write_baseline(bfile, loaded[bfile], roots[bfile])
        n = sum(len(e) for e in loaded[bfile].values())
        print(f"livetok check: {_label(bfile)}: {n:,} span(s) over budget recorded",
              file=sys.stderr)
    return out


def _finish(args: argparse.Namespace, verdicts: list[Verdict], problems: list[ConfigProblem],
            n_files: int, warnings: list[Skipped] | None = None) -> int:
    failing = [v for v in verdicts if v.fails]
    status = EXIT_CONFIG if problems else EXIT_OVER if failing else EXIT_OK
    warned = [(_label(w.path), w.reason) for w in warnings or ()]
    if args.format == "json":
        json.dump({
            "livetok-check": 1,
            "status": status,
            "files": n_files,
            "exceeded": len(failing),
            "verdicts": [v.to_json() for v in verdicts],
            "errors": [p.to_json() for p in problems],
            "warnings": [{"path": path, "message": reason} for path, reason in warned],
        }, sys.stdout, indent=2, ensure_ascii=False)
        print()
        return status
    for path, reason in warned:
        print(f"{path}: warning: skipped: {reason}", file=sys.stderr)
    for p in problems:
        print(f"{p.path}:{p.line or 1}: error: {p.message}", file=sys.stderr)
    for v in failing:
        print(v)
    if args.summary and verdicts:
        print(_summary(verdicts))
    files_over = len({v.path for v in failing})
    if problems:
        note = f"{len(problems)} configuration error(s); fix them (see docs/budgets.md)"
    elif not verdicts:
        where = " ".join(args.paths) or "."
        note = (f"no budgets configured for the {n_files:,} file(s) under {where}; add "
                "[tool.livetok] to pyproject.toml or a livetok.toml (see docs/budgets.md)")
    elif failing:
        note = (f"{len(failing):,} budget(s) exceeded in {files_over:,} file(s) "
                f"({len(verdicts):,} budgets in {n_files:,} files checked)")
    else:
        note = f"{len(verdicts):,} budgets in {n_files:,} files checked, all within"
    print(f"livetok check: {note}", file=sys.stderr)
    return status
