"""Build, unit-test and package the VS Code extension in ``demo/vscode``.

Runs the same steps a developer would (``npm ci``, ``npm test``, which compiles with ``tsc``
first, ``vsce package``) in
a copy of the extension's committed files, so a stale ``node_modules/`` or ``out/`` in the work
tree can neither help nor break it, then checks the ``.vsix`` holds what VS Code loads.
Needs ``node`` and ``npm`` and the npm registry; skipped (with the reason) without the tools,
except the checks of ``package.json`` alone (the settings a workspace may not set, issue 26).
Takes about 35 s on an idle 2-core machine with a warm npm cache (1.5 minutes on a busy one),
most of it ``npm ci`` (longer when the cache is cold); the ``node_modules`` it installs is kept
(in ``~/.cache/livetok-test-data``, keyed by the lock file and the tools' versions) and hard-linked
into later runs, which take about 15 s. The compiled ``out/`` and the ``.vsix`` are kept
the same way, keyed by every file of the extension's copy and the tools' versions (issue 36
decision 4): a run on unchanged sources copies them and runs only the unit tests on them
(``node --test``, what ``npm test`` runs after its ``tsc``); ``LIVETOK_VSCODE_REBUILD=1``
builds anyway. The extension's unit tests include the
settings race of issue 19 (``src/test/extension.test.ts``, "while the server starts"), so the
default run covers it; ``tests/e2e/test_editor_vscode.py`` (slow) checks it in a real VS Code.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "demo" / "vscode"

#: why the build cannot run here, or None
NO_NODE = (
    "node and npm are needed to build the VS Code extension (not found on PATH)"
    if shutil.which("npm") is None or shutil.which("node") is None else None
)


def run(cmd: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; on failure, fail the test with its output (not just the exit code)."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(
            f"{' '.join(cmd)} exited {proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
        )
    return proc


_BUILDS: dict[str, dict[str, object]] = {}


def _kept(kind: str, work: Path, names: list[str]) -> Path:
    """Where the output of a build step for ``work`` is kept between runs (``kind``: a folder
    of ``~/.cache/livetok-test-data``), keyed by the SHA-256 of the files ``names`` (relative
    to ``work``: their paths and bytes) and the versions of node and npm."""
    import hashlib

    h = hashlib.sha256()
    for name in names:
        h.update(name.encode() + b"\0" + (work / name).read_bytes() + b"\0")
    h.update(_tool_versions())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "livetok-test-data" / kind / h.hexdigest()[:24]


@functools.cache
def _tool_versions() -> bytes:
    return b"".join(subprocess.run([tool, "--version"], capture_output=True, timeout=60).stdout
                    for tool in ("node", "npm"))


def _kept_node_modules(work: Path) -> Path:
    """Where the ``node_modules`` that ``npm ci`` installs for ``work`` is kept: keyed by
    ``package.json`` and ``package-lock.json`` (and node's and npm's versions), so a kept copy
    is exactly what ``npm ci`` would install now (its 20 s, most of the build, are spent once
    per lock file)."""
    return _kept("vscode-node_modules", work, ["package.json", "package-lock.json"])


def _kept_build(work: Path) -> Path:
    """Where the compiled extension (``out/``) and its ``.vsix`` are kept: keyed by every file
    of the copy (sources, manifest, lock file, ``tsconfig.json``, ``.vscodeignore``: all that
    ``tsc`` and ``vsce`` read besides ``node_modules``, itself fixed by the lock file) and
    node's and npm's versions (issue 36 decision 4: the build cached by the hash of its
    sources). A change to any of them builds again."""
    names = sorted(str(f.relative_to(work)) for f in work.rglob("*") if f.is_file())
    return _kept("vscode-build", work, names)


def _keep(installed: Path, kept: Path, *, only: tuple[str, ...] | None = None) -> None:
    """Copy ``installed`` (the entries ``only`` of it, if given) to ``kept`` (best effort;
    renamed into place whole, so a parallel run sees all of it or nothing)."""
    part = kept.with_name(f"{kept.name}.part-{os.getpid()}")

    def left_out(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if only is not None and folder == str(installed) and n not in only]
    try:
        shutil.copytree(installed, part, symlinks=True, ignore=left_out)
        part.rename(kept)
    except OSError:
        shutil.rmtree(part, ignore_errors=True)


def _link_tree(kept: Path, dest: Path) -> None:
    """``kept`` (a kept ``node_modules``) at ``dest``: its files hard-linked, not copied (15,000
    files, 167 MB: copying took 60 s on a busy machine), or copied where links cannot be made
    (another file system). Nothing the build and the tests run writes into ``node_modules``."""
    try:
        shutil.copytree(kept, dest, symlinks=True, copy_function=os.link)
    except (OSError, shutil.Error):
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(kept, dest, symlinks=True)


def build_extension(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Copy the extension, run the four build steps, and keep their output; once per session
    (``tests/e2e/test_editor_vscode.py`` installs the same ``.vsix`` into code-server)."""
    if "steps" in _BUILDS:
        return _BUILDS["steps"]
    work = tmp_path_factory.mktemp("vscode") / "livetok-vscode"
    shutil.copytree(
        EXTENSION, work, ignore=shutil.ignore_patterns("node_modules", "out", "*.vsix", "bundled")
    )
    assert (work / "package-lock.json").exists(), "demo/vscode/package-lock.json must be committed"
    steps: dict[str, object] = {"dir": work}
    built = _kept_build(work)
    kept = _kept_node_modules(work)
    if kept.is_dir():  # what `npm ci` installed from this very lock file, node and npm
        _link_tree(kept, work / "node_modules")
        steps["ci"] = f"node_modules copied from {kept}"
    else:
        # --prefer-offline: take package metadata from npm's cache when it has it instead of
        # revalidating each of the ~260 packages with the registry (halves the run on a warm
        # cache)
        steps["ci"] = run(["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline"], work,
                          timeout=300)
        _keep(work / "node_modules", kept)
    manifest = json.loads((work / "package.json").read_text())
    vsix = work / f"{manifest['name']}-{manifest['version']}.vsix"
    if built.is_dir() and not os.environ.get("LIVETOK_VSCODE_REBUILD"):
        # the same sources compiled and packaged by the same tools before: their out/ and
        # .vsix; the unit tests still run, on that out/ (`npm test` without its `tsc`)
        shutil.copytree(built / "out", work / "out")
        shutil.copy2(built / vsix.name, vsix)
        steps["package"] = f"out/ and {vsix.name} copied from {built}"
        tests = sorted(str(f.relative_to(work)) for f in (work / "out" / "test").glob("*.test.js"))
        steps["test"] = run(["node", "--test", *tests], work, timeout=180)
    else:
        # `npm test` compiles first (its "pretest" script is `tsc -p .`, as "vscode:prepublish"
        # is for `vsce package`): a `tsc` of its own here was a third compile of the same sources
        steps["test"] = run(["npm", "test"], work, timeout=180)
        steps["package"] = run(
            ["npx", "--no-install", "vsce", "package", "--allow-missing-repository"], work, timeout=180
        )
        _keep(work, built, only=("out", vsix.name))
    steps["vsix"] = vsix
    _BUILDS["steps"] = steps
    return steps


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The build steps' output (see ``build_extension``)."""
    if NO_NODE:
        pytest.skip(NO_NODE)
    return build_extension(tmp_path_factory)


