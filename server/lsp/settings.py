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
``compare``
    a list of encoding or model names (at most :data:`MAX_COMPARE`; ``null`` or ``[]``: none)
    whose counts are shown beside the document's own (``livetok/didChangeTokenCount``,
    ``livetok/tokenCount``, hover): each is a name as ``encoding`` takes it (a path is
    resolved, and refused or trusted, the same way), or the name of a model the catalog marks
    ≈ (``claude-sonnet-4``), which is then counted with its stand-in and shown as ≈.
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
``trustWorkspaceTokenizers``
    load the ``tokenizer.json`` files that the workspace names (default false): a file inside
    a workspace folder named by ``tokenizer`` or ``encoding``, any relative path there, and
    the files budget files name. A ``tokenizer.json`` is a program of sorts (regexes,
    normalizer chains), and a cloned repository is untrusted input (``docs/security.md``);
    the VS Code extension lets only the user's own settings turn this on. Read from
    ``initializationOptions``: a later ``didChangeConfiguration`` may turn it off, never on
    (an editor may pass a workspace's own configuration there, as eglot does with
    ``.dir-locals.el``); restart the server to turn it on.

A tokenizer path in the settings must name a ``tokenizer.json`` (a file whose name ends in
``.json``, or a model folder holding one); a relative one must stay inside the workspace's
first folder; one inside any workspace folder needs the trust (:meth:`Settings.refusal`, the
one rule of :func:`livetok.server.trust.tokenizer_refusal`).

Settings are input: each value is checked where it is parsed (:func:`parse_settings`): its
type, a control character (a NUL byte) in a name, a path or a map key, a name over
:data:`MAX_NAME_CHARS` characters, a map or list over :data:`MAX_MAP_ENTRIES` entries. A bad
value is a warning and that setting's default (or, later, its previous value); the other
settings are read.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import reprlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import unquote, urlparse

__all__ = ["MAX_COMPARE", "MAX_MAP_ENTRIES", "MAX_NAME_CHARS", "Settings", "SettingsError",
           "parse_settings", "workspace_folders", "workspace_root"]

log = logging.getLogger(__name__)

DEFAULT_ENCODING = "o200k_base"
_GLOB_CHARS = frozenset("*?[")
_POSITION_ENCODINGS = ("utf-8", "utf-16", "utf-32")
#: the most encodings ``livetok.compare`` may list: each is one more count kept per keystroke
MAX_COMPARE = 8
#: the longest name, path, language id or glob a setting may hold (Linux's PATH_MAX; the
#: same bound as ``livetok.server.trust.MAX_NAME_CHARS``, kept here so settings parse
#: without importing the core)
MAX_NAME_CHARS = 4096
#: the most entries of a map (``encoding``, ``encodingByLanguage``) or list (``compare``)
MAX_MAP_ENTRIES = 1024
#: no name or path holds these: a NUL byte ends a path for the system, the rest are not text
_CONTROL = frozenset(map(chr, [*range(0x20), 0x7F]))


class SettingsError(ValueError):
    """A ``livetok`` setting with the wrong type or value; the message names the key."""


@dataclass(frozen=True)
class Settings:
    """The server's effective configuration."""

    encoding: str = DEFAULT_ENCODING
    tokenizer: str | None = None
    encoding_by_language: Mapping[str, str] = field(default_factory=dict)
    encoding_by_glob: tuple[tuple[str, str], ...] = ()
    #: ``livetok.compare``: the names counted beside each document's own encoding
    compare: tuple[str, ...] = ()
    context_window: int | None = 128_000
    budget: int | None = None
    semantic_tokens: bool = False
    progress_threshold: int = 1_000_000
    position_encoding: str | None = None
    max_document_size: int | None = 200_000_000
    trust_workspace_tokenizers: bool = False
    #: the folder relative paths were resolved against (:func:`workspace_root`)
    root: str | None = None
    #: tokenizer paths the settings gave relative to :attr:`root` (resolved)
    relative_paths: frozenset[str] = frozenset()

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


    def refusal(self, name: str, folders: Sequence[str] = ()) -> str | None:
        """Why the encoding ``name`` (as :meth:`encoding_for` gives it) must not be loaded, or
        None: :func:`livetok.server.trust.tokenizer_refusal`, the one trust rule, with the
        workspace's first folder (:attr:`root`) and ``folders`` (every workspace folder) as
        the workspace, and a path the settings gave relative bound to :attr:`root`. A ``hf:``
        id or a built-in name is never refused; a path is when it is not a ``tokenizer.json``
        (``~/.bashrc``), when a relative one leads out of the workspace, when it is not a
        regular file, and, unless :attr:`trust_workspace_tokenizers`, when it lies inside a
        workspace folder.

        >>> s = parse_settings({"tokenizer": "../../etc/passwd"}, root="/w")
        >>> s.refusal(s.default_encoding).split(";")[0]
        "livetok reads a tokenizer.json (a file named *.json, or a model folder holding one): '/etc/passwd' is neither"

        Runtime complexity: ``O(path components * folders)`` system calls.
        """
        from livetok.server import trust  # here: the front parses settings without the core

        # without a workspace folder no file is a workspace's but what a relative path names
        # (resolved against the working folder)
        relative = name in self.relative_paths
        workspace = [f for f in (self.root, *folders) if f]
        return trust.tokenizer_refusal(
            name, workspace=workspace, trusted=self.trust_workspace_tokenizers,
            relative_to=(self.root or os.getcwd()) if relative else None)


