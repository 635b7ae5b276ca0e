// The `livetok` settings the server reads, how the server is started, and the encoding picker.
//
// subtle: no `vscode` import here either; the extension passes in a configuration reader
// and the quick-pick function so tests can run under plain Node.

import * as fs from "fs";
import * as os from "os";
import * as path from "path";

/**
 * Encodings offered by `livetok: Pick Encoding` when the server cannot be asked
 * (`livetok/listEncodings`, which also lists the models of the local Hugging Face cache);
 * any name the server knows may be typed in settings.
 */
export const ENCODINGS: readonly { name: string; detail: string }[] = [
  { name: "o200k_base", detail: "GPT-4o, GPT-4.1, o1/o3/o4 (tiktoken)" },
  { name: "cl100k_base", detail: "GPT-4, GPT-3.5-turbo, text-embedding-3 (tiktoken)" },
  { name: "r50k_base", detail: "GPT-2, GPT-3 (tiktoken)" },
  { name: "bert-base-uncased", detail: "BERT uncased (WordPiece)" },
  { name: "mistral-7b-v0.1", detail: "Mistral 7B v0.1 (SentencePiece BPE)" },
];

export const DEFAULT_ENCODING = "o200k_base";

/** What `livetok/listEncodings` answers (docs/protocol.md). */
export interface ListEncodingsResult {
  encodings: { name: string; description: string }[];
  current: string;
  tokenizer: string | null;
}

/** The picker's last item: choose a tokenizer.json file for `livetok.tokenizer`. */
export const TOKENIZER_FILE_ITEM = "$(file) tokenizer.json file…";

/** The configuration section the server reads (`initializationOptions` and `workspace/didChangeConfiguration`). */
export interface ServerSettings {
  encoding: string;
  /** A tokenizer.json path; when set the server counts with it instead of `encoding`. */
  tokenizer: string | null;
  encodingByLanguage: Record<string, string>;
  /** `livetok.compare`: encodings or models counted beside the document's own. */
  compare: string[];
  contextWindow: number | null;
  budget: number | null;
  semanticTokens: boolean;
  /**
   * Whether the server may load the tokenizer.json files the workspace names: the user's
   * `livetok.trustWorkspaceTokenizers` (a setting no workspace can set), and only in a
   * workspace VS Code trusts.
   */
  trustWorkspaceTokenizers: boolean;
}

/** Reads one key of the `livetok` section (`vscode.WorkspaceConfiguration.get`). */
export type ConfigGet = <T>(key: string) => T | undefined;

/** Only positive integers are meaningful for window and budget; anything else means "off". */
function positiveIntOrNull(value: unknown): number | null {
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : null;
}

/**
 * Build the settings object sent to the server from the extension's configuration;
 * `workspaceTrusted` is `vscode.workspace.isTrusted` (false: Restricted Mode).
 */
export function serverSettings(get: ConfigGet, workspaceTrusted = false): ServerSettings {
  const encoding = get<string>("encoding");
  const byLanguage = get<Record<string, unknown>>("encodingByLanguage") ?? {};
  const encodingByLanguage: Record<string, string> = {};
  for (const [languageId, name] of Object.entries(byLanguage)) {
    if (typeof name === "string" && name.length > 0) {
      encodingByLanguage[languageId] = name;
    }
  }
  const tokenizer = get<string>("tokenizer");
  const compare = get<unknown>("compare");
  return {
    encoding: typeof encoding === "string" && encoding.length > 0 ? encoding : DEFAULT_ENCODING,
    tokenizer: typeof tokenizer === "string" && tokenizer.trim().length > 0 ? tokenizer.trim() : null,
    encodingByLanguage,
    compare: Array.isArray(compare)
      ? compare.filter((n): n is string => typeof n === "string" && n.trim().length > 0).map((n) => n.trim())
      : [],
    contextWindow: positiveIntOrNull(get<number | null>("contextWindow")),
    budget: positiveIntOrNull(get<number | null>("budget")),
    semanticTokens: get<boolean>("semanticTokens") === true,
    trustWorkspaceTokenizers: workspaceTrusted && get<boolean>("trustWorkspaceTokenizers") === true,
  };
}

/** Settings keys whose change must be sent to the server (the others only affect the client). */
export const SERVER_KEYS: readonly (keyof ServerSettings)[] = [
  "encoding",
  "tokenizer",
  "encodingByLanguage",
  "compare",
  "contextWindow",
  "budget",
  "semanticTokens",
  "trustWorkspaceTokenizers",
];

export interface ServerCommand {
  command: string;
  args: string[];
  /** The server's working folder: the user's home, never the workspace (see `serverCommand`). */
  cwd: string;
}

/** A server command the settings ask for and the extension refuses to run; its message says why. */
export class ServerCommandError extends Error {}

/** Finds an executable on PATH; injectable for tests. */
export type Which = (name: string) => string | undefined;