def test_typescript_compiles(built: dict[str, object]) -> None:
    out = built["dir"] / "out"  # type: ignore[operator]
    for name in ("extension.js", "status.js", "settings.js", "test/status.test.js"):
        assert (out / name).is_file(), f"tsc did not emit out/{name}"


def test_unit_tests_pass_and_ran(built: dict[str, object]) -> None:
    output = built["test"].stdout  # type: ignore[attr-defined]
    passed = re.search(r"^# pass (\d+)$", output, re.M)
    failed = re.search(r"^# fail (\d+)$", output, re.M)
    assert passed and failed, f"no node:test summary in npm test output:\n{output[-3000:]}"
    assert int(failed.group(1)) == 0
    # subtle: a glob that matched no file would "pass" with zero tests
    assert int(passed.group(1)) >= 50, f"only {passed.group(1)} tests ran"


def assert_passed(built: dict[str, object], *names: str) -> None:
    """Each of the extension's unit tests ``names`` ran and passed (``npm test``'s TAP output)."""
    output = built["test"].stdout  # type: ignore[attr-defined]
    for name in names:
        assert re.search(rf"^\s*ok \d+ - {re.escape(name)}$", output, re.M), f"not passed: {name}"


def test_settings_race_unit_tests_ran(built: dict[str, object]) -> None:
    """The extension's own tests of issue 19 (a setting changed while the server starts or
    restarts is sent once it runs; nothing logged for an editor opened meanwhile) ran and
    passed: they fail on the extension before the fix."""
    assert_passed(
        built,
        "a setting changed during the first start reaches the server once it runs",
        "a setting changed 0.2 s after Restart Server reaches the new server",
        "an editor opened while the server starts is counted once it runs, nothing logged",
        "the server's clean exit on restart is logged as info, not as an error",
    )


