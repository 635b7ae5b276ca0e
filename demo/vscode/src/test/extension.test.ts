// Loads the real out/extension.js with `vscode` and `vscode-languageclient/node` mocked, and
// checks the wiring: what server is started with which options, which commands exist, and
// that settings, notifications and selections reach the server and the status bar.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";

import {
  ConfigurationTarget,
  FakeRange,
  deferred,
  fakeEditor,
  flush,
  installRequireMocks,
  makeLanguageClientMock,
  makeVscodeMock,
  fakeMemento,
} from "./fakes";
import { TOAST_MAX, noPythonMessage } from "../bootstrap";

const packageJson = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
const defaults: Record<string, unknown> = Object.fromEntries(
  Object.entries(packageJson.contributes.configuration.properties as Record<string, { default?: unknown }>).map(
    ([k, v]) => [k.replace(/^livetok\./, ""), v.default],
  ),
);

type Extension = typeof import("../extension");

let vs: ReturnType<typeof makeVscodeMock>;
let lc: ReturnType<typeof makeLanguageClientMock>;
let ext: Extension;
let undoMocks: () => void;
const subscriptions: { dispose(): unknown }[] = [];
let globalState = fakeMemento();

async function activate(settings: Record<string, unknown> = {}, editor?: ReturnType<typeof fakeEditor>) {
  for (const [k, v] of Object.entries(settings)) {
    vs.config.global.set(k, v);
  }
  vs.vscode.window.activeTextEditor = editor;
  await ext.activate({ subscriptions, globalState } as never);
  return lc.clients[lc.clients.length - 1];
}

function lastSettings(client: (typeof lc.clients)[number]) {
  const sent = client.sentNotifications.filter((n) => n.method === "workspace/didChangeConfiguration");
  assert.ok(sent.length > 0, "no workspace/didChangeConfiguration sent");
  return (sent[sent.length - 1].params as { settings: { livetok: Record<string, unknown> } }).settings.livetok;
}

/**
 * The settings the server holds: its `initialize` options with every didChangeConfiguration
 * applied in order (the server keeps keys a notification leaves out).
 */
function serverHolds(client: (typeof lc.clients)[number]): Record<string, unknown> {
  const held = { ...(client.initializeOptions as { livetok: Record<string, unknown> }).livetok };
  for (const n of client.sentNotifications) {
    if (n.method === "workspace/didChangeConfiguration") {
      assert.ok(n.running, "didChangeConfiguration sent before the server answered initialize");
      Object.assign(held, (n.params as { settings: { livetok: Record<string, unknown> } }).settings.livetok);
    }
  }
  return held;
}

function setEncoding(name: string): Promise<void> {
  return vs.config.section().update("encoding", name, ConfigurationTarget.Global);
}

const COUNT_B = { uri: "file:///w/b.md", version: 1, encoding: "o200k_base", tokens: 7, characters: 30 };

beforeEach(() => {
  globalState = fakeMemento();
  vs = makeVscodeMock({ ...defaults, "server.path": "/test/bin/livetok" });
  lc = makeLanguageClientMock();
  undoMocks = installRequireMocks({ vscode: vs.vscode, "vscode-languageclient/node": lc.module });
  const modulePath = require.resolve("../extension");
  delete require.cache[modulePath];
  ext = require(modulePath);
});

afterEach(async () => {
  await ext.deactivate();
  for (const s of subscriptions.splice(0)) {
    s.dispose();
  }
  undoMocks();
});

