// Status-bar text, selection debouncing and the state behind both.
//
// subtle: this module never imports `vscode`. The extension passes in the few pieces of the
// VS Code API it needs (status-bar items, a timer, a request function), so the whole
// behaviour can be unit tested under plain Node with a mocked `vscode` object.

/** The document's count under one encoding of `livetok.compare` (docs/protocol.md). */
export interface ComparedCount {
  /** The name as `livetok.compare` lists it (an encoding or a model). */
  encoding: string;
  /** The encoding it is counted with: a model's tokenizer, or an approximation's stand-in. */
  countedWith: string;
  tokens: number;
  /** False: only an approximation (≈), and `note` says why. */
  exact: boolean;
  note?: string;
  /** Only in replies to a request that carried a `range`. */
  rangeTokens?: number;
}

/** Result of `livetok/tokenCount` and params of `livetok/didChangeTokenCount`. */
export interface TokenCount {
  uri: string;
  version: number;
  encoding: string;
  tokens: number;
  characters: number;
  /** Only in replies to a request that carried a `range`. */
  rangeTokens?: number;
  /** The counts under `livetok.compare`'s encodings; absent when it lists none. */
  compare?: ComparedCount[];
}

/** LSP position: `utf16_col` is the UTF-16 code-unit column (LSP's default position encoding). */
export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

/** The part of `vscode.StatusBarItem` this module writes to. */
export interface StatusBarItemLike {
  text: string;
  // subtle: typed `unknown` because VS Code's item also accepts MarkdownString / Command
  // here; this module only ever writes strings.
  tooltip: unknown;
  command: unknown;
  show(): void;
  hide(): void;
  dispose(): void;
}

/**
 * `requestCount` fails with this when there is no server to ask (it could not start, or was
 * stopped before answering). Not worth a line in the output: the start failure was reported.
 */
export class ServerNotRunningError extends Error {
  constructor() {
    super("the livetok server is not running");
    this.name = "ServerNotRunningError";
  }
}

/** `setTimeout` / `clearTimeout`, injectable so tests drive time by hand. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** `1234567` -> `"1,234,567"` (fixed locale so the status bar reads the same everywhere). */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** `numerator / denominator` rounded half up, for non-negative integers. */
function divRoundHalfUp(numerator: number, denominator: number): number {
  // subtle: exact in doubles while 2 * numerator + denominator < 2**53 (counts, not money):
  // a quotient that is not an integer is at least 1/denominator away from one, more than
  // the division's rounding error, so floor never lands on the wrong side.
  return Math.floor((2 * numerator + denominator) / (2 * denominator));
}

/**
 * Share of the context window: the one rule the status bar, the server's code lens and the
 * Neovim statusline share (`docs/protocol.md`, Standard features).
 *
 * The share is rounded half up to tenths of a percent in integer arithmetic (so every
 * language gets the same digits; `toFixed` and Python's `:.1f` disagree on ties):
 * `0.0%` for no tokens; `<0.1%` when some tokens round to zero tenths (below 0.05%);
 * one decimal below 10% (`0.5%`, `9.9%`); whole percents from there (`10%`, `1,172%`).
 * `formatPercent(640, 128000)` -> `"0.5%"`; `undefined` when there is no usable window.
 */
export function formatPercent(tokens: number, contextWindow: number | null | undefined): string | undefined {
  if (contextWindow === null || contextWindow === undefined || !(contextWindow > 0)) {
    return undefined;
  }
  const tenths = divRoundHalfUp(1000 * tokens, contextWindow);
  if (tokens > 0 && tenths === 0) {
    return "<0.1%";
  }
  if (tenths < 100) {
    return `${Math.floor(tenths / 10)}.${tenths % 10}%`;
  }
  // subtle: decided on the rounded tenths, so 9.96% is "10%", never "10.0%"
  return `${formatCount(divRoundHalfUp(100 * tokens, contextWindow))}%`;
}

/** `1 token` / `N tokens`. */
export function pluralTokens(n: number): string {
  return `${formatCount(n)} ${n === 1 ? "token" : "tokens"}`;
}

/**
 * The encoding as the status bar shows it: a tokenizer.json path (the server names such an
 * encoding by its absolute path) as its folder and file, `Llama-3-8B/tokenizer.json`;
 * names (`o200k_base`, `hf:Qwen/Qwen3-4B`) as they are.
 */
export function shortEncodingName(encoding: string): string {
  if (encoding.startsWith("hf:") || !/[\\/]/.test(encoding)) {
    return encoding;
  }
  const parts = encoding.split(/[\\/]/).filter((p) => p.length > 0);
  return parts.slice(-2).join("/");
}

/** Document status: `"1,234 tokens · o200k_base · 1.0% of window"` (percentage only with a window). */
export function formatStatusText(count: TokenCount, contextWindow?: number | null): string {
  const parts = [pluralTokens(count.tokens), shortEncodingName(count.encoding)];
  const pct = formatPercent(count.tokens, contextWindow);
  if (pct !== undefined) {
    parts.push(`${pct} of window`);
  }
  return parts.join(" · ");
}

