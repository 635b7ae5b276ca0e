"""The documentation site builds with ``mkdocs build --strict`` and is self-contained.

Strict mode turns every warning into an error: a broken link between pages, a link to a
missing anchor-less page, or a ``nav`` entry whose file is missing. Pages that exist but are
not in ``nav`` are only logged (``validation.nav.omitted_files: info`` in mkdocs.yml).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mkdocs_available() -> bool:
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _mkdocs_available():
        pytest.fail("mkdocs is not installed: add 'mkdocs>=1.6,<2' to the test extra in pyproject.toml")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_every_nav_page_is_built(site: Path) -> None:
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    def files(nav: object) -> list[str]:
        """Page files of a nav tree (entries are "file.md", {title: file} or {title: [...]})."""
        if isinstance(nav, str):
            return [] if "://" in nav else [nav]
        if isinstance(nav, dict):
            return [f for v in nav.values() for f in files(v)]
        return [f for item in nav for f in files(item)]  # type: ignore[attr-defined]

    pages = files(config["nav"])
    assert {"index.md", "editors.md", "protocol.md", "architecture.md"} <= set(pages)
    for page in pages:
        html = "index.html" if page == "index.md" else page.removesuffix(".md") + "/index.html"
        assert (site / html).is_file(), f"{page} (in nav) was not built to {html}"


def test_architecture_picture_is_in_the_site(site: Path) -> None:
    html = (site / "architecture" / "index.html").read_text(encoding="utf-8")
    m = re.search(r'<img [^>]*src="([^"]*architecture\.svg)"', html)
    assert m, "the architecture page has no <img> of architecture.svg"
    svg = (site / "architecture" / m.group(1)).resolve()
    assert svg.is_file(), f"the page points to {m.group(1)}, which the build did not copy"
    assert svg.read_text(encoding="utf-8").lstrip().startswith("<svg")


def test_architecture_svg_matches_its_script() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "make_architecture_svg.py"), "--check"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


def test_site_loads_nothing_from_the_network(site: Path) -> None:
    # subtle: the default mkdocs theme pulls highlight.js from a CDN unless highlightjs is off
    remote = re.compile(r'<(?:script|link)[^>]+(?:src|href)="(?:https?:)?//', re.I)
    offenders = [str(p.relative_to(site)) for p in site.rglob("*.html")
                 if remote.search(p.read_text(encoding="utf-8"))]
    assert not offenders, f"pages load scripts or styles from the network: {offenders}"
