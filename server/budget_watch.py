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
  when it is open, from the disk when it changes.

Budget files are re-read when the client reports a change (``workspace/didChangeWatchedFiles``,
registered dynamically when the client can, see :meth:`BudgetWatch.registration`) or when one
is opened or saved in the editor. Nothing here runs in a worker thread.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import unquote, urlparse

from lsprotocol import types

from livetok.incremental import get_encoding

from .budgets import (
    CONFIG_NAMES,
    DEFAULT_BASELINE,
    MARKDOWN_SUFFIXES,
    BudgetConfig,
    ConfigError,
    ConfigFinder,
    ConfigProblem,
    Verdict,
    budget_for,
    check_text,
    load_baseline,
    load_config,
    parse_config,
)
from .documents import OpenDocument
from .features import Lens, budget_overflow

__all__ = ["BudgetWatch", "first_past"]

#: what the client is asked to watch: the budget files and the ratchet's default file
WATCHED_GLOBS = (*(f"**/{name}" for name in CONFIG_NAMES), f"**/{DEFAULT_BASELINE}")
_REGISTRATION_ID = "livetok/budgetFiles"
#: how much of a Markdown document is read to see whether it starts with front matter
_FRONT_MATTER_MAX_CP = 8
Publish = Callable[[str, list[types.Diagnostic]], None]


def path_of(uri: str) -> Path | None:
    """The local path of a ``file:`` URI, else None."""
    u = urlparse(uri)
    return Path(unquote(u.path)) if u.scheme == "file" else None


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
            self._baselines.clear()

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
        the problems of the budget files among them); True when the documents' verdicts
        must be computed again.

        Runtime complexity: ``O(1)`` per URI, plus reading each changed budget file.
        """
        relevant = [u for u in uris if self.is_budget_file(u)]
        if not relevant:
            return False
        self.finder.clear()
        self._cache.clear()
        self._baselines.clear()
        for uri in relevant:
            path = path_of(uri)
            if path is not None and path.name in CONFIG_NAMES:
                self._publish_disk_problems(path)
        return True

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
        if not problems and path not in self._flagged:
            return
        if problems:
            self._flagged.add(path)
        else:
            self._flagged.discard(path)
        if self._publish is not None:
            self._publish(path.as_uri(), [_problem_diagnostic(p) for p in problems])

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
        """Drop what is cached for a closed document."""
        self._cache.pop(uri, None)

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
                return [_problem_diagnostic(p) for p in exc.problems]
            return []
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
        if v.kind == "file" and enc is counter.doc.encoding:
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
        """``lenses`` with the budgets written in: ``n / budget`` on the document's lens, on
        each budgeted section's (added where the editor shows none, as in a file the editor does
        not treat as Markdown) and a lens per retrieval chunk.

        Runtime complexity: ``O(lenses + verdicts)`` after :meth:`check`.
        """
        result = self.check(od)
        if not result or not result[0]:
            return lenses
        by_line = {lens.line: i for i, lens in enumerate(lenses)}
        out = list(lenses)
        for v in result[0]:
            mark = " (over budget)" if v.over else ""
            if v.kind == "file":
                title = f"{v.tokens:,} / {v.budget:,} tokens{mark}"
                out[0] = Lens(0, f"{out[0].title} · {title}") if out else Lens(0, title)
                continue
            line = v.line - 1
            what = "tokens in this section" if v.kind == "section" else "tokens in this chunk"
            title = f"{v.tokens:,} / {v.budget:,} {what}{mark}"
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
    line = max(0, (p.line or 1) - 1)
    return types.Diagnostic(
        range=types.Range(start=types.Position(line, 0), end=types.Position(line + 1, 0)),
        message=p.message, source="livetok", code="budget-config", severity=severity)


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
