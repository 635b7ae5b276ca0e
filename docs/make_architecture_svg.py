"""Draw docs/img/architecture.svg: a keystroke's way to the count on screen.

Plain SVG written by hand (no plotting library, no JavaScript), so the picture renders in the
built site offline and the script runs with the standard library alone::

    python3 docs/make_architecture_svg.py            # rewrite docs/img/architecture.svg
    python3 docs/make_architecture_svg.py --check    # exit 1 if the committed file is stale

tests/e2e/test_docs_build.py runs the check, so edit this script, not the SVG.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from xml.sax.saxutils import escape

OUT = Path(__file__).resolve().parent / "img" / "architecture.svg"

WIDTH, HEIGHT = 980, 630
FONT = "font-family=\"Helvetica, Arial, sans-serif\""
LINE_H = 16  # px between text lines in a box

# lanes: (x, width, title, subtitle, fill)
LANES = [
    (20, 240, "Editor", "VS Code, Neovim, Helix, ...", "#eef4fb"),
    (330, 300, "livetok.server", "pygls 2 + lsprotocol: translate, call the core", "#f3f0fa"),
    (700, 260, "livetok.incremental", "pure core: no LSP types", "#eef8f0"),
]

# boxes: name -> (x, y, w, h, lines); the first line is the box's title (bold). Numbered
# boxes are the five functions of a keystroke that docs/architecture.md names.
BOXES = {
    "key": (35, 70, 210, 44, ["Keystroke"]),
    "change": (35, 140, 210, 80, ["textDocument/didChange", "range, new text, version"]),
    "transport": (345, 136, 270, 88, ["Transport, LivetokProtocol", "read input in large chunks; one",
                                      "thread decodes; a didChange is read",
                                      "as JSON, anything else typed"]),
    "did_change": (345, 250, 270, 64, ["1  sync.did_change_json", "the didChange handler"]),
    "apply": (345, 340, 270, 80, ["2  OpenDocument.apply", "line/column (UTF-16, UTF-8 or UTF-32)",
                                  "→ code point offsets (LineIndex)"]),
    "edit": (715, 310, 230, 115, ["3  Document.edit", "re-split pieces between the",
                                  "restart and resync boundaries;", "re-encode changed pieces (long",
                                  "ones: Algorithm 1 gluing)"]),
    "requests": (35, 355, 210, 95, ["Requests, any time", "livetok/tokenCount (range),",
                                    "hover, code lens,", "semantic tokens"]),
    "seq": (715, 480, 230, 70, ["4  TokenSeq.replace", "replaces only the changed",
                                "tokens; count kept current"]),
    "publish": (345, 480, 270, 90, ["5  Publisher.publish", "once the input is drained:",
                                    "livetok/didChangeTokenCount", "{uri, version, tokens, ...}"]),
    "status": (35, 510, 210, 80, ["Status bar", "1,234 tokens · o200k_base", "· 1.0% of window"]),
}

# arrows: (points, label, label_xy, dashed)
ARROWS = [
    ([(140, 114), (140, 140)], None, None, False),
    ([(245, 180), (345, 180)], "JSON-RPC", (295, 172), False),
    ([(480, 220), (480, 250)], None, None, False),
    ([(480, 314), (480, 340)], None, None, False),
    ([(615, 380), (715, 380)], "code points", (665, 372), False),
    ([(830, 425), (830, 480)], None, None, False),
    ([(715, 515), (615, 515)], "new count", (665, 507), False),
    ([(345, 545), (245, 545)], "notification", (295, 537), False),
    ([(245, 442), (900, 442), (900, 480)], "answered from the current token sequence", (480, 459),
     True),
]


def _text(x: float, y: float, s: str, *, size: int = 13, weight: str = "normal",
          anchor: str = "start", fill: str = "#1f2328") -> str:
    return (f'<text x="{x:g}" y="{y:g}" {FONT} font-size="{size}" font-weight="{weight}" '
            f'text-anchor="{anchor}" fill="{fill}">{escape(s)}</text>')


def _box(x: int, y: int, w: int, h: int, lines: list[str]) -> list[str]:
    out = [f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="#ffffff" '
           f'stroke="#57606a" stroke-width="1.2"/>']
    # center the block of lines vertically; baseline offset ~ 0.35 em
    top = y + h / 2 - (len(lines) - 1) * LINE_H / 2 + 4.5
    for i, line in enumerate(lines):
        out.append(_text(x + 10, top + i * LINE_H, line, weight="bold" if i == 0 else "normal"))
    return out


def _arrow(points: list[tuple[int, int]], dashed: bool) -> str:
    d = " ".join(f"{x},{y}" for x, y in points)
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    return (f'<polyline points="{d}" fill="none" stroke="#57606a" stroke-width="1.5"{dash} '
            f'marker-end="url(#head)"/>')


def render() -> str:
    """The SVG document as a string (deterministic: same input, same bytes)."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="title">',
        '<title id="title">From a keystroke to the token count: editor, livetok.server, '
        'livetok.incremental</title>',
        '<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#57606a"/></marker></defs>',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
    ]
    for x, w, title, subtitle, fill in LANES:
        parts.append(f'<rect x="{x}" y="10" width="{w}" height="{HEIGHT - 20}" rx="10" '
                     f'fill="{fill}" stroke="#d0d7de"/>')
        parts.append(_text(x + w / 2, 34, title, size=15, weight="bold", anchor="middle"))
        parts.append(_text(x + w / 2, 52, subtitle, size=11, anchor="middle", fill="#57606a"))
    for x, y, w, h, lines in BOXES.values():
        parts += _box(x, y, w, h, lines)
    for points, label, xy, dashed in ARROWS:
        parts.append(_arrow(points, dashed))
        if label is not None and xy is not None:
            parts.append(_text(xy[0], xy[1], label, size=11, anchor="middle", fill="#57606a"))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if the committed SVG differs from the script's output")
    args = parser.parse_args(argv)
    svg = render()
    if args.check:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != svg:
            print(f"{OUT} is stale: run python3 docs/make_architecture_svg.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(svg, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
