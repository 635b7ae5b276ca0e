// The Tokens view (workspace.ts) under plain Node with a mocked `vscode` API: sorting, labels and
// shares, and the provider over a fake client (a fetch, the server's change notification,
// a failed request logged, not thrown).

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import * as ws from "../workspace";
import { makeVscodeMock } from "./fakes";

const vs = makeVscodeMock({});
const api = vs.vscode as unknown as import("../workspace").VscodeApi;

const leaf = (name: string, tokens: number): import("../workspace").CountNode => ({
  name, uri: `file:///r/${name}`, kind: "file", tokens, files: 1, bytes: tokens * 4,
});

describe("workspace view", () => {
  test("entries sort by count, largest first, ties by name; or by name", () => {
    const nodes = [leaf("b", 5), leaf("a", 5), leaf("c", 9)];
    assert.deepEqual(ws.sortNodes(nodes, "tokens").map((n) => n.name), ["c", "a", "b"]);
    assert.deepEqual(ws.sortNodes(nodes, "name").map((n) => n.name), ["a", "b", "c"]);
  });

  test("a node shows its count and its share of the context window", () => {
    assert.equal(ws.describeNode(leaf("a", 12800), 128000), "12,800 tokens · 10%");
    assert.equal(ws.describeNode(leaf("a", 640), 128000), "640 tokens · 0.5%");
    assert.equal(ws.describeNode(leaf("a", 3), 128000), "3 tokens · <0.1%");
    assert.equal(ws.describeNode(leaf("a", 3), null), "3 tokens");
  });

  test("the provider fetches once, listens to the server, refreshes and logs failures", async () => {
    const handlers = new Map<string, (params: unknown) => void>();
    let asked = 0;
    let fail = false;
    const folder = { ...leaf("r", 14), kind: "folder" as const, children: [leaf("x.md", 4), leaf("y.md", 10)] };
    const client = {
      sendRequest: async <R>(method: string): Promise<R> => {
        assert.equal(method, ws.WORKSPACE_COUNTS_REQUEST);
        asked++;
        if (fail) throw new Error("boom");
        return { encoding: "o200k_base", contextWindow: 100, complete: true, folders: [folder] } as R;
      },
      onNotification: (method: string, h: (params: unknown) => void) => void handlers.set(method, h),
    };
    const logs: string[] = [];
    const p = new ws.WorkspaceCountsProvider(api, () => client, (m) => logs.push(m));
    let changes = 0;
    p.onDidChangeTreeData(() => changes++);
    const top = await p.getChildren();
    assert.deepEqual(top.map((n) => n.name), ["y.md", "x.md"]); // one folder: its entries
    assert.equal(p.getTreeItem(top[0]).description, "10 tokens · 10%");
    await p.getChildren();
    assert.equal(asked, 1);
    handlers.get(ws.WORKSPACE_COUNTS_NOTIFICATION)?.({ folders: ["file:///r"] });
    assert.equal(changes, 1);
    fail = true;
    assert.deepEqual(await p.getChildren(), []);
    assert.equal(asked, 2);
    assert.match(logs.join("\n"), /workspace map failed/);
    assert.equal(p.toggleSort(), "name");
  });
});
