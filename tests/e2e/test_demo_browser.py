"""``livetok demo`` driven in headless Chromium (Playwright): the page must show exactly the
count tiktoken gives for the editor's text after typing, pasting, deleting, undoing, switching
encodings, loading the 1 MB sample and replaying an editing trace, the selection's count, and
token colours at tiktoken's token boundaries.

Needs the ``playwright`` Python package (its API only: no browser download) and a Chromium
binary (``/usr/bin/chromium``, or ``$LIVETOK_CHROMIUM``); as root with apt it tries
``apt-get install -y chromium``, otherwise the tests skip saying what is missing.
``LIVETOK_SLOW=1 LIVETOK_UPDATE_SCREENSHOT=1`` also writes the screenshot to
``docs/img/demo.png``.
"""

from __future__ import annotations

import bisect
import os
import shutil
import subprocess

import pytest

from .._refs import tiktoken_ref
from ..conftest import ROOT, TRACES
from .test_demo_server import Demo

pytest.importorskip("websockets", reason="livetok demo needs the websockets package")
sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the browser test needs the playwright package: pip install playwright "
    "(no browser download needed; it uses /usr/bin/chromium)")

STATIC = ROOT / "server" / "demo" / "static" / "demo"
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SETTLED = ("() => { const d = window.livetokDemo; "
           "return d && d.ready && d.shownVersion === d.version; }")


