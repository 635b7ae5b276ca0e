"""Which files of a folder are in the workspace map, and why the others are not.

The walk is ``livetok check``'s (:func:`livetok.server.walk.walk_stat`, which gives each
file's ``stat`` too: its size here, the stat index's key in :mod:`.counting`): ``.gitignore`` files at
every level and above the folder up to its work tree's top, ``.git`` folders skipped, a
symbolic link followed only to a regular file inside the folder (a linked folder is never
entered, so a link loop costs nothing), FIFOs and devices passed over, a bounded depth. Then
the budget file that governs each file (``livetok.toml`` or ``[tool.livetok]``, the closest
one above it, :class:`~livetok.server.budgets.discovery.ConfigFinder`) may leave it out with
its ``include`` and ``exclude`` globs (``docs/budgets.md``). Every entry left out is a
:class:`~livetok.server.walk.Skipped` with the reason, for the log.

Limits, each with an environment variable: a file over :data:`MAX_FILE_BYTES_ENV` bytes
(8 MiB) is left out; the map stops, saying so, past :data:`MAX_FILES_ENV` files (200,000) or
:data:`MAX_BYTES_ENV` bytes in all (1 GiB). Whether a file is text is decided when it is read
(:mod:`.classify`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, NamedTuple

from livetok.incremental.env_limits import size_limit

from livetok.server.budgets.config import BudgetConfig, ConfigError
from livetok.server.budgets.discovery import ConfigFinder
from livetok.server.walk import Skipped, walk_stat, why_not_walked

__all__ = ["MAX_BYTES_ENV", "MAX_FILES_ENV", "MAX_FILE_BYTES_ENV", "Candidate", "Limits",
           "scan", "why_left_out"]

MAX_FILE_BYTES_ENV = "LIVETOK_MAX_MAP_FILE_BYTES"
MAX_FILES_ENV = "LIVETOK_MAX_MAP_FILES"
MAX_BYTES_ENV = "LIVETOK_MAX_MAP_BYTES"


@dataclass(frozen=True)
class Limits:
    """The bounds of one map (see the module's docstring)."""

    file_bytes: int = 8 << 20
    files: int = 200_000
    bytes: int = 1 << 30

    @classmethod
    def from_env(cls) -> Limits:
        """The defaults, or what the environment variables say (a ``ValueError`` naming the
        variable that is not a positive number).

        Runtime complexity: ``O(1)``.
        """
        d = cls()
        return cls(size_limit(MAX_FILE_BYTES_ENV, d.file_bytes),
                   size_limit(MAX_FILES_ENV, d.files, "files"),
                   size_limit(MAX_BYTES_ENV, d.bytes))


class Candidate(NamedTuple):
    """A file the map will count: its path, its size and ``stat`` when it was looked at
    (None: not looked at; the stat index is then not consulted)."""

    path: str
    size: int
    stat: os.stat_result | None = None


def _config_reason(finder: ConfigFinder, path: str, warned: set[Path],
                   folders: dict[str, BudgetConfig | None] | None = None
                   ) -> tuple[str | None, Skipped | None]:
    """Why the budget file over ``path`` leaves it out (None: it does not), and a warning
    the first time a budget file cannot be read (its globs then leave nothing out).
    ``folders``: the budget file of each folder met so far (most files share one)."""
    folder = path.rpartition(os.sep)[0]
    try:
        if folders is not None and folder in folders:
            cfg = folders[folder]
        else:
            cfg = finder.config_for(Path(path))
            if folders is not None:
                folders[folder] = cfg
    except ConfigError as exc:
        where = Path(exc.problems[0].path) if exc.problems else Path(folder)
        if where in warned:
            return None, None
        warned.add(where)
        return None, Skipped(where, "budget file not used for include/exclude: "
                             f"{exc.problems[0].message if exc.problems else exc}", True)
    return (None if cfg is None or cfg.include is None and cfg.exclude is None
            else cfg.excluded(Path(path))), None


def _too_large(size: int, limits: Limits) -> str | None:
    """Why a file of ``size`` bytes is left out, or None."""
    if size > limits.file_bytes:
        return (f"{size:,} bytes, over the map's limit of {limits.file_bytes:,} a file (set "
                f"{MAX_FILE_BYTES_ENV} to count it)")
    return None


def scan(root: Path, *, finder: ConfigFinder | None = None, limits: Limits | None = None,
         gitignore: bool = True) -> Iterator[Candidate | Skipped]:
    """The files of ``root``'s map, in the walk's sorted order, and a
    :class:`~livetok.server.walk.Skipped` for every entry left out (see the module's
    docstring); the last item is a Skipped of ``root`` when a limit stopped the scan.
    ``root`` is what the user named: mapped even when a ``.gitignore`` above it ignores it;
    ``gitignore=False`` reads no ``.gitignore`` (``--no-ignore``).

    Runtime complexity: as :func:`~livetok.server.walk.walk_stat` (one ``stat`` per file),
    plus the budget file's globs per file.
    """
    root = root.absolute()
    finder = finder if finder is not None else ConfigFinder()
    limits = limits if limits is not None else Limits.from_env()
    warned: set[Path] = set()
    folders: dict[str, BudgetConfig | None] = {}
    files = total = 0
    for item in walk_stat(root, boundary=root, ignored=True, gitignore=gitignore, named=True):
        if isinstance(item, Skipped):
            yield item
            continue
        path, st = item
        reason, warning = _config_reason(finder, path, warned, folders)
        if warning is not None:
            yield warning
        reason = reason or _too_large(st.st_size, limits)
        if reason is not None:
            yield Skipped(Path(path), reason)
            continue
        files += 1
        total += st.st_size
        if files > limits.files or total > limits.bytes:
            over = (f"more than {limits.files:,} files (set {MAX_FILES_ENV})"
                    if files > limits.files else
                    f"more than {limits.bytes:,} bytes of files (set {MAX_BYTES_ENV})")
            yield Skipped(root, f"the map stops here: {over}", True)
            return
        yield Candidate(path, st.st_size, st)


def why_left_out(path: Path, root: Path, *, finder: ConfigFinder | None = None,
                 limits: Limits | None = None, gitignore: bool = True) -> Candidate | str:
    """``path`` as :func:`scan` of ``root`` would give it, or why it would leave it out;
    found without walking (one changed file).

    Runtime complexity: ``O(depth)``, as :func:`~livetok.server.walk.why_not_walked`.
    """
    root = root.absolute()
    why = why_not_walked(path, root, gitignore=gitignore, named=True)
    if why is not None:
        return why
    reason, _warning = _config_reason(finder if finder is not None else ConfigFinder(),
                                      str(path.absolute()), set())
    if reason is not None:
        return reason
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    too_large = _too_large(st.st_size, limits if limits is not None else Limits.from_env())
    return Candidate(str(path.absolute()), st.st_size, st) if too_large is None else too_large