describe("extension activation", () => {
  test("starts `livetok serve` with the livetok section as initializationOptions", async () => {
    const client = await activate({ encoding: "cl100k_base", budget: 5000 });
    assert.equal(lc.clients.length, 1);
    assert.deepEqual(client.serverOptions, {
      command: "/test/bin/livetok",
      args: ["serve"],
      options: { cwd: os.homedir() },
    });
    assert.deepEqual(client.initializeOptions, {
      livetok: {
        encoding: "cl100k_base",
        tokenizer: null,
        encodingByLanguage: {},
        compare: [],
        contextWindow: 128000,
        budget: 5000,
        semanticTokens: false,
        trustWorkspaceTokenizers: false,
      },
    });
    assert.deepEqual(client.clientOptions.documentSelector, [{ scheme: "file" }, { scheme: "untitled" }]);
    assert.ok(client.isRunning());
  });

  test("the Tokens view's container opens on the first start only, and the editor keeps the focus (issue 37 item 9)", async () => {
    await activate({}, fakeEditor("file:///w/a.md"));
    assert.deepEqual(vs.executed, ["workbench.view.extension.livetok", "workbench.action.focusActiveEditorGroup"]);
    await ext.deactivate();
    vs.executed.length = 0;
    await activate();
    assert.deepEqual(vs.executed, [], "shown again on a later start");
    const views = packageJson.contributes.views as Record<string, { id: string; visibility?: string }[]>;
    assert.deepEqual(Object.keys(views), ["livetok"], "not in the explorer, where it starts collapsed at the bottom");
    assert.equal(views.livetok[0].id, "livetok.workspace");
    const containers = packageJson.contributes.viewsContainers.activitybar as { id: string; icon: string }[];
    assert.equal(containers[0].id, "livetok");
    assert.ok(fs.existsSync(path.join(__dirname, "..", "..", containers[0].icon)), "the container's icon ships");
  });

  test("Restart Server and a settings change keep the configured server (issue 37 item 2)", async () => {
    const first = await activate();
    assert.equal(first.serverOptions.command, "/test/bin/livetok");
    await (vs.commands.get("livetok.restartServer")!() as Promise<void>);
    await (vs.commands.get("livetok.restartServer")!() as Promise<void>);
    vs.config.global.set("server.args", ["serve", "--log-level", "info"]);
    vs.config.changed.fire({ affectsConfiguration: (k: string) => k === "livetok.server" || k === "livetok.server.args" });
    await flush();
    await (vs.commands.get("livetok.restartServer")!() as Promise<void>);
    assert.deepEqual(lc.clients.map((c) => c.serverOptions.command), Array(lc.clients.length).fill("/test/bin/livetok"));
    assert.ok(lc.clients.length >= 4);
    assert.deepEqual(lc.clients[lc.clients.length - 1].serverOptions.args, ["serve", "--log-level", "info"]);
  });

  test("registers exactly the commands package.json contributes", async () => {
    await activate();
    const contributed = (packageJson.contributes.commands as { command: string }[]).map((c) => c.command).sort();
    assert.deepEqual([...vs.commands.keys()].sort(), contributed);
  });

  test("didChangeTokenCount for the active document shows in the status bar", async () => {
    const editor = fakeEditor("file:///w/a.md");
    const client = await activate({}, editor);
    // the active document's count is asked for once the server is up
    assert.deepEqual(client.requests[0], {
      method: "livetok/tokenCount",
      params: { textDocument: { uri: "file:///w/a.md" } },
    });
    const notify = client.notificationHandlers.get("livetok/didChangeTokenCount");
    assert.ok(notify, "no handler for livetok/didChangeTokenCount");
    notify({ uri: "file:///w/a.md", version: 3, encoding: "o200k_base", tokens: 2048, characters: 9000 });
    const [countItem] = vs.statusItems;
    assert.ok(countItem.visible);
    assert.equal(countItem.text, "2,048 tokens · o200k_base · 1.6% of window");
    assert.equal(countItem.command, "livetok.pickEncoding");
  });

  test("editors the server does not track (output panels, diffs) ask nothing", async () => {
    const client = await activate({ selectionDebounceMs: 0 }, fakeEditor("output:extension-output-livetok"));
    assert.equal(client.requests.length, 0);
    const diff = fakeEditor("git:/w/a.md", new FakeRange({ line: 0, character: 0 }, { line: 0, character: 3 }));
    vs.vscode.window.activeTextEditor = diff;
    vs.activeEditorChanged.fire(diff);
    vs.selectionChanged.fire({ textEditor: diff, selections: [diff.selection] });
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(client.requests.length, 0);
    assert.equal(vs.statusItems[0].visible, false);
  });

  test("a selection is counted with a ranged livetok/tokenCount after the debounce", async () => {
    const editor = fakeEditor("file:///w/a.md");
    const client = await activate({ selectionDebounceMs: 5 }, editor);
    client.answer = async (_method, params) => ({
      uri: "file:///w/a.md",
      version: 1,
      encoding: "o200k_base",
      tokens: 100,
      characters: 400,
      rangeTokens: (params as { range?: unknown }).range ? 17 : undefined,
    });
    client.requests.length = 0;
    const selection = new FakeRange({ line: 1, character: 2 }, { line: 3, character: 0 });
    vs.selectionChanged.fire({ textEditor: editor, selections: [selection] });
    assert.equal(client.requests.length, 0, "request must wait for the debounce");
    await new Promise((r) => setTimeout(r, 30));
    await flush();
    assert.deepEqual(client.requests, [
      {
        method: "livetok/tokenCount",
        params: {
          textDocument: { uri: "file:///w/a.md" },
          range: { start: { line: 1, character: 2 }, end: { line: 3, character: 0 } },
        },
      },
    ]);
    const selectionItem = vs.statusItems[1];
    assert.ok(selectionItem.visible);
    assert.equal(selectionItem.text, "Selection: 17 tokens");
  });
});

