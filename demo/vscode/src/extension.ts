// VS Code glue: starts `livetok serve`, feeds its counts to the status bar, registers commands.
//
// Behaviour lives in status.ts and settings.ts, which do not import `vscode`; this file only
// translates VS Code events and objects into their calls.

import * as os from "os";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";

import {
  InstallError,
  PythonExtensionApi,
  Report,
  ensureBundledServer,
  pythonCandidates,
  pythonExtensionInterpreter,
  spawnRunner,
} from "./bootstrap";
import { clientOutputChannel } from "./output";
import {
  ConfigGet,
  ListEncodingsResult,
  SERVER_KEYS,
  ServerCommand,
  ServerCommandError,
  ServerSettings,
  SettingTarget,
  SettingsSync,
  pickEncoding,
  pythonServerCommand,
  serverArgs,
  serverCommand,
  serverSettings,
  settingTarget,
  whichOnPath,
} from "./settings";
import { Range, ServerNotRunningError, TokenCount, TokenStatus } from "./status";
import { registerWorkspaceView } from "./workspace";

export const SECTION = "livetok";
export const TOKEN_COUNT_REQUEST = "livetok/tokenCount";
export const TOKEN_COUNT_NOTIFICATION = "livetok/didChangeTokenCount";
export const LIST_ENCODINGS_REQUEST = "livetok/listEncodings";

let client: LanguageClient | undefined;
/** Keeps `client`'s server in step with the settings; one per client. */
let settingsSync: SettingsSync | undefined;
/** The outcome of the latest start or restart: the client once it runs, `undefined` if it failed. */
let ready: Promise<LanguageClient | undefined> = Promise.resolve(undefined);
/** Starts, restarts and stops, chained so they never interleave. */
let lifecycle: Promise<unknown> = Promise.resolve();
let status: TokenStatus | undefined;
let output: vscode.OutputChannel | undefined;
let extensionContext: vscode.ExtensionContext | undefined;
/** Cancels the bundled server's install while it runs (the extension stops). */
let installAbort: AbortController | undefined;

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

const get: ConfigGet = <T>(key: string) => config().get<T>(key);

/** The settings the server is sent; a workspace's tokenizers are trusted only in a trusted workspace. */
function settingsForServer(): ServerSettings {
  return serverSettings(get, vscode.workspace.isTrusted === true);
}

function toTarget(target: SettingTarget): vscode.ConfigurationTarget {
  switch (target) {
    case "workspaceFolder":
      return vscode.ConfigurationTarget.WorkspaceFolder;
    case "workspace":
      return vscode.ConfigurationTarget.Workspace;
    default:
      return vscode.ConfigurationTarget.Global;
  }
}

/** Write `livetok.<key>` where it takes effect (see `settingTarget`). */
async function updateSetting(key: string, value: unknown): Promise<void> {
  const cfg = config();
  await cfg.update(key, value, toTarget(settingTarget(cfg.inspect(key))));
}

/** VS Code range -> LSP range. Both count columns in UTF-16 code units, so no conversion. */
function toLspRange(range: vscode.Range): Range {
  return {
    start: { line: range.start.line, character: range.start.character },
    end: { line: range.end.line, character: range.end.character },
  };
}

/** Schemes the server is sent documents for (the client's documentSelector). */
const SCHEMES = ["file", "untitled"];

/** The URI string of an editor's document if the server knows it (not output panels, git diffs...). */
function trackedUri(editor: vscode.TextEditor | undefined): string | undefined {
  const uri = editor?.document.uri;
  return uri !== undefined && SCHEMES.includes(uri.scheme) ? uri.toString() : undefined;
}

async function requestCount(uri: string, range?: Range): Promise<TokenCount> {
  // subtle: an editor opened while the server starts (or restarts) asks now and is answered
  // once the server is up, instead of failing with "not running" (issue 19)
  const c = client?.isRunning() ? client : await ready;
  if (c === undefined || !c.isRunning()) {
    throw new ServerNotRunningError();
  }
  const params = range === undefined ? { textDocument: { uri } } : { textDocument: { uri }, range };
  return c.sendRequest<TokenCount>(TOKEN_COUNT_REQUEST, params);
}

