import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  Debouncer,
  FolderTotals,
  Range,
  TokenCount,
  TokenStatus,
  formatComparedLine,
  formatCount,
  formatFolderLine,
  formatPercent,
  formatSelectionText,
  formatStatusText,
  formatStatusTooltip,
  shortEncodingName,
} from "../status";
import { FakeItem, FakeTimers, deferred, flush } from "./fakes";

const A = "file:///a.md";
const B = "file:///b.md";

function count(uri: string, tokens: number, version = 1, extra: Partial<TokenCount> = {}): TokenCount {
  return { uri, version, encoding: "o200k_base", tokens, characters: tokens * 4, ...extra };
}

function range(l0: number, c0: number, l1: number, c1: number): Range {
  return { start: { line: l0, character: c0 }, end: { line: l1, character: c1 } };
}

describe("formatting", () => {
  test("counts get thousands separators regardless of the machine's locale", () => {
    assert.equal(formatCount(0), "0");
    assert.equal(formatCount(999), "999");
    assert.equal(formatCount(1234567), "1,234,567");
  });

  test("percent of the context window", () => {
    assert.equal(formatPercent(640, 128000), "0.5%");
    assert.equal(formatPercent(0, 128000), "0.0%");
    assert.equal(formatPercent(1, 128000), "<0.1%"); // non-zero never shows as 0.0%
    assert.equal(formatPercent(63, 128000), "<0.1%"); // 0.049%
    assert.equal(formatPercent(64, 128000), "0.1%"); // 0.05% exactly: half up
    assert.equal(formatPercent(90, 128000), "0.1%"); // 0.07%
    assert.equal(formatPercent(320, 128000), "0.3%"); // 0.25% exactly: half up (Python's :.1f says 0.2)
    assert.equal(formatPercent(12749, 128000), "10%"); // 9.96% rounds to 10.0: switch format
    assert.equal(formatPercent(12700, 128000), "9.9%");
    assert.equal(formatPercent(64000, 128000), "50%");
    assert.equal(formatPercent(256000, 128000), "200%");
    assert.equal(formatPercent(1500000, 128000), "1,172%");
    assert.equal(formatPercent(3, 8), "38%"); // 37.5%: whole percents, half up too
  });

  test("the tooltip lists the compared counts, an approximation marked ≈, never exact", () => {
    const compared = count(A, 1234, 3, {
      compare: [
        { encoding: "cl100k_base", countedWith: "cl100k_base", tokens: 1240, exact: true },
        { encoding: "llama-3.1-8b", countedWith: "hf:meta-llama/Llama-3.1-8B", tokens: 1, exact: true },
        {
          encoding: "claude-sonnet-4",
          countedWith: "cl100k_base",
          tokens: 1240,
          exact: false,
          note: "≈ Claude: counted with the stand-in cl100k_base",
        },
      ],
    });
    assert.equal(
      formatStatusTooltip(compared, 128000),
      [
        "livetok: 1,234 o200k_base tokens",
        "compared (livetok.compare):",
        "  cl100k_base: 1,240 tokens (exact)",
        "  llama-3.1-8b: 1 token (exact, hf:meta-llama/Llama-3.1-8B)",
        "  claude-sonnet-4: ≈ 1,240 tokens (≈, stand-in cl100k_base)",
        "4,936 characters (document version 3)",
        "context window: 128,000 tokens",
        "Click to pick the encoding.",
      ].join("\n"),
    );
    const path = { encoding: "/m/Qwen3/tokenizer.json", countedWith: "/m/Qwen3/tokenizer.json", tokens: 5 };
    assert.equal(formatComparedLine({ ...path, exact: true }), "/m/Qwen3/tokenizer.json: 5 tokens (exact)");
    assert.doesNotMatch(formatComparedLine({ ...path, exact: false }), /exact/);
    // no compare list, or an empty one: the tooltip as before
    assert.doesNotMatch(formatStatusTooltip(count(A, 5), null), /compared/);
    assert.doesNotMatch(formatStatusTooltip(count(A, 5, 1, { compare: [] }), null), /compared/);
  });

  test("no percentage without a usable window", () => {
    assert.equal(formatPercent(10, undefined), undefined);
    assert.equal(formatPercent(10, null), undefined);
    assert.equal(formatPercent(10, 0), undefined);
    assert.equal(formatPercent(10, -5), undefined);
  });

  test("status text", () => {
    assert.equal(formatStatusText(count(A, 1234), 128000), "1,234 tokens · o200k_base · 1.0% of window");
    assert.equal(formatStatusText(count(A, 1234), null), "1,234 tokens · o200k_base");
    assert.equal(formatStatusText(count(A, 1), undefined), "1 token · o200k_base");
    assert.equal(formatSelectionText(42), "Selection: 42 tokens");
    assert.equal(formatSelectionText(1), "Selection: 1 token");
  });
});