describe("a workspace cannot choose what runs (issue 26)", () => {
  test("a relative livetok.server.path is refused with its reason, nothing started", async () => {
    vs.vscode.workspace.workspaceFolders = [{ uri: { fsPath: path.join(os.tmpdir(), "cloned-repo") } }];
    await activate({ "server.path": path.join(".venv", "bin", "livetok") });
    assert.equal(lc.clients.length, 0, "no server started");
    assert.equal(vs.messages.length, 1);
    assert.match(vs.messages[0], /^error: livetok: livetok\.server\.path is a relative path/);
    assert.match(vs.messages[0], /does not resolve it against the workspace/);
  });

  test("the server starts in the home folder with a workspace open", async () => {
    vs.vscode.workspace.workspaceFolders = [{ uri: { fsPath: path.join(os.tmpdir(), "cloned-repo") } }];
    const client = await activate();
    assert.equal((client.serverOptions as { options?: { cwd?: string } }).options?.cwd, os.homedir());
  });

  test("trustWorkspaceTokenizers reaches the server only once the workspace is trusted", async () => {
    vs.vscode.workspace.isTrusted = false; // Restricted Mode
    const client = await activate({ trustWorkspaceTokenizers: true });
    assert.equal((client.initializeOptions as { livetok: Record<string, unknown> }).livetok.trustWorkspaceTokenizers, false);
    vs.vscode.workspace.isTrusted = true;
    vs.trustGranted.fire();
    await flush();
    // the server takes the trust when it starts: a new one, with it in initializationOptions
    assert.equal(lc.clients.length, 2);
    const second = lc.clients[1];
    assert.equal((second.initializeOptions as { livetok: Record<string, unknown> }).livetok.trustWorkspaceTokenizers, true);
  });
});

