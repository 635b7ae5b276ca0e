// The "Tokens" view (in livetok's own side-bar container, shown once on the first start: the
// explorer would keep it collapsed at its bottom, issue 37 item 9): the server's workspace
// token map (`livetok/workspaceCounts`), a first row with the workspace's total, then each
// folder and file with its count and its share of the context window, sorted by count or by
// name, refreshed when the server says a map changed (`livetok/didChangeWorkspaceCounts`).
//
// The tree's logic (sorting, labels, shares) is plain functions over the request's result;
// the provider only turns nodes into VS Code tree items. Each map fetched is published to the
// status bar (status.ts `folderTotals`: the tooltip's total of the active file's folder).
// subtle: this module imports only `vscode`'s types; the extension passes the API in
// (`VscodeApi`), so the unit tests load it under plain Node with a mock, as they do status.ts.

import type * as vscode from "vscode";

import { FolderCount, FolderTotals, Timers, formatCount, formatPercent, folderTotals, realTimers } from "./status";

/** How long the view waits before asking again when no server runs yet (it is starting). */
export const RETRY_MS = 2000;

/** The part of the `vscode` module this view uses. */
export type VscodeApi = Pick<typeof vscode, "window" | "commands" | "Uri" | "TreeItemCollapsibleState">;

export const WORKSPACE_COUNTS_REQUEST = "livetok/workspaceCounts";
export const WORKSPACE_COUNTS_NOTIFICATION = "livetok/didChangeWorkspaceCounts";
export const VIEW_ID = "livetok.workspace";

/** A node of `livetok/workspaceCounts`' result (docs/protocol.md). */
export interface CountNode {
  name: string;
  uri: string;
  /** `total`: the view's own first row (`totalNode`), not from the server. */
  kind: "folder" | "file" | "total";
  tokens: number;
  files: number;
  bytes: number;
  live?: boolean;
  skipped?: number;
  children?: CountNode[];
}

export interface WorkspaceCounts {
  encoding: string;
  contextWindow: number | null;
  complete: boolean;
  folders: CountNode[];
}

export type SortOrder = "tokens" | "name";

/** The part of a language client this view uses. */
export interface CountsClient {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  onNotification(method: string, handler: (params: unknown) => void): unknown;
}

/** Entries of a folder in `order`: largest count first (ties by name), or by name. */
export function sortNodes(nodes: readonly CountNode[], order: SortOrder): CountNode[] {
  const byName = (a: CountNode, b: CountNode) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return [...nodes].sort(order === "name" ? byName : (a, b) => b.tokens - a.tokens || byName(a, b));
}

/** `12,345 tokens · 9.6%` (the share of `contextWindow`, when there is one: status.ts's rule). */
export function describeNode(node: CountNode, contextWindow: number | null): string {
  const count = `${formatCount(node.tokens)} tokens`;
  const share = formatPercent(node.tokens, contextWindow);
  return share === undefined ? count : `${count} · ${share}`;
}

/** `uri` with its %-escapes decoded (the server's URIs and VS Code's escape differently). */
function decoded(uri: string): string {
  try {
    return decodeURIComponent(uri);
  } catch {
    return uri;
  }
}

/**
 * The map's total of the folder holding the file `fileUri` (its workspace folder's name and
 * the path below it as the label), or `undefined` when no folder of the map holds it.
 */
export function folderCountOf(result: WorkspaceCounts, fileUri: string): FolderCount | undefined {
  const file = decoded(fileUri);
  const dir = file.slice(0, file.lastIndexOf("/"));
  const within = (node: CountNode) => {
    const u = decoded(node.uri);
    return dir === u || dir.startsWith(`${u}/`);
  };
  const root = result.folders.find(within);
  let node = root;
  while (node !== undefined && decoded(node.uri) !== dir) {
    node = node.children?.find((k) => k.kind === "folder" && within(k));
  }
  if (root === undefined || node === undefined) {
    return undefined;
  }
  const below = dir.slice(decoded(root.uri).length + 1);
  return {
    label: `${root.name}/${below === "" ? "" : `${below}/`}`,
    tokens: node.tokens,
    files: node.files,
    encoding: result.encoding,
    complete: result.complete,
  };
}