describe("Debouncer", () => {
  test("runs only the last call of a burst, after the quiet period", () => {
    const timers = new FakeTimers();
    const d = new Debouncer(100, timers);
    const ran: number[] = [];
    d.schedule(() => ran.push(1));
    timers.advance(50);
    d.schedule(() => ran.push(2));
    timers.advance(99);
    assert.deepEqual(ran, []);
    assert.ok(d.pending);
    timers.advance(1);
    assert.deepEqual(ran, [2]);
    assert.ok(!d.pending);
    timers.advance(1000);
    assert.deepEqual(ran, [2]);
  });

  test("cancel drops the pending call", () => {
    const timers = new FakeTimers();
    const d = new Debouncer(10, timers);
    let ran = false;
    d.schedule(() => (ran = true));
    d.cancel();
    timers.advance(100);
    assert.equal(ran, false);
    assert.equal(timers.size, 0);
  });
});

/** A TokenStatus wired to fakes; `replies` answers each requestCount in order. */
function harness(opts: { window?: number | null; debounceMs?: number; folders?: FolderTotals } = {}) {
  const countItem = new FakeItem();
  const selectionItem = new FakeItem();
  const timers = new FakeTimers();
  const requests: { uri: string; range?: Range; reply: ReturnType<typeof deferred<TokenCount>> }[] = [];
  const logs: string[] = [];
  let window: number | null | undefined = opts.window === undefined ? 128000 : opts.window;
  const status = new TokenStatus({
    countItem,
    selectionItem,
    timers,
    debounceMs: opts.debounceMs ?? 150,
    contextWindow: () => window,
    countCommand: "livetok.pickEncoding",
    log: (m) => logs.push(m),
    folderTotals: opts.folders ?? new FolderTotals(),
    requestCount: (uri, r) => {
      const reply = deferred<TokenCount>();
      requests.push({ uri, range: r, reply });
      return reply.promise;
    },
  });
  return {
    status,
    countItem,
    selectionItem,
    timers,
    requests,
    logs,
    setWindow: (w: number | null) => (window = w),
  };
}

describe("TokenStatus: document count", () => {
  test("shows the active document's count and ignores other documents", async () => {
    const h = harness();
    assert.equal(h.countItem.command, "livetok.pickEncoding");
    h.status.onCount(count(A, 10));
    h.status.onActiveEditor(A);
    assert.equal(h.requests.length, 0, "count already known: no request");
    assert.ok(h.countItem.visible);
    assert.equal(h.countItem.text, "10 tokens · o200k_base · <0.1% of window");
    h.status.onCount(count(B, 99));
    assert.equal(h.countItem.text, "10 tokens · o200k_base · <0.1% of window");
    h.status.onCount(count(A, 64000, 2));
    assert.equal(h.countItem.text, "64,000 tokens · o200k_base · 50% of window");
    assert.match(String(h.countItem.tooltip), /256,000 characters \(document version 2\)/);
  });

  test("drops a notification for an older document version", () => {
    const h = harness();
    h.status.onActiveEditor(A);
    h.status.onCount(count(A, 20, 5));
    h.status.onCount(count(A, 10, 4));
    assert.equal(h.countItem.text, "20 tokens · o200k_base · <0.1% of window");
    assert.equal(h.status.countFor(A)?.version, 5);
  });

  test("asks the server when switching to a document with no known count", async () => {
    const h = harness({ window: null });
    h.status.onActiveEditor(B);
    assert.equal(h.countItem.visible, false);
    assert.deepEqual(
      h.requests.map((r) => [r.uri, r.range]),
      [[B, undefined]],
    );
    h.requests[0].reply.resolve(count(B, 7, 3, { encoding: "cl100k_base" }));
    await flush();
    assert.ok(h.countItem.visible);
    assert.equal(h.countItem.text, "7 tokens · cl100k_base");
  });

  test("a failed request is logged, not thrown, and hides nothing else", async () => {
    const h = harness();
    h.status.onActiveEditor(B);
    h.requests[0].reply.reject(new Error("server gone"));
    await flush();
    assert.equal(h.countItem.visible, false);
    assert.match(h.logs.join("\n"), /server gone/);
  });

  test("no editor hides the item; closing forgets the count; refresh re-reads the window", () => {
    const h = harness();
    h.status.onCount(count(A, 1280));
    h.status.onActiveEditor(A);
    assert.ok(h.countItem.visible);
    h.setWindow(2560);
    assert.equal(h.countItem.text, "1,280 tokens · o200k_base · 1.0% of window");
    h.status.refresh();
    assert.equal(h.countItem.text, "1,280 tokens · o200k_base · 50% of window");
    h.status.onActiveEditor(undefined);
    assert.equal(h.countItem.visible, false);
    h.status.onActiveEditor(A);
    h.status.onClose(A);
    assert.equal(h.countItem.visible, false);
    assert.equal(h.status.countFor(A), undefined);
  });
});

