// The one-step install (issue 29): when no livetok server is configured or found, the extension
// makes a private virtual environment in its global storage and installs the livetok wheel the
// .vsix carries (`bundled/`, put there by scripts/package-vscode.sh).
//
// The decisions are pure functions (which Python, is the environment current, what to say
// without a usable Python); `ensureBundledServer` runs the steps through injected dependencies
// (a process runner, a progress reporter), so the unit tests drive it without VS Code or
// Python. No `vscode` import here: extension.ts passes in the VS Code parts.
//
// subtle: the workspace never chooses what runs here. The Python is the Python extension's
// interpreter for the user (asked only in a trusted workspace) or `python3` on PATH; every
// process gets a fixed argument list, no shell, and runs with `-I` (isolated mode: no
// PYTHON* variables, no user site, and the working folder is not put on sys.path) in the
// extension's storage folder.

import * as childProcess from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";

import { ServerCommand, ServerCommandError, Which, pythonServerCommand } from "./settings";

/** The oldest Python the bundled livetok is installed into. */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

/** The wheel the .vsix carries. */
export interface BundledWheel {
  /** Its absolute path. */
  path: string;
  /** Its file name, e.g. `livetok-0.1.0-py3-none-any.whl`. */
  file: string;
  /** The version in its name, e.g. `0.1.0`. */
  version: string;
  /** SHA-256 of its bytes, hex: a rebuilt wheel of the same version is a change too. */
  sha256: string;
}

/**
 * The livetok wheel in `dir` (the extension's `bundled/` folder), or `undefined` when there is
 * none (an extension packaged without scripts/package-vscode.sh).
 *
 * Runtime complexity: O(size of the wheel) for its hash (about 0.6 MB).
 */
export function bundledWheel(dir: string): BundledWheel | undefined {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return undefined;
  }
  const wheels = names.filter((n) => /^livetok-[^-]+-.*\.whl$/.test(n)).sort();
  if (wheels.length === 0) {
    return undefined;
  }
  // subtle: the packaging script empties bundled/ first, so there is one; were there two,
  // the last in name order is as good a pick as any, and the same one on every start
  const file = wheels[wheels.length - 1];
  const wheelPath = path.join(dir, file);
  const sha256 = crypto.createHash("sha256").update(fs.readFileSync(wheelPath)).digest("hex");
  return { path: wheelPath, file, version: file.split("-")[1], sha256 };
}

/** Where the environment lives inside the extension's global storage folder. */
export interface EnvLayout {
  /** The environment's folder. */
  root: string;
  /** Its Python (`bin/python`, `Scripts\python.exe` on Windows). */
  python: string;
  /** The stamp file: which wheel was installed into it. */
  stamp: string;
}

/** The environment's paths under `storageDir` (its root, `env`, or a folder being built beside it). */
export function envLayout(storageDir: string, platform: NodeJS.Platform = process.platform, name = "env"): EnvLayout {
  const root = path.join(storageDir, name);
  const python = platform === "win32" ? path.join(root, "Scripts", "python.exe") : path.join(root, "bin", "python");
  return { root, python, stamp: path.join(root, "livetok-bundled.json") };
}

/** What the stamp file holds: the wheel installed, and from which Python the environment was made. */
export interface Stamp {
  wheel: string;
  sha256: string;
  python?: string;
}

/** The stamp file's text for `wheel` installed with `python`. */
export function stampText(wheel: BundledWheel, python: string): string {
  const stamp: Stamp = { wheel: wheel.file, sha256: wheel.sha256, python };
  return JSON.stringify(stamp, null, 2) + "\n";
}

/**
 * Whether an environment whose stamp file reads `text` (`undefined`: no stamp, an install that
 * never finished) holds `wheel`: the same file name and the same bytes. Anything else (an
 * older or newer wheel, a rebuilt one, a damaged stamp) means a new environment.
 */
export function isCurrent(text: string | undefined, wheel: BundledWheel): boolean {
  if (text === undefined) {
    return false;
  }
  try {
    const stamp = JSON.parse(text) as Partial<Stamp>;
    return stamp.wheel === wheel.file && stamp.sha256 === wheel.sha256;
  } catch {
    return false;
  }
}

/** A Python to try, and where it came from (for the messages). */
export interface PythonCandidate {
  command: string;
  /** e.g. `the Python extension's interpreter`, `python3 on PATH`. */
  source: string;
}

/** `python3.11` ... `python3.19`, newest first: what a distribution installs beside an older `python3`. */
const VERSIONED = Array.from({ length: 9 }, (_, i) => `python3.${19 - i}`);

