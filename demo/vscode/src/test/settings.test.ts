import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";

import {
  ConfigGet,
  ENCODINGS,
  ServerCommandError,
  EncodingPickItem,
  ListEncodingsResult,
  TOKENIZER_FILE_ITEM,
  SERVER_KEYS,
  SettingsMessage,
  SettingsSync,
  encodingItems,
  executablePath,
  pickEncoding,
  serverCommand,
  serverSettings,
  settingTarget,
  whichOnPath,
} from "../settings";

function configOf(values: Record<string, unknown>): ConfigGet {
  return <T>(key: string) => values[key] as T | undefined;
}

const packageJson = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
const contributed = packageJson.contributes.configuration.properties as Record<string, { default?: unknown }>;

/** The defaults VS Code would return for an untouched installation. */
const defaults: Record<string, unknown> = Object.fromEntries(
  Object.entries(contributed).map(([k, v]) => [k.replace(/^livetok\./, ""), v.default]),
);

describe("serverSettings", () => {
  test("package.json defaults give the documented server defaults", () => {
    assert.deepEqual(serverSettings(configOf(defaults)), {
      encoding: "o200k_base",
      tokenizer: null,
      encodingByLanguage: {},
      compare: [],
      contextWindow: 128000,
      budget: null,
      semanticTokens: false,
      trustWorkspaceTokenizers: false,
    });
  });

  test("every key sent to the server is a contributed setting", () => {
    for (const key of SERVER_KEYS) {
      assert.ok(`livetok.${key}` in contributed, `livetok.${key} missing from package.json`);
    }
  });

  test("invalid values fall back to off / the default", () => {
    const s = serverSettings(
      configOf({
        encoding: "",
        encodingByLanguage: { markdown: "cl100k_base", python: 3, rust: "" },
        contextWindow: 0,
        budget: 1.5,
        semanticTokens: "yes",
      }),
    );
    assert.deepEqual(s, {
      encoding: "o200k_base",
      tokenizer: null,
      encodingByLanguage: { markdown: "cl100k_base" },
      compare: [],
      contextWindow: null,
      budget: null,
      semanticTokens: false,
      trustWorkspaceTokenizers: false,
    });
  });

  test("set values pass through", () => {
    const s = serverSettings(
      configOf({ encoding: "r50k_base", contextWindow: 8192, budget: 4000, semanticTokens: true }),
    );
    assert.deepEqual(s, {
      encoding: "r50k_base",
      tokenizer: null,
      encodingByLanguage: {},
      compare: [],
      contextWindow: 8192,
      budget: 4000,
      semanticTokens: true,
      trustWorkspaceTokenizers: false,
    });
  });
});

test("livetok.compare passes through as a list of names, other entries dropped", () => {
  const names = ["cl100k_base", " llama-3.1-8b ", "", 5, null, "claude-sonnet-4"];
  assert.deepEqual(serverSettings(configOf({ compare: names })).compare, [
    "cl100k_base",
    "llama-3.1-8b",
    "claude-sonnet-4",
  ]);
  assert.deepEqual(serverSettings(configOf({ compare: "cl100k_base" })).compare, []);
});