describe("TokenStatus: the active file's folder in the workspace map", () => {
  const folder = { label: "repo/src/", tokens: 12800, files: 12, encoding: "o200k_base", complete: true };

  test("the folder line: its total, its files and its share of the window", () => {
    assert.equal(formatFolderLine(folder, 128000), "folder repo/src/: 12,800 o200k_base tokens in 12 files · 10% of window");
    assert.equal(formatFolderLine({ ...folder, files: 1, tokens: 1 }, null), "folder repo/src/: 1 o200k_base tokens in 1 file");
    assert.equal(
      formatFolderLine({ ...folder, complete: false }, 256000),
      "folder repo/src/: 12,800 o200k_base tokens in 12 files · 5.0% of window (still counting)",
    );
    const lines = formatStatusTooltip(count(A, 5), 128000, folder).split("\n");
    assert.deepEqual(lines.slice(-3), [
      "context window: 128,000 tokens",
      "folder repo/src/: 12,800 o200k_base tokens in 12 files · 10% of window",
      "Click to pick the encoding.",
    ]);
  });

  test("the tooltip follows what the map publishes, for the active file only", () => {
    const folders = new FolderTotals();
    const h = harness({ folders });
    h.status.onCount(count(A, 10));
    h.status.onActiveEditor(A);
    assert.doesNotMatch(String(h.countItem.tooltip), /folder/); // no map yet
    const asked: string[] = [];
    folders.publish((uri) => (asked.push(uri), uri === A ? folder : undefined));
    assert.match(String(h.countItem.tooltip), /^folder repo\/src\/: 12,800 o200k_base tokens in 12 files · 10% of window$/m);
    assert.deepEqual(asked, [A]);
    h.status.onCount(count(B, 10));
    h.status.onActiveEditor(B);
    assert.doesNotMatch(String(h.countItem.tooltip), /folder/); // not in the map
    h.status.onActiveEditor(A);
    folders.publish(undefined); // the map failed or went
    assert.doesNotMatch(String(h.countItem.tooltip), /folder/);
    h.status.dispose();
    folders.publish(() => folder); // a disposed status renders no more
    assert.doesNotMatch(String(h.countItem.tooltip), /folder/);
  });
});

