"""Budget files on disk: reading one (:func:`read_config_text`, :func:`load_config`) and
finding the one that governs a file (:class:`ConfigFinder`).

The budget file is ``livetok.toml`` or a ``pyproject.toml`` with ``[tool.livetok]``
(:data:`CONFIG_NAMES`), found by walking up from a file's folder; the closest one wins and is
not merged with others (as ruff and black find theirs). It is read through :mod:`.trust` (a
regular file inside its folder, bounded: ``docs/security.md``) and parsed by
:func:`.config.parse_config`.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from livetok.server import trust
from livetok.server.budgets.config import BudgetConfig, ConfigError, ConfigProblem, parse_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["CONFIG_NAMES", "ConfigFinder", "load_config", "read_config_text"]

#: file names of a budget file, in the order they win when both are in one folder
CONFIG_NAMES = ("livetok.toml", "pyproject.toml")


def read_config_text(path: Path) -> str:
    """The text of the budget file ``path``: a regular file inside its own folder (a link to
    a file elsewhere is refused), at most ``$LIVETOK_MAX_CONFIG_BYTES``; else
    :class:`ConfigError`.

    Runtime complexity: ``O(min(file size, limit))``.
    """
    try:
        return trust.read_text(path, root=path.parent, limit=trust.config_limit(),
                               what="budget file")
    except trust.UntrustedFile as exc:
        raise ConfigError([ConfigProblem(str(path), None, "", str(exc).split(": ", 1)[-1])]
                          ) from None


def load_config(path: Path, *, trust_tokenizers: bool = False) -> BudgetConfig:
    """Read and parse the budget file at ``path`` (see :func:`read_config_text` and
    :func:`parse_config`).

    Runtime complexity: ``O(file size)``.
    """
    return parse_config(read_config_text(path), path, trust_tokenizers=trust_tokenizers)


def _declares_livetok(pyproject: Path) -> bool:
    """Whether a ``pyproject.toml`` has a ``[tool.livetok]`` table (others are skipped; one
    that cannot be read is taken as ours, so that :func:`load_config` reports why)."""
    try:
        text = read_config_text(pyproject)
    except ConfigError:
        return True
    if "livetok" not in text:  # cheap test first: most pyproject.toml files are not ours
        return False
    try:
        tool = tomllib.loads(text).get("tool", {})
        return isinstance(tool, dict) and "livetok" in tool
    except (tomllib.TOMLDecodeError, RecursionError, MemoryError):
        return bool(re.search(r"^\s*\[\[?\s*tool\.livetok\b", text, re.M))


class ConfigFinder:
    """Finds the budget file that governs a path, walking up from its folder; caches per
    folder and per file, so a thousand files in a few folders cost a few lookups.

    Runtime complexity: ``O(depth)`` file tests for a new folder, ``O(1)`` afterwards.
    """

    def __init__(self, *, trust_tokenizers: bool = False) -> None:
        #: whether the budget files' tokenizer.json paths may be loaded (:func:`parse_config`)
        self.trust_tokenizers = trust_tokenizers
        self._by_dir: dict[Path, Path | None] = {}
        self._parsed: dict[Path, BudgetConfig | ConfigError] = {}

    def config_path(self, folder: Path) -> Path | None:
        """The budget file for files in ``folder`` (an absolute path), or None."""
        trail: list[Path] = []
        found: Path | None = None
        d: Path | None = folder
        while d is not None:
            if d in self._by_dir:
                found = self._by_dir[d]
                break
            trail.append(d)
            for name in CONFIG_NAMES:
                p = d / name
                # subtle: lexists, not is_file: a FIFO or a link to a device is a budget file
                # that load_config refuses with a message, not one silently passed over
                if os.path.lexists(p) and not p.is_dir() and (
                        name != "pyproject.toml" or _declares_livetok(p)):
                    found = p
                    break
            if found is not None:
                break
            d = d.parent if d.parent != d else None
        for t in trail:
            self._by_dir[t] = found
        return found

    def config_for(self, path: Path) -> BudgetConfig | None:
        """The parsed budget file for ``path``; raises :class:`ConfigError` if it is invalid."""
        cfg_path = self.config_path(path.absolute().parent)
        if cfg_path is None:
            return None
        cfg = self._parsed.get(cfg_path)
        if cfg is None:
            try:
                cfg = load_config(cfg_path, trust_tokenizers=self.trust_tokenizers)
            except ConfigError as exc:
                cfg = exc
            self._parsed[cfg_path] = cfg
        if isinstance(cfg, ConfigError):
            raise cfg
        return cfg

    def clear(self) -> None:
        """Forget everything (a budget file appeared, changed or went away)."""
        self._by_dir.clear()
        self._parsed.clear()
