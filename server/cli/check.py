"""``livetok check [PATH...]``: token budgets for CI and pre-commit (``docs/budgets.md``).

Walks the paths (honouring ``.gitignore``, see :mod:`.walk`), finds each file's budget file,
applies its budgets (:mod:`livetok.server.budgets`) and prints compiler-style lines for the ones exceeded::

    CLAUDE.md:1: 3,412 tokens (o200k_base), 412 over the budget of 3,000

Exit status: 0 within budgets, 1 a budget exceeded, 2 a configuration error.

A rule's ``total`` (and ``total_cost``) sums every file the rule matches under its budget
file's folder, as a walk of that folder reaches them (``.gitignore`` and the trust rules
honoured), whatever paths were named: a subset of paths (pre-commit's changed files) checks
the totals of the sets it touches, reading the rest of each set (:func:`_walk_for_totals`).

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Literal

from livetok.incremental import get_encoding

from livetok.server import trust
from livetok.server.budgets.baseline import baseline_entries, load_baseline, write_baseline
from livetok.server.budgets.config import (
    TRUST_TOKENIZERS_ENV,
    BudgetConfig,
    BudgetRule,
    ConfigError,
    ConfigProblem,
)
from livetok.server.budgets.discovery import ConfigFinder, load_config
from livetok.server.budgets.frontmatter import MARKDOWN_SUFFIXES
from livetok.server.budgets.limits import MAX_CHECK_BYTES_ENV, check_bytes_limit, printable
from livetok.server.budgets.money import money
from livetok.server.budgets.verdicts import TextCounter, Verdict, check_text, total_verdicts
from livetok.server.cli.main import Subparsers
from livetok.server.cli.count import PARALLEL_MIN_CHARS, count_parallel, default_jobs
from livetok.server.walk import Skipped, walk

#: below this many bytes in all, files are checked in this process (forking costs more)
PARALLEL_MIN_BYTES = 1 << 20
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
    """A file to check, with what governs it; or (``role="set"``) a budget file's totals."""

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
    #: ``file``: its budgets are checked; ``count``: read only to be counted in totals;
    #: ``set``: the totals of the budget file ``path`` (not read)
    role: Literal["file", "count", "set"] = "file"
    #: the rules of its budget file with a total that match it
    totals: tuple[BudgetRule, ...] = ()
    #: reached by the walk of a folder that holds its budget file's folder: only such files
    #: count in a total (a file named alone, perhaps ignored by .gitignore, does not)
    reached: bool = False

    def total_encodings(self) -> list[str]:
        """The encodings it is counted in for the totals it belongs to."""
        if not self.reached or self.config is None:
            return []
        return sorted({self.config.rule_encoding(r) for r in self.totals})


@dataclass
class _Collected:
    """What to check: the files, and the budget files whose totals are checked with the
    indexes of those rules."""

    targets: list[_Target] = field(default_factory=list)
    sets: dict[Path, tuple[BudgetConfig, set[int]]] = field(default_factory=dict)


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
             warnings: list[Skipped], *, trust_tokenizers: bool = False) -> _Collected | None:
    """The files to check (None when a path does not exist), with their budget files, and
    the totals the paths touch (a file of a rule's set; the budget file itself touches all its
    totals); the walked entries passed over go to ``warnings`` when they would have been
    checked."""
    finder = ConfigFinder(trust_tokenizers=trust_tokenizers)
    #: every path met, and its target (None: not checked)
    by_path: dict[Path, _Target | None] = {}
    out = _Collected()
    walked: list[Path] = []
    for name in paths:
        root = Path(name)
        if not os.path.lexists(root):
            print(f"livetok check: {name}: no such file or folder", file=sys.stderr)
            return None
        boundary = _boundary(root)
        named = not root.is_dir()
        if not named:
            walked.append(Path(os.path.abspath(root)))
        for item in walk(root, boundary=boundary):
            path = (item.path if isinstance(item, Skipped) else item).absolute()
            if path in by_path:
                seen = by_path[path]
                if seen is not None and not named:
                    seen.reached = True
                continue
            by_path[path] = None
            try:
                cfg = explicit if explicit is not None else finder.config_for(path)
            except ConfigError as exc:
                problems.extend(p for p in exc.problems if p not in problems)
                continue
            totals = cfg.totals_for(path) if cfg is not None else ()
            if cfg is not None and (totals or cfg.total_rules and path == cfg.path.absolute()):
                # a file of a set touches that total; the budget file itself, every one
                rules = totals if totals else cfg.total_rules
                out.sets.setdefault(cfg.path, (cfg, set()))[1].update(r.index for r in rules)
            # read only files a rule names, or Markdown (whose front matter may set a budget)
            checked = path.suffix.lower() in MARKDOWN_SUFFIXES or (
                cfg is not None and cfg.rule_budget(path) is not None)
            if isinstance(item, Skipped):
                if checked or totals or item.folder:
                    warnings.append(item)
                continue
            if checked:
                t = _Target(path, _label(path), cfg, Path(), "", boundary=boundary, named=named,
                            totals=totals, reached=not named)
                out.targets.append(t)
                by_path[path] = t
    for cfg, touched in out.sets.values():
        root = cfg.root.absolute()
        if not any(w == root or w in root.parents for w in walked):
            _walk_for_totals(cfg, touched, explicit is not None, finder, by_path, out.targets,
                             warnings)
    for t in out.targets:
        # subtle: a set holds only files inside its budget file's folder, links resolved (the
        # folder vouches for them; the server walks it with that boundary)
        if t.reached and t.totals and t.config is not None and not trust.inside(t.path,
                                                                                t.config.root):
            t.reached = False
    return out


