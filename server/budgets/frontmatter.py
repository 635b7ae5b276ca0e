"""Markdown front matter: where a Markdown file's YAML front matter ends, and the budget it
sets with ``tokens: N`` (or ``token_budget: N``), which becomes the file's ``max``.

Front matter comes with a repository, so it is untrusted input (``docs/security.md``): it is
looked for in the first ``$LIVETOK_MAX_FRONT_MATTER_BYTES`` code points of a file only,
parsed only when a budget key appears in it, with YAML aliases refused, and no message quotes
more than a few dozen characters of a value. The block itself is found by
:data:`.markdown.FRONT_MATTER`, so that it is never read as Markdown.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from livetok.incremental.env_limits import size_limit

from livetok.server.budgets.config import ConfigError, ConfigProblem
from livetok.server.budgets.limits import shown
from livetok.server.budgets.markdown import FRONT_MATTER

__all__ = ["FRONT_MATTER_ENV", "MARKDOWN_SUFFIXES", "FrontMatter", "front_matter",
           "front_matter_limit"]

#: Markdown files: the ones whose front matter may set a budget
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".mdc"})
_FRONT_MATTER_KEYS = ("token_budget", "tokens")
#: front matter is looked for in this many code points at the top of a Markdown file
FRONT_MATTER_ENV = "LIVETOK_MAX_FRONT_MATTER_BYTES"
_FRONT_MATTER_MAX = 64 << 10


@dataclass(frozen=True)
class FrontMatter:
    """A Markdown file's front matter: where the body starts, and the budget it sets."""

    end_cp: int
    tokens: int | None = None
    line: int = 1


def front_matter(text: str, path: str = "<text>") -> FrontMatter:
    """The YAML front matter at the top of ``text`` (``end_cp == 0`` when there is none) and
    the budget it sets with ``token_budget:`` or ``tokens:``.

    >>> front_matter("---\\ntitle: x\\ntokens: 1200\\n---\\n# Hi\\n")
    FrontMatter(end_cp=30, tokens=1200, line=3)
    >>> front_matter("# no front matter\\n").end_cp
    0

    Runtime complexity: ``O(size of the front matter)``; YAML is parsed only when a budget
    key appears in it.
    """
    m = FRONT_MATTER.match(text, 0, front_matter_limit())
    if m is None:
        return FrontMatter(0)
    body = m.group("body")
    if not re.search(r"^(?:token_budget|tokens)\s*:", body, re.M):
        return FrontMatter(m.end())
    tokens, line, problem = _front_matter_budget(body)
    if problem is not None:
        raise ConfigError([ConfigProblem(path, line, problem[0], problem[1])])
    return FrontMatter(m.end(), tokens, line) if tokens is not None else FrontMatter(m.end())


def front_matter_limit() -> int:
    """How far into a Markdown file its front matter may end, in code points
    (``$LIVETOK_MAX_FRONT_MATTER_BYTES``, default 64 Ki): a longer block is not front matter.

    Runtime complexity: ``O(1)``.
    """
    return size_limit(FRONT_MATTER_ENV, _FRONT_MATTER_MAX)


@functools.lru_cache(maxsize=64)
def _front_matter_budget(body: str) -> tuple[int | None, int, tuple[str, str] | None]:
    """``(tokens, line, problem)`` of a front matter block that names a budget key; cached,
    so that a keystroke below the front matter does not parse it again.

    Runtime complexity: ``O(len(body))`` the first time, ``O(len(body))`` to hash it after.
    """
    import yaml  # PyYAML: imported only for files whose front matter names a budget

    try:
        data = yaml.load(body, Loader=_no_alias_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        return None, 2, ("front matter", f"front matter is not valid YAML: {shown(str(exc), 300)}")
    except RecursionError:
        return None, 2, ("front matter", "front matter is nested too deeply to read")
    if not isinstance(data, dict):
        return None, 1, None
    for key in _FRONT_MATTER_KEYS:
        if key in data:
            value = data[key]
            km = re.search(rf"^{key}\s*:", body, re.M)
            line = 2 + body.count("\n", 0, km.start()) if km else 2
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return None, line, (f"front matter.{key}", (
                    f"front matter {key!r} must be a whole number of tokens (an integer >= 0), "
                    f"got {shown(value)}"))
            return value, line, None
    return None, 1, None


@functools.cache
def _no_alias_loader() -> type:
    """PyYAML's ``SafeLoader`` that refuses aliases (made once, on first use)."""
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """PyYAML's safe loader without aliases: ``*name`` is refused, so nine nested anchors
        of nine references each (a few hundred bytes) cannot become a billion nodes."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(
                    None, None, "YAML aliases (*name) are not allowed in front matter",
                    event.start_mark)
            return super().compose_node(parent, index)

    return NoAliasLoader