describe("serverCommand", () => {
  const nowhere = () => undefined;
  const home = path.join(path.sep, "home", "u");

  test("an explicit path wins over PATH", () => {
    const cmd = serverCommand(configOf({ "server.path": "/opt/livetok/bin/livetok" }), () => "/usr/bin/livetok", home);
    assert.deepEqual(cmd, { command: "/opt/livetok/bin/livetok", args: ["serve"], cwd: home });
  });

  test("livetok on PATH, with custom args", () => {
    const seen: string[] = [];
    const cmd = serverCommand(
      configOf({ "server.args": ["serve", "--log-level", "debug"] }),
      (name) => (seen.push(name), "/usr/local/bin/livetok"),
      home,
    );
    assert.deepEqual(seen, ["livetok"]);
    assert.deepEqual(cmd, { command: "/usr/local/bin/livetok", args: ["serve", "--log-level", "debug"], cwd: home });
  });

  test("nothing configured or on PATH: undefined, the bundled server (issue 29)", () => {
    assert.equal(serverCommand(configOf(defaults), nowhere, home), undefined);
    assert.equal(serverCommand(configOf({ "server.pythonPath": "  " }), nowhere, home), undefined);
  });

  test("a pythonPath the user set runs python -m livetok.server", () => {
    assert.deepEqual(serverCommand(configOf({ "server.pythonPath": "/venv/bin/python" }), nowhere, home), {
      command: "/venv/bin/python",
      args: ["-m", "livetok.server", "serve"],
      cwd: home,
    });
  });

  test("the server runs in the home folder, not the workspace", () => {
    assert.equal(serverCommand(configOf({ "server.pythonPath": "python3" }), nowhere)?.cwd, os.homedir());
  });

  test("a relative server path is refused, never resolved against the workspace (issue 26)", () => {
    for (const [key, value] of [
      ["server.path", path.join(".venv", "bin", "livetok")],
      ["server.path", "./livetok"],
      ["server.pythonPath", path.join(".venv", "bin", "python")],
      ["server.pythonPath", "../python3"],
    ]) {
      assert.throws(
        () => serverCommand(configOf({ [key]: value }), nowhere, home),
        (err: unknown) =>
          err instanceof ServerCommandError &&
          err.message.includes(`livetok.${key} is a relative path (${JSON.stringify(value)})`) &&
          err.message.includes("does not resolve it against the workspace"),
        `${key} = ${value}`,
      );
    }
  });

  test("~/ means the home folder; a bare name is left to PATH", () => {
    assert.equal(
      serverCommand(configOf({ "server.path": "~/.local/bin/livetok" }), nowhere, home)?.command,
      path.join(home, ".local", "bin", "livetok"),
    );
    assert.equal(executablePath("livetok.server.pythonPath", "~/venv/bin/python", home), path.join(home, "venv", "bin", "python"));
    assert.equal(executablePath("livetok.server.pythonPath", "python3.12", home), "python3.12");
    assert.equal(serverCommand(configOf({ "server.path": "livetok" }), nowhere, home)?.command, "livetok");
  });
});

describe("settings no workspace may set (issue 26)", () => {
  const properties = packageJson.contributes.configuration.properties as Record<string, { scope?: string }>;
  const restricted = ["livetok.server.path", "livetok.server.pythonPath", "livetok.server.args", "livetok.trustWorkspaceTokenizers"];

  test("the server command and the trust setting are application-scoped (user settings, also in a remote window)", () => {
    // subtle: "machine" kept a workspace out too, but in a remote window (code-server,
    // Remote-SSH, WSL) VS Code takes a machine-scoped value from the remote settings only and
    // drops one in the user settings when it reads them again (after any change): the first
    // start found livetok.server.path, a restart did not (issue 37 item 2). "application" is
    // read from the user settings everywhere and from no workspace.
    for (const key of restricted) {
      assert.equal(properties[key]?.scope, "application", `${key} must be "scope": "application"`);
    }
  });

  test("Restricted Mode ignores a workspace's value of each", () => {
    const untrusted = packageJson.capabilities?.untrustedWorkspaces;
    assert.equal(untrusted?.supported, "limited");
    for (const key of restricted) {
      assert.ok(untrusted.restrictedConfigurations.includes(key), `${key} missing from restrictedConfigurations`);
    }
  });

  test("trustWorkspaceTokenizers is sent only when set and the workspace is trusted", () => {
    const on = configOf({ trustWorkspaceTokenizers: true });
    assert.equal(serverSettings(on, true).trustWorkspaceTokenizers, true);
    assert.equal(serverSettings(on, false).trustWorkspaceTokenizers, false, "Restricted Mode");
    assert.equal(serverSettings(on).trustWorkspaceTokenizers, false, "trust is not assumed");
    assert.equal(serverSettings(configOf(defaults), true).trustWorkspaceTokenizers, false);
    assert.equal(serverSettings(configOf({ trustWorkspaceTokenizers: "yes" }), true).trustWorkspaceTokenizers, false);
  });
});

