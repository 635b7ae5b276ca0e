// Test doubles shared by the unit tests: a hand-driven clock, status-bar items, and a mocked
// `vscode` module plus `vscode-languageclient/node`, installed with a require hook so the real
// extension.js can be loaded under plain Node.

import Module = require("module");

import { StatusBarItemLike, Timers } from "../status";

/** Timers that fire only when the test calls `advance`. */
export class FakeTimers implements Timers {
  now = 0;
  private nextId = 1;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.pending.set(id, { at: this.now + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** Move the clock forward and run every timer that came due, in order. */
  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = [...this.pending.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at);
      if (due.length === 0) {
        break;
      }
      const [id, timer] = due[0];
      this.pending.delete(id);
      this.now = timer.at;
      timer.fn();
    }
    this.now = until;
  }

  get size(): number {
    return this.pending.size;
  }
}

export class FakeItem implements StatusBarItemLike {
  name: string | undefined = undefined;
  text = "";
  tooltip: unknown = undefined;
  command: unknown = undefined;
  visible = false;
  disposed = false;
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.disposed = true;
  }
}

/** Let pending promise callbacks run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** A promise whose settlement the test controls. */
export function deferred<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

type Listener<T> = (e: T) => void;

export class Emitter<T> {
  private readonly listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => this.listeners.splice(this.listeners.indexOf(listener), 1) };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) {
      l(e);
    }
  }
}

export const ConfigurationTarget = { Global: 1, Workspace: 2, WorkspaceFolder: 3 } as const;

/** Settings store with VS Code's layering: workspace values override user (global) values. */
export class FakeConfiguration {
  global = new Map<string, unknown>();
  workspace = new Map<string, unknown>();
  readonly updates: { key: string; value: unknown; target: number }[] = [];
  readonly changed = new Emitter<{ affectsConfiguration(section: string): boolean }>();

  constructor(private readonly defaults: Record<string, unknown>) {}

  get(key: string): unknown {
    if (this.workspace.has(key)) return this.workspace.get(key);
    if (this.global.has(key)) return this.global.get(key);
    return this.defaults[key];
  }

  /** What `vscode.workspace.getConfiguration("livetok")` returns. */
  section() {
    return {
      get: <T>(key: string) => this.get(key) as T | undefined,
      inspect: (key: string) => ({
        key,
        defaultValue: this.defaults[key],
        globalValue: this.global.get(key),
        workspaceValue: this.workspace.get(key),
      }),
      update: async (key: string, value: unknown, target: number) => {
        this.updates.push({ key, value, target });
        (target === ConfigurationTarget.Global ? this.global : this.workspace).set(key, value);
        this.changed.fire({ affectsConfiguration: (s: string) => s === "livetok" || s === `livetok.${key}` || `livetok.${key}`.startsWith(`${s}.`) });
      },
    };
  }
}