/**
 * The Pythons to try, in order: the Python extension's selected interpreter (`fromExtension`,
 * asked only when `trusted`), then `python3` on PATH, then a versioned `python3.X` on PATH
 * (Ubuntu 22.04's `python3` is 3.10, its `python3.11` a package beside it), and `python` on
 * Windows. Only executables `which` finds on PATH, each once.
 *
 * subtle: in Restricted Mode the Python extension is not asked at all: its interpreter for a
 * folder may come from the folder's own settings (`python.defaultInterpreterPath`), and a
 * cloned repository must not choose what runs.
 */
export async function pythonCandidates(
  trusted: boolean,
  fromExtension: () => Promise<string | undefined>,
  which: Which,
  platform: NodeJS.Platform = process.platform,
): Promise<PythonCandidate[]> {
  const found: PythonCandidate[] = [];
  if (trusted) {
    const interpreter = await fromExtension();
    if (interpreter !== undefined && path.isAbsolute(interpreter)) {
      found.push({ command: interpreter, source: "the Python extension's interpreter" });
    }
  }
  const names = platform === "win32" ? ["python3", "python", ...VERSIONED] : ["python3", ...VERSIONED];
  for (const name of names) {
    const onPath = which(name);
    if (onPath !== undefined && !found.some((c) => c.command === onPath)) {
      found.push({ command: onPath, source: `${name} on PATH` });
    }
  }
  return found;
}

/** The part of the Python extension's API (`ms-python.python`'s exports) read here. */
export interface PythonExtensionApi {
  environments: {
    getActiveEnvironmentPath(resource?: undefined): { path: string };
    resolveEnvironment(env: { path: string }): Promise<{ executable: { uri?: { fsPath: string } } } | undefined>;
  };
}

/** The part of `vscode.extensions.getExtension`'s answer read here. */
export interface ExtensionLike<T> {
  isActive: boolean;
  exports: T;
  activate(): Thenable<T>;
}

/**
 * The Python extension's selected interpreter for the user (no workspace folder is passed),
 * or `undefined` when that extension is not installed or names none. `log` gets its failure.
 */
export async function pythonExtensionInterpreter(
  extension: ExtensionLike<PythonExtensionApi> | undefined,
  log: (line: string) => void,
): Promise<string | undefined> {
  if (extension === undefined) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const env = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath());
    return env?.executable.uri?.fsPath;
  } catch (err) {
    log(`the Python extension named no interpreter: ${String(err)}`);
    return undefined;
  }
}

/** Run with `python -I -c`: prints the version, the executable, and whether `venv` can install pip. */
export const PROBE_SCRIPT = [
  "import json, sys",
  "try:",
  "    import ensurepip, venv",
  "    ok = True",
  "except ImportError:",
  "    ok = False",
  "print(json.dumps({'version': list(sys.version_info[:3]), 'executable': sys.executable, 'venv': ok}))",
].join("\n");

/** What `PROBE_SCRIPT` reports. */
export interface PythonProbe {
  version: number[];
  executable: string;
  /** `ensurepip` and `venv` import: `python -m venv` makes an environment with pip. */
  venv: boolean;
}

/** `PROBE_SCRIPT`'s output, or `undefined` when it is not that (the command is no Python 3). */
export function parseProbe(stdout: string): PythonProbe | undefined {
  const line = stdout.trim().split(/\r?\n/).pop() ?? "";
  try {
    const p = JSON.parse(line) as Partial<PythonProbe>;
    if (Array.isArray(p.version) && p.version.length >= 2 && typeof p.executable === "string"
        && typeof p.venv === "boolean") {
      return { version: p.version.map(Number), executable: p.executable, venv: p.venv };
    }
  } catch {
    // not JSON: fall through
  }
  return undefined;
}

/**
 * Why `candidate` cannot hold the server (`probe`: its `PROBE_SCRIPT` report, `undefined` when
 * it did not run or printed something else), or `undefined` when it can.
 */
export function unusableReason(candidate: PythonCandidate, probe: PythonProbe | undefined): string | undefined {
  const who = `${candidate.source} (${candidate.command})`;
  if (probe === undefined) {
    return `${who} did not run as Python 3`;
  }
  const [major, minor] = probe.version;
  const version = probe.version.join(".");
  if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
    return `${who} is Python ${version}`;
  }
  if (!probe.venv) {
    // Debian and Ubuntu ship `venv`'s pip bootstrap in a package of its own
    return `${who} is Python ${version} without its venv module (Debian/Ubuntu: sudo apt install python${major}.${minor}-venv)`;
  }
  return undefined;
}

/** How to get a Python for `platform`, in the words of each system's installer. */
export function installHint(platform: NodeJS.Platform): string {
  switch (platform) {
    case "win32":
      return "from python.org/downloads or with winget install Python.Python.3.12";
    case "darwin":
      return "from python.org/downloads or with brew install python@3.12";
    default:
      return "Debian/Ubuntu: sudo apt install python3 python3-venv, or python3.11 python3.11-venv where python3 is older; Fedora: sudo dnf install python3";
  }
}