def find_chromium() -> str | None:
    for c in (os.environ.get("LIVETOK_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium",
              shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if c and os.path.exists(c):
            return c
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        try:
            subprocess.run(["apt-get", "install", "-y", "chromium"], capture_output=True,
                           timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return shutil.which("chromium")
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    exe = find_chromium()
    if exe is None:
        pytest.skip("no Chromium: install it (apt-get install chromium) or set LIVETOK_CHROMIUM")
    if not (STATIC / "index.html").is_file():
        pytest.fail(f"the demo page is not built: {STATIC} (npm ci && npm run build in demo/web)")
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=exe,
            headless=True, args=CHROMIUM_FLAGS, viewport={"width": 1200, "height": 800})
        try:
            yield ctx
        finally:
            ctx.close()


@pytest.fixture(scope="module")
def demo():
    d = Demo()
    yield d
    d.close()


@pytest.fixture
def page(browser, demo):
    p = browser.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.goto(demo.url)
    p.wait_for_function(SETTLED, timeout=20_000)
    yield p
    p.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


# -- helpers --------------------------------------------------------------------------------------


def settle(page, timeout: float = 20_000) -> None:
    page.wait_for_function(SETTLED, timeout=timeout)


def editor_text(page) -> str:
    return page.evaluate("window.livetokDemo.text()")


def shown_count(page) -> int:
    """The count on the page, read from its text (and checked against its data attribute)."""
    shown = page.inner_text("#count").strip()
    n = int(page.get_attribute("#count", "data-tokens"))
    assert shown == f"{n:,}", (shown, n)
    return n


def assert_count(page, name: str = "o200k_base") -> str:
    settle(page)
    text = editor_text(page)
    assert shown_count(page) == len(tiktoken_ref(name).encode_ordinary(text))
    assert page.get_attribute("#encoding-used", "data-encoding") == name
    return text


def expected_ranges(text: str, name: str = "o200k_base") -> list[list]:
    """The coloured spans the page should show: token i's characters (a character split over
    byte tokens belongs to the token holding its first byte), cut at line breaks, in UTF-16
    offsets, class tok-a / tok-b by the parity of i."""
    enc = tiktoken_ref(name)
    byte_at, u16_at = [], []
    b = u = 0
    for ch in text:
        byte_at.append(b)
        u16_at.append(u)
        b += len(ch.encode("utf-8"))
        u += 2 if ord(ch) > 0xFFFF else 1
    u16_at.append(u)
    out = []
    pos = 0
    for i, tid in enumerate(enc.encode_ordinary(text)):
        end = pos + len(enc.decode_single_token_bytes(tid))
        c0, c1 = bisect.bisect_left(byte_at, pos), bisect.bisect_left(byte_at, end)
        pos = end
        seg = c0
        for c in range(c0, c1 + 1):
            if c == c1 or text[c] == "\n":
                if c > seg:
                    out.append([u16_at[seg], u16_at[c], "tok-a" if i % 2 == 0 else "tok-b"])
                seg = c + 1
    return out


def wait_coloured(page) -> list[list]:
    """The coloured spans once they are for the current text and the encoding on screen (an
    encoding switch keeps the text's version, so the version alone would accept the old
    encoding's colours)."""
    page.wait_for_function(
        "() => { const e = document.getElementById('editor').dataset; "
        "return e.colouredVersion === String(window.livetokDemo.version) && e.colouredEncoding"
        " === document.getElementById('encoding-used').dataset.encoding; }", timeout=20_000)
    return page.evaluate("window.livetokDemo.tokenRanges()")


def assert_viewport_colours(page, text: str) -> list[list]:
    """Colours of a document too big to colour whole: a window around the viewport, exactly
    tiktoken's tokens inside it."""
    ranges = wait_coloured(page)
    assert ranges, "no token colours"
    lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    assert hi - lo < 100_000, f"coloured {lo}..{hi}: expected only the viewport"
    want = [r for r in expected_ranges(text[:hi + 1000]) if r[0] >= lo and r[1] <= hi]
    assert ranges == want
    return ranges


def paste(page, text: str) -> None:
    """A paste event with ``text`` on the clipboard, handled by CodeMirror like Ctrl+V."""
    page.evaluate("""(text) => {
        const dt = new DataTransfer(); dt.setData('text/plain', text);
        window.livetokDemo.view.contentDOM.dispatchEvent(
            new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true}));
    }""", text)


PASTED = ("def greet(name: str) -> str:\r\n    return f\"Grüße, {name}! 🙂\"\r\n\r\n"
          "東京の天気は晴れ。Привет, мир! " * 3 + "\n" + "tokens " * 200 + "\n"
          # not line breaks in LSP or CodeMirror, though str.splitlines breaks on them
          "odd: a\u2028b\x85c\x0cd\x0be\tf\u2029g 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\n")


# -- tests ----------------------------------------------------------------------------------------


def test_typing_pasting_deleting_selecting(page, tmp_path):
    text = assert_count(page)
    assert text.startswith("Type here")
    assert wait_coloured(page) == expected_ranges(text)

    page.click(".cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type("\nHello, world! Typing into livetok: naïve café, 🙂 emoji.", delay=5)
    text = assert_count(page)
    assert "naïve café, 🙂 emoji." in text
    assert float(page.get_attribute("#latency", "data-ms")) > 0
    assert page.inner_text("#latency").endswith(" ms")

    paste(page, PASTED)
    text = assert_count(page)
    assert PASTED.replace("\r\n", "\n") in text  # CodeMirror normalises line breaks
    assert wait_coloured(page) == expected_ranges(text)

    # delete: characters, a word, a line, then a range in the middle
    for _ in range(5):
        page.keyboard.press("Backspace")
    page.keyboard.press("Control+Backspace")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Shift+Home")
    page.keyboard.press("Delete")
    page.keyboard.press("Control+Home")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    for _ in range(12):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Delete")
    assert_count(page)

    # multi-cursor typing, two cursors on one line (added with Ctrl+click): every keystroke is
    # one transaction with three changes, sent as one didChange whose contentChanges must be
    # ordered so that each applies to the text left by the previous one
    points = page.evaluate("""() => { const v = window.livetokDemo.view, d = v.state.doc;
        return [d.line(1).from + 4, d.line(1).from + 10, d.line(3).from + 4].map(p => {
            const c = v.coordsAtPos(p); return [c.left + 1, (c.top + c.bottom) / 2]; }); }""")
    page.mouse.click(*points[0])
    for x, y in points[1:]:
        page.keyboard.down("Control")
        page.mouse.click(x, y)
        page.keyboard.up("Control")
    assert page.evaluate("window.livetokDemo.view.state.selection.ranges.length") == 3
    page.keyboard.type(" «multi» ∑", delay=5)
    text = assert_count(page)
    assert text.count(" «multi» ∑") == 3
    # equal counts could hide text in the wrong place: the token boundaries would not
    assert wait_coloured(page) == expected_ranges(text)
    page.keyboard.press("Escape")  # back to one cursor
    before_undo = assert_count(page)
    page.keyboard.press("Control+z")
    after_undo = assert_count(page)
    assert after_undo != before_undo
    page.keyboard.press("Control+y")  # redo
    assert assert_count(page) == before_undo

    # select two and a bit lines: the selection count is tiktoken's count of that text alone
    page.keyboard.press("Control+Home")
    page.keyboard.press("Shift+ArrowDown")
    page.keyboard.press("Shift+ArrowDown")
    page.keyboard.press("Shift+End")
    sel = page.evaluate("(() => { const s = window.livetokDemo.view.state.selection.main;"
                        " return [s.from, s.to]; })()")
    assert sel[1] > sel[0]
    page.wait_for_function(
        "([f, t]) => { const e = document.getElementById('selection');"
        " return e.dataset.from === String(f) && e.dataset.to === String(t); }", arg=sel)
    selected = page.evaluate("([f, t]) => window.livetokDemo.view.state.sliceDoc(f, t)", sel)
    want = len(tiktoken_ref("o200k_base").encode_ordinary(selected))
    assert int(page.get_attribute("#selection", "data-tokens")) == want
    assert page.inner_text("#selection").startswith(f"{want:,} tokens")

    text = assert_count(page)
    ranges = wait_coloured(page)
    assert ranges == expected_ranges(text)
    colours = page.evaluate("""() => [...new Set([...document.querySelectorAll('.tok-a, .tok-b')]
        .map(e => getComputedStyle(e).backgroundColor))].sort()""")
    assert colours == ["rgba(255, 160, 40, 0.35)", "rgba(80, 170, 255, 0.3)"], colours

    shot = tmp_path / "after-edits.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000


@pytest.mark.slow
def test_screenshot(page, tmp_path):
    """The picture in docs/demo.md: a typed sentence, a selection, the live count and the
    coloured tokens (written to docs/img/demo.png with LIVETOK_UPDATE_SCREENSHOT=1, under
    LIVETOK_SLOW=1). Slow: what it checks on the way (the count, the selection's count, the
    colours, a screenshot) the default run checks in test_typing_pasting_deleting_selecting."""
    page.click(".cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type("Typed in the browser: each keystroke is one didChange, and the count "
                       "above is the exact number of tokens", delay=2)
    settle(page)
    page.wait_for_timeout(300)
    page.keyboard.type(".")  # one keystroke on its own: the update time shown is its own
    settle(page)
    page.keyboard.press("Control+Home")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Shift+ArrowDown")
    page.keyboard.press("Shift+End")
    text = assert_count(page)
    page.wait_for_function("() => document.getElementById('selection').dataset.tokens")
    assert wait_coloured(page) == expected_ranges(text)
    shot = tmp_path / "demo.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000
    if os.environ.get("LIVETOK_UPDATE_SCREENSHOT") == "1":
        docs_img = ROOT / "docs" / "img" / "demo.png"
        docs_img.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, docs_img)


def slow_colour_replies(page, ms: int) -> None:
    """Hold every semantic-tokens reply ``ms`` milliseconds in the page before the demo sees
    it, as a loaded machine may: the race CI once lost."""
    page.evaluate("""(ms) => {
        const c = window.livetokDemo.client, request = c.request.bind(c);
        c.request = async (method, params) => {
            const r = await request(method, params);
            if (method === 'textDocument/semanticTokens/range')
                await new Promise((done) => setTimeout(done, ms));
            return r;
        };
    }""", ms)


def test_encoding_switch_and_reload(page):
    assert_count(page)
    assert wait_coloured(page) == expected_ranges(editor_text(page))
    # with slow colour replies, o200k's colours are still on screen, for the same text
    # version, once cl100k's count is shown: the colours must wait for cl100k's
    slow_colour_replies(page, 400)
    page.select_option("#encoding", "cl100k_base")
    page.wait_for_function(
        "() => document.getElementById('encoding-used').dataset.encoding === 'cl100k_base'")
    text = assert_count(page, "cl100k_base")
    assert wait_coloured(page) == expected_ranges(text, "cl100k_base")
    page.click(".cm-content")
    page.keyboard.type("more text in cl100k", delay=5)
    assert_count(page, "cl100k_base")
    page.reload()  # a new WebSocket gets a new server session
    settle(page)
    assert_count(page)


def test_one_megabyte_sample_colours_only_the_viewport(page):
    page.click("#sample-1mb")
    page.wait_for_function("() => window.livetokDemo.text().length > 500000", timeout=30_000)
    settle(page, 60_000)
    text = assert_count(page)
    assert 900_000 < len(text.encode("utf-8")) <= 1 << 20
    assert max(r[1] for r in assert_viewport_colours(page, text)) < 100_000

    # typing at the top of 1 MB: the count stays exact, and the update time is shown
    page.click(".cm-content")
    page.keyboard.press("Control+Home")
    page.keyboard.type("# edited ", delay=5)
    assert_count(page)
    ms = float(page.get_attribute("#latency", "data-ms"))
    assert 0 < ms < 10_000
    print(f"1 MB document: last keystroke's update time {ms:.1f} ms; "
          f"{page.get_attribute('#latency', 'title')}")


# slow: a real trace (13 s); the default run replays a synthetic one, from a traces folder of
# its own, to a "match" with the count and the colours checked
# (test_replay_trace_with_astral_characters)
@pytest.mark.slow
@pytest.mark.skipif(not (TRACES / "sveltecomponent.json.gz").is_file(),
                    reason=f"editing traces not found in {TRACES}")
def test_replay_trace(page):
    assert page.is_enabled("#replay")
    page.select_option("#trace", "sveltecomponent.json.gz")
    page.select_option("#speed", "500")
    page.click("#replay")
    page.wait_for_function("() => document.getElementById('replay-status').dataset.result",
                           timeout=90_000)
    assert page.get_attribute("#replay-status", "data-result") == "match", \
        page.inner_text("#replay-status")
    text = assert_count(page)
    assert len(text) == 18_451
    assert_viewport_colours(page, text)


def test_replay_trace_with_astral_characters(browser, tmp_path):
    """Trace positions count code points, CodeMirror's UTF-16 units: a synthetic trace full of
    emoji and other characters outside the BMP, several patches per transaction."""
    import json
    import random

    rng = random.Random(7)
    pool = ["🙂", "𝔘𝔫𝔦", "a", "bc ", "\n", "Grüße", "👍🏽", "漢字", " "]
    text = start = "🙂 start 𝔘\n"
    txns = []
    for _ in range(400):
        patches = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            pos = rng.randrange(len(text) + 1)
            ndel = rng.choice([0, 0, 0, 1, 2]) if pos < len(text) else 0
            ndel = min(ndel, len(text) - pos)
            ins = rng.choice(pool) if rng.random() < 0.8 else ""
            text = text[:pos] + ins + text[pos + ndel:]
            patches.append([pos, ndel, ins])
        txns.append({"patches": patches})
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "astral.json").write_text(json.dumps(
        {"startContent": start, "endContent": text, "txns": txns}), encoding="utf-8")
    d = Demo("--traces", str(folder))
    try:
        p = browser.new_page()
        p.goto(d.url)
        settle(p)
        p.select_option("#trace", "astral.json")
        p.select_option("#speed", "10")
        p.click("#replay")
        p.wait_for_function("() => document.getElementById('replay-status').dataset.result",
                            timeout=60_000)
        assert p.get_attribute("#replay-status", "data-result") == "match", \
            p.inner_text("#replay-status")
        assert assert_count(p) == text
        assert wait_coloured(p) == expected_ranges(text)
        p.close()
    finally:
        d.close()


def test_replay_disabled_without_traces(browser, tmp_path):
    empty = tmp_path / "no-traces"
    empty.mkdir()
    d = Demo("--traces", str(empty))
    try:
        p = browser.new_page()
        p.goto(d.url)
        settle(p)
        assert not p.is_enabled("#replay")
        assert "no editing traces found" in p.get_attribute("#replay", "title")
        assert_count(p)
        p.close()
    finally:
        d.close()


@pytest.mark.slow
def test_ten_megabyte_sample(page):
    """The 10 MB sample: exact count, viewport-only colours, a keystroke's update time."""
    page.click("#sample-10mb")
    page.wait_for_function("() => window.livetokDemo.text().length > 5000000", timeout=60_000)
    settle(page, 120_000)
    text = assert_count(page)
    assert 9_000_000 < len(text.encode("utf-8")) <= 10 << 20
    assert max(r[1] for r in assert_viewport_colours(page, text)) < 100_000
    page.click(".cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type("x = 1", delay=20)
    assert_count(page)
    ms = float(page.get_attribute("#latency", "data-ms"))
    print(f"10 MB document: last keystroke's update time {ms:.1f} ms; "
          f"{page.get_attribute('#latency', 'title')}")
