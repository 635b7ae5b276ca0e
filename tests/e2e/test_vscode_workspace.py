"""The workspace token map in a real VS Code (issue 29 part 2): code-server driven by Chromium,
as in ``test_editor_vscode.py`` (its ``Workbench``: the packaged ``.vsix``, the user's
settings naming the server; ``test_vscode_install.session``: the page, nothing fetched from
outside), on a small generated workspace.

What it checks:

- issue 37 item 9: the **Tokens** view is on screen without the user looking for it (its
  own side-bar container, opened on the first start; the explorer kept it collapsed at its
  bottom), and its first row is the workspace's total, the sum of the rows below it;
- the view shows the tree: the workspace folder's entries, each with
  its count and its share of the context window (``N tokens · P%``), every count tiktoken's
  count of the file (folders: the sum of their files), largest first; a folder opens onto its
  entries; what the ``.gitignore`` leaves out is absent;
- the status bar's tooltip, with a file of ``src/`` open, gives the total of its folder from
  the map (``folder workspace/src/: N o200k_base tokens in 2 files · P% of window``).

The view is opened as soon as the workbench is up, while the server may still be starting
(the ``Workbench``'s server waits ``START_DELAY_S`` before it runs): the view must fill by
itself once the server runs (``workspace.ts`` asks again every ``RETRY_MS`` while there is
none; its unit test checks that part with a fake clock).

With ``LIVETOK_SCREENSHOT_DIR`` set, the page at the end (the status bar with its tooltip, the
Tokens view, a file open) is saved there as ``vscode-at-work.png`` (the README's picture,
``docs/img/vscode-at-work.png``).

Slow (``LIVETOK_SLOW=1``): about a minute with code-server installed and the extension built
(``test_vscode_extension.build_extension``, ~35 s).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator

import pytest

from livetok.server.lsp.views import _share

from .._refs import tiktoken_ref
# pytestmark: slow, and skipped without node and npm; importing the module skips this one too
# without playwright, whose sync_api it imports
from .test_editor_vscode import (  # noqa: F401 (pytestmark is read by pytest)
    Workbench, chromium, code_server, pytestmark, status_text, wait_until,
)
from .test_vscode_extension import build_extension
from .test_vscode_install import session

#: the generated workspace's files besides the Workbench's own (notes.md, run-me.sh,
#: .vscode/settings.json)
FILES = {
    "src/app.py": "def main() -> None:\n    print('hello world, 你好 😀')\n" * 30,
    "src/util/strings.py": "import re\n\nWORD = re.compile(r'\\w+')\n" * 12,
    "docs/guide.md": "## Guide\n\n" + "Read the fine manual, 日本語のテキスト. " * 40,
    ".gitignore": "build/\n",
    "build/out.txt": "built output " * 500,  # ignored: never in the map
}
CONTEXT_WINDOW = 128_000  # livetok.contextWindow's default


def percent(tokens: int) -> str:
    """The share of the context window as every client shows it (status.ts ``formatPercent``
    is the server's rule, ``views._share``)."""
    return _share(tokens, CONTEXT_WINDOW)


def expected(ws: Path) -> dict[str, int]:
    """tiktoken's count of every file of the workspace the map holds, by relative path."""
    enc = tiktoken_ref("o200k_base")
    out = {}
    for dirpath, dirnames, filenames in os.walk(ws):
        dirnames[:] = [d for d in dirnames if d != "build"]
        for name in filenames:
            p = Path(dirpath) / name
            text = p.read_bytes().decode("utf-8", errors="replace")
            out[p.relative_to(ws).as_posix()] = len(enc.encode_ordinary(text))
    return out


def total(counts: dict[str, int], folder: str) -> int:
    return sum(n for p, n in counts.items() if p.startswith(folder + "/"))


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    """code-server on the generated workspace, a Chromium page on it (``notes.md`` open)."""
    exe, browser_exe = code_server(), chromium()
    vsix = build_extension(tmp_path_factory)["vsix"]
    assert isinstance(vsix, Path) and vsix.is_file(), f"no .vsix at {vsix}"
    wb = Workbench(tmp_path_factory.mktemp("code-server-map"), vsix)
    for rel, text in FILES.items():
        (wb.ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (wb.ws / rel).write_text(text, encoding="utf-8")
    # the server's count cache in the test's folder, not the user's
    wb.env["LIVETOK_COUNT_CACHE_DIR"] = str(wb.base / "count-cache")
    wb.install(exe)
    with session(wb, exe, browser_exe):
        yield wb


def tokens_pane(page):  # -> playwright Locator
    """The side bar while it shows livetok's container (the Tokens view, its only view)."""
    sidebar = page.locator("[id='workbench.parts.sidebar']")
    title = sidebar.locator(".composite.title").first
    shown = title.count() and re.search(r"livetok", title.inner_text(), re.I)
    return sidebar if shown else page.locator("#no-such-element")


def rows(page) -> dict[str, str]:
    """The Tokens view's visible rows: label -> description."""
    out = {}
    for row in tokens_pane(page).locator(".monaco-list-row").all():
        name = row.locator(".label-name").first
        desc = row.locator(".label-description").first
        if name.count():
            out[name.inner_text().strip()] = desc.inner_text().strip() if desc.count() else ""
    return out


def described(n: int) -> str:
    return f"{n:,} tokens · {percent(n)}"


def count_of(description: str) -> int:
    """``1,234 tokens · 1.0%`` -> 1234."""
    m = re.match(r"^([\d,]+) tokens?\b", description)
    assert m, description
    return int(m.group(1).replace(",", ""))


def test_the_tokens_view_shows_the_tree_with_counts(workbench: Workbench) -> None:
    wb, page = workbench, workbench.page
    counts = expected(wb.ws)
    assert "build/out.txt" not in counts and len(counts) >= 7
    # issue 37 item 9: the Tokens view is on screen by itself (opened on the first start,
    # while the server is still starting), nobody clicked anything
    wait_until("livetok's side bar with the Tokens view", lambda: tokens_pane(page).count() > 0, 60,
               lambda: " | ".join(page.locator("[id='workbench.parts.sidebar'] .composite.title").all_inner_texts()))
    want = {
        "src": described(total(counts, "src")),
        "docs": described(total(counts, "docs")),
        "notes.md": described(counts["notes.md"]),
        ".gitignore": described(counts[".gitignore"]),
    }
    wait_until("the Tokens view to show the workspace's entries with tiktoken's counts",
               lambda: all(rows(page).get(k) == v for k, v in want.items()), 120,
               lambda: f"rows: {rows(page)}; want: {want}; output channel:\n"
                       f"{wb.output_channel()[-1500:]}")
    top = rows(page)
    assert "build" not in top, top
    # the first row: the workspace's total, the sum of the rows below it
    labels = [r.inner_text().strip() for r in tokens_pane(page).locator(".monaco-list-row .label-name").all()]
    assert labels[0] == "Workspace total", labels
    entries = {k: v for k, v in top.items() if k != "Workspace total"}
    assert count_of(top["Workspace total"]) == sum(count_of(v) for v in entries.values()), top
    assert top["Workspace total"] == described(count_of(top["Workspace total"])), top
    # largest first: the order on screen is by count
    names = [n for n in top if n in {"src", "docs", "notes.md", ".gitignore", "run-me.sh"}]
    by_count = {"src": total(counts, "src"), "docs": total(counts, "docs"),
                "notes.md": counts["notes.md"], ".gitignore": counts[".gitignore"],
                "run-me.sh": counts["run-me.sh"]}
    assert names == sorted(names, key=lambda n: (-by_count[n], n)), names

    # a folder opens onto its entries, each with its count
    tokens_pane(page).locator(".monaco-list-row", has_text="src").first.click()
    inner = {"util": described(total(counts, "src/util")), "app.py": described(counts["src/app.py"])}
    wait_until("src/ to open onto util/ and app.py",
               lambda: all(rows(page).get(k) == v for k, v in inner.items()), 30,
               lambda: f"rows: {rows(page)}; want: {inner}")

    # the status bar's tooltip: the total of the active file's folder, from the map
    page.keyboard.press("Control+P")
    page.locator(".quick-input-widget input").fill("app.py")
    page.locator(".quick-input-list .monaco-list-row", has_text="app.py").first.wait_for(timeout=15_000)
    page.keyboard.press("Enter")
    n = counts["src/app.py"]
    wait_until("the status bar to show app.py's count",
               lambda: status_text(page).strip().startswith(f"{n:,} tokens · o200k_base"), 60,
               lambda: f"status bar: {status_text(page)!r}")
    src = total(counts, "src")
    line = f"folder workspace/src/: {src:,} o200k_base tokens in 2 files · {percent(src)} of window"
    assert wb.ws.name == "workspace"

    def hover_text() -> str:
        page.locator("[id='livetok.livetok']").first.hover()
        return " ".join(page.locator(".workbench-hover, .monaco-hover").all_inner_texts())

    wait_until("the status bar's tooltip to give src/'s total", lambda: line in hover_text(), 30,
               lambda: f"hover: {hover_text()!r}")

    # the README's picture: the status bar and its tooltip, the Tokens view, app.py open
    shots = os.environ.get("LIVETOK_SCREENSHOT_DIR")
    if shots:
        tokens_pane(page).locator(".monaco-list-row", has_text="src").first.wait_for(timeout=10_000)
        hover_text()
        page.wait_for_timeout(500)
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / "vscode-at-work.png"))