def _walk_for_totals(cfg: BudgetConfig, touched: set[int], explicit: bool, finder: ConfigFinder,
                     by_path: dict[Path, _Target | None], targets: list[_Target],
                     warnings: list[Skipped]) -> None:
    """Walk the folder of a budget file whose totals (the rules ``touched``) are checked,
    which the paths given did not walk: the files of those sets are marked reached, or added
    to be read and counted only (``role="count"``); the entries passed over that could belong
    to one are warned of.

    Runtime complexity: ``O(files + folders)`` under the folder, as :func:`.walk.walk`.
    """
    boundary = _boundary(cfg.root)
    for item in walk(cfg.root, boundary=boundary):
        path = (item.path if isinstance(item, Skipped) else item).absolute()
        if path in by_path:
            seen = by_path[path]
            if seen is not None:
                seen.reached = True
            continue
        # a file below a nested budget file belongs to that one's sets, not to these
        mine = explicit or finder.config_path(path.parent) == cfg.path
        totals = tuple(r for r in cfg.totals_for(path) if r.index in touched) if mine else ()
        if isinstance(item, Skipped):
            if (totals or item.folder) and item not in warnings:
                warnings.append(item)
            continue
        if totals:
            t = _Target(path, _label(path), cfg, Path(), "", boundary=boundary, role="count",
                        totals=totals, reached=True)
            targets.append(t)
            by_path[path] = t


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


#: what checking one file gives: its verdicts, the problems of its budget files, and its
#: count in each encoding of the totals it belongs to
_Result = tuple[list[Verdict], list[ConfigProblem], dict[str, int]]


def _check_one(t: _Target, jobs: int = 1) -> _Result:
    """Verdicts of one file and its counts for totals, or the problems that kept it from
    being checked (a file found by the walk that cannot be read safely is passed over: its
    problem's key is ``skipped``)."""
    try:
        text = trust.read_text(t.path, root=t.boundary, what="file to check", label=t.label,
                               limit=check_bytes_limit(), env=MAX_CHECK_BYTES_ENV)
    except trust.UntrustedFile as exc:
        return [], [ConfigProblem(t.label, None, "" if t.named else "skipped",
                                  str(exc).split(": ", 1)[-1])], {}
    counter = _BigFileCounter(text, jobs) if len(text) >= PARALLEL_MIN_CHARS else TextCounter(text)
    # the whole file's count, shared (memo) with its own budget in the same encoding
    counts = {enc: counter(enc, 0, len(text)) for enc in t.total_encodings()}
    if t.role != "file":
        return [], [], counts
    try:
        return check_text(t.path, text, t.config, label=t.label, counter=counter,
                          baseline=t.baseline), [], counts
    except ConfigError as exc:
        return [], exc.problems, counts


#: the targets the forked workers check: set by :func:`_check_all` before it forks them
_TARGETS: list[_Target] | None = None