describe("whichOnPath", { skip: process.platform === "win32" ? "POSIX permissions" : false }, () => {
  test("finds an executable file and skips non-executables and directories", () => {
    const dir1 = fs.mkdtempSync(path.join(os.tmpdir(), "livetok-which-"));
    const dir2 = fs.mkdtempSync(path.join(os.tmpdir(), "livetok-which-"));
    try {
      fs.writeFileSync(path.join(dir1, "livetok"), "#!/bin/sh\n", { mode: 0o644 }); // not executable
      fs.mkdirSync(path.join(dir1, "other"));
      fs.writeFileSync(path.join(dir2, "livetok"), "#!/bin/sh\n", { mode: 0o755 });
      const env = { PATH: [dir1, dir2].join(path.delimiter) };
      assert.equal(whichOnPath("livetok", env, "linux"), path.join(dir2, "livetok"));
      assert.equal(whichOnPath("other", env, "linux"), undefined);
      assert.equal(whichOnPath("livetok", { PATH: dir1 }, "linux"), undefined);
      // a relative entry is not looked in (it would mean whatever folder the extension runs in)
      assert.equal(whichOnPath("livetok", { PATH: path.relative(process.cwd(), dir2) }, "linux"), undefined);
    } finally {
      fs.rmSync(dir1, { recursive: true, force: true });
      fs.rmSync(dir2, { recursive: true, force: true });
    }
  });
});

describe("encoding picker", () => {
  test("offers the five encodings with the current one marked", () => {
    const items = encodingItems("cl100k_base");
    assert.deepEqual(
      items.map((i) => i.label),
      ["o200k_base", "cl100k_base", "r50k_base", "bert-base-uncased", "mistral-7b-v0.1"],
    );
    assert.deepEqual(
      items.filter((i) => i.picked).map((i) => i.label),
      ["cl100k_base"],
    );
    assert.equal(ENCODINGS.length, 5);
  });

  test("keeps a hand-typed current encoding selectable", () => {
    const items = encodingItems("gpt2");
    assert.equal(items[0].label, "gpt2");
    assert.ok(items[0].picked);
    assert.equal(items.length, 6);
  });

  async function run(current: string, answer: string | undefined) {
    const updates: string[] = [];
    let shown: EncodingPickItem[] = [];
    const result = await pickEncoding({
      current,
      showQuickPick: async (items) => ((shown = items), items.find((i) => i.label === answer)),
      update: async (v) => void updates.push(v),
    });
    return { result, updates, shown };
  }

  test("picking a new encoding writes the setting", async () => {
    const { result, updates, shown } = await run("o200k_base", "mistral-7b-v0.1");
    assert.equal(result, "mistral-7b-v0.1");
    assert.deepEqual(updates, ["mistral-7b-v0.1"]);
    assert.equal(shown.length, 5);
  });

  test("cancelling or re-picking the current encoding writes nothing", async () => {
    assert.deepEqual((await run("o200k_base", undefined)).updates, []);
    assert.deepEqual((await run("o200k_base", "o200k_base")).updates, []);
  });

  test("livetok.tokenizer is sent trimmed, and empty means unset", () => {
    assert.equal(serverSettings(configOf({ tokenizer: " /m/tokenizer.json " })).tokenizer, "/m/tokenizer.json");
    assert.equal(serverSettings(configOf({ tokenizer: "  " })).tokenizer, null);
  });

  const LISTED: ListEncodingsResult = {
    encodings: [
      { name: "o200k_base", description: "GPT-4o" },
      { name: "mistral-tekken-240718", description: "Mistral Nemo" },
      { name: "hf:Qwen/Qwen3-4B", description: "tokenizer.json from the local Hugging Face cache" },
    ],
    current: "o200k_base",
    tokenizer: null,
  };

  async function runWith(opts: {
    current?: string;
    tokenizer?: string | null;
    listed?: ListEncodingsResult | Error;
    answer?: string;
    file?: string;
  }) {
    const updates: string[] = [];
    const tokenizers: (string | undefined)[] = [];
    let shown: EncodingPickItem[] = [];
    const result = await pickEncoding({
      current: opts.current ?? "o200k_base",
      tokenizer: opts.tokenizer,
      list: async () => {
        if (opts.listed instanceof Error) {
          throw opts.listed;
        }
        return opts.listed;
      },
      showQuickPick: async (items) => ((shown = items), items.find((i) => i.label === opts.answer)),
      update: async (v) => void updates.push(v),
      pickFile: async () => opts.file,
      updateTokenizer: async (v) => void tokenizers.push(v),
    });
    return { result, updates, tokenizers, shown };
  }

  test("offers what the server lists, with the Hugging Face cache's models and a file item", async () => {
    const { shown, updates } = await runWith({ listed: LISTED, answer: "hf:Qwen/Qwen3-4B" });
    assert.deepEqual(shown.map((i) => i.label), [
      "o200k_base", "mistral-tekken-240718", "hf:Qwen/Qwen3-4B", TOKENIZER_FILE_ITEM,
    ]);
    assert.equal(shown[2].detail, "tokenizer.json from the local Hugging Face cache");
    assert.deepEqual(updates, ["hf:Qwen/Qwen3-4B"]);
  });

  test("without an answer from the server, the built-in list", async () => {
    const { shown } = await runWith({ listed: new Error("MethodNotFound") });
    assert.deepEqual(shown.slice(0, ENCODINGS.length).map((i) => i.label), ENCODINGS.map((e) => e.name));
    assert.equal(shown[shown.length - 1].label, TOKENIZER_FILE_ITEM);
  });

  test("choosing a tokenizer.json file writes livetok.tokenizer", async () => {
    const { result, updates, tokenizers } = await runWith({
      listed: LISTED, answer: TOKENIZER_FILE_ITEM, file: "/m/tokenizer.json",
    });
    assert.equal(result, "/m/tokenizer.json");
    assert.deepEqual(tokenizers, ["/m/tokenizer.json"]);
    assert.deepEqual(updates, []);
    const cancelled = await runWith({ listed: LISTED, answer: TOKENIZER_FILE_ITEM, file: undefined });
    assert.deepEqual([cancelled.result, cancelled.tokenizers], [undefined, []]);
  });

  test("with livetok.tokenizer set, it is current, and picking a name removes it", async () => {
    const { shown, tokenizers, updates } = await runWith({
      tokenizer: "/m/tokenizer.json", listed: LISTED, answer: "mistral-tekken-240718",
    });
    assert.equal(shown[0].label, "/m/tokenizer.json");
    assert.ok(shown[0].picked);
    assert.deepEqual(tokenizers, [undefined]);
    assert.deepEqual(updates, ["mistral-tekken-240718"]);
    // the encoding setting already names the pick: only the tokenizer goes
    const same = await runWith({ tokenizer: "/m/tokenizer.json", listed: LISTED, answer: "o200k_base" });
    assert.deepEqual([same.result, same.tokenizers, same.updates], ["o200k_base", [undefined], []]);
  });

  test("the setting is written where it takes effect", () => {
    assert.equal(settingTarget(undefined), "global");
    assert.equal(settingTarget({}), "global");
    assert.equal(settingTarget({ workspaceValue: "r50k_base" }), "workspace");
    assert.equal(settingTarget({ workspaceValue: "a", workspaceFolderValue: "b" }), "workspaceFolder");
  });
});