def _int(value: Any, key: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
        raise SettingsError(f"livetok.{key} must be an integer, got {_shown(value)}")
    if value < minimum:
        raise SettingsError(f"livetok.{key} must be >= {minimum}, got {_shown(value)}")
    return int(value)


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
    return (root_path if isinstance(root_path, str) and _plain(root_path)
            and os.path.isabs(root_path) else None)


def workspace_folders(folders: Any) -> tuple[str, ...]:
    """The local paths of the workspace folders (``initialize``'s ``workspaceFolders`` or the
    server's :class:`pygls.workspace.Workspace` folders), each once: every one of them is the
    workspace that :meth:`Settings.refusal` guards, not only the first.

    >>> workspace_folders([{"uri": "file:///w/a"}, {"uri": "untitled:x"}, {"uri": "file:///w/b"}])
    ('/w/a', '/w/b')

    Runtime complexity: ``O(len(folders))``.
    """
    if isinstance(folders, Mapping):
        folders = folders.values()  # pygls keeps its folders by URI
    out: dict[str, None] = {}
    for f in folders or ():
        path = _file_path(f.get("uri") if isinstance(f, Mapping) else getattr(f, "uri", None))
        if path is not None:
            out[path] = None
    return tuple(out)


def _file_path(uri: Any) -> str | None:
    if not isinstance(uri, str) or len(uri) > 3 * MAX_NAME_CHARS:
        return None
    u = urlparse(uri)
    if u.scheme != "file" or not u.path:
        return None
    path = os.path.normpath(unquote(u.path))
    return path if _plain(path) else None


def _plain(text: str) -> bool:
    """Whether ``text`` may be a name or a path: no control character, not over-long."""
    return len(text) <= MAX_NAME_CHARS and _CONTROL.isdisjoint(text)


def _name(value: Any, key: str, what: str = "an encoding name") -> str:
    """The string setting ``value`` of ``key``, checked where it is parsed: a string, without
    a control character (a NUL byte ends a path), at most :data:`MAX_NAME_CHARS` long; else
    :class:`SettingsError` naming ``key``.

    >>> _name("cl100k_base", "livetok.encoding")
    'cl100k_base'
    >>> _name("~\\x00/x.json", "livetok.tokenizer")
    Traceback (most recent call last):
    ...
    livetok.server.lsp.settings.SettingsError: livetok.tokenizer holds a control character: '~\\x00/x.json'; a name or a path holds none (a NUL byte ends a path)

    Runtime complexity: ``O(len(value))``.
    """
    if not isinstance(value, str):
        raise SettingsError(f"{key} must be {what}, got {_shown(value)}")
    if len(value) > MAX_NAME_CHARS:
        raise SettingsError(f"{key} is {len(value):,} characters long; {what} has at most "
                            f"{MAX_NAME_CHARS:,}")
    if not _CONTROL.isdisjoint(value):
        raise SettingsError(f"{key} holds a control character: {_shown(value)}; a name or a "
                            "path holds none (a NUL byte ends a path)")
    return value


def _entries(value: Mapping[Any, Any], key: str) -> None:
    """:class:`SettingsError` when the map setting ``key`` has more than
    :data:`MAX_MAP_ENTRIES` entries."""
    if len(value) > MAX_MAP_ENTRIES:
        raise SettingsError(f"{key} has {len(value):,} entries; at most {MAX_MAP_ENTRIES:,} "
                            "are read")


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


def _resolve(name: str, root: str | None, relative: set[str] | None = None) -> str:
    """A path-like encoding name as :func:`_path` makes it (noted in ``relative`` when it was
    relative); other names unchanged."""
    if not _is_path(name):
        return name
    p = _path(name, root)
    if relative is not None and not os.path.isabs(os.path.expanduser(name)):
        relative.add(p)
    return p


def parse_settings(raw: Any, base: Settings | None = None, *,
                   root: str | None = None, grant_trust: bool = True,
                   problems: list[str] | None = None) -> Settings:
    """Settings from a ``livetok`` section (a dict), on top of ``base`` (defaults if None).

    Keys not given keep ``base``'s value; ``null`` resets a key to its default (for
    ``contextWindow`` and ``budget``: turns it off). Unknown keys are ignored so that newer
    clients work with older servers. Every value is checked here, where it is parsed (its
    type, a NUL byte or another control character in a name, the length of a name, the
    entries of a map): a bad one is a :class:`SettingsError` naming its key, or, with
    ``problems``, that message appended there and the key left at ``base``'s value (the
    default at ``initialize``) while the other keys are read: a setting is a warning, never
    an exit.

    >>> parse_settings({"budget": 100, "contextWindow": 8192}).budget
    100
    >>> parse_settings({"budget": "lots"})
    Traceback (most recent call last):
    ...
    livetok.server.lsp.settings.SettingsError: livetok.budget must be an integer, got 'lots'
    >>> said: list[str] = []
    >>> parse_settings({"budget": "lots", "contextWindow": 8192}, problems=said).context_window
    8192
    >>> said
    ["livetok.budget must be an integer, got 'lots'"]

    ``grant_trust`` false (a ``didChangeConfiguration``): ``trustWorkspaceTokenizers: true``
    cannot turn the trust on (it is logged and ignored).

    Runtime complexity: ``O(size of raw)``.
    """
    base = base or Settings()
    if root is not None and base.root != root:
        base = replace(base, root=root)
    if raw is None:
        return base
    if not isinstance(raw, Mapping):
        raise SettingsError(f"the livetok settings must be an object, got {type(raw).__name__}")
    if "livetok" in raw and isinstance(raw["livetok"], Mapping):
        raw = raw["livetok"]
    out = base
    relative = set(base.relative_paths)
    for key, step in _STEPS:
        if key in raw:
            try:
                out = step(raw[key], out, _Context(root, relative, grant_trust))
            except SettingsError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))  # the key keeps its value; the others are read
    return replace(out, relative_paths=frozenset(relative))


