"""The files under a folder that git would not ignore, for ``livetok check``.

``.gitignore`` files are read at every level (a deeper one wins for the paths below it, as
in git), matched as ``pathspec``'s ``GitIgnoreSpec`` would match them but without
backtracking (:class:`~livetok.server.budgets.globs.GlobRules`); ``.git`` folders are
skipped. The same rules apply inside and outside a git work tree, without running git: the
global excludes file and ``.git/info/exclude`` are not read, and a tracked file that a
``.gitignore`` names is skipped like an untracked one (see ``docs/budgets.md``).

The folder comes from a repository, so the walk keeps to the trust boundary
(:mod:`.trust`): a symbolic link is followed only to a regular file inside ``boundary`` (a
linked folder is never entered), FIFOs and devices are passed over, ``.gitignore`` files are
read bounded through the trust gate (those above the walked folder only inside its work
tree: a link out of it is not followed), a ``.gitignore`` line with more ``**`` segments than
globs may hold is dropped (its warning names the line, never quotes more than a short
escaped excerpt), and folders deeper than ``$LIVETOK_MAX_WALK_DEPTH`` are not entered. Each
entry passed over that way comes out as a :class:`Skipped` with the reason, so the caller can
warn; with ``ignored=True`` (the workspace map, which logs why a file is absent) so do the
entries a ``.gitignore`` ignores and the linked folders.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from livetok.incremental.env_limits import size_limit

from livetok.server import trust
from livetok.server.budgets.globs import UNINDEXED_ENV, GlobRules, unindexed_limit
from livetok.server.budgets.limits import glob_problem, glob_stars_limit

__all__ = ["MAX_DEPTH_ENV", "Skipped", "WalkedFile", "iter_files", "walk", "walk_stat",
           "why_not_walked"]

_SKIP_DIRS = frozenset({".git", ".hg", ".svn"})
#: folders deeper than this below the walked one are not entered
MAX_DEPTH_ENV = "LIVETOK_MAX_WALK_DEPTH"
_MAX_DEPTH = 100

#: the ``.gitignore`` rules in force: each folder holding one (its path ending in the
#: separator) and its rules, outermost first
_Specs = list[tuple[str, GlobRules]]
#: a file the walk found: its path and its ``stat`` (the target's, for a link)
WalkedFile = tuple[str, os.stat_result]


@dataclass(frozen=True)
class Skipped:
    """An entry the walk passed over, and why (for a warning)."""

    path: Path
    reason: str
    #: a folder or a ``.gitignore`` (what it holds is unknown: always worth a warning), not
    #: a file (worth one only when it would have been checked)
    folder: bool = False


def _read_ignore(folder: str, boundary: Path, skipped: list[Skipped]) -> GlobRules | None:
    """The rules of ``folder``'s ``.gitignore`` (read only when it resolves inside
    ``boundary``), each line that cannot be matched noted in ``skipped`` by its number."""
    path = os.path.join(folder, ".gitignore")
    if not os.path.lexists(path):
        return None
    try:
        text = trust.read_text(path, root=boundary, limit=trust.config_limit(),
                               what=".gitignore")
    except trust.UntrustedFile as exc:
        skipped.append(Skipped(Path(path), f"not read: {str(exc).split(': ', 1)[-1]}", True))
        return None
    rules, problems, passed_over = _parse_ignore(text, glob_stars_limit(), unindexed_limit())
    for n, problem in problems:
        skipped.append(Skipped(Path(path), f"line {n:,} passed over: {problem}", True))
    if passed_over:
        skipped.append(Skipped(Path(path), passed_over, True))
    return rules


@functools.lru_cache(maxsize=4)
def _parse_ignore(text: str, stars: int, wild: int
                  ) -> tuple[GlobRules | None, tuple[tuple[int, str], ...], str]:
    """The rules of a ``.gitignore``'s ``text``, its lines passed over (number, why), and a
    warning when globs without a literal part were passed over: kept for the same text, as
    the workspace map reads the ``.gitignore`` files above each changed file again (150,000
    lines take about a second to compile)."""
    lines = text.splitlines()
    problems = []
    for n, line in enumerate(lines, 1):
        if (problem := glob_problem(line, stars)) is not None:
            lines[n - 1] = ""  # (an empty line: the others keep their numbers)
            problems.append((n, problem))
    rules, bad = GlobRules.from_lines(lines, limit=wild)
    passed_over = "" if not rules.passed_over else (
        f"{len(rules.passed_over):,} globs from line {rules.passed_over[0]:,} on passed over: "
        f"a glob without a literal part (such as '*x*') is tried against every path, and "
        f"livetok takes the first {wild:,} of a file (set {UNINDEXED_ENV})")
    return (rules if rules else None), tuple(sorted(problems + bad)), passed_over


def _no_ignore(folder: str, boundary: Path, skipped: list[Skipped]) -> None:
    """:func:`_read_ignore` with ``--no-ignore``: no rules."""
    return None


def _with_own(specs: _Specs, folder: str, own: GlobRules | None) -> _Specs:
    """``specs`` and ``folder``'s own ``.gitignore`` rules, when it has any."""
    return specs if own is None else [*specs, (folder.rstrip(os.sep) + os.sep, own)]


