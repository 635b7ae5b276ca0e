"""The ``livetok`` configuration section and how a document's encoding is chosen.

Settings arrive as ``initializationOptions`` (either the section itself or ``{"livetok":
{...}}``) and later in ``workspace/didChangeConfiguration`` (``settings.livetok``). Keys:

``encoding``
    ``"o200k_base"`` (the default), or a map whose keys are language ids (``"markdown"``),
    glob patterns matched against the document's URI path (any key containing ``*``, ``?``
    or ``[``: ``"**/*.rs"``) and ``"default"``. Globs win over language ids, in the order
    given; then the language id; then ``tokenizer``; then ``"default"``. A name may be any
    that ``livetok.incremental.get_encoding`` takes: ``hf:ORG/NAME`` (a model whose
    ``tokenizer.json`` is in the local Hugging Face cache) or a ``tokenizer.json`` path (or
    its model's folder), resolved as ``tokenizer`` is.
``tokenizer``
    the path of a HuggingFace ``tokenizer.json``, or of a model folder holding one (``~``
    expanded; a relative path is relative to the workspace's first folder, or without one to
    the server's working folder): when set (not ``""`` or ``null``), documents without a glob
    or language entry are counted with it instead of the default ``encoding``.
``encodingByLanguage``
    a map from language ids to encoding names (what the VS Code extension sends); its
    entries are merged over the language ids of ``encoding``.
``contextWindow``
    tokens in the model's context window, for the share shown in the code lens
    (default 128000; ``null`` hides the share).
``budget``
    a token budget; a document over it gets a warning diagnostic (default: none). For the
    files a budget file covers (``livetok.toml`` or ``[tool.livetok]``, ``docs/budgets.md``)
    that file's budgets and encoding apply instead.
``semanticTokens``
    colour tokens alternately with semantic tokens (default false: opt-in).
``maxDocumentSize``
    documents longer than this many code points are not tokenized: their text is tracked,
    requests about them fail with ``RequestFailed``, and a diagnostic says so (default
    200000000; ``null``: no limit).
``positionEncoding``
    ``"utf-8"``, ``"utf-16"`` or ``"utf-32"``: the unit of LSP positions, whatever the client
    announces (for clients that send code points without saying so, such as Emacs lsp-mode 8).
    Read from ``initializationOptions`` only; ``livetok serve --position-encoding`` wins over it.
``progressThreshold``
    documents at least this many code points long are first tokenized in a worker thread
    (other documents keep being served) and report work-done progress meanwhile; a change
    inserting at least this much text is applied in the worker too (default 1000000).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, TypeVar
from urllib.parse import unquote, urlparse

__all__ = ["Settings", "SettingsError", "parse_settings", "workspace_root"]

DEFAULT_ENCODING = "o200k_base"
_GLOB_CHARS = frozenset("*?[")
_POSITION_ENCODINGS = ("utf-8", "utf-16", "utf-32")


class SettingsError(ValueError):
    """A ``livetok`` setting with the wrong type or value; the message names the key."""


@dataclass(frozen=True)
class Settings:
    """The server's effective configuration."""

    encoding: str = DEFAULT_ENCODING
    tokenizer: str | None = None
    encoding_by_language: Mapping[str, str] = field(default_factory=dict)
    encoding_by_glob: tuple[tuple[str, str], ...] = ()
    context_window: int | None = 128_000
    budget: int | None = None
    semantic_tokens: bool = False
    progress_threshold: int = 1_000_000
    position_encoding: str | None = None
    max_document_size: int | None = 200_000_000

    def encoding_for(self, uri: str, language_id: str) -> str:
        """The encoding name a document gets.

        >>> s = parse_settings({"encoding": {"default": "cl100k_base", "markdown": "r50k_base",
        ...                                  "**/*.rs": "o200k_base"}})
        >>> s.encoding_for("file:///a/b.rs", "rust"), s.encoding_for("file:///x.md", "markdown")
        ('o200k_base', 'r50k_base')
        >>> s.encoding_for("file:///x.txt", "plaintext")
        'cl100k_base'

        Runtime complexity: ``O(number of globs)``.
        """
        path = unquote(urlparse(uri).path) or uri
        for pattern, name in self.encoding_by_glob:
            # a pattern without a slash matches the file name, as in .gitignore and VS Code
            target = path if "/" in pattern else path.rsplit("/", 1)[-1]
            if fnmatch.fnmatchcase(target, pattern) or (
                pattern.startswith("**/") and fnmatch.fnmatchcase(target, pattern[3:])
            ):
                return name
        return self.encoding_by_language.get(language_id, self.default_encoding)

    @property
    def default_encoding(self) -> str:
        """The encoding of a document no glob or language entry names: ``tokenizer`` when
        set, else ``encoding``.

        >>> parse_settings({"tokenizer": "/m/tokenizer.json"}).default_encoding
        '/m/tokenizer.json'

        Runtime complexity: ``O(1)``.
        """
        return self.tokenizer if self.tokenizer is not None else self.encoding


