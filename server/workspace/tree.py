"""The workspace map's counts as a tree: a file's count in each encoding, and every folder's
total (the sum over the files below it), kept up to date one file at a time.

Each folder holds its totals, so a changed file updates its own node and the folders above
it (``O(depth)``), never a sum over the tree. Folders appear with their first file and go
with their last one (an empty folder has nothing to show).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence

__all__ = ["Node", "Sort", "TokenTree"]

#: how entries of a folder are ordered: largest count first (ties by name), or by name
Sort = Literal["tokens", "name"]


class Node:
    """A file (``children`` is None) or a folder, with its count per encoding (a folder's:
    the sum over its files), its number of files and of bytes."""

    __slots__ = ("name", "tokens", "files", "bytes", "children")

    def __init__(self, name: str, n_encodings: int, folder: bool) -> None:
        self.name = name
        self.tokens = [0] * n_encodings
        self.files = 0
        self.bytes = 0
        self.children: dict[str, Node] | None = {} if folder else None

    @property
    def is_folder(self) -> bool:
        return self.children is not None

    def sorted_children(self, sort: Sort = "tokens", index: int = 0) -> list[Node]:
        """The entries of a folder (none for a file) in ``sort`` order, by the count of
        encoding ``index``.

        Runtime complexity: ``O(k log k)`` for ``k`` entries.
        """
        kids = list((self.children or {}).values())
        if sort == "name":
            return sorted(kids, key=lambda n: n.name)
        return sorted(kids, key=lambda n: (-n.tokens[index], n.name))


class TokenTree:
    """The counts of the files under ``root`` in the encodings ``encodings``.

    >>> t = TokenTree(Path("/r"), ["o200k_base"])
    >>> t.set_file(Path("/r/a/x.md"), [5], 20); t.set_file(Path("/r/a/y.md"), [3], 9)
    >>> t.set_file(Path("/r/z.md"), [1], 4); t.root.tokens, t.node(Path("/r/a")).tokens
    ([9], [8])
    >>> t.remove(Path("/r/a/x.md"))
    True
    >>> t.root.tokens, t.root.files
    ([4], 2)

    Runtime complexity: ``O(depth)`` per change; ``O(files)`` to list or serialize.
    """

    def __init__(self, root: Path, encodings: Sequence[str]) -> None:
        self.root_path = root
        self._prefix = str(root).rstrip(os.sep) + os.sep
        self.encodings = list(encodings)
        self.root = Node(root.name or str(root), len(self.encodings), True)
        #: the folder of the last file set and its chain of nodes from the root (dropped
        #: whenever a node is taken out)
        self._last: tuple[str, list[Node]] | None = None

    def _parts(self, path: Path | str) -> list[str]:
        s = str(path)
        if s.startswith(self._prefix):  # (string work: pathlib's relative_to is 10x slower)
            return s[len(self._prefix):].split(os.sep)
        return list(Path(path).relative_to(self.root_path).parts)  # the root, or a ValueError

    def node(self, path: Path | str) -> Node | None:
        """The node of ``path`` (a file or a folder below the root, or the root), or None.

        Runtime complexity: ``O(depth)``.
        """
        n: Node | None = self.root
        for part in self._parts(path):
            if n is None or n.children is None:
                return None
            n = n.children.get(part)
        return n

    def set_file(self, path: Path | str, tokens: Sequence[int], size: int) -> None:
        """Put the file ``path`` with its counts (one per encoding) and size in the tree, in
        place of its old ones; its folders' totals follow.

        Runtime complexity: ``O(depth)``.
        """
        if len(tokens) != len(self.encodings):
            raise ValueError(f"set_file({path}): a file below {self.root_path} with "
                             f"{len(self.encodings)} count(s), got {len(tokens)}")
        s = str(path)
        folder, _, name = s.rpartition(os.sep)
        if self._last is not None and self._last[0] == folder and s.startswith(self._prefix):
            chain = self._last[1]  # (the walk gives a folder's files one after another)
        else:
            parts = self._parts(s)
            if not parts:
                raise ValueError(f"set_file({path}): a file below {self.root_path}, not it")
            name = parts[-1]
            chain = self._chain(parts[:-1])
            self._last = (folder, chain)
        kids = chain[-1].children
        assert kids is not None
        old = kids.get(name)
        if old is not None and old.children is not None:  # was a folder: now a file
            self._unlink(chain, name, prune=False)
            self._last = (folder, chain)
            old = None
        leaf = old if old is not None else Node(name, len(self.encodings), False)
        kids[name] = leaf
        d_tokens = [t - o for t, o in zip(tokens, leaf.tokens)]
        d_files, d_bytes = (0 if old is not None else 1), size - leaf.bytes
        leaf.tokens, leaf.files, leaf.bytes = list(tokens), 1, size
        for node in chain:
            totals = node.tokens  # (in place: no node shares its list)
            for i, d in enumerate(d_tokens):
                totals[i] += d
            node.files += d_files
            node.bytes += d_bytes

    def _chain(self, folders: list[str]) -> list[Node]:
        """The root and the folders ``folders`` below it, made if need be (a file in the way
        is taken out: a name is a file or a folder, never both)."""
        chain = [self.root]
        for part in folders:
            kids = chain[-1].children
            assert kids is not None  # a file's name is not reused as a folder (see below)
            nxt = kids.get(part)
            if nxt is None or nxt.children is None:  # new, or was a file: now a folder
                if nxt is not None:
                    self._unlink(chain, part, prune=False)  # (a file goes in below it)
                nxt = kids[part] = Node(part, len(self.encodings), True)
            chain.append(nxt)
        return chain

    def remove(self, path: Path | str) -> bool:
        """Take the file or folder ``path`` out of the tree (and folders left empty); False
        when it was not there.

        Runtime complexity: ``O(depth)``.
        """
        parts = self._parts(path)
        self._last = None
        if not parts:
            had = self.root.files > 0
            self.root = Node(self.root.name, len(self.encodings), True)
            return had
        chain = [self.root]
        for part in parts[:-1]:
            nxt = (chain[-1].children or {}).get(part)
            if nxt is None or nxt.children is None:
                return False
            chain.append(nxt)
        if parts[-1] not in (chain[-1].children or {}):
            return False
        self._unlink(chain, parts[-1])
        return True

    def _unlink(self, chain: list[Node], name: str, *, prune: bool = True) -> None:
        """Remove entry ``name`` of ``chain[-1]``, subtracting it from every folder of
        ``chain``; with ``prune``, folders left without files go too (without: the caller
        puts a file below them, and they must stay attached)."""
        kids = chain[-1].children
        assert kids is not None
        self._last = None  # (a folder of it may go)
        gone = kids.pop(name)
        for folder in chain:
            folder.tokens = [t - g for t, g in zip(folder.tokens, gone.tokens)]
            folder.files -= gone.files
            folder.bytes -= gone.bytes
        for i in range(len(chain) - 1, 0, -1):
            if chain[i].files or not prune:
                break
            parent_kids = chain[i - 1].children
            assert parent_kids is not None
            parent_kids.pop(chain[i].name, None)

    def files(self) -> Iterator[tuple[Path, Node]]:
        """Every file and its node, in name order.

        Runtime complexity: ``O(files + folders)``.
        """
        for path, _depth, node in self.walk(sort="name"):
            if not node.is_folder:
                yield path, node

    def walk(self, sort: Sort = "tokens", index: int = 0, *, start: Path | None = None
             ) -> Iterator[tuple[Path, int, Node]]:
        """``(path, depth, node)`` of the folder ``start`` (default: the root; depth 0) and
        everything below it, each folder before its entries, entries in ``sort`` order.

        Runtime complexity: ``O(files + folders)`` plus the sorts.
        """
        start = start if start is not None else self.root_path
        top = self.node(start)
        if top is None:
            return
        stack: list[tuple[Path, int, Node]] = [(start, 0, top)]
        while stack:
            path, depth, node = stack.pop()
            yield path, depth, node
            kids = node.sorted_children(sort, index)
            stack.extend((path / k.name, depth + 1, k) for k in reversed(kids))

    def to_json(self, *, start: Path | None = None, depth: int | None = None,
                sort: Sort = "tokens", index: int = 0,
                label: Any = None) -> dict[str, Any] | None:
        """The folder or file ``start`` (default: the root) as nested JSON objects:
        ``name``, ``path`` (``label(path)``, default ``str``), ``kind`` (``folder``/``file``),
        ``tokens`` (one count per encoding, in ``encodings``' order), ``files``, ``bytes``
        and, for a folder down to ``depth`` levels (None: all), ``children`` in ``sort``
        order. None when ``start`` is not in the tree.

        Runtime complexity: ``O(nodes shown)`` plus the sorts.
        """
        start = start if start is not None else self.root_path
        node = self.node(start)
        show = label if label is not None else str
        if node is None:
            return None

        def obj(path: Path, n: Node, left: int | None) -> dict[str, Any]:
            out: dict[str, Any] = {"name": n.name, "path": show(path),
                                   "kind": "folder" if n.is_folder else "file",
                                   "tokens": list(n.tokens), "files": n.files, "bytes": n.bytes}
            if n.is_folder and (left is None or left > 0):
                out["children"] = [obj(path / k.name, k, None if left is None else left - 1)
                                   for k in n.sorted_children(sort, index)]
            return out

        return obj(start, node, depth)

    def _check(self) -> None:
        """Assert every folder's totals are the sums of its entries' and no folder is empty."""

        def check(n: Node, path: str) -> None:
            if n.children is None:
                assert n.files == 1, (path, n.files)
                return
            for k in n.children.values():
                check(k, f"{path}/{k.name}")
            sums = [sum(k.tokens[i] for k in n.children.values()) for i in range(len(n.tokens))]
            assert n.tokens == sums, (path, n.tokens, sums)
            assert n.files == sum(k.files for k in n.children.values()), path
            assert n.bytes == sum(k.bytes for k in n.children.values()), path
            assert n is self.root or n.files > 0, f"empty folder {path}"

        check(self.root, str(self.root_path))