/** The server's `livetok/listEncodings`, or `undefined` when it is not running (the picker then offers its own list). */
async function listEncodings(): Promise<ListEncodingsResult | undefined> {
  const c = client;
  if (c === undefined || !c.isRunning()) {
    return undefined;
  }
  return c.sendRequest<ListEncodingsResult>(LIST_ENCODINGS_REQUEST, {});
}

/** Run `step` after every start/restart/stop queued before it has finished. */
function serialize<T>(step: () => Promise<T>): Promise<T> {
  const next = lifecycle.then(step, step);
  lifecycle = next.catch(() => undefined);
  return next;
}

/**
 * Runs the bundled server's install in a cancellable progress notification (bootstrap.ts),
 * with its step in the status bar too (the notification may be hidden or dismissed).
 */
function withInstallProgress<T>(task: (report: Report, signal: AbortSignal) => Promise<T>): Promise<T> {
  const options = {
    location: vscode.ProgressLocation.Notification,
    title: "livetok: installing the language server",
    cancellable: true,
  };
  const item = vscode.window.createStatusBarItem("livetok.install", vscode.StatusBarAlignment.Right, 101);
  item.name = "livetok install";
  item.text = "$(sync~spin) livetok: installing the server…";
  item.tooltip = "livetok is installing its language server into a private Python environment (livetok output: the details)";
  item.command = "livetok.showOutput";
  item.show();
  return Promise.resolve(vscode.window.withProgress(options, (progress, token) => {
    const abort = new AbortController();
    installAbort = abort;
    token.onCancellationRequested(() => abort.abort());
    return task((message) => {
      progress.report({ message });
      item.tooltip = `livetok: ${message}`;
    }, abort.signal);
  })).finally(() => item.dispose());
}

/**
 * A failed start, shown as a notification that fits a toast, with *Show Output* and *Retry*
 * (a restart); the whole message (an `InstallError`'s detail) goes to the output channel.
 */
async function showStartFailure(message: string): Promise<void> {
  const choice = await vscode.window.showErrorMessage(message, "Show Output", "Retry");
  if (choice === "Show Output") {
    output?.show(true);
  } else if (choice === "Retry") {
    void restartClient();
  }
}

/**
 * The server to start: the one the user's settings name or PATH has, else the livetok the
 * extension carries, installed into its global storage on first use (bootstrap.ts).
 */