@dataclass(frozen=True)
class _Context:
    """What a key's parse step needs besides its value: the folder relative paths are read
    from, the set noting the relative ones, and whether the trust may be turned on."""

    root: str | None
    relative: set[str]
    grant_trust: bool


def _encoding(enc: Any, out: Settings, ctx: _Context) -> Settings:
    """``livetok.encoding``: a name, or a map of language ids, globs and ``default``."""
    if enc is None:
        return replace(out, encoding=DEFAULT_ENCODING, encoding_by_language={},
                       encoding_by_glob=())
    if isinstance(enc, str):
        name = _resolve(_name(enc, "livetok.encoding"), ctx.root, ctx.relative)
        return replace(out, encoding=name, encoding_by_language={}, encoding_by_glob=())
    if not isinstance(enc, Mapping):
        raise SettingsError(
            "livetok.encoding must be a name like 'o200k_base' or a map from language ids "
            f"/ globs / 'default' to names, got {_shown(enc)}")
    langs: dict[str, str] = {}
    globs: list[tuple[str, str]] = []
    default = DEFAULT_ENCODING
    _entries(enc, "livetok.encoding")
    for key, name in enc.items():
        _name(key, "a key of livetok.encoding", "a language id, a glob or 'default'")
        name = _resolve(_name(name, f"livetok.encoding[{_shown(key)}]"), ctx.root, ctx.relative)
        if key in ("default", ""):
            default = name
        elif _GLOB_CHARS & set(key):
            globs.append((key, name))
        else:
            langs[key] = name
    return replace(out, encoding=default, encoding_by_language=langs,
                   encoding_by_glob=tuple(globs))


def _tokenizer(v: Any, out: Settings, ctx: _Context) -> Settings:
    """``livetok.tokenizer``: a path, made absolute (``~`` expanded, relative to the root)."""
    if v is not None:
        _name(v, "livetok.tokenizer", "the path of a tokenizer.json")
    # an absolute path: a path to get_encoding, whatever the file is called
    tok = _path(v, ctx.root) if v else None
    if v and tok is not None and not os.path.isabs(os.path.expanduser(v)):
        ctx.relative.add(tok)
    return replace(out, tokenizer=tok)


def _encoding_by_language(v: Any, out: Settings, ctx: _Context) -> Settings:
    """``livetok.encodingByLanguage``: merged over ``encoding``'s language ids."""
    v = v or {}
    if not isinstance(v, Mapping) or not all(
            isinstance(k, str) and isinstance(x, str) for k, x in v.items()):
        raise SettingsError("livetok.encodingByLanguage must map language ids to encoding "
                            f"names, got {_shown(v)}")
    _entries(v, "livetok.encodingByLanguage")
    names = {_name(k, "a key of livetok.encodingByLanguage", "a language id"):
             _resolve(_name(x, f"livetok.encodingByLanguage[{_shown(k)}]"), ctx.root,
                      ctx.relative)
             for k, x in v.items()}
    return replace(out, encoding_by_language={**out.encoding_by_language, **names})


