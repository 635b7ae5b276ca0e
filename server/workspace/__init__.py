"""The workspace token map (issue 29): per-file counts and per-folder totals of a folder.

Pure (no LSP library): ``livetok count -r`` and the language server's
``livetok/workspaceCounts`` share it. One module per concept:

- :mod:`.scan`: which files are in the map (the walk of ``livetok check``, ``.gitignore``,
  the ``include``/``exclude`` globs of the budget file, limits), and why the others are not;
- :mod:`.classify`: reading one file, bounded, and whether it is text;
- :mod:`.count_store`: counts kept across runs, keyed by the SHA-256 of a file's bytes and the
  encoding's identity, in the user's cache folder;
- :mod:`.counting`: counting many files, the cache first, the misses by forked processes;
- :mod:`.tree`: the counts as a tree of folders with totals, updated file by file;
- :mod:`.tokenmap`: the map of one folder, built and kept up to date.

``docs/workspace.md`` describes what the user sees.
"""