/**
 * One line of the tooltip per `livetok.compare` encoding: `cl100k_base: 1,240 tokens (exact)`,
 * `claude-sonnet-4: ≈ 1,240 tokens (≈, stand-in cl100k_base)`. Nothing is called exact that
 * the server did not mark exact.
 */
export function formatComparedLine(c: ComparedCount): string {
  const counted = shortEncodingName(c.countedWith);
  if (!c.exact) {
    return `${c.encoding}: ≈ ${pluralTokens(c.tokens)} (≈, stand-in ${counted})`;
  }
  const via = c.countedWith === c.encoding ? "" : `, ${counted}`;
  return `${c.encoding}: ${pluralTokens(c.tokens)} (exact${via})`;
}

/** The workspace map's total of one folder (`livetok/workspaceCounts`, docs/protocol.md). */
export interface FolderCount {
  /** The folder as the tooltip names it: the workspace folder's name and the path below it. */
  label: string;
  tokens: number;
  files: number;
  encoding: string;
  /** False while the server is still counting the map (the total is then partial). */
  complete: boolean;
}

/**
 * The tooltip's line for the active file's folder:
 * `folder app/src/: 12,345 o200k_base tokens in 12 files · 9.6% of window`.
 */
export function formatFolderLine(folder: FolderCount, contextWindow?: number | null): string {
  const files = `${formatCount(folder.files)} ${folder.files === 1 ? "file" : "files"}`;
  const pct = formatPercent(folder.tokens, contextWindow);
  return (
    `folder ${folder.label}: ${formatCount(folder.tokens)} ${folder.encoding} tokens in ${files}` +
    (pct === undefined ? "" : ` · ${pct} of window`) +
    (folder.complete ? "" : " (still counting)")
  );
}

/**
 * Where the status bar finds the workspace map: the Tokens view (workspace.ts) publishes a
 * lookup (file URI -> its folder's total) each time it fetches the map, `undefined` when there
 * is none; each `TokenStatus` reads it and renders again on a change. One per extension
 * (`folderTotals`), so that the view and the status bar need no wiring in extension.ts.
 */
export class FolderTotals {
  private lookup: ((uri: string) => FolderCount | undefined) | undefined;
  private readonly listeners = new Set<() => void>();

  publish(lookup: ((uri: string) => FolderCount | undefined) | undefined): void {
    this.lookup = lookup;
    this.listeners.forEach((l) => l());
  }

  /** The total of the folder holding the file `uri`, when a map holds it. */
  folderOf(uri: string): FolderCount | undefined {
    return this.lookup?.(uri);
  }

  /** Call `listener` on each publish; returns the function that stops it. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }
}

export const folderTotals = new FolderTotals();

/**
 * Tooltip with the exact numbers behind the status text (and the compared counts, and the
 * total of the document's folder from the workspace map when there is one).
 */
export function formatStatusTooltip(count: TokenCount, contextWindow?: number | null, folder?: FolderCount): string {
  const lines = [`livetok: ${formatCount(count.tokens)} ${count.encoding} tokens`];
  if (count.compare !== undefined && count.compare.length > 0) {
    lines.push("compared (livetok.compare):");
    for (const c of count.compare) {
      lines.push(`  ${formatComparedLine(c)}`);
    }
  }
  lines.push(`${formatCount(count.characters)} characters (document version ${count.version})`);
  if (contextWindow !== null && contextWindow !== undefined && contextWindow > 0) {
    lines.push(`context window: ${formatCount(contextWindow)} tokens`);
  }
  if (folder !== undefined) {
    lines.push(formatFolderLine(folder, contextWindow));
  }
  lines.push("Click to pick the encoding.");
  return lines.join("\n");
}

/** Selection status: `"Selection: 42 tokens"`. */
export function formatSelectionText(rangeTokens: number): string {
  return `Selection: ${pluralTokens(rangeTokens)}`;
}

/** Runs only the last of a burst of calls, `delayMs` after the burst ends. */
export class Debouncer {
  private handle: unknown = undefined;

  constructor(
    private readonly delayMs: number,
    private readonly timers: Timers = realTimers,
  ) {}

  /** Replace any pending call with `fn`, to run after `delayMs` of quiet. */
  schedule(fn: () => void): void {
    this.cancel();
    this.handle = this.timers.setTimeout(() => {
      this.handle = undefined;
      fn();
    }, this.delayMs);
  }

  cancel(): void {
    if (this.handle !== undefined) {
      this.timers.clearTimeout(this.handle);
      this.handle = undefined;
    }
  }