describe("TokenStatus: selection count", () => {
  test("a burst of selection changes sends one request, for the last range", async () => {
    const h = harness({ debounceMs: 150 });
    h.status.onCount(count(A, 100));
    h.status.onActiveEditor(A);
    h.status.onSelection(A, range(0, 0, 0, 1));
    h.timers.advance(100);
    h.status.onSelection(A, range(0, 0, 0, 5));
    h.timers.advance(100);
    h.status.onSelection(A, range(0, 0, 2, 3));
    assert.equal(h.requests.length, 0, "nothing sent while the selection is still moving");
    h.timers.advance(150);
    assert.deepEqual(
      h.requests.map((r) => [r.uri, r.range]),
      [[A, range(0, 0, 2, 3)]],
    );
    h.requests[0].reply.resolve(count(A, 100, 1, { rangeTokens: 12 }));
    await flush();
    assert.ok(h.selectionItem.visible);
    assert.equal(h.selectionItem.text, "Selection: 12 tokens");
  });

  test("a slow reply for an older selection never overwrites a newer one", async () => {
    const h = harness({ debounceMs: 10 });
    h.status.onActiveEditor(A);
    h.requests.shift()!.reply.resolve(count(A, 100)); // the document count request
    h.status.onSelection(A, range(0, 0, 0, 4));
    h.timers.advance(10);
    h.status.onSelection(A, range(0, 0, 0, 8));
    h.timers.advance(10);
    assert.equal(h.requests.length, 2);
    h.requests[1].reply.resolve(count(A, 100, 1, { rangeTokens: 2 }));
    await flush();
    h.requests[0].reply.resolve(count(A, 100, 1, { rangeTokens: 1 }));
    await flush();
    assert.equal(h.selectionItem.text, "Selection: 2 tokens");
  });

  test("an empty selection hides the item at once and cancels the pending request", async () => {
    const h = harness({ debounceMs: 50 });
    h.status.onActiveEditor(A);
    h.requests.length = 0;
    h.status.onSelection(A, range(1, 0, 1, 9));
    h.timers.advance(50);
    h.requests[0].reply.resolve(count(A, 100, 1, { rangeTokens: 3 }));
    await flush();
    assert.ok(h.selectionItem.visible);
    h.status.onSelection(A, range(1, 0, 1, 0));
    assert.equal(h.selectionItem.visible, false);
    h.status.onSelection(A, range(1, 0, 1, 4));
    h.status.onSelection(A, undefined);
    h.timers.advance(1000);
    assert.equal(h.requests.length, 1, "the cancelled selection was never sent");
  });

  test("a reply arriving after switching editors is ignored", async () => {
    const h = harness({ debounceMs: 0 });
    h.status.onCount(count(A, 5));
    h.status.onCount(count(B, 6));
    h.status.onActiveEditor(A);
    h.status.onSelection(A, range(0, 0, 0, 3));
    h.timers.advance(0);
    h.status.onActiveEditor(B);
    h.requests[0].reply.resolve(count(A, 5, 1, { rangeTokens: 1 }));
    await flush();
    assert.equal(h.selectionItem.visible, false);
    assert.equal(h.countItem.text, "6 tokens · o200k_base · <0.1% of window");
  });

  test("the document count in a range reply updates the document's cached count", async () => {
    const h = harness({ debounceMs: 0, window: null });
    h.status.onCount(count(A, 5, 1));
    h.status.onActiveEditor(A);
    h.status.onSelection(A, range(0, 0, 0, 3));
    h.timers.advance(0);
    h.requests[0].reply.resolve(count(A, 9, 2, { rangeTokens: 4 }));
    await flush();
    assert.equal(h.countItem.text, "9 tokens · o200k_base");
    assert.equal(h.status.countFor(A)?.rangeTokens, undefined, "range count is not cached as the document's");
  });

  test("dispose cancels the pending request and disposes both items", () => {
    const h = harness({ debounceMs: 10 });
    h.status.onActiveEditor(A);
    h.requests.length = 0;
    h.status.onSelection(A, range(0, 0, 0, 3));
    h.status.dispose();
    h.timers.advance(100);
    assert.equal(h.requests.length, 0);
    assert.ok(h.countItem.disposed && h.selectionItem.disposed);
  });
});

describe("shortEncodingName", () => {
  test("a tokenizer.json path shows as its folder and file; names as they are", () => {
    assert.equal(shortEncodingName("/home/me/models/Llama-3-8B/tokenizer.json"), "Llama-3-8B/tokenizer.json");
    assert.equal(shortEncodingName("C:\\models\\gemma\\tokenizer.json"), "gemma/tokenizer.json");
    assert.equal(shortEncodingName("hf:Qwen/Qwen3-4B"), "hf:Qwen/Qwen3-4B");
    assert.equal(shortEncodingName("o200k_base"), "o200k_base");
  });
});