/** Look `name` up on `PATH` the way a shell would (with `PATHEXT` on Windows). */
export function whichOnPath(
  name: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const dirs = (env.PATH ?? env.Path ?? "").split(path.delimiter).filter((d) => d.length > 0);
  const exts = platform === "win32" ? (env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";") : [""];
  for (const dir of dirs) {
    if (!path.isAbsolute(dir)) {
      continue; // subtle: a relative entry would be read from whatever folder we run in
    }
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        if (fs.statSync(candidate).isFile()) {
          return candidate;
        }
      } catch {
        // not here; keep looking
      }
    }
  }
  return undefined;
}

/**
 * The executable a setting names, as it is run: an absolute path as given, `~/...` under
 * `home`, a bare name (`python3.12`, no folder in it) as given, for the system to find on
 * PATH. Any other relative path is refused with a `ServerCommandError`.
 *
 * subtle: a relative path is never resolved against the workspace: a cloned repository
 * chooses its files, and would choose what runs (issue 26).
 */
export function executablePath(key: string, value: string, home: string): string {
  if (path.isAbsolute(value)) {
    return value;
  }
  if (/^~[\\/]/.test(value)) {
    return path.join(home, value.slice(2));
  }
  if (!/[\\/:]/.test(value)) {
    return value;
  }
  throw new ServerCommandError(
    `livetok: ${key} is a relative path (${JSON.stringify(value)}): set it in your user settings ` +
      "to an absolute path, or one starting with ~/. livetok does not resolve it against the " +
      "workspace, whose files a cloned repository chooses.",
  );
}

/** `livetok.server.args`: the arguments after the server command (default `serve`). */
export function serverArgs(get: ConfigGet): string[] {
  const configured = get<string[]>("server.args");
  return Array.isArray(configured) ? configured.map(String) : ["serve"];
}

/**
 * The command that starts `livetok serve` on stdio, or `undefined` when none is configured or
 * found (the extension then installs the livetok it carries: bootstrap.ts).
 *
 * 1. `livetok.server.path` when set (see `executablePath`);
 * 2. else `livetok` found on PATH;
 * 3. else `<livetok.server.pythonPath> -m livetok.server <args>` when that setting is set.
 *
 * The three `livetok.server.*` settings are application-scoped (package.json): only the user's
 * settings set them, never a workspace's, and VS Code reads them the same way in a local and a
 * remote window (there a machine-scoped value comes from the remote settings only: one in the
 * user settings was dropped as soon as they were read again, so the first start used it and a
 * restart after any settings change did not, issue 37 item 2).
 * The server runs in `home`.
 *
 * subtle: not in the workspace: `python -m` puts its working folder first on `sys.path`, so a
 * repository holding a `livetok/` package (or a `json.py`) would be imported instead of the
 * installed one; and Windows looks a bare command name up in the working folder first.
 */
export function serverCommand(get: ConfigGet, which: Which, home: string = os.homedir()): ServerCommand | undefined {
  const args = serverArgs(get);
  const configuredPath = (get<string>("server.path") ?? "").trim();
  if (configuredPath.length > 0) {
    return { command: executablePath("livetok.server.path", configuredPath, home), args, cwd: home };
  }
  const onPath = which("livetok");
  if (onPath !== undefined) {
    return { command: onPath, args, cwd: home };
  }
  const python = (get<string>("server.pythonPath") ?? "").trim();
  if (python.length === 0) {
    return undefined;
  }
  return pythonServerCommand(executablePath("livetok.server.pythonPath", python, home), args, home);
}

/**
 * `python -m livetok.server <args>`: a Python that has livetok installed; with `isolated`,
 * `python -I` (no PYTHON* variables, no user site: the extension's own environment).
 */
export function pythonServerCommand(python: string, args: readonly string[], home: string, isolated = false): ServerCommand {
  return { command: python, args: [...(isolated ? ["-I"] : []), "-m", "livetok.server", ...args], cwd: home };
}

/** The part of `vscode.QuickPickItem` used by the encoding picker. */
export interface EncodingPickItem {
  label: string;
  description?: string;
  detail?: string;
  picked?: boolean;
}

/** Where a setting is written: the user's settings or the workspace's (`vscode.ConfigurationTarget`). */
export type SettingTarget = "global" | "workspace" | "workspaceFolder";

/** What `vscode.WorkspaceConfiguration.inspect` tells about where a value is set. */
export interface SettingInspection {
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * Where to write a setting so that it takes effect: the most specific scope that already
 * sets it, else the user's settings. (Writing the user setting while the workspace sets the
 * key would silently change nothing.)
 */
export function settingTarget(inspection: SettingInspection | undefined): SettingTarget {
  if (inspection?.workspaceFolderValue !== undefined) {
    return "workspaceFolder";
  }
  if (inspection?.workspaceValue !== undefined) {
    return "workspace";
  }
  return "global";
}

/**
 * Quick-pick items for the encodings, the current one marked: `listed` (the server's
 * `livetok/listEncodings`) or, without it, the built-in `ENCODINGS`; with `withFile`, a last
 * item to choose a tokenizer.json file.
 */