  get pending(): boolean {
    return this.handle !== undefined;
  }
}

export interface TokenStatusDeps {
  /** Item showing the active document's count. */
  countItem: StatusBarItemLike;
  /** Item showing the selection's count; hidden while the selection is empty. */
  selectionItem: StatusBarItemLike;
  /**
   * Sends `livetok/tokenCount` (with `range` when given), once a starting server is up;
   * rejects with `ServerNotRunningError` when there is no server to ask.
   */
  requestCount(uri: string, range?: Range): Promise<TokenCount>;
  /** Current `livetok.contextWindow` setting. */
  contextWindow(): number | null | undefined;
  /** Current `livetok.selectionDebounceMs` setting. */
  debounceMs: number;
  timers?: Timers;
  /** Where request failures go (the extension's output channel). */
  log?(message: string): void;
  /** Command run when the count item is clicked. */
  countCommand?: string;
  /** The workspace map's folder totals for the tooltip (default: `folderTotals`). */
  folderTotals?: FolderTotals;
}

/**
 * What the two status-bar items show, kept in step with the server.
 *
 * Inputs are events (a count notification, the active editor or the selection changed);
 * the items are the only output. Counts are cached per URI so switching editors shows the
 * last known count at once, and a notification for an older document version than the
 * one cached is dropped (notifications are coalesced and may cross a request's reply).
 */
export class TokenStatus {
  private readonly counts = new Map<string, TokenCount>();
  private activeUri: string | undefined;
  private readonly debouncer: Debouncer;
  // subtle: each selection request gets a number; a reply is shown only if no newer
  // selection has been made since, so a slow reply never overwrites a newer count.
  private selectionSeq = 0;
  private readonly folders: FolderTotals;
  private readonly stopFolders: () => void;

  constructor(private readonly deps: TokenStatusDeps) {
    this.debouncer = new Debouncer(deps.debounceMs, deps.timers ?? realTimers);
    this.folders = deps.folderTotals ?? folderTotals;
    this.stopFolders = this.folders.onChange(() => this.render());
    deps.countItem.command = deps.countCommand;
    deps.countItem.hide();
    deps.selectionItem.hide();
  }

  /** Latest count known for `uri`, if any. */
  countFor(uri: string): TokenCount | undefined {
    return this.counts.get(uri);
  }

  /** Handle `livetok/didChangeTokenCount` (or a `livetok/tokenCount` reply for a whole document). */
  onCount(count: TokenCount): void {
    const known = this.counts.get(count.uri);
    if (known !== undefined && count.version < known.version) {
      return;
    }
    this.counts.set(count.uri, count);
    if (count.uri === this.activeUri) {
      this.render();
    }
  }

  /** The active editor changed (`undefined`: no editor has focus, or it is not a text editor). */
  onActiveEditor(uri: string | undefined): void {
    this.activeUri = uri;
    this.clearSelection();
    this.render();
    if (uri !== undefined && !this.counts.has(uri)) {
      // No notification seen yet for this document (e.g. it was open before the server started).
      this.deps.requestCount(uri).then(
        (count) => this.onCount(count),
        (err) => this.logFailure(`livetok/tokenCount failed for ${uri}`, err),
      );
    }
  }

  /** The document was closed: forget its count. */
  onClose(uri: string): void {
    this.counts.delete(uri);
    if (uri === this.activeUri) {
      this.render();
    }
  }

  /**
   * The selection in the active editor changed. `range` undefined or empty hides the
   * selection item at once; otherwise its exact count is requested after `debounceMs` of quiet.
   */
  onSelection(uri: string, range: Range | undefined): void {
    if (range === undefined || isEmpty(range)) {
      this.clearSelection();
      return;
    }
    const seq = ++this.selectionSeq;
    this.debouncer.schedule(() => {
      this.deps.requestCount(uri, range).then(
        (count) => {
          if (seq !== this.selectionSeq || uri !== this.activeUri) {
            return; // a newer selection (or editor) has replaced this one
          }
          this.onCount({ ...count, rangeTokens: undefined });
          if (count.rangeTokens === undefined) {
            this.log(`livetok/tokenCount reply for ${uri} has no rangeTokens`);
            return;
          }
          this.deps.selectionItem.text = formatSelectionText(count.rangeTokens);
          this.deps.selectionItem.tooltip = `Exact ${count.encoding} token count of the selection`;
          this.deps.selectionItem.show();
        },
        (err) => this.logFailure(`livetok/tokenCount (range) failed for ${uri}`, err),
      );
    });
  }

  /** Re-render after a setting that changes the text (context window) changed. */
  refresh(): void {
    this.render();
  }

  dispose(): void {
    this.stopFolders();
    this.debouncer.cancel();
    this.deps.countItem.dispose();
    this.deps.selectionItem.dispose();
  }

  private clearSelection(): void {
    this.selectionSeq++;
    this.debouncer.cancel();
    this.deps.selectionItem.hide();
  }

  private render(): void {
    const item = this.deps.countItem;
    const count = this.activeUri === undefined ? undefined : this.counts.get(this.activeUri);
    if (count === undefined) {
      item.hide();
      return;
    }
    const window = this.deps.contextWindow();
    item.text = formatStatusText(count, window);
    item.tooltip = formatStatusTooltip(count, window, this.folders.folderOf(count.uri));
    item.show();
  }

  private log(message: string): void {
    this.deps.log?.(message);
  }

  private logFailure(what: string, err: unknown): void {
    if (!(err instanceof ServerNotRunningError)) {
      this.log(`${what}: ${String(err)}`);
    }
  }
}

function isEmpty(range: Range): boolean {
  return range.start.line === range.end.line && range.start.character === range.end.character;
}
