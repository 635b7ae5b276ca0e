// The Tokens view (workspace.ts) under plain Node with a mocked `vscode` API: sorting, labels and
// shares, and the provider over a fake client (a fetch, the server's change notification,
// a failed request logged, not thrown).

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import * as statusModule from "../status";
import * as ws from "../workspace";
import { FakeTimers, makeVscodeMock } from "./fakes";

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
    // the workspace's total first (issue 37 item 9), then, with one folder, its entries
    assert.deepEqual(top.map((n) => n.name), [ws.TOTAL_LABEL, "y.md", "x.md"]);
    assert.equal(p.getTreeItem(top[1]).description, "10 tokens · 10%");
    await p.getChildren();
    assert.equal(asked, 1);
    // the server says the map changed: asked again at once (the status bar's folder total)
    handlers.get(ws.WORKSPACE_COUNTS_NOTIFICATION)?.({ folders: ["file:///r"] });
    assert.equal(changes, 1);
    await p.getChildren(); // (the same request, not a second one)
    assert.equal(asked, 2);
    fail = true;
    handlers.get(ws.WORKSPACE_COUNTS_NOTIFICATION)?.({ folders: ["file:///r"] });
    assert.deepEqual(await p.getChildren(), []);
    assert.equal(asked, 3);
    assert.match(logs.join("\n"), /workspace map failed/);
    assert.equal(p.toggleSort(), "name");
  });
});

describe("the workspace total row (issue 37 item 9)", () => {
  test("the sum over every workspace folder, first, whatever the order; none without a folder", async () => {
    const a = { ...leaf("a", 30), kind: "folder" as const, files: 3, bytes: 120, children: [leaf("big.md", 30)] };
    const b = { ...leaf("b", 1234), kind: "folder" as const, files: 7, bytes: 5000, children: [] };
    let folders = [a, b];
    const client = {
      sendRequest: async <R>(): Promise<R> => ({ encoding: "cl100k_base", contextWindow: 128000, complete: false, folders } as R),
      onNotification: () => undefined,
    };
    const p = new ws.WorkspaceCountsProvider(api, () => client, () => undefined, new statusModule.FolderTotals());
    for (const order of ["tokens", "name"]) {
      const top = await p.getChildren();
      assert.deepEqual(top.map((n) => n.name), order === "tokens" ? [ws.TOTAL_LABEL, "b", "a"] : [ws.TOTAL_LABEL, "a", "b"]);
      const item = p.getTreeItem(top[0]);
      assert.equal(item.label, "Workspace total");
      assert.equal(item.description, "1,264 tokens · 1.0%");
      assert.equal(item.collapsibleState, api.TreeItemCollapsibleState.None);
      assert.equal(item.command, undefined);
      assert.equal(item.resourceUri, undefined);
      assert.equal(item.tooltip, "the workspace (a, b)\n1,264 tokens · 1.0% (cl100k_base)\n10 files, 5,120 bytes\nstill counting...");
      p.toggleSort();
    }
    folders = [];
    p.refresh();
    assert.deepEqual(await p.getChildren(), []);
  });
});