async function resolveServer(): Promise<ServerCommand> {
  const which = (name: string) => whichOnPath(name);
  const configured = serverCommand(get, which);
  if (configured !== undefined) {
    return configured;
  }
  const ctx = extensionContext;
  const log = (line: string) => output?.appendLine(line);
  const bundled = ctx?.globalStorageUri === undefined ? undefined : await ensureBundledServer({
    storageDir: ctx.globalStorageUri.fsPath,
    bundledDir: ctx.asAbsolutePath("bundled"),
    serverArgs: serverArgs(get),
    cwd: os.homedir(),
    pythons: () => pythonCandidates(
      vscode.workspace.isTrusted === true,
      () => pythonExtensionInterpreter(vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python"), log),
      which,
    ),
    run: spawnRunner,
    log,
    withProgress: withInstallProgress,
  });
  // a .vsix packaged without the wheel: a livetok installed in python3, as before issue 29
  return bundled ?? pythonServerCommand("python3", serverArgs(get), os.homedir());
}

function createClient(server: ServerCommand): LanguageClient {
  const { command, args, cwd } = server;
  output?.appendLine(`starting: ${command} ${args.join(" ")}`);
  const sync = new SettingsSync(
    settingsForServer,
    (settings) =>
      void c
        .sendNotification(DidChangeConfigurationNotification.type, { settings })
        .catch((err: unknown) => output?.appendLine(`sending the settings failed: ${String(err)}`)),
  );
  const serverOptions: ServerOptions = { command, args, options: { cwd } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: SCHEMES.map((scheme) => ({ scheme })),
    // a function: the client calls it when it sends `initialize` (again after a crash)
    initializationOptions: () => sync.initializationOptions(),
    outputChannel: output === undefined ? undefined : clientOutputChannel(output),
  };
  const c = new LanguageClient("livetok", "livetok", serverOptions, clientOptions);
  c.onNotification(TOKEN_COUNT_NOTIFICATION, (count: TokenCount) => status?.onCount(count));
  c.onDidChangeState((event) => {
    if (event.newState === State.Running) {
      sync.onRunning(); // settings changed while it started
    }
  });
  client = c;
  settingsSync = sync;
  return c;
}

async function startClient(): Promise<LanguageClient | undefined> {
  let c: LanguageClient;
  const t0 = Date.now();
  try {
    c = createClient(await resolveServer());
    await c.start();
    output?.appendLine(`the server runs (${((Date.now() - t0) / 1000).toFixed(1)} s to start it)`);
  } catch (err) {
    const message =
      err instanceof ServerCommandError
        ? err.message
        : `livetok: could not start the server (${String(err)}). Set "livetok.server.path" to the livetok executable in your user settings.`;
    output?.appendLine(message);
    if (err instanceof InstallError && err.detail !== undefined) {
      output?.appendLine(err.detail);
    }
    void showStartFailure(message);
    return undefined;
  }
  status?.onActiveEditor(trackedUri(vscode.window.activeTextEditor));
  return c;
}

/**
 * How long a stop waits for the server's `shutdown` answer and exit before killing it
 * (languageclient's default is 2 s, which a busy machine overran on *Restart Server*: the
 * server was killed and requests sent meanwhile failed).
 */
const STOP_TIMEOUT_MS = 10_000;

async function stopClient(): Promise<void> {
  const old = client;
  client = undefined;
  settingsSync = undefined;
  if (old !== undefined && old.needsStop()) {
    await old.stop(STOP_TIMEOUT_MS).catch((err: unknown) => output?.appendLine(`stopping the server failed: ${String(err)}`));
  }
}

/**
 * Stop the server and start a new one (which reads the settings afresh). Queued behind a
 * start still in progress: languageclient cannot stop a client that is still starting.
 */
function restartClient(): Promise<void> {
  ready = serialize(async () => {
    await stopClient();
    return startClient();
  });
  return ready.then(() => undefined);
}

/** The configuration changed: the server gets it now, or as soon as it runs. */
function sendSettings(): void {
  settingsSync?.onChange(client?.isRunning() === true);
}

/** The memento key: the Tokens view was shown on a first start. */
const TOKENS_VIEW_SHOWN = "livetok.tokensViewShown";

/**
 * Open livetok's side-bar container (the Tokens view) on the extension's first start, once,
 * and give the editor its focus back: a view that was never seen is never found (issue 37
 * item 9). The user's later choice (another container, the view closed) is kept.
 */
async function revealTokensViewOnce(context: vscode.ExtensionContext): Promise<void> {
  if (context.globalState.get<boolean>(TOKENS_VIEW_SHOWN) === true) {
    return;
  }
  await context.globalState.update(TOKENS_VIEW_SHOWN, true);
  try {
    await vscode.commands.executeCommand("workbench.view.extension.livetok");
    if (vscode.window.activeTextEditor !== undefined) {
      await vscode.commands.executeCommand("workbench.action.focusActiveEditorGroup");
    }
  } catch (err) {
    output?.appendLine(`showing the Tokens view failed: ${String(err)}`);
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extensionContext = context;
  output = vscode.window.createOutputChannel("livetok");
  const countItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  const selectionItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 99);
  status = new TokenStatus({
    countItem,
    selectionItem,
    requestCount,
    contextWindow: () => serverSettings(get).contextWindow,
    debounceMs: get<number>("selectionDebounceMs") ?? 150,
    countCommand: "livetok.pickEncoding",
    log: (message) => output?.appendLine(message),
  });
  registerWorkspaceView(vscode, context, () => (client?.isRunning() ? client : undefined), (m) => output?.appendLine(m));
  void revealTokensViewOnce(context);

  context.subscriptions.push(
    output,
    { dispose: () => status?.dispose() },
    vscode.commands.registerCommand("livetok.pickEncoding", async () => {
      const settings = serverSettings(get);
      const picked = await pickEncoding({
        current: settings.encoding,
        tokenizer: settings.tokenizer,
        list: listEncodings,
        showQuickPick: (items, placeHolder) => Promise.resolve(vscode.window.showQuickPick(items, { placeHolder })),
        update: (value) => updateSetting("encoding", value),
        pickFile: async () => {
          const uris = await vscode.window.showOpenDialog({
            canSelectMany: false,
            openLabel: "Count with this tokenizer",
            filters: { "tokenizer.json": ["json"] },
          });
          return uris?.[0]?.fsPath;
        },
        updateTokenizer: (value) => updateSetting("tokenizer", value),
      });
      if (picked !== undefined) {
        output?.appendLine(`encoding set to ${picked}`);
      }
    }),
    vscode.commands.registerCommand("livetok.toggleSemanticTokens", async () => {
      const enabled = !serverSettings(get).semanticTokens;
      await updateSetting("semanticTokens", enabled);
      void vscode.window.showInformationMessage(
        `livetok: token-boundary highlighting ${enabled ? "on" : "off"}`,
      );
    }),
    vscode.commands.registerCommand("livetok.countSelection", async () => {
      const editor = vscode.window.activeTextEditor;
      const uri = trackedUri(editor);
      if (editor === undefined || uri === undefined) {
        return;
      }
      let count: TokenCount;
      try {
        count = await requestCount(uri, toLspRange(editor.selection));
      } catch (err) {
        void vscode.window.showErrorMessage(`livetok: could not count the selection (${String(err)})`);
        return;
      }
      void vscode.window.showInformationMessage(
        `livetok: ${count.rangeTokens ?? "?"} ${count.encoding} tokens selected (${count.tokens} in the document)`,
      );
    }),
    vscode.commands.registerCommand("livetok.restartServer", () => restartClient()),
    vscode.commands.registerCommand("livetok.showOutput", () => output?.show(true)),
    vscode.window.onDidChangeActiveTextEditor((editor) => status?.onActiveEditor(trackedUri(editor))),
    vscode.window.onDidChangeTextEditorSelection((event) => {
      const uri = trackedUri(event.textEditor);
      if (event.textEditor !== vscode.window.activeTextEditor || uri === undefined) {
        return;
      }
      const selection = event.selections[0];
      status?.onSelection(uri, selection === undefined || selection.isEmpty ? undefined : toLspRange(selection));
    }),
    vscode.workspace.onDidCloseTextDocument((document) => status?.onClose(document.uri.toString())),
    // leaving Restricted Mode may let the server trust the workspace's tokenizers; the server
    // takes that trust only when it starts (a workspace's own configuration cannot grant it
    // later through didChangeConfiguration), so it is restarted
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restartClient()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (SERVER_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
        sendSettings();
        status?.refresh();
      }
      if (event.affectsConfiguration(`${SECTION}.server`)
          || event.affectsConfiguration(`${SECTION}.trustWorkspaceTokenizers`)) {
        void restartClient();
      }
    }),
  );

  ready = serialize(startClient); // shows the active editor's count once the server is up
  await ready;
}

export async function deactivate(): Promise<void> {
  ready = Promise.resolve(undefined);
  installAbort?.abort();
  await serialize(stopClient);
}