def _ignored(specs: _Specs, path: str, is_dir: bool) -> str | None:
    """The ``.gitignore`` file of the deepest folder with a say on ``path`` when it ignores
    it."""
    for base, spec in reversed(specs):
        include = spec.check(_relative(path, base, is_dir))
        if include is not None:
            return base + ".gitignore" if include else None
    return None


def _relative(path: str, base: str, is_dir: bool) -> str:
    """``path`` relative to the folder ``base`` (ending in the separator), as a glob sees it:
    ``/`` between parts, one at the end of a folder."""
    # (string work, not pathlib: this runs for every entry walked)
    if path.startswith(base):
        rel = path[len(base):]
    else:  # the folder itself, from the rules of a folder above it
        rel = os.path.relpath(path, base)
    return rel.replace(os.sep, "/") + ("/" if is_dir else "")


def _ancestor_specs(folder: Path, skipped: list[Skipped]) -> _Specs:
    """The ``.gitignore`` files of the folders above ``folder`` up to its work tree's top
    (the folder holding ``.git``), outermost first, each read only when it resolves inside
    that top folder; none when it is not in a work tree."""
    chain: list[Path] = []
    d = folder.parent
    while True:
        chain.append(d)
        if (d / ".git").exists():
            break
        if d.parent == d:
            return []
        d = d.parent
    specs: _Specs = []
    top = chain[-1]
    for d in reversed(chain):
        specs = _with_own(specs, str(d), _read_ignore(str(d), top, skipped))
    return specs


def _top_specs(root: Path, skipped: list[Skipped], *, gitignore: bool, named: bool
               ) -> _Specs | None:
    """The rules of the ``.gitignore`` files above ``root`` that apply below it; None when
    they ignore ``root`` itself and it is not ``named``. A folder the user named is walked,
    as ripgrep searches a named path: the rules that match it are set aside, the others
    (``*.log``) still apply inside it."""
    if not gitignore:
        return []
    specs = _ancestor_specs(root, skipped)
    if not specs or _ignored(specs, str(root), True) is None:
        return specs
    if not named:
        return None
    top = str(root)
    return [(base, spec.without(_relative(top, base, True))) for base, spec in specs]


def walk(root: Path, *, boundary: Path | None = None, ignored: bool = False,
         gitignore: bool = True, named: bool = False) -> Iterator[Path | Skipped]:
    """Every file under ``root`` that its ``.gitignore`` files (there and above it, up to the
    work tree's top) do not ignore, in sorted order, and a :class:`Skipped` for each entry
    passed over (see the module's docstring); ``root`` itself if it is not a folder.
    ``boundary`` (default: ``root``) is where a symbolic link may lead; ``ignored``: a
    :class:`Skipped` for each entry a ``.gitignore`` ignores (a folder once) and each linked
    folder too; ``gitignore=False``: no ``.gitignore`` is read (``--no-ignore``); ``named``:
    ``root`` is walked even when a ``.gitignore`` above it ignores it.

    Runtime complexity: ``O(files + folders)`` directory entries, each tested against the
    ``.gitignore`` files above it; memory ``O(depth × entries per folder)``.
    """
    root = root.absolute()
    if not root.is_dir():
        yield root
        return
    for item in walk_stat(root, boundary=boundary, ignored=ignored, gitignore=gitignore,
                          named=named):
        yield item if isinstance(item, Skipped) else Path(item[0])


def walk_stat(root: Path, *, boundary: Path | None = None, ignored: bool = False,
              gitignore: bool = True, named: bool = False) -> Iterator[WalkedFile | Skipped]:
    """:func:`walk` of the folder ``root``, each file as its path (a ``str``) and its
    ``stat``: the workspace map's walk, which needs each file's size and times and makes
    no ``Path`` of it (a tenth of its time per file when nothing changed).

    Runtime complexity: as :func:`walk`, one ``stat`` per file.
    """
    root = root.absolute()
    boundary = boundary if boundary is not None else root
    skipped: list[Skipped] = []
    top_specs = _top_specs(root, skipped, gitignore=gitignore, named=named)
    yield from skipped
    top = str(root)
    if top_specs is None:
        if ignored:
            yield Skipped(root, "ignored by a .gitignore above it", True)
        return
    specs = top_specs
    max_depth = size_limit(MAX_DEPTH_ENV, _MAX_DEPTH, "folders")
    # an explicit stack, not recursion: a chain of 1,500 folders is a warning, not a crash
    stack: list[tuple[Iterator[os.DirEntry[str]], _Specs, int]] = []
    opened = _open(top, specs, 0, boundary, gitignore)
    if isinstance(opened, Skipped):
        yield opened
        return
    yield from opened[1]
    stack.append(opened[0])
    while stack:
        entries, specs, depth = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        path = entry.path
        try:
            is_dir = entry.is_dir(follow_symlinks=False)  # a linked folder could loop
            is_link = not is_dir and entry.is_symlink()
        except OSError as exc:
            yield Skipped(Path(path), f"cannot read it: {exc.strerror or exc}")
            continue
        if is_dir and entry.name in _SKIP_DIRS:
            continue
        by = _ignored(specs, path, is_dir) if specs else None
        if by is not None:
            if ignored:
                yield Skipped(Path(path), f"ignored by {by}", is_dir)
            continue
        if is_dir:
            if depth + 1 > max_depth:
                yield Skipped(Path(path), f"nested deeper than {max_depth} folders below "
                              f"{root}; not entered (set {MAX_DEPTH_ENV} to go deeper)", True)
                continue
            sub = _open(path, specs, depth + 1, boundary, gitignore)
            if isinstance(sub, Skipped):
                yield sub
                continue
            yield from sub[1]
            stack.append(sub[0])
            continue
        reason = _not_a_file(path, is_link, boundary, entry)
        if isinstance(reason, os.stat_result):
            yield path, reason
        elif reason:
            yield Skipped(Path(path), reason)
        elif ignored:
            yield Skipped(Path(path), "a symbolic link to a folder; not followed", True)