def test_vsix_contains_what_vscode_loads(built: dict[str, object]) -> None:
    work: Path = built["dir"]  # type: ignore[assignment]
    manifest = json.loads((work / "package.json").read_text())
    vsix = work / f"{manifest['name']}-{manifest['version']}.vsix"
    assert vsix.is_file(), f"vsce package did not write {vsix.name}"
    with zipfile.ZipFile(vsix) as zf:
        names = set(zf.namelist())
        packaged = json.loads(zf.read("extension/package.json"))
    main = "extension/" + packaged["main"].removeprefix("./")
    assert main in names, f"the manifest's main {packaged['main']} is not in the vsix"
    assert "extension/out/status.js" in names
    # the Tokens view's container icon (issue 37 item 9)
    assert "extension/media/tokens.svg" in names
    # the runtime dependency ships; build and test files do not
    assert "extension/node_modules/vscode-languageclient/package.json" in names
    assert not any(n.startswith("extension/out/test/") for n in names)
    assert not any(n.startswith("extension/src/") for n in names)
    assert not any("node_modules/typescript/" in n or "node_modules/@vscode/vsce/" in n for n in names)
    commands = {c["command"] for c in packaged["contributes"]["commands"]}
    assert {"livetok.pickEncoding", "livetok.toggleSemanticTokens"} <= commands


# -- issue 26: a cloned repository is untrusted input ---------------------------------------

#: the settings that choose what runs, and the one that lets a workspace's tokenizers load
RESTRICTED = ("livetok.server.path", "livetok.server.pythonPath", "livetok.server.args",
              "livetok.trustWorkspaceTokenizers")


def _manifest() -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    return manifest


def test_workspace_cannot_set_the_server_command_or_trust() -> None:
    """VS Code reads an ``application``-scoped setting from the user's settings only, never
    from a workspace's ``.vscode/settings.json``, and the same way in a local and a remote
    window (issue 37 item 2: in a remote window a ``machine`` value in the user settings was
    dropped once they were read again, so a restart lost the configured server);
    ``machine-overridable``, ``window`` or ``resource`` would let a cloned repository choose
    what runs."""
    props = _manifest()["contributes"]["configuration"]["properties"]
    for key in RESTRICTED:
        assert props[key].get("scope") == "application", f"{key}: {props[key].get('scope')!r}"
    trust = props["livetok.trustWorkspaceTokenizers"]
    assert trust["type"] == "boolean" and trust["default"] is False


def test_restricted_mode_ignores_the_workspace_values() -> None:
    """``untrustedWorkspaces``: the extension runs in Restricted Mode with limited support, and
    VS Code ignores a workspace's value of each setting listed."""
    untrusted = _manifest()["capabilities"]["untrustedWorkspaces"]
    assert untrusted["supported"] == "limited"
    assert untrusted["description"]
    assert set(RESTRICTED) | {"livetok.tokenizer"} <= set(untrusted["restrictedConfigurations"])


def test_no_relative_server_path_is_resolved_against_the_workspace(
        built: dict[str, object]) -> None:
    """The extension's own tests of issue 26 ran and passed: a relative ``server.path`` or
    ``pythonPath`` is refused (no server started, the reason shown), the server runs in the
    home folder (``python -m`` would import a repository's ``livetok/`` from its working
    folder), ``trustWorkspaceTokenizers`` is sent only in a trusted workspace. They fail on
    the extension before the change."""
    assert_passed(
        built,
        "a relative server path is refused, never resolved against the workspace (issue 26)",
        "a relative livetok.server.path is refused with its reason, nothing started",
        "the server starts in the home folder with a workspace open",
        "trustWorkspaceTokenizers is sent only when set and the workspace is trusted",
        "trustWorkspaceTokenizers reaches the server only once the workspace is trusted",
        "the server command and the trust setting are application-scoped (user settings, also in a remote window)",
    )


def test_offline_install_restart_and_view_unit_tests_ran(built: dict[str, object]) -> None:
    """The extension's own tests of issue 37 items 1, 2, 9 and issue 34 row 13 ran and passed:
    the install reads only the bundled wheels (``--no-index``, pip's settings ignored), a
    Python the package has no wheels for falls back to the index with the pins, each
    interpreter has an environment of its own (a workspace's ``.venv`` never builds the one a
    later window runs), failures fit a toast and offer *Show Output* and *Retry*, the install
    shows in the status bar, a restart keeps the configured server, the Tokens view opens
    once and leads with the workspace's total."""
    assert_passed(
        built,
        "first start: probe, venv without pip, the bundled pip installs every dependency offline (issue 37 item 1)",
        "a Python the package has no wheels for: the index, with the bundled wheels and pins",
        "the offline install ignores pip's settings (PIP_* variables, pip.conf)",
        "an environment is current only for the same wheel, bundle and interpreter (issue 34 row 13)",
        "a workspace's interpreter builds an environment of its own, never the one later windows run (issue 34 row 13)",
        "python3 and python3.X on PATH first, the Python extension's (workspace's) interpreter last (issue 34 row 13)",
        "only Pythons too old: a short message for the toast, the whole story for the output",
        "without a Python: a short error with Show Output and Retry, the documented message in the output; nothing started",
        "Retry on the error restarts: once a Python is there, the install runs (in the status bar too) and the server starts",
        "Restart Server and a settings change keep the configured server (issue 37 item 2)",
        "the Tokens view's container opens on the first start only, and the editor keeps the focus (issue 37 item 9)",
        "the sum over every workspace folder, first, whatever the order; none without a folder",
    )
