"""The workspace's budget files, as the language server sees them (``docs/budgets.md``).

The verdicts come from :func:`.budgets.check_text`, the function ``livetok check`` runs, with
counts from the open document: ``Document.token_count`` and ``Document.count_range`` when a
budget's encoding is the document's (it is, for the files a rule covers: the server opens
them in the rule's encoding), else an encode of the span. So the editor shows the same
verdicts with the same messages as the command line, live.

What the server shows:

- a diagnostic from the first token past a file's or a section's budget to its end, with the
  message ``livetok check`` prints (a span over budget but within its baseline: information);
- the section's code lens reads ``n / budget tokens in this section``;
- diagnostics on the budget file itself (unknown keys, bad values): from the editor's text
  when it is open, from the disk when it changes;
- a rule's ``total`` and ``total_cost`` over budget: a diagnostic on the key's line of the
  budget file (and a code lens there, within budget or not), from
  :func:`.budgets.total_verdicts`, the function ``livetok check`` runs, with the same counts:
  the files of the set as a walk of the budget file's folder reaches them, read from disk
  through :mod:`.trust` (bounded, inside that folder), an open document's live count in place
  of its file's.

One concept: the budget files as one editor session sees them, with the caches that keep a
keystroke from reading them (found configs, verdicts by version, sets of totals with their
live and disk counts); what is computed comes from the pure ``budgets`` package, and what is
left here is which cache each event (an edit, a save, a watched-file change, a close) renews.

Budget files are re-read when the client reports a change (``workspace/didChangeWatchedFiles``,
registered dynamically when the client can, see :meth:`BudgetWatch.registration`) or when one
is opened or saved in the editor. Nothing here runs in a worker thread.

A set (the files of a budget file's totals) is walked and read when a document it governs or
the budget file is first checked, and again when a budget file or a baseline changes or a
document that is not yet in a set is saved; files are read again only when their size or
modification time changed. A keystroke in a document of a set reads nothing: its live count
replaces its file's and the totals are summed again, ``O(files of the set)`` additions
(``docs/budgets.md`` has the measurement).
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from lsprotocol import types

from livetok.incremental import get_encoding
from livetok.incremental.env_limits import size_limit

from livetok.server import trust
from livetok.server.budgets.baseline import load_baseline
from livetok.server.budgets.config import (
    DEFAULT_BASELINE,
    BudgetConfig,
    BudgetRule,
    ConfigError,
    ConfigProblem,
    parse_config,
)
from livetok.server.budgets.discovery import CONFIG_NAMES, ConfigFinder, load_config
from livetok.server.budgets.frontmatter import MARKDOWN_SUFFIXES
from livetok.server.budgets.limits import MAX_CHECK_BYTES_ENV, check_bytes_limit
from livetok.server.budgets.money import money
from livetok.server.budgets.verdicts import Verdict, budget_for, check_text, total_verdicts
from livetok.server.lsp.documents import OpenDocument
from livetok.server.lsp.uris import local_path
from livetok.server.lsp.views import Lens, budget_overflow
from livetok.server.walk import walk

log = logging.getLogger(__name__)

__all__ = ["BudgetWatch", "first_past"]

#: what the client is asked to watch: the budget files and the ratchet's default file
WATCHED_GLOBS = (*(f"**/{name}" for name in CONFIG_NAMES), f"**/{DEFAULT_BASELINE}")
_REGISTRATION_ID = "livetok/budgetFiles"
#: how much of a Markdown document is read to see whether it starts with front matter
_FRONT_MATTER_MAX_CP = 8
#: a set is summed in the editor only when the walk of its budget file's folder meets at most
#: this many files and its files hold at most this many bytes in all: a repository's
#: ``files = ["**"]`` must not make the server read gigabytes (``livetok check`` still sums it)
SET_FILES_ENV = "LIVETOK_MAX_SET_FILES"
_SET_FILES = 20_000
SET_BYTES_ENV = "LIVETOK_MAX_SET_BYTES"
_SET_BYTES = 16 << 20
Publish = Callable[[str, list[types.Diagnostic]], None]


def path_of(uri: str) -> Path | None:
    """The local path of a ``file:`` URI, else None (also for a path no file can have: too
    long, a NUL; ``uris.local_path``, which the stdio front calls too)."""
    return local_path(uri)


def first_past(count: Callable[[int, int], int], start_cp: int, end_cp: int, budget: int) -> int:
    """Where the first token past ``budget`` starts in ``[start_cp, end_cp)``, given
    ``count(start_cp, x)``: the last code point of the shortest prefix counting more than
    ``budget`` tokens (a binary search; a prefix's count only grows with it, up to a token
    merging across its end).

    >>> first_past(lambda s, e: (e - s + 2) // 3, 0, 30, 4)  # 3-letter tokens: the 5th at 12
    12

    Runtime complexity: ``O(log(end_cp - start_cp))`` calls of ``count``.
    """
    lo, hi = start_cp + 1, end_cp
    while lo < hi:
        mid = (lo + hi) // 2
        if count(start_cp, mid) > budget:
            hi = mid
        else:
            lo = mid + 1
    return lo - 1


class _DocCounter:
    """Counts spans of an open document: in its own encoding through the live ``Document``,
    in another by encoding the span."""

    def __init__(self, od: OpenDocument, text: str) -> None:
        self.doc = od.ready()
        self.text = text

    def __call__(self, encoding: str, start_cp: int, end_cp: int) -> int:
        enc = get_encoding(encoding)
        if enc is self.doc.encoding:
            if start_cp == 0 and end_cp == self.doc.length:
                return int(self.doc.token_count)
            return int(self.doc.count_range(start_cp, end_cp))
        return len(enc.encode(self.text[start_cp:end_cp]))


@dataclass
class _Set:
    """The files of one budget file's totals (its rules with ``total`` or ``total_cost``), as
    a walk of its folder found them, with their counts on disk and the verdicts last made."""

    config: BudgetConfig
    #: each file of a set (absolute) and the rules whose set it is in
    members: dict[Path, tuple[BudgetRule, ...]] = field(default_factory=dict)
    #: each member's path relative to the budget file's folder (made once: a keystroke sums)
    labels: dict[Path, str] = field(default_factory=dict)
    #: each member's count on disk per encoding (absent: it could not be read)
    disk: dict[Path, dict[str, int]] = field(default_factory=dict)
    #: what :func:`.budgets.total_verdicts` sums: per rule, each member's count (live or disk)
    counts: dict[int, dict[str, int]] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    #: why the set is not summed in the editor (over a limit), or ""
    too_big: str = ""


class BudgetWatch:
    """Budget files found for the open documents, their verdicts, and their diagnostics.

    ``publish(uri, diagnostics)`` sends diagnostics for a budget file read from disk.
    """

    def __init__(self, publish: Publish | None = None) -> None:
        self.finder = ConfigFinder()
        self._publish = publish
        #: the client registers file watchers for us (else: re-read on didOpen/didSave)
        self.dynamic = False
        #: per URI: the version checked and its verdicts and problems (None: no budget)
        self._cache: dict[str, tuple[int, tuple[list[Verdict], list[ConfigProblem]] | None]] = {}
        self._baselines: dict[Path, dict[str, dict[str, int]]] = {}
        #: budget files whose problems were published from disk
        self._flagged: set[Path] = set()
        #: the sets of the budget files with totals, by budget file
        self._sets: dict[Path, _Set] = {}
        #: the live counts of open documents, by path and encoding (they replace the disk's)
        self._live: dict[Path, dict[str, int]] = {}
        #: counts of files on disk: (path, encoding) -> (mtime_ns, size, tokens)
        self._disk: dict[tuple[Path, str], tuple[int, int, int]] = {}
        #: budget files open in the editor whose text has problems (their totals are not shown)
        self._open_broken: set[Path] = set()
        #: budget files whose totals' diagnostics were published
        self._totals_shown: set[Path] = set()
        #: saved files a set's rules match that its walk did not reach (see _join_sets)
        self._outside: set[Path] = set()
        #: per URI: whether a budget file can cover it (:meth:`may_cover`), decided once and
        #: forgotten with what was read (a budget file changed, the trust setting, a close)
        self._covers: dict[str, bool] = {}

    @property
    def trust_tokenizers(self) -> bool:
        """Whether the tokenizer.json files budget files name are loaded (the setting
        ``livetok.trustWorkspaceTokenizers``); changing it forgets what was read."""
        return self.finder.trust_tokenizers

    @trust_tokenizers.setter
    def trust_tokenizers(self, value: bool) -> None:
        if value != self.finder.trust_tokenizers:
            self.finder = ConfigFinder(trust_tokenizers=value)
            self._cache.clear()
            self._covers.clear()
            self._baselines.clear()
            self._sets.clear()

    # -- watching ------------------------------------------------------------------------------

    def initialize(self, caps: types.ClientCapabilities) -> None:
        """Note whether the client can watch files for us (from ``initialize``)."""
        ws = caps.workspace
        watched = ws.did_change_watched_files if ws else None
        self.dynamic = bool(watched and watched.dynamic_registration)

    def registration(self) -> types.RegistrationParams:
        """The ``client/registerCapability`` params that ask the client to report changes of
        budget files (send after ``initialized`` when :attr:`dynamic`)."""
        watchers = [types.FileSystemWatcher(glob_pattern=g) for g in WATCHED_GLOBS]
        return types.RegistrationParams(registrations=[types.Registration(
            id=_REGISTRATION_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))])

    def is_budget_file(self, uri: str) -> bool:
        path = path_of(uri)
        return path is not None and (path.name in CONFIG_NAMES or path.name == DEFAULT_BASELINE
                                     or path in self._baselines)

    def changed(self, uris: Sequence[str]) -> bool:
        """Forget what was read if any of ``uris`` is a budget or baseline file (and publish
        the problems of the budget files among them, or their totals, the sets walked again);
        True when the documents' verdicts must be computed again. A saved document that a
        set's rules match but its walk did not find (a new file) has its set walked again.

        Runtime complexity: ``O(1)`` per URI, plus reading each changed budget file and
        walking the sets again (files read again only when they changed on disk).
        """
        relevant = [u for u in uris if self.is_budget_file(u)]
        if not relevant:
            self._join_sets(uris)
            return False
        self.finder.clear()
        self._cache.clear()
        self._covers.clear()
        self._baselines.clear()
        self._outside.clear()
        again = set(self._sets)
        self._sets.clear()
        for uri in relevant:
            path = path_of(uri)
            if path is not None and path.name in CONFIG_NAMES:
                self._publish_disk_problems(path)
                again.add(path)
        for path in sorted(again):
            self._publish_totals(path)
        return True

    def _join_sets(self, uris: Sequence[str]) -> None:
        """Walk again the sets whose rules match a saved file they do not hold yet (once per
        file: one the walk does not reach, such as an ignored one, is remembered)."""
        for uri in uris:
            path = path_of(uri)
            if path is None or path in self._outside:
                continue
            for cfg_path, st in list(self._sets.items()):
                if path not in st.members and st.config.totals_for(path):
                    del self._sets[cfg_path]
                    self._publish_totals(cfg_path)
                    if path not in self._sets.get(cfg_path, st).members:
                        self._outside.add(path)

    def _publish_disk_problems(self, path: Path,
                               known: list[ConfigProblem] | None = None) -> None:
        """Publish the problems of the budget file ``path`` as read from disk (``known``:
        already read, so a big bad file is not parsed twice)."""
        problems: list[ConfigProblem] = known or []
        if known is None and os.path.lexists(path):
            try:
                load_config(path, trust_tokenizers=self.trust_tokenizers)
            except ConfigError as exc:
                problems = exc.problems
        self._publish_tracked(path, [_problem_diagnostic(p) for p in problems], self._flagged)

    def _publish_tracked(self, path: Path, diagnostics: list[types.Diagnostic],
                         shown: set[Path]) -> None:
        """Publish ``diagnostics`` for the budget file ``path``, unless there are none and
        none were published before; ``shown`` holds the files that have some."""
        if not diagnostics and path not in shown:
            return
        if diagnostics:
            shown.add(path)
        else:
            shown.discard(path)
        if self._publish is not None:
            self._publish(path.as_uri(), diagnostics)

    # -- per document --------------------------------------------------------------------------

    def _config(self, path: Path) -> BudgetConfig | None:
        try:
            return self.finder.config_for(path)
        except ConfigError as exc:
            cfg_path = Path(exc.problems[0].path) if exc.problems else None
            if cfg_path is not None and cfg_path not in self._flagged and os.path.lexists(cfg_path):
                self._publish_disk_problems(cfg_path, exc.problems)
            raise

    def encoding_for(self, uri: str) -> str | None:
        """The encoding the budget file's rules give ``uri``, or None (then the settings
        decide). Front matter is not read here: it sets budgets, not encodings.

        Runtime complexity: ``O(total globs)`` once the budget file is found.
        """
        path = path_of(uri)
        if path is None or path.name in CONFIG_NAMES:
            return None
        try:
            cfg = self._config(path)
        except ConfigError:
            return None
        budget = cfg.rule_budget(path) if cfg is not None else None
        return budget.encoding if budget is not None else None

    def check(self, od: OpenDocument) -> tuple[list[Verdict], list[ConfigProblem]] | None:
        """The verdicts of ``od`` (cached per version), the problems that kept it from being
        checked, or None when no budget applies to it.

        Runtime complexity: as :func:`.budgets.check_text` with the document's counts:
        ``O(n)`` to find the sections, then ``Document.count_range`` per section.
        """
        path = path_of(od.uri)
        if path is None:
            return None
        hit = self._cache.get(od.uri)
        if hit is not None and hit[0] == od.version:
            return hit[1]
        result = self._check(od, path)
        self._cache[od.uri] = (od.version, result)
        return result

    def _check(self, od: OpenDocument, path: Path
               ) -> tuple[list[Verdict], list[ConfigProblem]] | None:
        try:
            cfg = self._config(path)
            if not self._may_have_budget(od, path, cfg):
                return None  # the common case, decided without reading the whole text
            text = od.text()
            if budget_for(path, text, cfg) is None:
                return None
            return check_text(path, text, cfg, label=path.name, counter=_DocCounter(od, text),
                              baseline=self._baseline(cfg, path)), []
        except ConfigError as exc:
            return [], exc.problems

    @staticmethod
    def _may_have_budget(od: OpenDocument, path: Path, cfg: BudgetConfig | None) -> bool:
        """False when no rule gives ``od`` a budget and it has no front matter that could:
        keeps each flush of an uncovered document ``O(1)`` in its length."""
        rule = cfg.rule_budget(path) if cfg is not None else None
        if rule is not None and not rule.empty:
            return True
        if path.suffix.lower() not in MARKDOWN_SUFFIXES:
            return False
        return od.read(0, min(od.length, _FRONT_MATTER_MAX_CP)).startswith(("---", "\ufeff---"))

    def _baseline(self, cfg: BudgetConfig | None, path: Path) -> dict[str, int] | None:
        if cfg is None:
            return None
        bfile = cfg.baseline_path
        if bfile not in self._baselines:
            try:
                self._baselines[bfile] = load_baseline(bfile, cfg.root)
            except ConfigError:
                self._baselines[bfile] = {}
                raise
        try:
            key = path.relative_to(bfile.parent).as_posix()
        except ValueError:
            return None
        return self._baselines[bfile].get(key)

    def forget(self, uri: str) -> None:
        """Drop what is cached for a closed document; a document of a set counts as its file
        on disk again (read again if it changed).

        Runtime complexity: ``O(1)``, plus reading the file and summing its sets again when
        it is in one.
        """
        self._cache.pop(uri, None)
        self._covers.pop(uri, None)
        path = path_of(uri)
        if path is None:
            return
        self._open_broken.discard(path)
        if self._live.pop(path, None) is None:
            return
        for st in list(self._sets.values()):
            if path in st.members:
                st.disk[path] = self._disk_counts(st, path)
                self._place(st, path)
                self._refresh(st)

    # -- totals --------------------------------------------------------------------------------

    def _set(self, cfg: BudgetConfig) -> _Set:
        """The set of ``cfg``'s totals, walked and read the first time it is needed.

        Runtime complexity: ``O(files + folders)`` under the budget file's folder, plus reading
        and counting each file of the set that changed since it was last read.
        """
        st = self._sets.get(cfg.path)
        if st is not None:
            return st
        st = _Set(cfg, counts={r.index: {} for r in cfg.total_rules})
        max_files = size_limit(SET_FILES_ENV, _SET_FILES, "files")
        max_bytes = size_limit(SET_BYTES_ENV, _SET_BYTES)
        walked = size = 0
        for item in walk(cfg.root, boundary=cfg.root):
            if not isinstance(item, Path):
                continue  # passed over: livetok check warns of it and counts it neither
            walked += 1
            if walked > max_files:
                st.too_big = (f"the folder of {cfg.path.name} holds more than {max_files:,} "
                              f"files (set {SET_FILES_ENV} to walk more)")
                break
            # a file below a nested budget file belongs to that one's sets
            if self.finder.config_path(item.parent) != cfg.path:
                continue
            rules = cfg.totals_for(item)
            if rules:
                with contextlib.suppress(OSError):
                    size += os.stat(item).st_size
                if size > max_bytes:
                    st.too_big = (f"its files hold more than {max_bytes:,} bytes (set "
                                  f"{SET_BYTES_ENV} to read more)")
                    break
                st.members[item] = rules
                st.labels[item] = cfg.relative(item) or str(item)
                st.disk[item] = self._disk_counts(st, item)
                self._place(st, item)
        if st.too_big:  # nothing summed: the budget file says why
            st.members.clear()
            st.labels.clear()
            st.disk.clear()
            st.counts.clear()
        else:
            st.verdicts = self._set_verdicts(st)
        self._sets[cfg.path] = st
        return st

    def _disk_counts(self, st: _Set, path: Path) -> dict[str, int]:
        """A member's counts on disk in the encodings of its sets: read (bounded, inside the
        budget file's folder) only when its size or modification time changed."""
        out: dict[str, int] = {}
        for enc in sorted({st.config.rule_encoding(r) for r in st.members[path]}):
            try:
                info = os.stat(path)
            except OSError:
                continue
            hit = self._disk.get((path, enc))
            if hit is not None and hit[:2] == (info.st_mtime_ns, info.st_size):
                out[enc] = hit[2]
                continue
            try:
                text = trust.read_text(path, root=st.config.root, limit=check_bytes_limit(),
                                       what="file to count", env=MAX_CHECK_BYTES_ENV)
            except trust.UntrustedFile as exc:
                log.info("not counted in a total: %s", exc)
                continue
            n = len(get_encoding(enc).encode(text))
            self._disk[(path, enc)] = (info.st_mtime_ns, info.st_size, n)
            out[enc] = n
        return out

    def _place(self, st: _Set, path: Path) -> None:
        """Put a member's count in the set's sums: its live count where it is open, else its
        disk's (neither: it is left out, as ``livetok check`` leaves out a file it skips)."""
        have = self._live.get(path) or st.disk.get(path, {})
        for r in st.members[path]:
            n = have.get(st.config.rule_encoding(r))
            if n is None:
                st.counts[r.index].pop(st.labels[path], None)
            else:
                st.counts[r.index][st.labels[path]] = n

    def _set_verdicts(self, st: _Set) -> list[Verdict]:
        """The totals' verdicts, from the counts :meth:`_place` keeps.

        Runtime complexity: ``O(f log f)`` for ``f`` files, no file read.
        """
        try:
            baseline = self._baseline(st.config, st.config.path)
        except ConfigError:
            baseline = None
        return total_verdicts(st.config, st.counts, label=st.config.path.name, baseline=baseline)

    def _refresh(self, st: _Set) -> None:
        """Sum the set again; publish its budget file's diagnostics when a verdict changed."""
        verdicts = self._set_verdicts(st)
        if verdicts != st.verdicts:
            st.verdicts = verdicts
            self._publish_totals(st.config.path)

    def _note_live(self, od: OpenDocument, path: Path) -> None:
        """A keystroke's part in the totals: an open document of a set gives its live count.

        Runtime complexity: ``O(total globs)`` to find its sets; when it is in one, ``O(1)``
        for its count in its own encoding (else an encode of its text), then :meth:`_refresh`.
        """
        try:
            cfg = self._config(path)
        except ConfigError:
            return
        if cfg is None or not cfg.totals_for(path):
            return
        new = cfg.path not in self._sets
        st = self._set(cfg)
        if new:  # the budget file may not be open: its totals are shown from here
            self._publish_totals(cfg.path)
        rules = st.members.get(path)
        if not rules:
            return  # not found by the walk (ignored, or new): livetok check counts it neither
        counts = {enc: _live_count(od, enc) for enc in {cfg.rule_encoding(r) for r in rules}}
        if self._live.get(path) != counts:
            self._live[path] = counts
            self._place(st, path)
            self._refresh(st)

    def _total_set(self, path: Path) -> _Set | None:
        """The set of the budget file ``path``, if it is valid, governs its own folder and has
        totals."""
        if path in self._open_broken or path in self._flagged:
            return None
        try:
            cfg = self._config(path)
        except ConfigError:
            return None
        if cfg is None or cfg.path != path or not cfg.total_rules:
            return None
        return self._set(cfg)

    def _total_diagnostics(self, path: Path) -> list[types.Diagnostic]:
        """The diagnostics of the budget file ``path``'s totals: those over budget, or why
        its totals are not summed in the editor."""
        st = self._total_set(path)
        if st is None:
            return []
        if st.too_big:
            return [_line_diagnostic(
                line, f'total "budget #{r.index}" is not summed in the editor: {st.too_big}; '
                "livetok check sums it", types.DiagnosticSeverity.Information)
                for r in st.config.total_rules for _key, line in sorted(r.lines.items())]
        return [_line_diagnostic(v.line, v.message, types.DiagnosticSeverity.Warning if v.fails
                                 else types.DiagnosticSeverity.Information)
                for v in st.verdicts if v.over]

    def _publish_totals(self, path: Path) -> None:
        """Publish the totals' diagnostics of the budget file ``path`` (none: clear those
        published before), unless its problems are what it shows."""
        if path in self._open_broken or path in self._flagged:
            return
        self._publish_tracked(path, self._total_diagnostics(path), self._totals_shown)

    def may_cover(self, uri: str) -> bool:
        """Whether a budget file can give ``uri`` diagnostics: it is one, a rule or a set of
        totals names it, it is Markdown (front matter), or its budget file has problems.
        False for most documents, whose keystrokes then check no budget file.

        Runtime complexity: ``O(1)`` once decided; the first time, finding the budget file.
        """
        covers = self._covers.get(uri)
        if covers is None:
            covers = self._covers[uri] = self._decide_cover(uri)
        return covers

    def _decide_cover(self, uri: str) -> bool:
        path = path_of(uri)
        if path is None:
            return False
        if path.name in CONFIG_NAMES or path.suffix.lower() in MARKDOWN_SUFFIXES:
            return True
        try:
            cfg = self.finder.config_for(path)
        except ConfigError:
            return True  # its problems are shown
        if cfg is None:
            return False
        rule = cfg.rule_budget(path)
        return (rule is not None and not rule.empty) or bool(cfg.totals_for(path))

    def diagnostics(self, od: OpenDocument, setting_budget: int | None) -> list[types.Diagnostic]:
        """The budget diagnostics of ``od``: a budget file's verdicts where one applies, else
        the ``livetok.budget`` setting's; the problems of a budget file open in the editor.

        Runtime complexity: :meth:`check`, plus ``O(log n)`` counts per span over budget.
        """
        path = path_of(od.uri)
        if path is not None and path.name in CONFIG_NAMES:
            try:
                parse_config(od.text(), path, trust_tokenizers=self.trust_tokenizers)
            except ConfigError as exc:
                self._open_broken.add(path)
                return [_problem_diagnostic(p) for p in exc.problems]
            self._open_broken.discard(path)
            return self._total_diagnostics(path)
        if path is not None:
            self._note_live(od, path)
        result = self.check(od)
        if result is None:
            return _setting_diagnostics(od, setting_budget)
        verdicts, problems = result
        out = []
        for p in problems:
            if p.key.startswith("front matter"):  # in this document
                out.append(_problem_diagnostic(p))
            else:  # in its budget file, which gets its own diagnostics
                out.append(_problem_diagnostic(ConfigProblem(
                    p.path, 1, p.key, f"the budget file has errors, so no budget is checked: "
                    f"{p}"), types.DiagnosticSeverity.Warning))
        over = [v for v in verdicts if v.over]
        if over:
            counter = _DocCounter(od, od.text())
            out.extend(self._verdict_diagnostic(od, v, counter) for v in over)
        return out

    def _verdict_diagnostic(self, od: OpenDocument, v: Verdict,
                            counter: _DocCounter) -> types.Diagnostic:
        enc = get_encoding(v.encoding)
        if v.kind in ("file", "file_cost") and enc is counter.doc.encoding:
            over = budget_overflow(od, v.budget)  # the exact first token, from the live tokens
            start_cp = over.start_cp if over is not None else 0
        else:
            start_cp = first_past(lambda s, e: counter(v.encoding, s, e), v.start_cp, v.end_cp,
                                  v.budget)
        start, end = od.to_position(start_cp), od.to_position(v.end_cp)
        return types.Diagnostic(
            range=types.Range(start=types.Position(*start), end=types.Position(*end)),
            message=v.message, source="livetok", code="token-budget",
            severity=types.DiagnosticSeverity.Warning if v.fails
            else types.DiagnosticSeverity.Information)

    def lenses(self, od: OpenDocument, lenses: list[Lens]) -> list[Lens]:
        """``lenses`` with the budgets written in: ``n / budget`` on the document's lens (and
        its cost against ``max_cost``), on each budgeted section's (added where the editor shows
        none, as in a file the editor does not treat as Markdown) and a lens per retrieval
        chunk; in a budget file, a lens per ``total`` and ``total_cost`` on its key's line.

        Runtime complexity: ``O(lenses + verdicts)`` after :meth:`check`.
        """
        path = path_of(od.uri)
        if path is not None and path.name in CONFIG_NAMES:
            st = self._total_set(path)
            verdicts = st.verdicts if st is not None else []
        else:
            result = self.check(od)
            verdicts = result[0] if result else []
        if not verdicts:
            return lenses
        by_line = {lens.line: i for i, lens in enumerate(lenses)}
        out = list(lenses)
        for v in verdicts:
            mark = " (over budget)" if v.over else ""
            cost = v.cost
            if v.cost_budget is not None and cost is not None:
                title = f"{money(cost)} / {money(v.cost_budget, v.currency)}"
            else:
                title = f"{v.tokens:,} / {v.budget:,} tokens"
            if v.kind in ("file", "file_cost"):
                title += mark
                out[0] = Lens(0, f"{out[0].title} · {title}") if out else Lens(0, title)
                continue
            line = v.line - 1
            what = {"section": " in this section", "chunk": " in this chunk"}.get(
                v.kind, f" in {v.files or 0:,} file" + ("" if v.files == 1 else "s"))
            title = f"{title}{what}{mark}"
            i = by_line.get(line)
            if i is None:
                by_line[line] = len(out)
                out.append(Lens(line, title))
            elif v.kind == "section":
                out[i] = Lens(line, title)
            else:
                out[i] = Lens(line, f"{out[i].title} · {title}")
        return sorted(out, key=lambda lens: lens.line)


