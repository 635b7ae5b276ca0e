// The one-step install (issue 29): the pure decisions, and `ensureBundledServer` driven with a
// fake process runner in a temporary storage folder (no Python needed), and the real
// `spawnRunner` on node itself.

import assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";

import {
  BootstrapDeps,
  Bundle,
  BundledWheel,
  InstallError,
  PROBE_SCRIPT,
  PythonCandidate,
  RunOptions,
  PythonProbe,
  RunResult,
  Stamp,
  TOAST_MAX,
  bundleFits,
  bundledWheel,
  ensureBundledServer,
  envLayout,
  envName,
  isCurrent,
  makeStamp,
  noPythonMessage,
  offlineEnv,
  parseProbe,
  pipArgs,
  readBundle,
  pythonCandidates,
  pythonExtensionInterpreter,
  spawnRunner,
  stampText,
  unusableReason,
  venvArgs,
} from "../bootstrap";
import { ServerCommandError } from "../settings";

const WHEEL = "livetok-0.1.0-py3-none-any.whl";

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "livetok-bootstrap-"));
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function writeWheel(dir: string, bytes = "wheel bytes", name = WHEEL): BundledWheel {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, name), bytes);
  return bundledWheel(dir)!;
}

/** A `bundled/wheels/` as scripts/package-vscode.sh writes it: pip's wheel, a dependency, bundle.json. */
function writeBundle(bundledDir: string, pythons = ["3.11", "3.12", "3.13", "3.14"], extra = ""): Bundle {
  const dir = path.join(bundledDir, "wheels");
  fs.mkdirSync(dir, { recursive: true });
  const wheels: Record<string, string> = {};
  for (const name of [PIP_WHEEL, "regex-2026.1.1-cp311-cp311-manylinux2014_x86_64.whl"]) {
    fs.writeFileSync(path.join(dir, name), name + extra);
    wheels[name] = crypto.createHash("sha256").update(name + extra).digest("hex");
  }
  fs.writeFileSync(path.join(dir, "constraints.txt"), "regex==2026.1.1\n");
  fs.writeFileSync(path.join(dir, "bundle.json"), JSON.stringify({ target: "linux-x64", livetok: WHEEL, pythons, wheels }));
  return readBundle(bundledDir)!;
}

const PIP_WHEEL = "pip-26.3-py3-none-any.whl";

function probeOut(version: number[], venv = true, executable = "/usr/bin/python3.11", real = executable, ensurepip = venv): string {
  return JSON.stringify({ version, executable, real, venv, ensurepip }) + "\n";
}

function probe(version = [3, 11, 2], executable = "/usr/bin/python3.11", real = executable): PythonProbe {
  return parseProbe(probeOut(version, true, executable, real))!;
}

