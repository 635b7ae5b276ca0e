// The one-step install (issue 29): when no livetok server is configured or found, the extension
// makes a private virtual environment in its global storage and installs the livetok wheel the
// .vsix carries (`bundled/`, put there by scripts/package-vscode.sh), with its dependencies
// from the wheels the .vsix carries too (`bundled/wheels/`, one set per Python version for the
// package's platform): no package index is asked (issue 37 item 1).
//
// The decisions are pure functions (which Python, is the environment current, what to say
// without a usable Python); `ensureBundledServer` runs the steps through injected dependencies
// (a process runner, a progress reporter), so the unit tests drive it without VS Code or
// Python. No `vscode` import here: extension.ts passes in the VS Code parts.
//
// subtle: the workspace never chooses what runs here. The Python is `python3` (or a versioned
// `python3.X`) on PATH, else the Python extension's interpreter (asked only in a trusted
// workspace); every process gets a fixed argument list, no shell, and runs with `-I` (isolated
// mode: no PYTHON* variables, no user site, and the working folder is not put on sys.path) in
// the extension's storage folder. Each interpreter gets an environment of its own (its folder
// name and stamp hold the interpreter's path, real path and version), so an interpreter a
// trusted workspace chose (its `.venv/bin/python`) never builds the environment another
// window runs (issue 34 row 13).

import * as childProcess from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
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

/** The dependencies' wheels the .vsix carries (`bundled/wheels/`, with its `bundle.json`). */
export interface Bundle {
  /** The folder of the wheels (pip's `--find-links`). */
  dir: string;
  /** The `vsce --target` it was packaged for, e.g. `linux-x64`. */
  target: string;
  /** The Python versions (`3.11`, ...) it holds a complete set of wheels for. */
  pythons: string[];
  /** SHA-256 of `bundle.json` (which lists every wheel's SHA-256): other wheels, another environment. */
  digest: string;
  /** pip's own wheel among them, run from the wheel (no pip needed in the environment). */
  pip: string | undefined;
  /** `constraints.txt`: the versions packaged, pinned for an install from the index too. */
  constraints: string | undefined;
}

/**
 * The wheels in `bundledDir/wheels` as `bundle.json` lists them, or `undefined` when there is
 * no such list (a .vsix packaged before issue 37: dependencies come from the index).
 *
 * Runtime complexity: O(size of bundle.json).
 */
export function readBundle(bundledDir: string): Bundle | undefined {
  const dir = path.join(bundledDir, "wheels");
  const text = readText(path.join(dir, "bundle.json"));
  if (text === undefined) {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as { target?: unknown; pythons?: unknown; wheels?: unknown };
    const wheels = typeof parsed.wheels === "object" && parsed.wheels !== null ? Object.keys(parsed.wheels) : [];
    const pip = wheels.filter((n) => /^pip-[^-]+-.*\.whl$/.test(n)).sort().pop();
    const constraints = path.join(dir, "constraints.txt");
    return {
      dir,
      target: typeof parsed.target === "string" ? parsed.target : "",
      pythons: Array.isArray(parsed.pythons) ? parsed.pythons.filter((v): v is string => typeof v === "string") : [],
      digest: crypto.createHash("sha256").update(text).digest("hex"),
      pip: pip === undefined ? undefined : path.join(dir, pip),
      constraints: fs.existsSync(constraints) ? constraints : undefined,
    };
  } catch {
    return undefined;
  }
}