describe("commands", () => {
  test("Pick Encoding writes livetok.encoding and sends didChangeConfiguration", async () => {
    const client = await activate();
    vs.quickPick.answer = "bert-base-uncased";
    await vs.commands.get("livetok.pickEncoding")!();
    // the fake server does not answer livetok/listEncodings: the built-in list
    assert.deepEqual(
      vs.quickPick.lastItems.map((i) => i.label),
      ["o200k_base", "cl100k_base", "r50k_base", "bert-base-uncased", "mistral-7b-v0.1",
        "$(file) tokenizer.json file…"],
    );
    assert.deepEqual(vs.config.updates, [
      { key: "encoding", value: "bert-base-uncased", target: ConfigurationTarget.Global },
    ]);
    assert.equal(lastSettings(client).encoding, "bert-base-uncased");
  });

  test("Pick Encoding lists what the server finds (livetok/listEncodings)", async () => {
    const client = await activate();
    client.answer = async (method) => {
      assert.equal(method, "livetok/listEncodings");
      return {
        encodings: [
          { name: "o200k_base", description: "GPT-4o" },
          { name: "hf:Qwen/Qwen3-4B", description: "tokenizer.json from the local Hugging Face cache" },
        ],
        current: "o200k_base",
        tokenizer: null,
      };
    };
    vs.quickPick.answer = "hf:Qwen/Qwen3-4B";
    await vs.commands.get("livetok.pickEncoding")!();
    assert.deepEqual(client.requests.map((r) => r.method), ["livetok/listEncodings"]);
    assert.deepEqual(
      vs.quickPick.lastItems.map((i) => i.label),
      ["o200k_base", "hf:Qwen/Qwen3-4B", "$(file) tokenizer.json file…"],
    );
    assert.equal(lastSettings(client).encoding, "hf:Qwen/Qwen3-4B");
  });

  test("Pick Encoding's file item sets livetok.tokenizer, which reaches the server", async () => {
    const client = await activate();
    vs.quickPick.answer = "$(file) tokenizer.json file…";
    vs.quickPick.file = "/models/llama3/tokenizer.json";
    await vs.commands.get("livetok.pickEncoding")!();
    assert.deepEqual(vs.config.updates, [
      { key: "tokenizer", value: "/models/llama3/tokenizer.json", target: ConfigurationTarget.Global },
    ]);
    assert.equal(lastSettings(client).tokenizer, "/models/llama3/tokenizer.json");
    // picking a name again removes the tokenizer setting, which would win over it
    vs.quickPick.answer = "cl100k_base";
    await vs.commands.get("livetok.pickEncoding")!();
    assert.equal(lastSettings(client).tokenizer, null);
    assert.equal(lastSettings(client).encoding, "cl100k_base");
  });

  test("Pick Encoding writes the workspace setting when the workspace sets one", async () => {
    vs.config.workspace.set("encoding", "r50k_base");
    await activate();
    vs.quickPick.answer = "o200k_base";
    await vs.commands.get("livetok.pickEncoding")!();
    assert.deepEqual(vs.config.updates, [{ key: "encoding", value: "o200k_base", target: ConfigurationTarget.Workspace }]);
    assert.equal(vs.config.get("encoding"), "o200k_base");
  });

  test("Toggle highlighting flips livetok.semanticTokens and tells the server", async () => {
    const client = await activate();
    await vs.commands.get("livetok.toggleSemanticTokens")!();
    assert.equal(lastSettings(client).semanticTokens, true);
    await vs.commands.get("livetok.toggleSemanticTokens")!();
    assert.equal(lastSettings(client).semanticTokens, false);
    assert.deepEqual(vs.messages, [
      "livetok: token-boundary highlighting on",
      "livetok: token-boundary highlighting off",
    ]);
  });

  test("changing livetok.server.* restarts the server with the new command", async () => {
    const first = await activate();
    await vs.config.section().update("server.path", "/other/livetok", ConfigurationTarget.Global);
    await flush();
    assert.equal(first.isRunning(), false);
    assert.equal(lc.clients.length, 2);
    assert.equal(lc.clients[1].serverOptions.command, "/other/livetok");
    assert.ok(lc.clients[1].isRunning());
    assert.equal(
      first.sentNotifications.length,
      0,
      "a server-only setting is not sent as didChangeConfiguration",
    );
  });
});

