"""The baseline (the ratchet): the recorded counts of spans already over budget, by file and
key, read (:func:`load_baseline`) and written (:func:`write_baseline`) as a JSON file beside
the budget file (``baseline = ".livetok-baseline.json"``, ``docs/budgets.md``). A span over
budget fails only when it grows past its recorded count.

The baseline comes with a repository, so it is untrusted input (``docs/security.md``): it is
read and written through :mod:`.trust`, inside the budget file's folder, never through a
symbolic link, and at most ``$LIVETOK_MAX_CONFIG_BYTES`` of it is read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Mapping

from livetok.server import trust
from livetok.server.budgets.config import ConfigError, ConfigProblem
from livetok.server.budgets.limits import shown
from livetok.server.budgets.verdicts import Verdict

__all__ = ["baseline_entries", "load_baseline", "write_baseline"]


def load_baseline(path: Path, root: Path | None = None) -> dict[str, dict[str, int]]:
    """The recorded counts of a baseline file, by file (relative to its folder) and key; an
    empty map when the file does not exist. Raises :class:`ConfigError` when it is unreadable,
    not a regular file, larger than ``$LIVETOK_MAX_CONFIG_BYTES``, or (``root`` given) outside
    ``root``.

    Runtime complexity: ``O(file size)``.
    """
    if not os.path.lexists(path):
        return {}
    try:
        raw = json.loads(trust.read_text(path, root=root, limit=trust.config_limit(),
                                         what="baseline"))
    except trust.UntrustedFile as exc:
        raise ConfigError([ConfigProblem(str(path), None, "",
                                         str(exc).split(": ", 1)[-1])]) from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError([ConfigProblem(str(path), None, "", f"not a livetok baseline "
                                         f"({shown(str(exc), 200)}); delete it or rewrite it "
                                         "with --update-baseline")]) from None
    files = raw.get("files") if isinstance(raw, dict) else None
    if not isinstance(files, dict) or not all(
        isinstance(v, dict) and all(isinstance(n, int) for n in v.values()) for v in files.values()
    ):
        raise ConfigError([ConfigProblem(str(path), None, "files", "not a livetok baseline "
                                         "(expected {\"files\": {path: {key: tokens}}}); "
                                         "rewrite it with --update-baseline")])
    return files


def write_baseline(path: Path, files: Mapping[str, Mapping[str, int]],
                   root: Path | None = None) -> None:
    """Write a baseline file (sorted, one key per line, so that its diffs read well), only
    inside ``root`` when given, never through a symbolic link and never over a file that is
    not a baseline (:func:`.trust.write_baseline_file`); raises :class:`ConfigError` saying why.

    Runtime complexity: ``O(entries log entries)``.
    """
    data = {"livetok-baseline": 1,
            "files": {f: dict(sorted(files[f].items())) for f in sorted(files) if files[f]}}
    try:
        trust.write_baseline_file(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                                  root=root)
    except (trust.UntrustedFile, OSError) as exc:
        message = str(exc).split(": ", 1)[-1] if isinstance(exc, trust.UntrustedFile) else (
            f"cannot write it: {exc.strerror or exc}")
        raise ConfigError([ConfigProblem(str(path), None, "", message)]) from None


def baseline_entries(verdicts: Iterable[Verdict]) -> dict[str, int]:
    """The baseline entries a file's verdicts record: the count of each span over budget."""
    return {v.key: v.tokens for v in verdicts if v.over}