def _check_index(i: int) -> tuple[int, list[Verdict], list[ConfigProblem], dict[str, int]]:
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
                for i, verdicts, problems, counts in pool.imap_unordered(
                        _check_index, small, chunksize=8):
                    results[i] = (verdicts, problems, counts)
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
    """The ``--summary`` table: a row per budget, within or over (a ``cost`` column when a
    price applies to one)."""
    priced = any(v.price is not None for v in verdicts)
    rows = [("file", "what", "tokens", *(("cost",) if priced else ()), "budget", "encoding",
             "status")]
    for v in verdicts:
        what = {"file": "file", "file_cost": "file cost"}.get(
            v.kind, f"{v.kind.replace('_', ' ')} {v.title}")
        if v.files is not None:
            what += f" ({v.files:,} file{'' if v.files == 1 else 's'})"
        cost = v.cost
        if v.cost_budget is not None and cost is not None:
            budget, gap = money(v.cost_budget, v.currency), money(cost - v.cost_budget, v.currency)
        else:
            budget, gap = f"{v.budget:,}", f"{v.tokens - v.budget:,}"
        status = "ok" if not v.over else f"over by {gap}" + ("" if v.fails else " (baseline)")
        shown_cost = (money(cost, v.currency),) if cost is not None else ("",)
        rows.append((f"{v.path}:{v.line}", what, f"{v.tokens:,}",
                     *(shown_cost if priced else ()), budget, v.encoding, status))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    right = {2, 3, 4} if priced else {2, 3}
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
    collected = _collect(args.paths or ["."], explicit, problems, warnings,
                         trust_tokenizers=trusted)
    if collected is None:
        return EXIT_CONFIG
    targets = collected.targets
    sets = [_Target(cfg.path, _label(cfg.path), cfg, Path(), "", role="set",
                    totals=tuple(r for r in cfg.total_rules if r.index in touched))
            for cfg, touched in collected.sets.values()]
    override = Path(args.baseline) if args.baseline else None
    loaded = _attach_baselines([*targets, *sets], override, problems)
    results = _check_all(targets, jobs)
    verdicts: list[Verdict] = []
    checked: list[tuple[_Target, list[Verdict]]] = []
    #: per budget file, per rule with a total: each file's count (relative to the folder)
    counts: dict[Path, dict[int, dict[str, int]]] = {
        s.path: {r.index: {} for r in s.totals} for s in sets}
    for t, (vs, ps, ns) in zip(targets, results):
        verdicts.extend(vs)
        if t.role == "file":
            checked.append((t, vs))
        for p in ps:
            if p.key == "skipped":
                warnings.append(Skipped(t.path, p.message))
            else:
                problems.append(p)
        if t.config is not None and ns:
            rel = t.config.relative(t.path) or t.label
            for r in t.totals:  # each of them touched: the file is in its set
                counts[t.config.path][r.index][rel] = ns[t.config.rule_encoding(r)]
    for s in sets:
        assert s.config is not None  # a set is a budget file's
        vs = total_verdicts(s.config, counts[s.path], label=s.label, baseline=s.baseline)
        verdicts.extend(vs)
        checked.append((s, vs))
    if args.update_baseline and not problems:
        try:
            verdicts = _update_baseline(checked, loaded, override)
        except ConfigError as exc:
            problems.extend(exc.problems)
    return _finish(args, verdicts, problems, len(targets), warnings)


def _update_baseline(checked: list[tuple[_Target, list[Verdict]]],
                     loaded: dict[Path, dict[str, dict[str, int]]],
                     override: Path | None) -> list[Verdict]:
    """Record the counts of the spans and totals over budget; the verdicts, now with those
    counts. Each target rewrites its own keys of its entry: a file its spans', a budget file's
    totals those of the rules checked (``total #N``, ``total_cost #N``)."""
    out: list[Verdict] = []
    for t, vs in checked:
        entries = baseline_entries(vs)
        files = loaded[t.baseline_file]
        # subtle: a budget file a rule matches has both kinds of keys, written by two targets
        kept = {k: n for k, n in files.get(t.baseline_key, {}).items() if not _owns(t, k)}
        if entries or kept:
            files[t.baseline_key] = {**kept, **entries}
        else:
            files.pop(t.baseline_key, None)
        out.extend(replace(v, baseline=entries.get(v.key)) for v in vs)
    roots = {t.baseline_file: _baseline_root(t, override) for t, _vs in checked}
    for bfile in sorted(roots):
        write_baseline(bfile, loaded[bfile], roots[bfile])
        n = sum(len(e) for e in loaded[bfile].values())
        print(f"livetok check: {_label(bfile)}: {n:,} span(s) over budget recorded",
              file=sys.stderr)
    return out


def _owns(t: _Target, key: str) -> bool:
    """Whether the baseline key ``key`` of ``t``'s entry is ``t``'s to rewrite.

    >>> t = _Target(Path("livetok.toml"), "", None, Path(), "", role="set",
    ...             totals=(BudgetRule(2, ("*.md",), total=5),))
    >>> _owns(t, "total #2"), _owns(t, "total_cost #3"), _owns(t, "file")
    (True, False, False)

    Runtime complexity: ``O(rules)``.
    """
    kind, _, index = key.partition(" #")
    if t.role != "set":
        return kind not in ("total", "total_cost")
    return kind in ("total", "total_cost") and index in {str(r.index) for r in t.totals}


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
    # a name or a message is escaped: an ESC in a file name would drive the terminal, a
    # newline forge a line that CI reads as a verdict
    for path, reason in warned:
        print(f"{printable(path)}: warning: skipped: {printable(reason)}", file=sys.stderr)
    for p in problems:
        print(f"{printable(str(p.path))}:{p.line or 1}: error: {printable(p.message)}",
              file=sys.stderr)
    for v in failing:
        print(printable(str(v)))
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