def _int(value: Any, key: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
        raise SettingsError(f"livetok.{key} must be an integer, got {value!r}")
    if value < minimum:
        raise SettingsError(f"livetok.{key} must be >= {minimum}, got {value!r}")
    return int(value)


_Unset = TypeVar("_Unset", bound="int | None")


def _int_setting(raw: Mapping[str, Any], key: str, current: _Unset, null: _Unset, *,
                 minimum: int) -> int | _Unset:
    """``raw[key]`` checked by :func:`_int`, ``null`` for a JSON null, ``current`` if absent."""
    if key not in raw:
        return current
    value = raw[key]
    return null if value is None else _int(value, key, minimum=minimum)


def workspace_root(folders: Any, root_uri: Any, root_path: Any = None) -> str | None:
    """The folder relative setting paths are resolved against: the first workspace folder's,
    else ``rootUri``'s, else ``rootPath`` (``initialize``'s fields, in LSP's order of
    preference); ``None`` when none is a local folder (the server's working folder is used).

    >>> workspace_root([{"uri": "file:///w/a%20b", "name": "a b"}], "file:///other")
    '/w/a b'
    >>> workspace_root(None, None, "/p"), workspace_root(None, "untitled:x") is None
    ('/p', True)

    Runtime complexity: ``O(len(folders))``.
    """
    for f in folders or ():
        uri = f.get("uri") if isinstance(f, Mapping) else getattr(f, "uri", None)
        path = _file_path(uri)
        if path is not None:
            return path
    path = _file_path(root_uri)
    if path is not None:
        return path
    return root_path if isinstance(root_path, str) and os.path.isabs(root_path) else None


def _file_path(uri: Any) -> str | None:
    if not isinstance(uri, str):
        return None
    u = urlparse(uri)
    if u.scheme != "file" or not u.path:
        return None
    return os.path.normpath(unquote(u.path))


def _is_path(name: str) -> bool:
    """Whether the encoding name ``name`` is a file path (as ``registry.is_file_name`` reads
    it, ``hf:`` ids aside), kept here so settings parse without importing the core."""
    return (not name.startswith("hf:")
            and (name.lower().endswith(".json") or "/" in name or os.sep in name))


def _path(name: str, root: str | None) -> str:
    """``name`` as an absolute path (``~`` expanded, relative to ``root`` when given, else to
    the working folder), so the server reads it whatever its working folder."""
    p = os.path.expanduser(name)
    if root is not None and not os.path.isabs(p):
        p = os.path.join(root, p)
    return os.path.abspath(p)


def _resolve(name: str, root: str | None) -> str:
    """A path-like encoding name as :func:`_path` makes it; other names unchanged."""
    return _path(name, root) if _is_path(name) else name


def parse_settings(raw: Any, base: Settings | None = None, *,
                   root: str | None = None) -> Settings:
    """Settings from a ``livetok`` section (a dict), on top of ``base`` (defaults if None).

    Keys not given keep ``base``'s value; ``null`` resets a key to its default (for
``contextWindow`` and ``budget``: turns it off). Unknown keys
    are ignored so that newer clients work with older servers.

    >>> parse_settings({"budget": 100, "contextWindow": 8192}).budget
    100
    >>> parse_settings({"budget": "lots"})
    Traceback (most recent call last):
    ...
    livetok.server.config.SettingsError: livetok.budget must be an integer, got 'lots'

    Runtime complexity: ``O(size of raw)``.
    """
    base = base or Settings()
    if raw is None:
        return base
    if not isinstance(raw, Mapping):
        raise SettingsError(f"the livetok settings must be an object, got {type(raw).__name__}")
    if "livetok" in raw and isinstance(raw["livetok"], Mapping):
        raw = raw["livetok"]
    defaults = Settings()
    out = base
    if "encoding" in raw:
        enc = raw["encoding"]
        if enc is None:
            out = replace(out, encoding=defaults.encoding, encoding_by_language={},
                          encoding_by_glob=())
        elif isinstance(enc, str):
            out = replace(out, encoding=_resolve(enc, root), encoding_by_language={},
                          encoding_by_glob=())
        elif isinstance(enc, Mapping):
            langs: dict[str, str] = {}
            globs: list[tuple[str, str]] = []
            default = defaults.encoding
            for key, name in enc.items():
                if not isinstance(name, str):
                    raise SettingsError(
                        f"livetok.encoding[{key!r}] must be an encoding name, got {name!r}"
                    )
                name = _resolve(name, root)
                if key in ("default", ""):
                    default = name
                elif _GLOB_CHARS & set(key):
                    globs.append((key, name))
                else:
                    langs[key] = name
            out = replace(out, encoding=default, encoding_by_language=langs,
                          encoding_by_glob=tuple(globs))
        else:
            raise SettingsError(
                "livetok.encoding must be a name like 'o200k_base' or a map from language ids "
                f"/ globs / 'default' to names, got {enc!r}"
            )
    if "tokenizer" in raw:
        v = raw["tokenizer"]
        if v is not None and not isinstance(v, str):
            raise SettingsError(f"livetok.tokenizer must be the path of a tokenizer.json, got {v!r}")
        # an absolute path: a path to get_encoding, whatever the file is called
        out = replace(out, tokenizer=_path(v, root) if v else None)
    if "encodingByLanguage" in raw:
        v = raw["encodingByLanguage"] or {}
        if not isinstance(v, Mapping) or not all(
            isinstance(k, str) and isinstance(x, str) for k, x in v.items()
        ):
            raise SettingsError(
                "livetok.encodingByLanguage must map language ids to encoding names, "
                f"got {v!r}"
            )
        v = {k: _resolve(x, root) for k, x in v.items()}
        out = replace(out, encoding_by_language={**out.encoding_by_language, **v})
    # integer settings: null turns a limit off, and gives progressThreshold its default
    out = replace(
        out,
        context_window=_int_setting(raw, "contextWindow", out.context_window, None, minimum=1),
        budget=_int_setting(raw, "budget", out.budget, None, minimum=0),
        progress_threshold=_int_setting(raw, "progressThreshold", out.progress_threshold,
                                        defaults.progress_threshold, minimum=0),
        max_document_size=_int_setting(raw, "maxDocumentSize", out.max_document_size, None,
                                       minimum=0),
    )
    if "semanticTokens" in raw:
        v = raw["semanticTokens"]
        if v is not None and not isinstance(v, bool):
            raise SettingsError(f"livetok.semanticTokens must be true or false, got {v!r}")
        out = replace(out, semantic_tokens=bool(v))
    if "positionEncoding" in raw:
        v = raw["positionEncoding"]
        if v is not None and v not in _POSITION_ENCODINGS:
            raise SettingsError("livetok.positionEncoding must be one of "
                                f"{', '.join(_POSITION_ENCODINGS)} or null, got {v!r}")
        out = replace(out, position_encoding=v)
    return out