describe("while the server starts (issue 19)", () => {
  test("a setting changed during the first start reaches the server once it runs", async () => {
    const gate = deferred<void>();
    lc.startGates.push(gate.promise);
    const activated = activate(); // the server is starting: initialize sent, no answer yet
    await flush();
    const client = lc.clients[0];
    assert.equal(client.isRunning(), false);
    await setEncoding("cl100k_base");
    gate.resolve();
    await activated;
    await flush();
    assert.equal(serverHolds(client).encoding, "cl100k_base");
  });

  test("a setting changed 0.2 s after Restart Server reaches the new server", async () => {
    const first = await activate();
    const gate = deferred<void>();
    lc.startGates.push(gate.promise);
    const restarted = vs.commands.get("livetok.restartServer")!() as Promise<void>;
    await flush();
    assert.equal(first.isRunning(), false);
    const second = lc.clients[1];
    assert.ok(second !== undefined && !second.isRunning(), "the new server should still be starting");
    await setEncoding("cl100k_base");
    gate.resolve();
    await restarted;
    await flush();
    assert.equal(serverHolds(second).encoding, "cl100k_base");
    // and later changes still go through
    await setEncoding("r50k_base");
    assert.equal(serverHolds(second).encoding, "r50k_base");
  });

  test("settings unchanged during the start are not sent again", async () => {
    const client = await activate({ encoding: "cl100k_base" });
    await flush();
    assert.equal(client.sentNotifications.length, 0);
    assert.equal(serverHolds(client).encoding, "cl100k_base");
  });

  test("an editor opened while the server starts is counted once it runs, nothing logged", async () => {
    const gate = deferred<void>();
    lc.startGates.push(gate.promise);
    const activated = activate();
    await flush();
    const client = lc.clients[0];
    client.answer = async () => COUNT_B;
    const editor = fakeEditor("file:///w/b.md");
    vs.vscode.window.activeTextEditor = editor;
    vs.activeEditorChanged.fire(editor);
    await flush();
    assert.equal(client.requests.length, 0, "nothing can be asked before initialize is answered");
    gate.resolve();
    await activated;
    await flush();
    assert.ok(client.requests.length >= 1);
    assert.deepEqual(client.requests[0].params, { textDocument: { uri: "file:///w/b.md" } });
    assert.equal(vs.statusItems[0].text, "7 tokens · o200k_base · <0.1% of window");
    const logged = vs.outputs.flatMap((o) => o.lines);
    assert.ok(!logged.some((l) => /failed/.test(l)), `logged: ${JSON.stringify(logged)}`);
  });

  test("a server that cannot start: editors opened later log no request failures", async () => {
    const gate = deferred<void>();
    lc.startGates.push(gate.promise);
    const activated = activate();
    await flush();
    gate.reject(new Error("spawn livetok ENOENT"));
    await activated;
    const editor = fakeEditor("file:///w/b.md");
    vs.vscode.window.activeTextEditor = editor;
    vs.activeEditorChanged.fire(editor);
    await flush();
    const logged = vs.outputs.flatMap((o) => o.lines);
    assert.ok(logged.some((l) => /could not start the server/.test(l)), `logged: ${JSON.stringify(logged)}`);
    assert.ok(!logged.some((l) => /tokenCount failed/.test(l)), `logged: ${JSON.stringify(logged)}`);
  });

  test("the server's clean exit on restart is logged as info, not as an error", async () => {
    const client = await activate();
    const channel = client.clientOptions.outputChannel;
    assert.ok(channel !== undefined, "the client should log to the livetok output channel");
    channel.appendLine("[Error - 10:02:03] Server process exited with code 0.");
    channel.appendLine("[Error - 10:02:04] Server process exited with code 1.");
    const lines = vs.outputs.flatMap((o) => o.lines);
    assert.ok(lines.includes("[Info  - 10:02:03] Server process exited normally (code 0)."), JSON.stringify(lines));
    assert.ok(lines.includes("[Error - 10:02:04] Server process exited with code 1."), JSON.stringify(lines));
  });
});