def _problem_diagnostic(p: ConfigProblem, severity: types.DiagnosticSeverity =
                        types.DiagnosticSeverity.Error) -> types.Diagnostic:
    """A diagnostic over the problem's line (the whole line: its column is not known)."""
    return _line_diagnostic(p.line or 1, p.message, severity, "budget-config")


def _line_diagnostic(line: int, message: str, severity: types.DiagnosticSeverity,
                     code: str = "token-budget") -> types.Diagnostic:
    """A diagnostic over the whole of the 1-based ``line`` of a budget file (a problem's, or
    a total's key)."""
    at = max(0, line - 1)
    return types.Diagnostic(
        range=types.Range(start=types.Position(at, 0), end=types.Position(at + 1, 0)),
        message=message, source="livetok", code=code, severity=severity)


def _live_count(od: OpenDocument, encoding: str) -> int:
    """An open document's count in ``encoding``: ``O(1)`` in its own, else an encode."""
    doc = od.ready()
    enc = get_encoding(encoding)
    if enc is doc.encoding:
        return int(doc.token_count)
    return len(enc.encode(od.text()))


def _setting_diagnostics(od: OpenDocument, budget: int | None) -> list[types.Diagnostic]:
    """The ``livetok.budget`` setting's diagnostic (a document no budget file covers)."""
    over = budget_overflow(od, budget)
    if over is None:
        return []
    start, end = od.to_position(over.start_cp), od.to_position(od.length)
    return [types.Diagnostic(
        range=types.Range(start=types.Position(*start), end=types.Position(*end)),
        message=over.message, severity=types.DiagnosticSeverity.Warning, source="livetok",
        code="token-budget")]