def _open(folder: str, specs: _Specs, depth: int, boundary: Path, gitignore: bool = True
          ) -> tuple[tuple[Iterator[os.DirEntry[str]], _Specs, int], list[Skipped]] | Skipped:
    """A folder's sorted entries and the ``.gitignore`` rules in force in it."""
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        return Skipped(Path(folder), f"cannot read the folder: {exc.strerror or exc}", True)
    skipped: list[Skipped] = []
    if gitignore and any(e.name == ".gitignore" for e in entries):  # (no lexists per folder)
        specs = _with_own(specs, folder, _read_ignore(folder, boundary, skipped))
    return (iter(entries), specs, depth), skipped


def _not_a_file(path: str, is_link: bool, boundary: Path,
                entry: os.DirEntry[str] | None = None) -> os.stat_result | str:
    """The ``stat`` of ``path`` (the target's, for a link) when it is a regular file inside
    ``boundary``, else why it is not read as a file ("" when it is a linked folder, passed
    over without a word as git does). ``entry``: its directory entry, whose ``stat`` of a
    file that is not a link costs no second call."""
    try:
        st = entry.stat(follow_symlinks=False) if entry is not None and not is_link \
            else os.stat(path)  # follows a link
    except OSError as exc:
        what = "a symbolic link that leads nowhere" if is_link else "cannot read it"
        return f"{what} ({exc.strerror or exc})"
    if stat.S_ISDIR(st.st_mode):
        return ""
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a FIFO, a device or a socket); not read"
    if is_link and not trust.inside(path, boundary):
        return f"a symbolic link to a file outside {boundary}; not read"
    return st


def why_not_walked(path: Path, root: Path, *, boundary: Path | None = None,
                   gitignore: bool = True, named: bool = False) -> str | None:
    """Why :func:`walk` of ``root`` would not yield the file ``path`` (None: it would), found
    without walking: the ``.gitignore`` files of ``path``'s folders from the work tree's top
    down, and the same rules for ``.git`` folders, linked folders, depth and what a file
    must be. For one changed file of a walked folder (the workspace map's watched files).

    Runtime complexity: ``O(depth)`` folders, each ``.gitignore`` read once.
    """
    path, root = path.absolute(), root.absolute()
    boundary = boundary if boundary is not None else root
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return f"outside {root}"
    if not parts:
        return "the walked folder itself"
    skipped: list[Skipped] = []
    top_specs = _top_specs(root, skipped, gitignore=gitignore, named=named)
    if top_specs is None:
        return "ignored by a .gitignore above it"
    specs = top_specs
    own = _read_ignore if gitignore else _no_ignore
    max_depth = size_limit(MAX_DEPTH_ENV, _MAX_DEPTH, "folders")
    folder = root
    for depth, name in enumerate(parts[:-1], 1):
        specs = _with_own(specs, str(folder), own(str(folder), boundary, skipped))
        folder = folder / name
        if name in _SKIP_DIRS:
            return f"inside {name}"
        if folder.is_symlink():
            return f"inside {folder}, a symbolic link to a folder; not followed"
        by = _ignored(specs, str(folder), True) if specs else None
        if by is not None:
            return f"ignored by {by}"
        if depth > max_depth:
            return f"nested deeper than {max_depth} folders below {root}"
    specs = _with_own(specs, str(folder), own(str(folder), boundary, skipped))
    by = _ignored(specs, str(path), path.is_dir()) if specs else None
    if by is not None:
        return f"ignored by {by}"
    is_link = path.is_symlink()
    reason = _not_a_file(str(path), is_link, boundary)
    if reason == "":  # a folder
        return "a symbolic link to a folder; not followed" if is_link else "a folder"
    return reason if isinstance(reason, str) else None


def iter_files(root: Path, *, boundary: Path | None = None) -> Iterator[Path]:
    """The files of :func:`walk`, without the entries it passed over.

    Runtime complexity: as :func:`walk`.
    """
    for item in walk(root, boundary=boundary):
        if isinstance(item, Path):
            yield item
