// VS Code glue: starts `livetok serve`, feeds its counts to the status bar, registers commands.
//
// Behaviour lives in status.ts and settings.ts, which do not import `vscode`; this file only
// translates VS Code events and objects into their calls.

import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
} from "vscode-languageclient/node";

import {
  ConfigGet,
  SERVER_KEYS,
  SettingTarget,
  pickEncoding,
  serverCommand,
  serverSettings,
  settingTarget,
  whichOnPath,
} from "./settings";
import { Range, TokenCount, TokenStatus } from "./status";

export const SECTION = "livetok";
export const TOKEN_COUNT_REQUEST = "livetok/tokenCount";
export const TOKEN_COUNT_NOTIFICATION = "livetok/didChangeTokenCount";

let client: LanguageClient | undefined;
let status: TokenStatus | undefined;
let output: vscode.OutputChannel | undefined;

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

const get: ConfigGet = <T>(key: string) => config().get<T>(key);

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

function requestCount(uri: string, range?: Range): Promise<TokenCount> {
  if (client === undefined || !client.isRunning()) {
    return Promise.reject(new Error("the livetok server is not running"));
  }
  const params = range === undefined ? { textDocument: { uri } } : { textDocument: { uri }, range };
  return client.sendRequest<TokenCount>(TOKEN_COUNT_REQUEST, params);
}

function createClient(): LanguageClient {
  const workspaceRoot = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const { command, args } = serverCommand(get, (name) => whichOnPath(name), workspaceRoot);
  output?.appendLine(`starting: ${command} ${args.join(" ")}`);
  const serverOptions: ServerOptions = { command, args, options: { cwd: workspaceRoot } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: SCHEMES.map((scheme) => ({ scheme })),
    initializationOptions: { [SECTION]: serverSettings(get) },
    outputChannel: output,
  };
  const c = new LanguageClient("livetok", "livetok", serverOptions, clientOptions);
  c.onNotification(TOKEN_COUNT_NOTIFICATION, (count: TokenCount) => status?.onCount(count));
  return c;
}

async function startClient(): Promise<void> {
  client = createClient();
  try {
    await client.start();
  } catch (err) {
    const message = `livetok: could not start the server (${String(err)}). Set "livetok.server.path" to the livetok executable.`;
    output?.appendLine(message);
    void vscode.window.showErrorMessage(message);
    return;
  }
  status?.onActiveEditor(trackedUri(vscode.window.activeTextEditor));
}

async function restartClient(): Promise<void> {
  const old = client;
  client = undefined;
  if (old !== undefined) {
    await old.stop().catch((err: unknown) => output?.appendLine(`stopping the server failed: ${String(err)}`));
  }
  await startClient();
}

function sendSettings(): void {
  if (client === undefined || !client.isRunning()) {
    return;
  }
  void client.sendNotification(DidChangeConfigurationNotification.type, {
    settings: { [SECTION]: serverSettings(get) },
  });
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
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

  context.subscriptions.push(
    output,
    { dispose: () => status?.dispose() },
    vscode.commands.registerCommand("livetok.pickEncoding", async () => {
      const current = serverSettings(get).encoding;
      const picked = await pickEncoding({
        current,
        showQuickPick: (items, placeHolder) => Promise.resolve(vscode.window.showQuickPick(items, { placeHolder })),
        update: (value) => updateSetting("encoding", value),
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
      const count = await requestCount(uri, toLspRange(editor.selection));
      void vscode.window.showInformationMessage(
        `livetok: ${count.rangeTokens ?? "?"} ${count.encoding} tokens selected (${count.tokens} in the document)`,
      );
    }),
    vscode.commands.registerCommand("livetok.restartServer", restartClient),
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
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (SERVER_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
        sendSettings();
        status?.refresh();
      }
      if (event.affectsConfiguration(`${SECTION}.server`)) {
        void restartClient();
      }
    }),
  );

  await startClient(); // shows the active editor's count once the server is up
}

export async function deactivate(): Promise<void> {
  const c = client;
  client = undefined;
  if (c !== undefined) {
    await c.stop();
  }
}
