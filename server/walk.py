"""The files under a folder that git would not ignore, for ``livetok check``.

``.gitignore`` files are read at every level (a deeper one wins for the paths below it, as
in git), with ``pathspec``'s ``GitIgnoreSpec`` doing the matching; ``.git`` folders are
skipped. The same rules apply inside and outside a git work tree, without running git: the
global excludes file and ``.git/info/exclude`` are not read, and a tracked file that a
``.gitignore`` names is skipped like an untracked one (see ``docs/budgets.md``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pathspec

__all__ = ["iter_files"]

_SKIP_DIRS = frozenset({".git", ".hg", ".svn"})


def _read_ignore(folder: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        lines = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def _ignored(specs: list[tuple[Path, pathspec.GitIgnoreSpec]], path: Path, is_dir: bool) -> bool:
    """Whether the deepest ``.gitignore`` with a say on ``path`` ignores it."""
    for base, spec in reversed(specs):
        rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        result = spec.check_file(rel)
        if result.include is not None:
            return bool(result.include)
    return False


def _ancestor_specs(folder: Path) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
    """The ``.gitignore`` files of the folders above ``folder`` up to its work tree's top
    (the folder holding ``.git``), outermost first; none when it is not in a work tree."""
    chain: list[Path] = []
    d = folder.parent
    while True:
        chain.append(d)
        if (d / ".git").exists():
            break
        if d.parent == d:
            return []
        d = d.parent
    return [(d, s) for d in reversed(chain) if (s := _read_ignore(d)) is not None]


def iter_files(root: Path) -> Iterator[Path]:
    """Every file under ``root`` that its ``.gitignore`` files (there and above it, up to the
    work tree's top) do not ignore, in sorted order; ``root`` itself if it is a file.

    Runtime complexity: ``O(files + folders)`` directory entries, each tested against the
    ``.gitignore`` files above it.
    """
    root = root.absolute()
    if not root.is_dir():
        yield root
        return
    specs = _ancestor_specs(root)
    if specs and _ignored(specs, root, True):
        return
    yield from _walk(root, specs)


def _walk(folder: Path, specs: list[tuple[Path, pathspec.GitIgnoreSpec]]) -> Iterator[Path]:
    own = _read_ignore(folder)
    if own is not None:
        specs = [*specs, (folder, own)]
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = folder / entry.name
        is_dir = entry.is_dir(follow_symlinks=False)  # a linked folder could loop
        if is_dir and entry.name in _SKIP_DIRS:
            continue
        if specs and _ignored(specs, path, is_dir):
            continue
        if is_dir:
            yield from _walk(path, specs)
        elif entry.is_file():
            yield path