def _trust(v: Any, out: Settings, ctx: _Context) -> Settings:
    """``livetok.trustWorkspaceTokenizers``: turned on only at the start (``grant_trust``)."""
    trust = _bool(v, "trustWorkspaceTokenizers")
    if trust and not out.trust_workspace_tokenizers and not ctx.grant_trust:
        log.warning("livetok.trustWorkspaceTokenizers: turned on after the start, ignored; "
                    "it takes effect when the server starts (restart it)")
        return out
    return replace(out, trust_workspace_tokenizers=trust)


def _position_encoding(v: Any, out: Settings, ctx: _Context) -> Settings:
    if v is not None and v not in _POSITION_ENCODINGS:
        raise SettingsError("livetok.positionEncoding must be one of "
                            f"{', '.join(_POSITION_ENCODINGS)} or null, got {_shown(v)}")
    return replace(out, position_encoding=v)


def _limit(v: Any, key: str, minimum: int) -> int | None:
    """An integer setting that ``null`` turns off (None), else at least ``minimum``."""
    return None if v is None else _int(v, key, minimum=minimum)


#: each key and its parse step, in the order they are read
_STEPS: tuple[tuple[str, Callable[[Any, Settings, _Context], Settings]], ...] = (
    ("encoding", _encoding),
    ("tokenizer", _tokenizer),
    ("encodingByLanguage", _encoding_by_language),
    ("compare", lambda v, out, ctx: replace(out, compare=_compare(v, ctx.root, ctx.relative))),
    ("contextWindow", lambda v, out, ctx: replace(
        out, context_window=_limit(v, "contextWindow", 1))),
    ("budget", lambda v, out, ctx: replace(out, budget=_limit(v, "budget", 0))),
    ("progressThreshold", lambda v, out, ctx: replace(  # null: its default
        out, progress_threshold=Settings().progress_threshold if v is None
        else _int(v, "progressThreshold", minimum=0))),
    ("maxDocumentSize", lambda v, out, ctx: replace(
        out, max_document_size=_limit(v, "maxDocumentSize", 0))),
    ("semanticTokens", lambda v, out, ctx: replace(out, semantic_tokens=_bool(v,
                                                                              "semanticTokens"))),
    ("trustWorkspaceTokenizers", _trust),
    ("positionEncoding", _position_encoding),
)


def _compare(value: Any, root: str | None, relative: set[str]) -> tuple[str, ...]:
    """``livetok.compare``: the names listed (paths resolved as for ``encoding``), each once,
    in order; :class:`SettingsError` saying how to fix a value that is not such a list.

    >>> _compare(["cl100k_base", "llama-3.1-8b", "cl100k_base"], None, set())
    ('cl100k_base', 'llama-3.1-8b')
    >>> _compare("cl100k_base", None, set())
    Traceback (most recent call last):
    ...
    livetok.server.lsp.settings.SettingsError: livetok.compare must be a list of encoding or model names, e.g. ["cl100k_base", "llama-3.1-8b"], got 'cl100k_base'

    Runtime complexity: ``O(len(value))``.
    """
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise SettingsError('livetok.compare must be a list of encoding or model names, e.g. '
                            f'["cl100k_base", "llama-3.1-8b"], got {_shown(value)}')
    names: dict[str, None] = {}
    if len(value) > MAX_MAP_ENTRIES:
        raise SettingsError(f"livetok.compare lists {len(value):,} names; at most "
                            f"{MAX_COMPARE} are counted side by side: remove some")
    for i, name in enumerate(value):
        what = "an encoding or model name (livetok/listEncodings, `livetok models`)"
        if not isinstance(name, str) or not name.strip():
            raise SettingsError(f"livetok.compare[{i}] must be {what}, got {_shown(name)}")
        names[_resolve(_name(name.strip(), f"livetok.compare[{i}]", what), root,
                       relative)] = None
    if len(names) > MAX_COMPARE:
        raise SettingsError(
            f"livetok.compare lists {len(names)} encodings; at most {MAX_COMPARE} are counted "
            "side by side (each is one more count kept on every keystroke): remove some")
    return tuple(names)


def _bool(v: Any, key: str) -> bool:
    """``v`` (the setting ``key``) as a boolean (null: false); :class:`SettingsError` for
    anything else."""
    if v is not None and not isinstance(v, bool):
        raise SettingsError(f"livetok.{key} must be true or false, got {_shown(v)}")
    return bool(v)


def _shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages (a setting can be huge).

    >>> _shown("x" * 100, 8)
    "'xxxxxx…"

    Runtime complexity: ``O(limit)`` for a string or a number; a map's or a list's first
    entries only (``reprlib``; a map's keys are sorted first).
    """
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


#: :func:`_shown`'s ``repr``: containers and strings cut before they are written out
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 80, 80