/**
 * The message shown when no Python can hold the server: what was found (`reasons`, one per
 * candidate; none: nothing on PATH) and exactly what to install. docs/editors.md quotes it.
 */
export function noPythonMessage(reasons: readonly string[], platform: NodeJS.Platform = process.platform): string {
  const found = reasons.length > 0 ? reasons.join("; ") : `python3 is not on PATH`;
  const [major, minor] = MIN_PYTHON;
  return (
    `livetok: installing the livetok language server needs Python ${major}.${minor} or newer, and none was found ` +
    `(${found}). Install Python ${major}.${minor}+ with its venv module (${installHint(platform)}), ` +
    `then run "livetok: Restart Server"; or set "livetok.server.path" in your user settings to a livetok you installed.`
  );
}

/** `python -m venv` making the environment at `root` (a fixed list: no shell, nothing from the workspace). */
export function venvArgs(root: string): string[] {
  return ["-I", "-m", "venv", root];
}

/**
 * `python -m pip install` of the bundled wheel; its dependencies come from the index the
 * user's pip is set up for (pip.conf, `PIP_INDEX_URL` and the other `PIP_*` variables).
 */
export function pipArgs(wheelPath: string): string[] {
  return ["-I", "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off", wheelPath];
}

/** An install that failed or cannot be done; the message says what to do, and is shown as it is. */
export class InstallError extends ServerCommandError {}

/** What a process run returned: its exit code (`null`: it did not start, or a signal ended it). */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd: string;
  /** Kills the process (cancelled from the progress notification, or the extension stops). */
  signal?: AbortSignal;
  /** Each line of output as it comes (the install's log). */
  onLine?(line: string): void;
}

/** Runs `command` with `args`; injectable for tests. */
export type Runner = (command: string, args: readonly string[], options: RunOptions) => Promise<RunResult>;

/** A `Runner` with `child_process.spawn`: no shell, the argument list as given. */
export const spawnRunner: Runner = (command, args, options) =>
  new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    let pending = "";
    const emit = (chunk: string) => {
      pending += chunk;
      const lines = pending.split(/\r?\n/);
      pending = lines.pop() ?? "";
      for (const line of lines) {
        options.onLine?.(line);
      }
    };
    let child: childProcess.ChildProcess;
    try {
      child = childProcess.spawn(command, [...args], {
        cwd: options.cwd,
        shell: false,
        windowsHide: true,
        stdio: ["ignore", "pipe", "pipe"],
        signal: options.signal,
      });
    } catch (err) {
      resolve({ code: null, stdout, stderr: String(err) });
      return;
    }
    child.stdout?.setEncoding("utf8").on("data", (d: string) => ((stdout += d), emit(d)));
    child.stderr?.setEncoding("utf8").on("data", (d: string) => ((stderr += d), emit(d)));
    let failed = false; // it did not start (ENOENT), or the signal killed it
    child.on("error", (err) => {
      failed = true;
      stderr += String(err);
    });
    child.on("close", (code) => {
      if (pending.length > 0) {
        options.onLine?.(pending);
      }
      resolve({ code: failed ? null : code, stdout, stderr });
    });
  });

/** Reports a step of the install (`vscode.window.withProgress`'s `progress.report`). */
export type Report = (message: string) => void;