/** The label of the view's first row. */
export const TOTAL_LABEL = "Workspace total";

/**
 * The view's first row: the sum over the map's workspace folders.
 *
 * Runtime complexity: O(number of workspace folders).
 */
export function totalNode(result: WorkspaceCounts): CountNode {
  const sum = (field: "tokens" | "files" | "bytes") => result.folders.reduce((acc, n) => acc + n[field], 0);
  return { name: TOTAL_LABEL, uri: "", kind: "total", tokens: sum("tokens"), files: sum("files"), bytes: sum("bytes") };
}

/** The hover text of a node. */
export function tooltipOf(node: CountNode, result: WorkspaceCounts): string {
  const where = node.kind === "total"
    ? `the workspace (${result.folders.map((f) => f.name).join(", ")})`
    : node.uri.replace(/^file:\/\//, "");
  const lines = [where, `${describeNode(node, result.contextWindow)} (${result.encoding})`];
  if (node.kind !== "file") {
    lines.push(`${node.files.toLocaleString("en-US")} files, ${node.bytes.toLocaleString("en-US")} bytes`);
  }
  if (node.live) {
    lines.push("live count of the open document");
  }
  if (node.skipped) {
    lines.push(`${node.skipped} entries left out (see the livetok output)`);
  }
  if (!result.complete) {
    lines.push("still counting...");
  }
  return lines.join("\n");
}

/**
 * JSON-RPC codes of a request that a stopping connection ended, not one that failed:
 * RequestCancelled (the server cancelled it, pygls when the client stops), and vscode-jsonrpc's
 * PendingResponseRejected and ConnectionInactive.
 */
const CANCELLED_CODES: readonly number[] = [-32800, -32097, -32096];

/** Whether `err` is a request ended by a (re)start of the server rather than a failure. */
export function isCancelled(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "number" && CANCELLED_CODES.includes(code);
}

/** The tree data: fetched whole from the server, kept until the next refresh. */
export class WorkspaceCountsProvider implements vscode.TreeDataProvider<CountNode> {
  order: SortOrder = "tokens";
  result: WorkspaceCounts | undefined;
  private readonly listeners: ((node: CountNode | undefined) => void)[] = [];
  private readonly seen = new WeakSet<object>();
  private inflight: Promise<WorkspaceCounts | undefined> | undefined;

  constructor(
    private readonly api: VscodeApi,
    private readonly client: () => CountsClient | undefined,
    private readonly log: (message: string) => void,
    private readonly totals: FolderTotals = folderTotals,
    private readonly timers: Timers = realTimers,
  ) {}
  private retry: unknown = undefined;

  /** `vscode.Event` without `vscode.EventEmitter` (a listener list is all it takes). */
  readonly onDidChangeTreeData = (listener: (node: CountNode | undefined) => void): vscode.Disposable => {
    this.listeners.push(listener);
    return { dispose: () => void this.listeners.splice(this.listeners.indexOf(listener), 1) };
  };

  /**
   * Ask the server again: the next `getChildren` of the root fetches, and so does this call
   * when a map was fetched before (the status bar's folder total stays current while the
   * view is hidden).
   */
  refresh(): void {
    const had = this.result !== undefined;
    this.result = undefined;
    this.listeners.forEach((l) => l(undefined));
    if (had) {
      void this.fetch();
    }
  }

  toggleSort(): SortOrder {
    this.order = this.order === "tokens" ? "name" : "tokens";
    this.listeners.forEach((l) => l(undefined));
    return this.order;
  }

  getTreeItem(node: CountNode): vscode.TreeItem {
    if (node.kind === "total") {
      return {
        label: node.name,
        description: describeNode(node, this.result?.contextWindow ?? null),
        tooltip: this.result === undefined ? undefined : tooltipOf(node, this.result),
        collapsibleState: this.api.TreeItemCollapsibleState.None,
        contextValue: "livetokTotal",
      };
    }
    const folder = node.kind === "folder";
    const item: vscode.TreeItem = {
      label: node.name,
      description: describeNode(node, this.result?.contextWindow ?? null),
      tooltip: this.result === undefined ? undefined : tooltipOf(node, this.result),
      resourceUri: this.api.Uri.parse(node.uri),
      collapsibleState: folder
        ? this.api.TreeItemCollapsibleState.Collapsed
        : this.api.TreeItemCollapsibleState.None,
      contextValue: folder ? "livetokFolder" : "livetokFile",
    };
    if (!folder) {
      item.command = { command: "vscode.open", title: "Open", arguments: [this.api.Uri.parse(node.uri)] };
    }
    return item;
  }

  async getChildren(node?: CountNode): Promise<CountNode[]> {
    if (node !== undefined) {
      return sortNodes(node.children ?? [], this.order);
    }
    const result = await this.fetch();
    if (result === undefined || result.folders.length === 0) {
      return [];
    }
    // one workspace folder: its entries at the top, as the explorer shows them; the total first
    const top = result.folders.length === 1 ? result.folders[0].children ?? [] : result.folders;
    return [totalNode(result), ...sortNodes(top, this.order)];
  }

  /** The map: the one held, the request on its way, or a new request. */
  private fetch(): Promise<WorkspaceCounts | undefined> {
    if (this.result !== undefined) {
      return Promise.resolve(this.result);
    }
    if (this.inflight === undefined) {
      this.inflight = this.load().finally(() => (this.inflight = undefined));
    }
    return this.inflight;
  }

  /**
   * Ask again in a while, for as long as VS Code shows the view (a hidden view asks for no
   * children, and so stops asking); one retry pending at most.
   */
  private retryLater(): void {
    if (this.retry === undefined) {
      this.retry = this.timers.setTimeout(() => {
        this.retry = undefined;
        this.listeners.forEach((l) => l(undefined));
      }, RETRY_MS);
    }
  }

  private async load(): Promise<WorkspaceCounts | undefined> {
    const c = this.client();
    if (c === undefined) {
      this.retryLater(); // the server is starting (or not there)
      return undefined;
    }
    if (!this.seen.has(c)) {
      // a new client (a start or restart): its server says when a map changes
      this.seen.add(c);
      c.onNotification(WORKSPACE_COUNTS_NOTIFICATION, () => this.refresh());
    }
    const active = this.api.window.activeTextEditor?.document.uri;
    const params = active?.scheme === "file" ? { textDocument: { uri: active.toString() } } : {};
    let result: WorkspaceCounts;
    try {
      result = await c.sendRequest<WorkspaceCounts>(WORKSPACE_COUNTS_REQUEST, params);
    } catch (err) {
      if (isCancelled(err)) {
        this.retryLater(); // a restart ended the request: not a failure, the next server answers
        return undefined;
      }
      this.log(`livetok: the workspace map failed (${String(err)})`);
      this.totals.publish(undefined);
      return undefined;
    }
    this.result = result;
    this.totals.publish((uri) => folderCountOf(result, uri));
    return result;
  }
}

/**
 * Register the Tokens view and its commands (refresh, sort) with `api` (the `vscode`
 * module). `client()` is the running language client, or `undefined`.
 */
export function registerWorkspaceView(
  api: VscodeApi,
  context: vscode.ExtensionContext,
  client: () => CountsClient | undefined,
  log: (message: string) => void,
): WorkspaceCountsProvider {
  const provider = new WorkspaceCountsProvider(api, client, log);
  const view = api.window.createTreeView(VIEW_ID, { treeDataProvider: provider, showCollapseAll: true });
  context.subscriptions.push(
    view,
    api.commands.registerCommand("livetok.workspaceRefresh", () => provider.refresh()),
    api.commands.registerCommand("livetok.workspaceSort", () => {
      view.description = provider.toggleSort() === "name" ? "by name" : "by count";
    }),
  );
  view.description = "by count";
  return provider;
}