/** Whether `bundle` holds wheels for Python `version` (`[3, 12, 1]`): then nothing is fetched. */
export function bundleFits(bundle: Bundle | undefined, version: readonly number[]): boolean {
  return bundle !== undefined && bundle.pythons.includes(`${version[0]}.${version[1]}`);
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

/**
 * The environment's folder name for the interpreter `probe` reports: `env-` and 12 hex digits
 * of the SHA-256 of its path as run, its real path and its version.
 *
 * subtle: the path as run is part of it, not only the real path: a virtual environment's
 * `bin/python` links to the system's, yet runs that environment's `.pth` files.
 */
export function envName(probe: PythonProbe): string {
  const key = [probe.executable, probe.real, probe.version.join(".")].join("\0");
  return `env-${crypto.createHash("sha256").update(key).digest("hex").slice(0, 12)}`;
}

/** The environment's paths under `storageDir` (its root, or a folder being built beside it). */
export function envLayout(storageDir: string, platform: NodeJS.Platform = process.platform, name = "env"): EnvLayout {
  const root = path.join(storageDir, name);
  const python = platform === "win32" ? path.join(root, "Scripts", "python.exe") : path.join(root, "bin", "python");
  return { root, python, stamp: path.join(root, "livetok-bundled.json") };
}

/**
 * What the stamp file holds: the wheel installed, the dependencies' bundle it came with, and
 * the interpreter the environment was made from.
 */
export interface Stamp {
  wheel: string;
  sha256: string;
  /** `Bundle.digest`, or null: dependencies from the index. */
  bundle: string | null;
  python: string;
  real: string;
  version: string;
}

/** The stamp for `wheel` (and `bundle`) installed with the interpreter `probe` reports. */
export function makeStamp(wheel: BundledWheel, bundle: Bundle | undefined, probe: PythonProbe): Stamp {
  return {
    wheel: wheel.file,
    sha256: wheel.sha256,
    bundle: bundle?.digest ?? null,
    python: probe.executable,
    real: probe.real,
    version: probe.version.join("."),
  };
}

/** The stamp file's text. */
export function stampText(stamp: Stamp): string {
  return JSON.stringify(stamp, null, 2) + "\n";
}

/**
 * Whether an environment whose stamp file reads `text` (`undefined`: no stamp, an install that
 * never finished) holds what `want` says: the same wheel (name and bytes), the same bundle of
 * dependencies, made from the same interpreter (path, real path, version). Anything else (an
 * older or newer wheel, a rebuilt one, other dependencies, another or upgraded Python, a
 * damaged stamp, a stamp of before issue 37) means a new environment.
 */
export function isCurrent(text: string | undefined, want: Stamp): boolean {
  if (text === undefined) {
    return false;
  }
  try {
    const stamp = JSON.parse(text) as Partial<Stamp>;
    return (Object.keys(want) as (keyof Stamp)[]).every((k) => stamp[k] === want[k]);
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
 * The Pythons to try, in order: `python3` on PATH, then a versioned `python3.X` on PATH
 * (Ubuntu 22.04's `python3` is 3.10, its `python3.11` a package beside it), and `python` on
 * Windows, then the Python extension's selected interpreter (`fromExtension`, asked only when
 * `trusted`). Only executables `which` finds on PATH, each once.
 *
 * subtle: the Python extension's interpreter comes last and only in a trusted workspace: with
 * no folder given, its API answers the *workspace's* interpreter (a repository's `.venv`, or
 * its `python.defaultInterpreterPath`), and a cloned repository must not choose what runs; the
 * environment made from it is its own (`envName`), never one another window runs.
 */
export async function pythonCandidates(
  trusted: boolean,
  fromExtension: () => Promise<string | undefined>,
  which: Which,
  platform: NodeJS.Platform = process.platform,
): Promise<PythonCandidate[]> {
  const found: PythonCandidate[] = [];
  const names = platform === "win32" ? ["python3", "python", ...VERSIONED] : ["python3", ...VERSIONED];
  for (const name of names) {
    const onPath = which(name);
    if (onPath !== undefined && !found.some((c) => c.command === onPath)) {
      found.push({ command: onPath, source: `${name} on PATH` });
    }
  }
  if (trusted) {
    const interpreter = await fromExtension();
    if (interpreter !== undefined && path.isAbsolute(interpreter) && !found.some((c) => c.command === interpreter)) {
      found.push({ command: interpreter, source: "the Python extension's interpreter" });
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
 * The Python extension's selected interpreter (no workspace folder is passed: its API then
 * answers the workspace's), or `undefined` when that extension is not installed or names
 * none. `log` gets its failure.
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

/**
 * Run with `python -I -c`: prints the version, the executable (as run, and its real path),
 * and whether `venv` and `ensurepip` import.
 */
export const PROBE_SCRIPT = [
  "import importlib.util, json, os, sys",
  "has = lambda m: importlib.util.find_spec(m) is not None",
  "print(json.dumps({'version': list(sys.version_info[:3]), 'executable': sys.executable,",
  "                  'real': os.path.realpath(sys.executable), 'venv': has('venv'), 'ensurepip': has('ensurepip')}))",
].join("\n");

/** What `PROBE_SCRIPT` reports. */
export interface PythonProbe {
  version: number[];
  /** `sys.executable`. */
  executable: string;
  /** Its real path (links resolved). */
  real: string;
  /** `venv` imports: `python -m venv --without-pip` works. */
  venv: boolean;
  /** `ensurepip` imports: `python -m venv` can put pip in (needed only without a bundled pip). */
  ensurepip: boolean;
}

/** `PROBE_SCRIPT`'s output, or `undefined` when it is not that (the command is no Python 3). */
export function parseProbe(stdout: string): PythonProbe | undefined {
  const line = stdout.trim().split(/\r?\n/).pop() ?? "";
  try {
    const p = JSON.parse(line) as Partial<PythonProbe>;
    if (Array.isArray(p.version) && p.version.length >= 2 && typeof p.executable === "string"
        && typeof p.venv === "boolean") {
      return {
        version: p.version.map(Number),
        executable: p.executable,
        real: typeof p.real === "string" ? p.real : p.executable,
        venv: p.venv,
        ensurepip: p.ensurepip === true,
      };
    }
  } catch {
    // not JSON: fall through
  }
  return undefined;
}

/**
 * Why `candidate` cannot hold the server (`probe`: its `PROBE_SCRIPT` report, `undefined` when
 * it did not run or printed something else), or `undefined` when it can. `needPip`: the .vsix
 * carries no pip wheel, so the environment needs `ensurepip`.
 */
export function unusableReason(candidate: PythonCandidate, probe: PythonProbe | undefined, needPip = false): string | undefined {
  const who = `${candidate.source} (${candidate.command})`;
  if (probe === undefined) {
    return `${who} did not run as Python 3`;
  }
  const [major, minor] = probe.version;
  const version = probe.version.join(".");
  if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
    return `${who} is Python ${version}`;
  }
  if (!probe.venv || (needPip && !probe.ensurepip)) {
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

/**
 * `python -m venv` making the environment at `root` (a fixed list: no shell, nothing from the
 * workspace); `withPip` false: `--without-pip` (pip runs from the bundled wheel instead, which
 * saves ensurepip's seconds and Debian's python3-venv package).
 */
export function venvArgs(root: string, withPip = true): string[] {
  return ["-I", "-m", "venv", ...(withPip ? [] : ["--without-pip"]), root];
}

/**
 * The arguments, after the environment's Python, of the pip install of the bundled wheel.
 *
 * - `bundle` fits the Python (`offline`): `--no-index --find-links <bundled/wheels>`, every
 *   dependency from the wheels the .vsix carries, nothing fetched;
 * - otherwise (a Python newer than the package, or a .vsix without wheels): the index the
 *   user's pip is set up for, the bundled wheels still preferred (`--find-links`) and the
 *   versions pinned to the packaged ones (`-c constraints.txt`).
 *
 * pip is the bundle's own wheel run as `python <pip.whl>/pip` when there is one, else the
 * environment's (`-m pip`). `--no-compile`: the server compiles what it imports, once.
 */
export function pipArgs(wheelPath: string, bundle?: Bundle, offline = false): string[] {
  const pip = bundle?.pip === undefined ? ["-m", "pip"] : [path.join(bundle.pip, "pip")];
  const source: string[] = [];
  if (bundle !== undefined) {
    source.push(...(offline ? ["--no-index"] : []), "--find-links", bundle.dir);
    if (!offline && bundle.constraints !== undefined) {
      source.push("-c", bundle.constraints);
    }
  }
  return ["-I", ...pip, "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off",
    "--no-compile", ...source, wheelPath];
}

/**
 * The environment of the offline install: this process's, without pip's settings (`PIP_*`
 * variables, pip.conf): a `PIP_USER`, `PIP_REQUIRE_VIRTUALENV` or an index setting must not
 * change (or break) an install that reads only the bundled wheels.
 */
export function offlineEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) {
    if (!/^PIP_/i.test(k)) {
      out[k] = v;
    }
  }
  out.PIP_CONFIG_FILE = os.devNull;
  return out;
}

/**
 * An install that failed or cannot be done. `message` is short enough for a notification
 * (`TOAST_MAX`); `detail`, when there is one, is the whole story for the output channel.
 */
export class InstallError extends ServerCommandError {
  constructor(message: string, readonly detail?: string) {
    super(message);
  }
}

/** The longest message shown in a notification: VS Code's toast shows about this much on a line or two. */
export const TOAST_MAX = 160;

/** What a process run returned: its exit code (`null`: it did not start, or a signal ended it). */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd: string;
  /** The process's environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
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
        env: options.env,
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

/** The environment at `layout` holds what `want` says and its Python is there. */
function envHolds(layout: EnvLayout, want: Stamp): boolean {
  return isCurrent(readText(layout.stamp), want) && fs.existsSync(layout.python);
}

/**
 * The server command from the bundled wheel's environment for the first usable Python,
 * installing it first when it is missing or holds something else; `undefined` when the
 * extension carries no wheel. Throws an `InstallError` saying what to do when there is no
 * usable Python or an install step fails.
 *
 * Each start probes the Pythons (one short process for the first usable one): the
 * environment is the one of the interpreter found (`envName`).
 */
export async function ensureBundledServer(deps: BootstrapDeps): Promise<ServerCommand | undefined> {
  const wheel = bundledWheel(deps.bundledDir);
  if (wheel === undefined) {
    return undefined;
  }
  const bundle = readBundle(deps.bundledDir);
  const platform = deps.platform ?? process.platform;
  fs.mkdirSync(deps.storageDir, { recursive: true });
  const python = await findPython(deps, bundle?.pip === undefined);
  const env = envLayout(deps.storageDir, platform, envName(python));
  const want = makeStamp(wheel, bundle, python);
  if (envHolds(env, want)) {
    deps.log(`using the installed livetok environment ${env.root} (${wheel.file}, Python ${want.version} ${python.executable})`);
    return pythonServerCommand(env.python, deps.serverArgs, deps.cwd, true);
  }
  await deps.withProgress((report, signal) => installEnv(deps, wheel, bundle, python, env, report, signal));
  return pythonServerCommand(env.python, deps.serverArgs, deps.cwd, true);
}

/** The first usable Python of `deps.pythons()`, or an `InstallError` with `noPythonMessage`. */
async function findPython(deps: BootstrapDeps, needPip: boolean): Promise<PythonProbe> {
  const reasons: string[] = [];
  for (const candidate of await deps.pythons()) {
    const res = await deps.run(candidate.command, ["-I", "-c", PROBE_SCRIPT], { cwd: deps.storageDir });
    const probe = res.code === 0 ? parseProbe(res.stdout) : undefined;
    const reason = unusableReason(candidate, probe, needPip);
    if (reason === undefined && probe !== undefined) {
      return probe;
    }
    reasons.push(reason ?? `${candidate.source} is unusable`);
  }
  const [major, minor] = MIN_PYTHON;
  throw new InstallError(
    `livetok needs Python ${major}.${minor}+ to install its language server, and none was found. The output says what to install.`,
    noPythonMessage(reasons, deps.platform ?? process.platform),
  );
}

/** Run one install step; an `InstallError` naming it (and pointing at the log) when it fails. */
async function step(
  deps: BootstrapDeps,
  what: string,
  command: string,
  args: string[],
  signal: AbortSignal,
  env?: NodeJS.ProcessEnv,
): Promise<void> {
  deps.log(`${what}: ${command} ${args.join(" ")}`);
  const t0 = Date.now();
  const res = await deps.run(command, args, { cwd: deps.storageDir, env, signal, onLine: (l) => deps.log(l) });
  deps.log(`${what}: exit ${res.code ?? "?"} after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  if (signal.aborted) {
    throw new InstallError("livetok: the language server's install was cancelled.");
  }
  if (res.code !== 0) {
    throw new InstallError(
      `livetok: installing the language server failed (${what}, exit ${res.code ?? "?"}).`,
      `livetok: ${what} failed (exit ${res.code ?? "?"}; the lines above show why). Retry, run ` +
        `"livetok: Restart Server", or set "livetok.server.path" in your user settings to a livetok you installed.`,
    );
  }
}

/**
 * Make the environment and install `wheel` into it, its dependencies from `bundle` when it
 * fits the Python (no network), else from the index.
 *
 * subtle: it is built in a folder of its own beside `env` and renamed into place whole, so a
 * second window starting at the same time never runs a half-made environment, and a failed or
 * cancelled install leaves the previous one as it was. A moved environment works because the
 * server runs as `python -m livetok.server` (venv's console scripts would keep the old path).
 */
async function installEnv(
  deps: BootstrapDeps,
  wheel: BundledWheel,
  bundle: Bundle | undefined,
  python: PythonProbe,
  env: EnvLayout,
  report: Report,
  signal: AbortSignal,
): Promise<void> {
  const platform = deps.platform ?? process.platform;
  const partial = envLayout(deps.storageDir, platform, `${path.basename(env.root)}.partial-${process.pid}-${crypto.randomBytes(4).toString("hex")}`);
  const offline = bundleFits(bundle, python.version);
  const version = python.version.join(".");
  deps.log(`installing ${wheel.file} into ${env.root} with Python ${version} (${python.executable})`);
  if (bundle !== undefined && !offline) {
    deps.log(`the package carries wheels for Python ${bundle.pythons.join(", ")}, not ${version}: ` +
      `pip takes what is missing from the package index it is set up for`);
  }
  try {
    report("creating a Python environment…");
    await step(deps, "creating the Python environment", python.executable, venvArgs(partial.root, bundle?.pip === undefined), signal);
    report(`installing livetok ${wheel.version}${offline ? " from the bundled wheels" : " and its dependencies"}…`);
    await step(deps, "installing livetok", partial.python, pipArgs(wheel.path, bundle, offline), signal,
      offline ? offlineEnv() : undefined);
    fs.writeFileSync(partial.stamp, stampText(makeStamp(wheel, bundle, python)));
    moveIntoPlace(deps, partial, env, makeStamp(wheel, bundle, python));
  } finally {
    fs.rmSync(partial.root, { recursive: true, force: true });
  }
  deps.log(`installed ${wheel.file} into ${env.root}`);
}

/** Replace `env` by `partial`; if another window put a current environment there first, keep that one. */
function moveIntoPlace(deps: BootstrapDeps, partial: EnvLayout, env: EnvLayout, want: Stamp): void {
  const old = `${env.root}.old-${process.pid}-${crypto.randomBytes(4).toString("hex")}`;
  if (fs.existsSync(env.root)) {
    if (envHolds(env, want)) {
      deps.log(`another window installed ${want.wheel} meanwhile; using it`);
      return;
    }
    fs.renameSync(env.root, old);
  }
  try {
    fs.renameSync(partial.root, env.root);
  } catch (err) {
    if (!envHolds(env, want)) {
      throw err;
    }
    deps.log(`another window installed ${want.wheel} meanwhile; using it`);
  }
  try {
    fs.rmSync(old, { recursive: true, force: true });
  } catch (err) {
    // on Windows a server still running from the old environment keeps its files open
    deps.log(`could not remove the old environment ${old}: ${String(err)}`);
  }
}