describe("no server configured or found: the bundled one (issue 29)", () => {
  let tmp: string;
  let savedPath: string | undefined;

  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "livetok-ext-"));
    savedPath = process.env.PATH;
    process.env.PATH = path.join(tmp, "empty-bin"); // no livetok, no python3
    vs.config.global.set("server.path", "");
  });

  afterEach(() => {
    process.env.PATH = savedPath;
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  /** Activate as VS Code does, with the extension's folder (holding `wheel` in bundled/, if given) and a storage folder. */
  async function activateWith(wheel: boolean) {
    const extDir = path.join(tmp, "extension");
    fs.mkdirSync(path.join(extDir, "bundled"), { recursive: true });
    if (wheel) {
      fs.writeFileSync(path.join(extDir, "bundled", "livetok-0.1.0-py3-none-any.whl"), "wheel");
    }
    const context = {
      subscriptions,
      globalState,
      globalStorageUri: { fsPath: path.join(tmp, "storage") },
      asAbsolutePath: (p: string) => path.join(extDir, p),
    };
    await ext.activate(context as never);
  }

  test("without a Python: a short error with Show Output and Retry, the documented message in the output; nothing started", async () => {
    vs.vscode.workspace.isTrusted = false;
    await activateWith(true);
    assert.equal(lc.clients.length, 0);
    // the Pythons are probed before any install starts: no progress shown for nothing
    assert.deepEqual(vs.progress.titles, []);
    assert.deepEqual(vs.messages, ["error: livetok needs Python 3.11+ to install its language server, and none was found. The output says what to install."]);
    assert.ok(vs.messages[0].length - "error: ".length <= TOAST_MAX);
    assert.deepEqual(vs.errorAnswer.buttons, [["Show Output", "Retry"]]);
    assert.ok(vs.outputs[0].lines.includes(noPythonMessage([])), "the documented message is in the output");
    assert.match(vs.outputs[0].lines.join("\n"), /needs Python 3\.11 or newer, and none was found \(python3 is not on PATH\)/);
    // Restricted Mode: the Python extension is not asked for its interpreter
    assert.deepEqual(vs.extensions.asked, []);
  });

  test("Retry on the error restarts: once a Python is there, the install runs (in the status bar too) and the server starts", async () => {
    const answer = deferred<string | undefined>();
    vs.errorAnswer.choice = answer.promise;
    await activateWith(true);
    assert.equal(lc.clients.length, 0);
    // a "python3" that answers the probe as Python 3.11 and fakes venv and pip
    const bin = path.join(tmp, "empty-bin");
    fs.mkdirSync(bin, { recursive: true });
    const script = [
      `#!${process.execPath}`,
      "const fs = require('fs'), path = require('path'); const a = process.argv.slice(2);",
      "if (a[1] === '-c') { console.log(JSON.stringify({version: [3, 11, 2], executable: __filename, real: __filename, venv: true, ensurepip: true})); process.exit(0); }",
      "if (a.includes('venv')) { const root = a[a.length - 1]; fs.mkdirSync(path.join(root, 'bin'), {recursive: true}); fs.copyFileSync(__filename, path.join(root, 'bin', 'python')); fs.chmodSync(path.join(root, 'bin', 'python'), 0o755); process.exit(0); }",
      "process.exit(0);",
    ].join("\n");
    fs.writeFileSync(path.join(bin, "python3"), script, { mode: 0o755 });
    vs.errorAnswer.choice = undefined;
    answer.resolve("Retry");
    for (let i = 0; i < 200 && lc.clients.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(lc.clients.length, 1, `no server started after Retry: ${vs.outputs[0].lines.join("\n")}`);
    assert.match(String(lc.clients[0].serverOptions.command), /storage[\\/]env-[0-9a-f]{12}[\\/]bin[\\/]python$/);
    assert.deepEqual(vs.progress.titles, ["livetok: installing the language server"]);
    const installItem = vs.statusItems.find((i) => i.name === "livetok install");
    assert.ok(installItem, "the install shows in the status bar");
    assert.match(installItem.text, /installing the server/);
    assert.ok(installItem.disposed, "and goes once it is done");
  });

  test("in a trusted workspace the Python extension's interpreter is tried after PATH's", async () => {
    const interpreter = path.join(tmp, "no-such-env", "bin", "python");
    const api = {
      environments: {
        getActiveEnvironmentPath: () => ({ path: interpreter }),
        resolveEnvironment: async (env: { path: string }) => ({ executable: { uri: { fsPath: env.path } } }),
      },
    };
    vs.extensions.answer = { isActive: true, exports: api, activate: async () => api };
    await activateWith(true);
    assert.deepEqual(vs.extensions.asked, ["ms-python.python"]);
    assert.equal(lc.clients.length, 0);
    assert.ok(vs.outputs[0].lines.includes(
      noPythonMessage([`the Python extension's interpreter (${interpreter}) did not run as Python 3`])));
  });

  test("an extension packaged without the wheel runs python3 -m livetok.server, as before", async () => {
    await activateWith(false);
    assert.deepEqual(vs.progress.titles, []);
    assert.equal(lc.clients.length, 1);
    assert.deepEqual(lc.clients[0].serverOptions, {
      command: "python3",
      args: ["-m", "livetok.server", "serve"],
      options: { cwd: os.homedir() },
    });
  });
});
