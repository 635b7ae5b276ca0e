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
  BundledWheel,
  InstallError,
  PROBE_SCRIPT,
  PythonCandidate,
  RunOptions,
  RunResult,
  bundledWheel,
  ensureBundledServer,
  envLayout,
  isCurrent,
  noPythonMessage,
  parseProbe,
  pipArgs,
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

function probeOut(version: number[], venv = true, executable = "/usr/bin/python3.11"): string {
  return JSON.stringify({ version, executable, venv }) + "\n";
}

describe("the bundled wheel and the stamp", () => {
  test("no bundled folder, or no wheel in it: none", () => {
    assert.equal(bundledWheel(path.join(tmp, "missing")), undefined);
    fs.writeFileSync(path.join(tmp, "README.txt"), "x");
    assert.equal(bundledWheel(tmp), undefined);
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

  test("an environment is current only for the same file name and bytes", () => {
    const w = writeWheel(tmp, "abc");
    assert.ok(isCurrent(stampText(w, "/usr/bin/python3"), w));
    assert.ok(!isCurrent(undefined, w), "no stamp: an install that never finished");
    assert.ok(!isCurrent("{not json", w));
    assert.ok(!isCurrent(stampText({ ...w, sha256: "0".repeat(64) }, "/usr/bin/python3"), w), "a rebuilt wheel");
    assert.ok(!isCurrent(stampText({ ...w, file: "livetok-0.0.9-py3-none-any.whl" }, "/p"), w), "another version");
  });

  test("the environment's Python per platform", () => {
    assert.equal(envLayout("/s", "linux").python, path.join("/s", "env", "bin", "python"));
    assert.equal(envLayout("/s", "win32").python, path.join("/s", "env", "Scripts", "python.exe"));
  });
});

describe("which Python", () => {
  const onPath: Record<string, string> = { python3: "/usr/bin/python3", "python3.12": "/usr/local/bin/python3.12" };
  const which = (name: string) => onPath[name];

  test("the Python extension's interpreter first, then python3 and python3.X on PATH", async () => {
    const found = await pythonCandidates(true, async () => "/home/u/.venvs/tools/bin/python", which, "linux");
    assert.deepEqual(found, [
      { command: "/home/u/.venvs/tools/bin/python", source: "the Python extension's interpreter" },
      { command: "/usr/bin/python3", source: "python3 on PATH" },
      { command: "/usr/local/bin/python3.12", source: "python3.12 on PATH" },
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
    assert.deepEqual(same.map((c) => c.source), ["the Python extension's interpreter", "python3.12 on PATH"]);
  });

  test("nothing on PATH: no candidates", async () => {
    assert.deepEqual(await pythonCandidates(true, async () => undefined, () => undefined, "linux"), []);
  });

  test("the probe's report, and what makes a Python unusable", () => {
    const c: PythonCandidate = { command: "/usr/bin/python3", source: "python3 on PATH" };
    assert.deepEqual(parseProbe(probeOut([3, 11, 2])), { version: [3, 11, 2], executable: "/usr/bin/python3.11", venv: true });
    assert.equal(parseProbe("Python 2.7.18\n"), undefined);
    assert.equal(unusableReason(c, parseProbe(probeOut([3, 11, 2]))), undefined);
    assert.equal(unusableReason(c, parseProbe(probeOut([3, 12, 0]))), undefined);
    assert.equal(unusableReason(c, parseProbe(probeOut([3, 10, 12]))), "python3 on PATH (/usr/bin/python3) is Python 3.10.12");
    assert.equal(unusableReason(c, undefined), "python3 on PATH (/usr/bin/python3) did not run as Python 3");
    assert.equal(
      unusableReason(c, parseProbe(probeOut([3, 11, 2], false))),
      "python3 on PATH (/usr/bin/python3) is Python 3.11.2 without its venv module (Debian/Ubuntu: sudo apt install python3.11-venv)",
    );
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
}

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
  const pythons = over.pythons ?? [
    { candidate: { command: "/usr/bin/python3", source: "python3 on PATH" }, probe: probeOut([3, 11, 2]) },
  ];
  const run = async (command: string, args: readonly string[], options: RunOptions): Promise<RunResult> => {
    calls.push({ command, args: [...args], cwd: options.cwd });
    const probed = pythons.find((p) => p.candidate.command === command);
    if (args[1] === "-c") {
      return probed?.probe === undefined ? { code: null, stdout: "", stderr: "ENOENT" } : { code: 0, stdout: probed.probe, stderr: "" };
    }
    if (args[2] === "venv") {
      const root = args[3];
      fs.mkdirSync(path.join(root, "bin"), { recursive: true });
      fs.writeFileSync(path.join(root, "bin", "python"), "");
      return { code: 0, stdout: "", stderr: "" };
    }
    if (args[2] === "pip") {
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

/** The folders in the storage folder (the environment and anything left beside it). */
function storageEntries(deps: BootstrapDeps): string[] {
  return fs.existsSync(deps.storageDir) ? fs.readdirSync(deps.storageDir).sort() : [];
}

describe("ensureBundledServer", () => {
  test("no bundled wheel: nothing installed, no progress", async () => {
    const f = fakeDeps();
    assert.equal(await ensureBundledServer(f.deps), undefined);
    assert.equal(f.progressShown(), 0);
    assert.deepEqual(f.calls, []);
  });

  test("first start: probe, venv, pip install of the wheel (fixed argument lists), stamp, with progress", async () => {
    const f = fakeDeps();
    const wheel = writeWheel(f.deps.bundledDir);
    const cmd = await ensureBundledServer(f.deps);
    const env = envLayout(f.deps.storageDir, "linux");
    assert.deepEqual(cmd, { command: env.python, args: ["-I", "-m", "livetok.server", "serve"], cwd: "/home/u" });
    assert.equal(f.calls.length, 3);
    const [probe, venv, pip] = f.calls;
    assert.deepEqual(probe, { command: "/usr/bin/python3", args: ["-I", "-c", PROBE_SCRIPT], cwd: f.deps.storageDir });
    // venv is made from the probed interpreter (sys.executable), in a folder beside env
    assert.equal(venv.command, "/usr/bin/python3.11");
    const partial = venv.args[3];
    assert.deepEqual(venv.args, venvArgs(partial));
    assert.deepEqual(venv.args.slice(0, 3), ["-I", "-m", "venv"]);
    assert.equal(path.dirname(partial), f.deps.storageDir);
    assert.match(path.basename(partial), /^env\.partial-/);
    assert.deepEqual(pip, { command: path.join(partial, "bin", "python"), args: pipArgs(wheel.path), cwd: f.deps.storageDir });
    assert.deepEqual(pip.args, ["-I", "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off", wheel.path]);
    // in place, stamped, nothing left beside it
    assert.ok(isCurrent(fs.readFileSync(env.stamp, "utf8"), wheel));
    assert.deepEqual(storageEntries(f.deps), ["env"]);
    assert.equal(f.progressShown(), 1);
    assert.deepEqual(f.reports, [
      "looking for Python…",
      "creating a Python environment…",
      "installing livetok 0.1.0 and its dependencies…",
    ]);
    assert.ok(f.lines.includes("Successfully installed livetok-0.1.0"), "pip's output goes to the log");
  });

  test("a second start reuses the environment: no process, no progress", async () => {
    const first = fakeDeps();
    writeWheel(first.deps.bundledDir);
    await ensureBundledServer(first.deps);
    const marker = path.join(first.deps.storageDir, "env", "marker");
    fs.writeFileSync(marker, "");
    const second = fakeDeps();
    const cmd = await ensureBundledServer(second.deps);
    assert.equal(cmd?.command, envLayout(second.deps.storageDir, "linux").python);
    assert.deepEqual(second.calls, []);
    assert.equal(second.progressShown(), 0);
    assert.ok(fs.existsSync(marker), "the environment was made anew");
    assert.match(second.lines.join("\n"), /using the installed livetok environment .* \(livetok-0\.1\.0-py3-none-any\.whl\)/);
  });

  test("a new bundled wheel (another version, or rebuilt) installs a new environment", async () => {
    const first = fakeDeps();
    writeWheel(first.deps.bundledDir, "0.1.0 bytes");
    await ensureBundledServer(first.deps);
    fs.writeFileSync(path.join(first.deps.storageDir, "env", "marker"), "");
    for (const [bytes, name] of [["rebuilt bytes", WHEEL], ["0.2.0 bytes", "livetok-0.2.0-py3-none-any.whl"]]) {
      fs.rmSync(first.deps.bundledDir, { recursive: true });
      const wheel = writeWheel(first.deps.bundledDir, bytes, name);
      const again = fakeDeps();
      await ensureBundledServer(again.deps);
      assert.equal(again.calls.length, 3, name);
      assert.ok(isCurrent(fs.readFileSync(envLayout(again.deps.storageDir).stamp, "utf8"), wheel));
      assert.ok(!fs.existsSync(path.join(again.deps.storageDir, "env", "marker")));
      assert.deepEqual(storageEntries(again.deps), ["env"], "the old environment is removed");
    }
  });

  test("an install that never finished (no stamp) is redone", async () => {
    const f = fakeDeps();
    writeWheel(f.deps.bundledDir);
    fs.mkdirSync(path.join(f.deps.storageDir, "env", "bin"), { recursive: true });
    fs.writeFileSync(path.join(f.deps.storageDir, "env", "bin", "python"), "");
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

  test("only Pythons too old: the message names what was found", async () => {
    const old = { command: "/usr/bin/python3", source: "python3 on PATH" };
    const none = fakeDeps({ pythons: [{ candidate: old, probe: probeOut([3, 9, 2]) }] });
    writeWheel(none.deps.bundledDir);
    await assert.rejects(ensureBundledServer(none.deps), (err: unknown) => {
      assert.ok(err instanceof InstallError && err instanceof ServerCommandError);
      assert.equal(err.message, noPythonMessage(["python3 on PATH (/usr/bin/python3) is Python 3.9.2"], "linux"));
      return true;
    });
    assert.deepEqual(storageEntries(none.deps), []);
  });

  test("no Python at all: the documented message", async () => {
    const f = fakeDeps({ pythons: [] });
    writeWheel(f.deps.bundledDir);
    await assert.rejects(ensureBundledServer(f.deps), { message: noPythonMessage([], "linux") });
    assert.deepEqual(f.calls, []);
  });

  test("a failed pip install keeps the previous environment and leaves nothing beside it", async () => {
    const first = fakeDeps();
    writeWheel(first.deps.bundledDir, "old");
    await ensureBundledServer(first.deps);
    const oldStamp = fs.readFileSync(envLayout(first.deps.storageDir).stamp, "utf8");
    fs.rmSync(first.deps.bundledDir, { recursive: true });
    writeWheel(first.deps.bundledDir, "new");
    const f = fakeDeps({ pipFails: true });
    await assert.rejects(ensureBundledServer(f.deps), (err: unknown) => {
      assert.ok(err instanceof InstallError);
      assert.match(err.message, /^livetok: installing livetok failed \(exit 1; the livetok output shows why\)/);
      return true;
    });
    assert.equal(fs.readFileSync(envLayout(f.deps.storageDir).stamp, "utf8"), oldStamp);
    assert.deepEqual(storageEntries(f.deps), ["env"]);
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
        const env = envLayout(f.deps.storageDir, "linux");
        fs.mkdirSync(path.dirname(env.python), { recursive: true });
        fs.writeFileSync(env.python, "");
        fs.writeFileSync(path.join(env.root, "theirs"), "");
        theirs = env.root;
        fs.writeFileSync(env.stamp, stampText(bundledWheel(f.deps.bundledDir)!, "/usr/bin/python3"));
      },
    });
    writeWheel(f.deps.bundledDir);
    await ensureBundledServer(f.deps);
    assert.ok(fs.existsSync(path.join(theirs, "theirs")));
    assert.deepEqual(storageEntries(f.deps), ["env"]);
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

  test("an abort kills the process", async () => {
    const abort = new AbortController();
    const running = spawnRunner(node, ["-e", "setTimeout(() => {}, 600000)"], { cwd: tmp, signal: abort.signal });
    abort.abort();
    const res = await running;
    assert.notEqual(res.code, 0);
  });
});