describe("the bundled wheel, the bundle and the stamp", () => {
  test("no bundled folder, or no wheel in it: none", () => {
    assert.equal(bundledWheel(path.join(tmp, "missing")), undefined);
    fs.writeFileSync(path.join(tmp, "README.txt"), "x");
    assert.equal(bundledWheel(tmp), undefined);
    assert.equal(readBundle(tmp), undefined, "no bundle.json: a package of before issue 37");
  });

  test("the wheel's name, version and SHA-256", () => {
    const w = writeWheel(tmp, "abc");
    assert.deepEqual(w, {
      path: path.join(tmp, WHEEL),
      file: WHEEL,
      version: "0.1.0",
      sha256: crypto.createHash("sha256").update("abc").digest("hex"),
    });
  });

  test("the bundle: its wheels' folder, Python versions, pip's wheel, the pins", () => {
    const b = writeBundle(tmp, ["3.11", "3.12"]);
    assert.equal(b.dir, path.join(tmp, "wheels"));
    assert.equal(b.target, "linux-x64");
    assert.deepEqual(b.pythons, ["3.11", "3.12"]);
    assert.equal(b.pip, path.join(tmp, "wheels", PIP_WHEEL));
    assert.equal(b.constraints, path.join(tmp, "wheels", "constraints.txt"));
    assert.match(b.digest, /^[0-9a-f]{64}$/);
    assert.ok(bundleFits(b, [3, 12, 4]));
    assert.ok(!bundleFits(b, [3, 13, 0]), "a Python the package has no wheels for");
    assert.ok(!bundleFits(undefined, [3, 11, 0]));
    assert.notEqual(writeBundle(tmp, ["3.11", "3.12"], "other bytes").digest, b.digest, "other wheels, another digest");
    fs.writeFileSync(path.join(tmp, "wheels", "bundle.json"), "{broken");
    assert.equal(readBundle(tmp), undefined);
  });

  test("an environment is current only for the same wheel, bundle and interpreter (issue 34 row 13)", () => {
    const w = writeWheel(tmp, "abc");
    const b = writeBundle(tmp);
    const want = makeStamp(w, b, probe());
    assert.ok(isCurrent(stampText(want), want));
    assert.ok(!isCurrent(undefined, want), "no stamp: an install that never finished");
    assert.ok(!isCurrent("{not json", want));
    const other = (over: Partial<Stamp>) => stampText({ ...want, ...over });
    assert.ok(!isCurrent(other({ sha256: "0".repeat(64) }), want), "a rebuilt wheel");
    assert.ok(!isCurrent(other({ wheel: "livetok-0.0.9-py3-none-any.whl" }), want), "another version");
    assert.ok(!isCurrent(other({ bundle: "0".repeat(64) }), want), "other dependencies");
    assert.ok(!isCurrent(other({ bundle: null }), want), "dependencies from the index");
    assert.ok(!isCurrent(other({ python: "/ws/.venv/bin/python" }), want), "another interpreter");
    assert.ok(!isCurrent(other({ version: "3.11.9" }), want), "an upgraded Python");
    const before37 = JSON.stringify({ wheel: w.file, sha256: w.sha256, python: "/usr/bin/python3" });
    assert.ok(!isCurrent(before37, want), "a stamp of before issue 37 (no bundle, no interpreter)");
  });

  test("each interpreter has an environment of its own: path as run, real path, version", () => {
    const base = envName(probe());
    assert.match(base, /^env-[0-9a-f]{12}$/);
    assert.equal(envName(probe()), base);
    // a repository's .venv/bin/python links to the same real Python, yet runs its own .pth files
    assert.notEqual(envName(probe([3, 11, 2], "/ws/.venv/bin/python", "/usr/bin/python3.11")), base);
    assert.notEqual(envName(probe([3, 11, 9])), base);
    assert.notEqual(envName(probe([3, 11, 2], "/usr/bin/python3.11", "/opt/py/bin/python3.11")), base);
  });

  test("the environment's Python per platform", () => {
    assert.equal(envLayout("/s", "linux", "env-x").python, path.join("/s", "env-x", "bin", "python"));
    assert.equal(envLayout("/s", "win32", "env-x").python, path.join("/s", "env-x", "Scripts", "python.exe"));
  });

  test("pip's arguments: offline from the bundle, else the index with the bundle's pins", () => {
    const w = writeWheel(tmp);
    const b = writeBundle(tmp);
    const common = ["install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "--no-compile"];
    const pip = path.join(b.pip!, "pip");
    assert.deepEqual(pipArgs(w.path, b, true), ["-I", pip, ...common, "--no-index", "--find-links", b.dir, w.path]);
    assert.deepEqual(pipArgs(w.path, b, false), ["-I", pip, ...common, "--find-links", b.dir, "-c", b.constraints!, w.path]);
    assert.deepEqual(pipArgs(w.path), ["-I", "-m", "pip", ...common, w.path]);
    assert.deepEqual(venvArgs("/s/e"), ["-I", "-m", "venv", "/s/e"]);
    assert.deepEqual(venvArgs("/s/e", false), ["-I", "-m", "venv", "--without-pip", "/s/e"]);
  });

  test("the offline install ignores pip's settings (PIP_* variables, pip.conf)", () => {
    const env = offlineEnv({ PATH: "/bin", PIP_INDEX_URL: "http://127.0.0.1:9/simple", PIP_USER: "1", pip_find_links: "/x", HOME: "/h" });
    assert.deepEqual(env, { PATH: "/bin", HOME: "/h", PIP_CONFIG_FILE: os.devNull });
  });
});

describe("which Python", () => {
  const onPath: Record<string, string> = { python3: "/usr/bin/python3", "python3.12": "/usr/local/bin/python3.12" };
  const which = (name: string) => onPath[name];

  test("python3 and python3.X on PATH first, the Python extension's (workspace's) interpreter last (issue 34 row 13)", async () => {
    const found = await pythonCandidates(true, async () => "/ws/.venv/bin/python", which, "linux");
    assert.deepEqual(found, [
      { command: "/usr/bin/python3", source: "python3 on PATH" },
      { command: "/usr/local/bin/python3.12", source: "python3.12 on PATH" },
      { command: "/ws/.venv/bin/python", source: "the Python extension's interpreter" },
    ]);
  });

  test("in Restricted Mode the Python extension is not asked", async () => {
    let asked = 0;
    const found = await pythonCandidates(false, async () => (asked++, "/ws/.venv/bin/python"), which, "linux");
    assert.equal(asked, 0);
    assert.deepEqual(found.map((c) => c.command), ["/usr/bin/python3", "/usr/local/bin/python3.12"]);
  });

  test("a relative interpreter or one already listed is not tried twice", async () => {
    const rel = await pythonCandidates(true, async () => ".venv/bin/python", which, "linux");
    assert.deepEqual(rel.map((c) => c.command), ["/usr/bin/python3", "/usr/local/bin/python3.12"]);
    const same = await pythonCandidates(true, async () => "/usr/bin/python3", which, "linux");
    assert.deepEqual(same.map((c) => c.source), ["python3 on PATH", "python3.12 on PATH"]);
  });

  test("nothing on PATH: no candidates", async () => {
    assert.deepEqual(await pythonCandidates(true, async () => undefined, () => undefined, "linux"), []);
  });

  test("the probe's report, and what makes a Python unusable", () => {
    const c: PythonCandidate = { command: "/usr/bin/python3", source: "python3 on PATH" };
    assert.deepEqual(parseProbe(probeOut([3, 11, 2])),
      { version: [3, 11, 2], executable: "/usr/bin/python3.11", real: "/usr/bin/python3.11", venv: true, ensurepip: true });
    assert.equal(parseProbe("Python 2.7.18\n"), undefined);
    assert.equal(unusableReason(c, parseProbe(probeOut([3, 11, 2]))), undefined);
    assert.equal(unusableReason(c, parseProbe(probeOut([3, 12, 0]))), undefined);
    assert.equal(unusableReason(c, parseProbe(probeOut([3, 10, 12]))), "python3 on PATH (/usr/bin/python3) is Python 3.10.12");
    assert.equal(unusableReason(c, undefined), "python3 on PATH (/usr/bin/python3) did not run as Python 3");
    assert.equal(
      unusableReason(c, parseProbe(probeOut([3, 11, 2], false))),
      "python3 on PATH (/usr/bin/python3) is Python 3.11.2 without its venv module (Debian/Ubuntu: sudo apt install python3.11-venv)",
    );
    // Debian's python3 without python3-venv: venv imports, ensurepip does not; with the
    // bundled pip wheel that is enough
    const noEnsurepip = parseProbe(probeOut([3, 11, 2], true, "/usr/bin/python3.11", "/usr/bin/python3.11", false));
    assert.equal(unusableReason(c, noEnsurepip), undefined);
    assert.match(unusableReason(c, noEnsurepip, true)!, /without its venv module/);
  });

  test("the message without a usable Python says what to install", () => {
    assert.equal(
      noPythonMessage([], "linux"),
      "livetok: installing the livetok language server needs Python 3.11 or newer, and none was found " +
        "(python3 is not on PATH). Install Python 3.11+ with its venv module (Debian/Ubuntu: sudo apt install " +
        "python3 python3-venv, or python3.11 python3.11-venv where python3 is older; Fedora: sudo dnf install python3), then run " +
        "\"livetok: Restart Server\"; or set \"livetok.server.path\" in your user settings to a livetok you installed.",
    );
    assert.match(noPythonMessage(["a", "b"], "darwin"), /none was found \(a; b\)\. .*brew install python@3\.12/);
    assert.match(noPythonMessage([], "win32"), /winget install Python\.Python\.3\.12/);
  });

  test("the Python extension is asked for the user's interpreter, no folder", async () => {
    const calls: unknown[][] = [];
    let activated = 0;
    const api = {
      environments: {
        getActiveEnvironmentPath: (...args: unknown[]) => (calls.push(args), { path: "/opt/py/bin/python" }),
        resolveEnvironment: async (env: { path: string }) => ({ executable: { uri: { fsPath: env.path } } }),
      },
    };
    const ext = { isActive: false, exports: api, activate: async () => (activated++, api) };
    assert.equal(await pythonExtensionInterpreter(ext, () => undefined), "/opt/py/bin/python");
    assert.equal(activated, 1);
    assert.deepEqual(calls, [[]]);
    const logged: string[] = [];
    const broken = { ...ext, activate: async () => { throw new Error("boom"); } };
    assert.equal(await pythonExtensionInterpreter(broken, (l) => logged.push(l)), undefined);
    assert.match(logged[0], /boom/);
    assert.equal(await pythonExtensionInterpreter(undefined, () => undefined), undefined);
  });
});

/** A recorded process run. */
interface Call {
  command: string;
  args: string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
}

const PY311 = { command: "/usr/bin/python3", source: "python3 on PATH" };

/**
 * Deps for `ensureBundledServer` in `tmp`: Pythons answer the probe as `pythons` says; `venv`
 * makes the environment's Python file; `pip` succeeds unless `pipFails`.
 */
function fakeDeps(over: {
  pythons?: { candidate: PythonCandidate; probe: string | undefined }[];
  pipFails?: boolean;
  duringPip?: () => void;
  cancel?: boolean;
} = {}) {
  const calls: Call[] = [];
  const reports: string[] = [];
  const lines: string[] = [];
  let progressShown = 0;
  const pythons = over.pythons ?? [{ candidate: PY311, probe: probeOut([3, 11, 2]) }];
  const run = async (command: string, args: readonly string[], options: RunOptions): Promise<RunResult> => {
    calls.push({ command, args: [...args], cwd: options.cwd, ...(options.env === undefined ? {} : { env: options.env }) });
    const probed = pythons.find((p) => p.candidate.command === command);
    if (args[1] === "-c") {
      return probed?.probe === undefined ? { code: null, stdout: "", stderr: "ENOENT" } : { code: 0, stdout: probed.probe, stderr: "" };
    }
    if (args[2] === "venv") {
      const root = args[args.length - 1];
      fs.mkdirSync(path.join(root, "bin"), { recursive: true });
      fs.writeFileSync(path.join(root, "bin", "python"), "");
      return { code: 0, stdout: "", stderr: "" };
    }
    if (args.includes("install")) {
      options.onLine?.("Successfully installed livetok-0.1.0");
      over.duringPip?.();
      return over.pipFails ? { code: 1, stdout: "", stderr: "no matching distribution" } : { code: 0, stdout: "", stderr: "" };
    }
    throw new Error(`unexpected run ${command} ${args.join(" ")}`);
  };
  const deps: BootstrapDeps = {
    storageDir: path.join(tmp, "storage"),
    bundledDir: path.join(tmp, "bundled"),
    serverArgs: ["serve"],
    cwd: "/home/u",
    pythons: async () => pythons.map((p) => p.candidate),
    run,
    log: (line) => lines.push(line),
    withProgress: (task) => {
      progressShown++;
      const abort = new AbortController();
      if (over.cancel) {
        abort.abort();
      }
      return task((m) => reports.push(m), abort.signal);
    },
    platform: "linux",
  };
  return { deps, calls, reports, lines, progressShown: () => progressShown };
}

/** The folders in the storage folder (the environments and anything left beside them). */
function storageEntries(deps: BootstrapDeps): string[] {
  return fs.existsSync(deps.storageDir) ? fs.readdirSync(deps.storageDir).sort() : [];
}

/** The environment of the default fake's Python 3.11.2. */
function env311(deps: BootstrapDeps) {
  return envLayout(deps.storageDir, "linux", envName(probe()));
}

describe("ensureBundledServer", () => {
  test("no bundled wheel: nothing installed, no progress", async () => {
    const f = fakeDeps();
    assert.equal(await ensureBundledServer(f.deps), undefined);
    assert.equal(f.progressShown(), 0);
    assert.deepEqual(f.calls, []);
  });

  test("first start: probe, venv without pip, the bundled pip installs every dependency offline (issue 37 item 1)", async () => {
    const f = fakeDeps();
    const wheel = writeWheel(f.deps.bundledDir);
    const bundle = writeBundle(f.deps.bundledDir);
    const cmd = await ensureBundledServer(f.deps);
    const env = env311(f.deps);
    assert.deepEqual(cmd, { command: env.python, args: ["-I", "-m", "livetok.server", "serve"], cwd: "/home/u" });
    assert.equal(f.calls.length, 3);
    const [probeCall, venv, pip] = f.calls;
    assert.deepEqual(probeCall, { command: "/usr/bin/python3", args: ["-I", "-c", PROBE_SCRIPT], cwd: f.deps.storageDir });
    // venv is made from the probed interpreter (sys.executable), in a folder beside the environment
    assert.equal(venv.command, "/usr/bin/python3.11");
    const partial = venv.args[venv.args.length - 1];
    assert.deepEqual(venv.args, ["-I", "-m", "venv", "--without-pip", partial]);
    assert.equal(path.dirname(partial), f.deps.storageDir);
    assert.ok(path.basename(partial).startsWith(`${path.basename(env.root)}.partial-`));
    assert.equal(pip.command, path.join(partial, "bin", "python"));
    assert.deepEqual(pip.args, pipArgs(wheel.path, bundle, true));
    assert.ok(pip.args.includes("--no-index") && pip.args[1] === path.join(bundle.pip!, "pip"));
    assert.equal(pip.env?.PIP_CONFIG_FILE, os.devNull, "pip.conf is not read");
    assert.ok(!Object.keys(pip.env ?? {}).some((k) => k !== "PIP_CONFIG_FILE" && /^PIP_/i.test(k)));
    // in place, stamped, nothing left beside it
    assert.ok(isCurrent(fs.readFileSync(env.stamp, "utf8"), makeStamp(wheel, bundle, probe())));
    assert.deepEqual(storageEntries(f.deps), [path.basename(env.root)]);
    assert.equal(f.progressShown(), 1);
    assert.deepEqual(f.reports, ["creating a Python environment…", "installing livetok 0.1.0 from the bundled wheels…"]);
    assert.ok(f.lines.includes("Successfully installed livetok-0.1.0"), "pip's output goes to the log");
  });

  test("a Python the package has no wheels for: the index, with the bundled wheels and pins", async () => {
    const f = fakeDeps({ pythons: [{ candidate: PY311, probe: probeOut([3, 15, 0], true, "/usr/bin/python3.15") }] });
    const wheel = writeWheel(f.deps.bundledDir);
    const bundle = writeBundle(f.deps.bundledDir);
    await ensureBundledServer(f.deps);
    const pip = f.calls[2];
    assert.deepEqual(pip.args, pipArgs(wheel.path, bundle, false));
    assert.ok(!pip.args.includes("--no-index") && pip.args.includes("-c"));
    assert.equal(pip.env, undefined, "the user's pip settings (index, proxy) apply");
    assert.match(f.lines.join("\n"), /carries wheels for Python 3\.11, 3\.12, 3\.13, 3\.14, not 3\.15\.0/);
  });

  test("a package without bundled dependencies: venv with pip, pip from the index", async () => {
    const f = fakeDeps();
    const wheel = writeWheel(f.deps.bundledDir);
    await ensureBundledServer(f.deps);
    assert.deepEqual(f.calls[1].args.slice(0, 3), ["-I", "-m", "venv"]);
    assert.ok(!f.calls[1].args.includes("--without-pip"));
    assert.deepEqual(f.calls[2].args, pipArgs(wheel.path));
  });

  test("a second start reuses the environment: only the probe, no progress", async () => {
    const first = fakeDeps();
    writeWheel(first.deps.bundledDir);
    writeBundle(first.deps.bundledDir);
    await ensureBundledServer(first.deps);
    const marker = path.join(env311(first.deps).root, "marker");
    fs.writeFileSync(marker, "");
    const second = fakeDeps();
    const cmd = await ensureBundledServer(second.deps);
    assert.equal(cmd?.command, env311(second.deps).python);
    assert.deepEqual(second.calls.map((c) => c.args[1]), ["-c"]);
    assert.equal(second.progressShown(), 0);
    assert.ok(fs.existsSync(marker), "the environment was made anew");
    assert.match(second.lines.join("\n"), /using the installed livetok environment .* \(livetok-0\.1\.0-py3-none-any\.whl, Python 3\.11\.2/);
  });

  test("a workspace's interpreter builds an environment of its own, never the one later windows run (issue 34 row 13)", async () => {
    // a trusted window with no python3 on PATH: the Python extension names the repository's .venv
    const venvPython = { command: "/ws/.venv/bin/python", source: "the Python extension's interpreter" };
    const trusted = fakeDeps({ pythons: [{ candidate: venvPython, probe: probeOut([3, 11, 2], true, "/ws/.venv/bin/python", "/usr/bin/python3.11") }] });
    writeWheel(trusted.deps.bundledDir);
    writeBundle(trusted.deps.bundledDir);
    await ensureBundledServer(trusted.deps);
    const theirs = storageEntries(trusted.deps);
    assert.equal(theirs.length, 1);
    fs.writeFileSync(path.join(trusted.deps.storageDir, theirs[0], "planted"), "");
    // a later window finds python3 (the same real interpreter): it makes and runs its own
    const later = fakeDeps();
    const cmd = await ensureBundledServer(later.deps);
    assert.equal(later.progressShown(), 1, "the workspace's environment was reused");
    assert.equal(cmd?.command, env311(later.deps).python);
    assert.ok(!cmd?.command.startsWith(path.join(later.deps.storageDir, theirs[0])));
    assert.deepEqual(storageEntries(later.deps), [...theirs, path.basename(env311(later.deps).root)].sort());
  });

  test("a new bundled wheel or bundle (another version, rebuilt, other dependencies) installs a new environment", async () => {
    const first = fakeDeps();
    writeWheel(first.deps.bundledDir, "0.1.0 bytes");
    writeBundle(first.deps.bundledDir);
    await ensureBundledServer(first.deps);
    const root = env311(first.deps).root;
    const cases: [string, string, string][] = [["rebuilt bytes", WHEEL, ""], ["0.2.0 bytes", "livetok-0.2.0-py3-none-any.whl", ""],
      ["0.2.0 bytes", "livetok-0.2.0-py3-none-any.whl", "new regex"]];
    for (const [bytes, name, deps] of cases) {
      fs.writeFileSync(path.join(root, "marker"), "");
      fs.rmSync(first.deps.bundledDir, { recursive: true });
      const wheel = writeWheel(first.deps.bundledDir, bytes, name);
      const bundle = writeBundle(first.deps.bundledDir, undefined, deps);
      const again = fakeDeps();
      await ensureBundledServer(again.deps);
      assert.equal(again.calls.length, 3, name);
      assert.ok(isCurrent(fs.readFileSync(env311(again.deps).stamp, "utf8"), makeStamp(wheel, bundle, probe())));
      assert.ok(!fs.existsSync(path.join(root, "marker")));
      assert.deepEqual(storageEntries(again.deps), [path.basename(root)], "the old environment is removed");
    }
  });

  test("an install that never finished (no stamp) is redone", async () => {
    const f = fakeDeps();
    writeWheel(f.deps.bundledDir);
    const env = env311(f.deps);
    fs.mkdirSync(path.dirname(env.python), { recursive: true });
    fs.writeFileSync(env.python, "");
    await ensureBundledServer(f.deps);
    assert.equal(f.calls.length, 3);
  });

  test("the first usable Python is taken", async () => {
    const old = { command: "/usr/bin/python3", source: "python3 on PATH" };
    const good = { command: "/usr/bin/python3.12", source: "python3.12 on PATH" };
    const f = fakeDeps({ pythons: [{ candidate: old, probe: probeOut([3, 9, 2]) }, { candidate: good, probe: probeOut([3, 12, 1], true, "/usr/bin/python3.12") }] });
    writeWheel(f.deps.bundledDir);
    await ensureBundledServer(f.deps);
    assert.deepEqual(f.calls.map((c) => c.command).slice(0, 3), ["/usr/bin/python3", "/usr/bin/python3.12", "/usr/bin/python3.12"]);
  });

  test("only Pythons too old: a short message for the toast, the whole story for the output", async () => {
    const old = { command: "/usr/bin/python3", source: "python3 on PATH" };
    const none = fakeDeps({ pythons: [{ candidate: old, probe: probeOut([3, 9, 2]) }] });
    writeWheel(none.deps.bundledDir);
    await assert.rejects(ensureBundledServer(none.deps), (err: unknown) => {
      assert.ok(err instanceof InstallError && err instanceof ServerCommandError);
      assert.ok(err.message.length <= TOAST_MAX, `${err.message.length} characters`);
      assert.match(err.message, /needs Python 3\.11\+/);
      assert.equal(err.detail, noPythonMessage(["python3 on PATH (/usr/bin/python3) is Python 3.9.2"], "linux"));
      return true;
    });
    assert.deepEqual(storageEntries(none.deps), []);
  });

  test("no Python at all: the documented message in the output", async () => {
    const f = fakeDeps({ pythons: [] });
    writeWheel(f.deps.bundledDir);
    await assert.rejects(ensureBundledServer(f.deps), (err: unknown) =>
      err instanceof InstallError && err.detail === noPythonMessage([], "linux"));
    assert.deepEqual(f.calls, []);
  });

  test("a failed pip install keeps the previous environment and leaves nothing beside it", async () => {
    const first = fakeDeps();
    writeWheel(first.deps.bundledDir, "old");
    await ensureBundledServer(first.deps);
    const oldStamp = fs.readFileSync(env311(first.deps).stamp, "utf8");
    fs.rmSync(first.deps.bundledDir, { recursive: true });
    writeWheel(first.deps.bundledDir, "new");
    const f = fakeDeps({ pipFails: true });
    await assert.rejects(ensureBundledServer(f.deps), (err: unknown) => {
      assert.ok(err instanceof InstallError);
      assert.equal(err.message, "livetok: installing the language server failed (installing livetok, exit 1).");
      assert.ok(err.message.length <= TOAST_MAX);
      assert.match(err.detail!, /the lines above show why/);
      return true;
    });
    assert.equal(fs.readFileSync(env311(f.deps).stamp, "utf8"), oldStamp);
    assert.deepEqual(storageEntries(f.deps), [path.basename(env311(f.deps).root)]);
  });

  test("cancelled: says so, nothing left", async () => {
    const f = fakeDeps({ cancel: true });
    writeWheel(f.deps.bundledDir);
    await assert.rejects(ensureBundledServer(f.deps), /install was cancelled/);
    assert.deepEqual(storageEntries(f.deps), []);
  });

  test("another window that installed the same wheel meanwhile wins; its environment is used", async () => {
    let theirs = "";
    const f = fakeDeps({
      duringPip: () => {
        const env = env311(f.deps);
        fs.mkdirSync(path.dirname(env.python), { recursive: true });
        fs.writeFileSync(env.python, "");
        fs.writeFileSync(path.join(env.root, "theirs"), "");
        theirs = env.root;
        const stamp = makeStamp(bundledWheel(f.deps.bundledDir)!, readBundle(f.deps.bundledDir), probe());
        fs.writeFileSync(env.stamp, stampText(stamp));
      },
    });
    writeWheel(f.deps.bundledDir);
    writeBundle(f.deps.bundledDir);
    await ensureBundledServer(f.deps);
    assert.ok(fs.existsSync(path.join(theirs, "theirs")));
    assert.deepEqual(storageEntries(f.deps), [path.basename(theirs)]);
    assert.ok(f.lines.some((l) => /another window installed/.test(l)));
  });
});

describe("spawnRunner", () => {
  const node = process.execPath;

  test("passes the arguments as they are, with no shell", async () => {
    const args = ["$(touch pwned)", "a b;c", "`x`", "*", "|"];
    const res = await spawnRunner(node, ["-e", "console.log(JSON.stringify(process.argv.slice(1)))", ...args], { cwd: tmp });
    assert.equal(res.code, 0);
    assert.deepEqual(JSON.parse(res.stdout), args);
    assert.deepEqual(fs.readdirSync(tmp), []);
  });

  test("streams lines and reports the exit code; a missing command does not throw", async () => {
    const lines: string[] = [];
    const res = await spawnRunner(node, ["-e", "console.log('one'); console.error('two'); process.exit(3)"], {
      cwd: tmp,
      onLine: (l) => lines.push(l),
    });
    assert.equal(res.code, 3);
    assert.deepEqual(lines.sort(), ["one", "two"]);
    const missing = await spawnRunner(path.join(tmp, "no-such-python"), ["-c", "1"], { cwd: tmp });
    assert.equal(missing.code, null);
    assert.match(missing.stderr, /ENOENT/);
  });

  test("runs with the environment given", async () => {
    const res = await spawnRunner(node, ["-e", "console.log(process.env.PIP_CONFIG_FILE + ' ' + process.env.PIP_INDEX_URL)"],
      { cwd: tmp, env: offlineEnv({ ...process.env, PIP_INDEX_URL: "http://127.0.0.1:9/simple" }) });
    assert.equal(res.stdout.trim(), `${os.devNull} undefined`);
  });

  test("an abort kills the process", async () => {
    const abort = new AbortController();
    const running = spawnRunner(node, ["-e", "setTimeout(() => {}, 600000)"], { cwd: tmp, signal: abort.signal });
    abort.abort();
    const res = await running;
    assert.notEqual(res.code, 0);
  });
});