export interface BootstrapDeps {
  /** The extension's global storage folder (created if missing). */
  storageDir: string;
  /** The extension's `bundled/` folder. */
  bundledDir: string;
  /** `livetok.server.args`. */
  serverArgs: readonly string[];
  /** The server's working folder (the home folder). */
  cwd: string;
  /** The Pythons to try (`pythonCandidates`); asked only when an install is needed. */
  pythons(): Promise<PythonCandidate[]>;
  run: Runner;
  log(line: string): void;
  /**
   * Runs the install with visible progress (a notification with a Cancel button); the signal
   * aborts when the user cancels. Not called when the environment is already current.
   */
  withProgress<T>(task: (report: Report, signal: AbortSignal) => Promise<T>): Promise<T>;
  platform?: NodeJS.Platform;
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** The environment at `layout` holds `wheel` and its Python is there. */
function envHolds(layout: EnvLayout, wheel: BundledWheel): boolean {
  return isCurrent(readText(layout.stamp), wheel) && fs.existsSync(layout.python);
}

/**
 * The server command from the bundled wheel's environment, installing it first when it is
 * missing or holds another wheel; `undefined` when the extension carries no wheel. Throws an
 * `InstallError` saying what to do when there is no usable Python or an install step fails.
 */
export async function ensureBundledServer(deps: BootstrapDeps): Promise<ServerCommand | undefined> {
  const wheel = bundledWheel(deps.bundledDir);
  if (wheel === undefined) {
    return undefined;
  }
  const platform = deps.platform ?? process.platform;
  const env = envLayout(deps.storageDir, platform);
  if (envHolds(env, wheel)) {
    deps.log(`using the installed livetok environment ${env.root} (${wheel.file})`);
    return pythonServerCommand(env.python, deps.serverArgs, deps.cwd, true);
  }
  await deps.withProgress((report, signal) => installEnv(deps, wheel, env, report, signal));
  return pythonServerCommand(env.python, deps.serverArgs, deps.cwd, true);
}

/** The first usable Python of `deps.pythons()`, or an `InstallError` with `noPythonMessage`. */
async function findPython(deps: BootstrapDeps, signal: AbortSignal): Promise<PythonProbe> {
  const reasons: string[] = [];
  for (const candidate of await deps.pythons()) {
    const res = await deps.run(candidate.command, ["-I", "-c", PROBE_SCRIPT], { cwd: deps.storageDir, signal });
    const probe = res.code === 0 ? parseProbe(res.stdout) : undefined;
    const reason = unusableReason(candidate, probe);
    if (reason === undefined && probe !== undefined) {
      return probe;
    }
    reasons.push(reason ?? `${candidate.source} is unusable`);
  }
  throw new InstallError(noPythonMessage(reasons, deps.platform ?? process.platform));
}

/** Run one install step; an `InstallError` naming it (and pointing at the log) when it fails. */
async function step(deps: BootstrapDeps, what: string, command: string, args: string[], signal: AbortSignal): Promise<void> {
  deps.log(`${what}: ${command} ${args.join(" ")}`);
  const res = await deps.run(command, args, { cwd: deps.storageDir, signal, onLine: (l) => deps.log(l) });
  if (signal.aborted) {
    throw new InstallError("livetok: the language server's install was cancelled; run \"livetok: Restart Server\" to install it.");
  }
  if (res.code !== 0) {
    throw new InstallError(
      `livetok: ${what} failed (exit ${res.code ?? "?"}; the livetok output shows why). ` +
        `Run "livetok: Restart Server" to try again, or set "livetok.server.path" in your user settings to a livetok you installed.`,
    );
  }
}

/**
 * Make the environment and install `wheel` into it.
 *
 * subtle: it is built in a folder of its own beside `env` and renamed into place whole, so a
 * second window starting at the same time never runs a half-made environment, and a failed or
 * cancelled install leaves the previous one as it was. A moved environment works because the
 * server runs as `python -m livetok.server` (venv's console scripts would keep the old path).
 */
async function installEnv(
  deps: BootstrapDeps,
  wheel: BundledWheel,
  env: EnvLayout,
  report: Report,
  signal: AbortSignal,
): Promise<void> {
  const platform = deps.platform ?? process.platform;
  fs.mkdirSync(deps.storageDir, { recursive: true });
  report("looking for Python…");
  const python = await findPython(deps, signal);
  const partial = envLayout(deps.storageDir, platform, `env.partial-${process.pid}-${crypto.randomBytes(4).toString("hex")}`);
  deps.log(`installing ${wheel.file} into ${env.root} with Python ${python.version.join(".")} (${python.executable})`);
  try {
    report("creating a Python environment…");
    await step(deps, "creating the Python environment", python.executable, venvArgs(partial.root), signal);
    report(`installing livetok ${wheel.version} and its dependencies…`);
    await step(deps, "installing livetok", partial.python, pipArgs(wheel.path), signal);
    fs.writeFileSync(partial.stamp, stampText(wheel, python.executable));
    moveIntoPlace(deps, partial, env, wheel);
  } finally {
    fs.rmSync(partial.root, { recursive: true, force: true });
  }
  deps.log(`installed ${wheel.file} into ${env.root}`);
}

/** Replace `env` by `partial`; if another window put a current environment there first, keep that one. */
function moveIntoPlace(deps: BootstrapDeps, partial: EnvLayout, env: EnvLayout, wheel: BundledWheel): void {
  const old = `${env.root}.old-${process.pid}-${crypto.randomBytes(4).toString("hex")}`;
  if (fs.existsSync(env.root)) {
    if (envHolds(env, wheel)) {
      deps.log(`another window installed ${wheel.file} meanwhile; using it`);
      return;
    }
    fs.renameSync(env.root, old);
  }
  try {
    fs.renameSync(partial.root, env.root);
  } catch (err) {
    if (!envHolds(env, wheel)) {
      throw err;
    }
    deps.log(`another window installed ${wheel.file} meanwhile; using it`);
  }
  try {
    fs.rmSync(old, { recursive: true, force: true });
  } catch (err) {
    // on Windows a server still running from the old environment keeps its files open
    deps.log(`could not remove the old environment ${old}: ${String(err)}`);
  }
}