export function encodingItems(
  current: string,
  listed?: readonly { name: string; description: string }[],
  withFile = false,
): EncodingPickItem[] {
  const known = listed ?? ENCODINGS.map((e) => ({ name: e.name, description: e.detail }));
  const items: EncodingPickItem[] = known.map((e) => ({
    label: e.name,
    description: e.name === current ? "current" : undefined,
    detail: e.description,
    picked: e.name === current,
  }));
  if (!known.some((e) => e.name === current)) {
    // a name typed into settings by hand (or a tokenizer.json): keep it selectable
    items.unshift({ label: current, description: "current (from settings)", picked: true });
  }
  if (withFile) {
    items.push({ label: TOKENIZER_FILE_ITEM, detail: "count with a HuggingFace tokenizer.json (livetok.tokenizer)" });
  }
  return items;
}

export interface PickEncodingDeps {
  /** `livetok.encoding`. */
  current: string;
  /** `livetok.tokenizer` when set: it is what the server counts with. */
  tokenizer?: string | null;
  showQuickPick(items: EncodingPickItem[], placeHolder: string): Promise<EncodingPickItem | undefined>;
  /** Writes `livetok.encoding` (the extension turns this into `config.update`). */
  update(value: string): Promise<void>;
  /** Asks the server for the encodings it offers; `undefined` (or a failure): the built-in list. */
  list?(): Promise<ListEncodingsResult | undefined>;
  /** Asks for a tokenizer.json file (an open dialog); `undefined` when cancelled. */
  pickFile?(): Promise<string | undefined>;
  /** Writes `livetok.tokenizer` (`undefined` removes it). */
  updateTokenizer?(value: string | undefined): Promise<void>;
}

/**
 * Ask for an encoding and store it; returns what is now counted with (a name, or a
 * tokenizer.json path), or `undefined` if nothing changed. Picking a name while
 * `livetok.tokenizer` is set removes that setting, which would otherwise win.
 */
export async function pickEncoding(deps: PickEncodingDeps): Promise<string | undefined> {
  let listed: ListEncodingsResult | undefined;
  try {
    listed = await deps.list?.();
  } catch {
    listed = undefined; // an older server, or none running: the built-in list
  }
  const tokenizer = deps.tokenizer ?? null;
  const current = tokenizer ?? deps.current;
  const withFile = deps.pickFile !== undefined && deps.updateTokenizer !== undefined;
  const items = encodingItems(current, listed?.encodings, withFile);
  const choice = await deps.showQuickPick(items, `Encoding to count (now ${current})`);
  if (choice === undefined || choice.label === current) {
    return undefined;
  }
  if (choice.label === TOKENIZER_FILE_ITEM) {
    const file = await deps.pickFile?.();
    if (file === undefined || file === tokenizer) {
      return undefined;
    }
    await deps.updateTokenizer?.(file);
    return file;
  }
  if (tokenizer !== null) {
    await deps.updateTokenizer?.(undefined);
  }
  if (choice.label !== deps.current) {
    await deps.update(choice.label);
  }
  return choice.label;
}

/** What `initializationOptions` and `workspace/didChangeConfiguration` carry: `{"livetok": {...}}`. */
export interface SettingsMessage {
  livetok: ServerSettings;
}

/**
 * Keeps one server's copy of the settings equal to the configuration, across its start.
 *
 * One instance per language client. The client reads `initializationOptions()` when it sends
 * `initialize`; `onChange` sends a change at once while the client is running; `onRunning`
 * (the client reached the running state) sends whatever changed since `initialize`.
 *
 * subtle: a change made while the server starts (first activation, *Restart Server*) cannot
 * be sent yet (no notification may precede the `initialize` result) and is not in the
 * `initializationOptions` already sent, so without `onRunning` it was lost until the next
 * change (issue 19). Comparing with what the server last received, instead of remembering
 * that "something changed", also covers a change that fired no event for this client.
 */
export class SettingsSync {
  private sent: string | undefined;

  constructor(
    private readonly read: () => ServerSettings,
    private readonly notify: (message: SettingsMessage) => void,
  ) {}

  /** The settings for `initialize`, read now; remembered as what the server has. */
  initializationOptions(): SettingsMessage {
    const settings = this.read();
    this.sent = JSON.stringify(settings);
    return { livetok: settings };
  }

  /** The configuration changed: send it if the client is running, else `onRunning` will. */
  onChange(running: boolean): void {
    if (running) {
      this.sendIfChanged();
    }
  }

  /** The client is running (after `initialize`): send the settings if they changed meanwhile. */
  onRunning(): void {
    this.sendIfChanged();
  }

  private sendIfChanged(): void {
    const settings = this.read();
    const json = JSON.stringify(settings);
    if (json === this.sent) {
      return;
    }
    this.sent = json;
    this.notify({ livetok: settings });
  }
}