export class FakeRange {
  constructor(
    readonly start: { line: number; character: number },
    readonly end: { line: number; character: number },
  ) {}
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

export function fakeEditor(uri: string, selection = new FakeRange({ line: 0, character: 0 }, { line: 0, character: 0 })) {
  return { document: { uri: { scheme: uri.slice(0, uri.indexOf(":")), toString: () => uri } }, selection };
}

/** The mocked `vscode` module: records what the extension registers and lets tests fire events. */
export function makeVscodeMock(defaults: Record<string, unknown>) {
  const config = new FakeConfiguration(defaults);
  const commands = new Map<string, (...args: unknown[]) => unknown>();
  const statusItems: FakeItem[] = [];
  const messages: string[] = [];
  const outputs: { lines: string[] }[] = [];
  const activeEditorChanged = new Emitter<unknown>();
  const selectionChanged = new Emitter<unknown>();
  const documentClosed = new Emitter<unknown>();
  const trustGranted = new Emitter<void>();
  /** The progress notifications shown (the bundled server's install) and what they reported. */
  const progress = { titles: [] as string[], reports: [] as string[] };
  /** `vscode.commands.executeCommand`: the commands run. */
  const executed: string[] = [];
  /** What `showErrorMessage` answers (a button's title), and the buttons each message offered. */
  const errorAnswer = { choice: undefined as string | undefined | Promise<string | undefined>, buttons: [] as string[][] };
  /** `vscode.extensions.getExtension`: the ids asked for, and what it answers. */
  const extensions = { asked: [] as string[], answer: undefined as unknown };
  const treeViews: { id: string; options: { treeDataProvider: unknown }; description: string | undefined }[] = [];
  const quickPick: {
    answer: string | undefined;
    lastItems: { label: string; picked?: boolean; detail?: string }[];
    /** What the open dialog answers (a file path), `undefined`: cancelled. */
    file: string | undefined;
  } = {
    answer: undefined,
    lastItems: [],
    file: undefined,
  };
  const window = {
    activeTextEditor: undefined as ReturnType<typeof fakeEditor> | undefined,
    createOutputChannel: () => {
      const channel = { lines: [] as string[], appendLine(l: string) { this.lines.push(l); }, dispose() {} };
      outputs.push(channel);
      return channel;
    },
    createStatusBarItem: () => {
      const item = new FakeItem();
      statusItems.push(item);
      return item;
    },
    showQuickPick: async (items: { label: string; picked?: boolean }[]) => {
      quickPick.lastItems = items;
      return items.find((i) => i.label === quickPick.answer);
    },
    showOpenDialog: async () => (quickPick.file === undefined ? undefined : [{ fsPath: quickPick.file }]),
    withProgress: async <T>(
      options: { title?: string },
      task: (p: { report(v: { message?: string }): void }, token: { onCancellationRequested(f: () => void): unknown }) => Promise<T>,
    ) => {
      progress.titles.push(options.title ?? "");
      return task(
        { report: (v) => void progress.reports.push(v.message ?? "") },
        { onCancellationRequested: () => ({ dispose() {} }) },
      );
    },
    showInformationMessage: async (m: string) => void messages.push(m),
    showErrorMessage: async (m: string, ...buttons: string[]) => {
      messages.push(`error: ${m}`);
      errorAnswer.buttons.push(buttons);
      return errorAnswer.choice;
    },
    onDidChangeActiveTextEditor: activeEditorChanged.event,
    onDidChangeTextEditorSelection: selectionChanged.event,
    /** The Tokens view (workspace.ts): the views created and their providers. */
    createTreeView: (id: string, options: { treeDataProvider: unknown }) => {
      const view = { id, options, description: undefined as string | undefined, dispose() {} };
      treeViews.push(view);
      return view;
    },
  };
  const vscode = {
    StatusBarAlignment: { Left: 1, Right: 2 },
    TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
    Uri: { parse: (s: string) => ({ scheme: s.slice(0, s.indexOf(":")), toString: () => s }) },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    ConfigurationTarget,
    window,
    extensions: {
      getExtension: (id: string) => (extensions.asked.push(id), extensions.answer),
    },
    commands: {
      registerCommand: (id: string, fn: (...args: unknown[]) => unknown) => {
        commands.set(id, fn);
        return { dispose: () => commands.delete(id) };
      },
      executeCommand: async (id: string) => void executed.push(id),
    },
    workspace: {
      workspaceFolders: undefined as { uri: { fsPath: string } }[] | undefined,
      /** `false`: Restricted Mode. */
      isTrusted: true,
      onDidGrantWorkspaceTrust: trustGranted.event,
      getConfiguration: (section: string) => {
        if (section !== "livetok") throw new Error(`unexpected section ${section}`);
        return config.section();
      },
      onDidChangeConfiguration: config.changed.event,
      onDidCloseTextDocument: documentClosed.event,
    },
  };
  return {
    vscode,
    config,
    commands,
    statusItems,
    messages,
    outputs,
    quickPick,
    activeEditorChanged,
    selectionChanged,
    documentClosed,
    trustGranted,
    progress,
    extensions,
    treeViews,
    executed,
    errorAnswer,
  };
}

/** `ExtensionContext.globalState`: a memento in memory. */
export function fakeMemento(): { get<T>(key: string): T | undefined; update(key: string, value: unknown): Promise<void> } {
  const values = new Map<string, unknown>();
  return {
    get: <T>(key: string) => values.get(key) as T | undefined,
    update: async (key: string, value: unknown) => void values.set(key, value),
  };
}

/** `State` of vscode-languageclient 9 (its numbers). */
export const State = { Stopped: 1, Running: 2, Starting: 3 } as const;

/** The mocked `vscode-languageclient/node`: one record per LanguageClient constructed. */
export function makeLanguageClientMock() {
  const clients: FakeLanguageClient[] = [];
  /**
   * One entry per client to be constructed: its `start()` stays in the starting state until
   * the promise settles (rejecting: the start fails). No entry: it starts at once.
   */
  const startGates: Promise<void>[] = [];
  class FakeLanguageClient {
    state: number = State.Stopped;
    readonly stateChanged = new Emitter<{ oldState: number; newState: number }>();
    readonly onDidChangeState = this.stateChanged.event;
    /** `initializationOptions` as sent with `initialize`: read when `start()` is called, like the real client. */
    initializeOptions: unknown = undefined;
    readonly notificationHandlers = new Map<string, (params: unknown) => void>();
    /** Notifications in the order they went out, each with whether the client was running then. */
    readonly sentNotifications: { method: string; params: unknown; running: boolean }[] = [];
    readonly requests: { method: string; params: unknown }[] = [];
    /** Answers `sendRequest`; tests replace it. */
    answer: (method: string, params: unknown) => Promise<unknown> = () => Promise.reject(new Error("no answer set"));
    private readonly gate: Promise<void> | undefined = startGates.shift();
    private started: Promise<void> | undefined;
    constructor(
      readonly id: string,
      readonly name: string,
      readonly serverOptions: { command: string; args: string[] },
      readonly clientOptions: {
        initializationOptions?: unknown;
        documentSelector?: unknown;
        outputChannel?: { appendLine(line: string): void };
      },
    ) {
      clients.push(this);
    }
    private setState(newState: number) {
      const oldState = this.state;
      this.state = newState;
      this.stateChanged.fire({ oldState, newState });
    }
    start(): Promise<void> {
      this.started ??= (async () => {
        const options = this.clientOptions.initializationOptions;
        this.initializeOptions = typeof options === "function" ? options() : options;
        this.setState(State.Starting);
        try {
          await this.gate;
        } catch (err) {
          this.setState(State.Stopped);
          throw err;
        }
        this.setState(State.Running);
      })();
      return this.started;
    }
    async stop() {
      this.started = undefined;
      this.setState(State.Stopped);
    }
    get running() {
      return this.state === State.Running;
    }
    isRunning() {
      return this.state === State.Running;
    }
    needsStop() {
      return this.state === State.Starting || this.state === State.Running;
    }
    onNotification(method: string, handler: (params: unknown) => void) {
      this.notificationHandlers.set(method, handler);
      return { dispose() {} };
    }
    async sendNotification(type: { method: string } | string, params: unknown) {
      const method = typeof type === "string" ? type : type.method;
      this.sentNotifications.push({ method, params, running: this.isRunning() });
    }
    sendRequest(method: string, params: unknown) {
      this.requests.push({ method, params });
      return this.answer(method, params);
    }
  }
  const module = {
    LanguageClient: FakeLanguageClient,
    State,
    DidChangeConfigurationNotification: { type: { method: "workspace/didChangeConfiguration" } },
  };
  return { module, clients, startGates };
}

/** Make `require(name)` return `mocks[name]` for the listed names, until the returned undo is called. */
export function installRequireMocks(mocks: Record<string, unknown>): () => void {
  const mod = Module as unknown as { _load(request: string, parent: unknown, isMain: boolean): unknown };
  const original = mod._load;
  mod._load = function (request: string, parent: unknown, isMain: boolean) {
    if (Object.prototype.hasOwnProperty.call(mocks, request)) {
      return mocks[request];
    }
    return original.call(this, request, parent, isMain);
  };
  return () => {
    mod._load = original;
  };
}