describe("the workspace map in the status bar", () => {
  const dir = (name: string, uri: string, tokens: number, files: number, children: ws.CountNode[]): ws.CountNode => ({
    name, uri, kind: "folder", tokens, files, bytes: 0, children,
  });
  const file = (uri: string, tokens: number): ws.CountNode => ({
    name: uri.slice(uri.lastIndexOf("/") + 1), uri, kind: "file", tokens, files: 1, bytes: 0,
  });
  const result: ws.WorkspaceCounts = {
    encoding: "o200k_base",
    contextWindow: 1000,
    complete: true,
    folders: [
      dir("repo", "file:///w/repo", 60, 3, [
        file("file:///w/repo/a.md", 10),
        dir("my docs", "file:///w/repo/my%20docs", 50, 2, [
          file("file:///w/repo/my%20docs/x.md", 20),
          dir("deep", "file:///w/repo/my%20docs/deep", 30, 1, [file("file:///w/repo/my%20docs/deep/y.md", 30)]),
        ]),
      ]),
    ],
  };

  test("a file's folder total: the workspace folder, a folder below it, escapes as VS Code writes them", () => {
    const at = (uri: string) => ws.folderCountOf(result, uri);
    assert.deepEqual(at("file:///w/repo/a.md"), { label: "repo/", tokens: 60, files: 3, encoding: "o200k_base", complete: true });
    assert.equal(at("file:///w/repo/my docs/x.md")?.label, "repo/my docs/");
    assert.equal(at("file:///w/repo/my%20docs/new.md")?.tokens, 50); // a file not counted yet: its folder's
    assert.deepEqual(at("file:///w/repo/my%20docs/deep/y.md"), { label: "repo/my docs/deep/", tokens: 30, files: 1, encoding: "o200k_base", complete: true });
    assert.equal(at("file:///w/repo/build/out.txt"), undefined); // a folder the map does not hold
    assert.equal(at("file:///w/other/a.md"), undefined);
    assert.equal(at("file:///w/repository/a.md"), undefined); // a prefix of the name is not the folder
  });

  test("the provider publishes each map it fetches, and nothing when a fetch fails", async () => {
    let fail = false;
    const client = {
      sendRequest: async <R>(): Promise<R> => {
        if (fail) throw new Error("boom");
        return result as R;
      },
      onNotification: () => undefined,
    };
    const totals = new statusModule.FolderTotals();
    let published = 0;
    totals.onChange(() => published++);
    const p = new ws.WorkspaceCountsProvider(api, () => client, () => undefined, totals);
    assert.equal(totals.folderOf("file:///w/repo/a.md"), undefined);
    await p.getChildren();
    assert.equal(published, 1);
    assert.equal(totals.folderOf("file:///w/repo/my%20docs/deep/y.md")?.tokens, 30);
    fail = true;
    p.refresh();
    await p.getChildren();
    assert.equal(published, 2);
    assert.equal(totals.folderOf("file:///w/repo/a.md"), undefined);
  });
});

describe("the view while the server starts", () => {
  test("a request a restart cancelled is asked again, not logged as a failure", async () => {
    const timers = new FakeTimers();
    const logs: string[] = [];
    let asked = 0;
    const client = {
      sendRequest: async <R>(): Promise<R> => {
        asked++;
        if (asked === 1) {
          throw Object.assign(new Error('Request with id "5" is canceled'), { code: -32800 });
        }
        return { encoding: "o200k_base", contextWindow: null, complete: true, folders: [] } as R;
      },
      onNotification: () => undefined,
    };
    const p = new ws.WorkspaceCountsProvider(api, () => client, (m) => logs.push(m), new statusModule.FolderTotals(), timers);
    assert.deepEqual(await p.getChildren(), []);
    assert.deepEqual(logs, []);
    assert.equal(timers.size, 1);
    timers.advance(ws.RETRY_MS);
    await p.getChildren();
    assert.equal(asked, 2);
    assert.ok(ws.isCancelled({ code: -32097 }) && !ws.isCancelled(new Error("boom")) && !ws.isCancelled(null));
  });

  test("no server yet: an empty view that asks again once it runs", async () => {
    const timers = new FakeTimers();
    let running = false;
    let asked = 0;
    const client = {
      sendRequest: async <R>(): Promise<R> => {
        asked++;
        return { encoding: "o200k_base", contextWindow: null, complete: true, folders: [] } as R;
      },
      onNotification: () => undefined,
    };
    const p = new ws.WorkspaceCountsProvider(api, () => (running ? client : undefined), () => undefined,
      new statusModule.FolderTotals(), timers);
    let changes = 0;
    p.onDidChangeTreeData(() => changes++);
    assert.deepEqual(await p.getChildren(), []);
    assert.deepEqual(await p.getChildren(), []);
    assert.equal(timers.size, 1); // one retry pending, however often VS Code asks
    running = true;
    timers.advance(ws.RETRY_MS);
    assert.equal(changes, 1);
    await p.getChildren();
    assert.equal(asked, 1);
    assert.equal(timers.size, 0);
  });
});