describe("SettingsSync", () => {
  function harness(initial: Record<string, unknown>) {
    const values = { ...initial };
    const sent: SettingsMessage[] = [];
    const sync = new SettingsSync(() => serverSettings(configOf(values)), (m) => sent.push(m));
    return { values, sent, sync };
  }

  test("initializationOptions reads the settings when called, not when built", () => {
    const h = harness({ encoding: "o200k_base" });
    h.values.encoding = "cl100k_base";
    assert.equal(h.sync.initializationOptions().livetok.encoding, "cl100k_base");
  });

  test("a change while not running is sent when the client runs, once", () => {
    const h = harness({ encoding: "o200k_base" });
    h.sync.initializationOptions();
    h.values.encoding = "cl100k_base";
    h.sync.onChange(false);
    assert.equal(h.sent.length, 0);
    h.sync.onRunning();
    assert.deepEqual(h.sent.map((m) => m.livetok.encoding), ["cl100k_base"]);
    h.sync.onRunning();
    h.sync.onChange(true);
    assert.equal(h.sent.length, 1, "nothing new to send");
  });

  test("nothing is sent on running when nothing changed since initialize", () => {
    const h = harness({ budget: 10 });
    h.sync.initializationOptions();
    h.sync.onRunning();
    assert.equal(h.sent.length, 0);
  });

  test("a change while running is sent at once, with the whole section", () => {
    const h = harness({});
    h.sync.initializationOptions();
    h.values.budget = 500;
    h.sync.onChange(true);
    assert.deepEqual(h.sent, [{ livetok: { ...serverSettings(configOf({})), budget: 500 } }]);
  });
});
