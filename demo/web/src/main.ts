// livetok browser demo: CodeMirror 6 + LSP over WebSocket to `livetok demo`.
//
// The page and the language server share one origin: the WebSocket is ws(s)://<page host>/lsp
// (override with ?ws=ws://host:port/path). Every CodeMirror transaction that changes the text
// becomes one incremental textDocument/didChange; CodeMirror offsets are UTF-16 code units,
// which is the position encoding negotiated at initialize.

import { Annotation, ChangeSet, EditorState, RangeSetBuilder, StateEffect, StateField, Text, Transaction } from "@codemirror/state";
import { Decoration, DecorationSet, EditorView, ViewUpdate, crosshairCursor, drawSelection, highlightActiveLine, keymap, lineNumbers, rectangularSelection } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";

// ---------------------------------------------------------------------------------------------
// JSON-RPC over WebSocket

type Json = any;

class LspClient {
  private ws!: WebSocket;
  private nextId = 1;
  private pending = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void }>();
  private decoder = new TextDecoder();
  onNotification: (method: string, params: Json) => void = () => {};
  onClose: (why: string) => void = () => {};

  connect(url: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.binaryType = "arraybuffer"; // pygls sends each message as a binary frame
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error(`cannot connect to ${url}`));
      ws.onclose = (e) => {
        for (const p of this.pending.values()) p.reject(new Error("connection closed"));
        this.pending.clear();
        this.onClose(`connection closed (${e.code}${e.reason ? ": " + e.reason : ""})`);
      };
      ws.onmessage = (e) => this.receive(typeof e.data === "string" ? e.data : this.decoder.decode(e.data));
      this.ws = ws;
    });
  }

  private receive(raw: string) {
    const msg = JSON.parse(raw);
    if (msg.id !== undefined && msg.method === undefined) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(`${msg.error.code}: ${msg.error.message}`));
      else p.resolve(msg.result);
    } else if (msg.id !== undefined) {
      // a request from the server (workDoneProgress/create, refresh requests): accept it
      this.send({ jsonrpc: "2.0", id: msg.id, result: null });
      this.onNotification(msg.method, msg.params);
    } else {
      this.onNotification(msg.method, msg.params);
    }
  }

  private send(msg: Json) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  get open() {
    return this.ws && this.ws.readyState === WebSocket.OPEN;
  }

  request(method: string, params: Json): Promise<Json> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method: string, params: Json) {
    this.send({ jsonrpc: "2.0", method, params });
  }
}

// ---------------------------------------------------------------------------------------------
// page elements

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const el = {
  status: $("status"),
  count: $("count"),
  chars: $("chars"),
  encoding: $<HTMLSelectElement>("encoding"),
  encodingUsed: $("encoding-used"),
  latency: $("latency"),
  selection: $("selection"),
  sample1: $<HTMLButtonElement>("sample-1mb"),
  sample10: $<HTMLButtonElement>("sample-10mb"),
  reset: $<HTMLButtonElement>("reset"),
  trace: $<HTMLSelectElement>("trace"),
  speed: $<HTMLSelectElement>("speed"),
  replay: $<HTMLButtonElement>("replay"),
  replayStatus: $("replay-status"),
  colour: $<HTMLInputElement>("colour"),
  info: $("info"),
  editor: $("editor"),
};
const fmt = (n: number) => n.toLocaleString("en-US");

function setStatus(state: "connecting" | "ready" | "busy" | "error", text: string) {
  el.status.dataset.state = state;
  el.status.textContent = text;
}

const INITIAL_TEXT = `Type here: livetok counts tokens as you type.

Every keystroke is sent to the language server as an incremental textDocument/didChange;
the server re-tokenizes only the text around the edit and answers with the exact count
(the same number tiktoken gives for the whole text). Coloured runs are single tokens.

Other scripts cost more tokens per character: Grüße aus Köln! Καλημέρα. Привет, мир!
`;

// ---------------------------------------------------------------------------------------------
// token colouring: decorations from semantic tokens, mapped through edits until replaced

const setTokens = StateEffect.define<DecorationSet>();
const fullSync = Annotation.define<boolean>();
const markA = Decoration.mark({ class: "tok-a" });
const markB = Decoration.mark({ class: "tok-b" });

const tokenField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    for (const e of tr.effects) if (e.is(setTokens)) return e.value;
    if (tr.annotation(fullSync)) return Decoration.none;
    return tr.docChanged ? deco.map(tr.changes) : deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

/** LSP semantic token data (relative line/char, UTF-16) to CodeMirror mark decorations. */
function decorationsFrom(doc: Text, data: number[]): DecorationSet {
  const b = new RangeSetBuilder<Decoration>();
  let line = 0, ch = 0;
  for (let i = 0; i + 4 < data.length; i += 5) {
    const dl = data[i], dc = data[i + 1], len = data[i + 2], type = data[i + 3];
    line += dl;
    ch = dl === 0 ? ch + dc : dc;
    if (line >= doc.lines) break;
    const l = doc.line(line + 1);
    const from = Math.min(l.from + ch, l.to), to = Math.min(from + len, l.to);
    if (to > from) b.add(from, to, type % 2 === 0 ? markA : markB);
  }
  return b.finish();
}

// ---------------------------------------------------------------------------------------------
// the session

const URI = "file:///livetok-demo/document.txt";
/** below this many UTF-16 units the whole document is coloured (no flicker when scrolling),
 * above it only the viewport: semantic tokens for 20,000 characters take the server ~7 ms,
 * for 200,000 ~200 ms, which would delay the next keystroke's count */
const COLOUR_ALL_BELOW = 20_000;

const client = new LspClient();
let version = 0; // version of the editor's text as last sent
let shownVersion = -1; // version of the count on screen
const sentAt = new Map<number, number>(); // version -> performance.now() when its change was sent
const latencies: number[] = [];
let ready = false;

function position(doc: Text, pos: number) {
  const line = doc.lineAt(pos);
  return { line: line.number - 1, character: pos - line.from };
}

function syncChanges(tr: Transaction) {
  if (!ready) return;
  version += 1;
  let contentChanges: Json[];
  if (tr.annotation(fullSync)) {
    contentChanges = [{ text: tr.newDoc.toString() }];
  } else {
    // LSP applies contentChanges in order, each against the text left by the previous one;
    // CodeMirror gives them in ascending order against the old text: send them from the end
    contentChanges = [];
    const old = tr.startState.doc;
    tr.changes.iterChanges((fromA, toA, _fromB, _toB, inserted) => {
      contentChanges.push({
        range: { start: position(old, fromA), end: position(old, toA) },
        text: inserted.toString(),
      });
    });
    contentChanges.reverse();
  }
  sentAt.set(version, performance.now());
  client.notify("textDocument/didChange", { textDocument: { uri: URI, version }, contentChanges });
}

function onCount(p: Json) {
  if (p.uri !== URI || p.version < shownVersion) return;
  shownVersion = p.version;
  el.count.textContent = fmt(p.tokens);
  el.count.dataset.version = String(p.version);
  el.count.dataset.tokens = String(p.tokens);
  el.chars.textContent = fmt(p.characters);
  el.encodingUsed.textContent = `(${p.encoding})`;
  el.encodingUsed.dataset.encoding = p.encoding;
  const t0 = sentAt.get(p.version);
  if (t0 !== undefined) {
    const ms = performance.now() - t0;
    latencies.push(ms);
    if (latencies.length > 50) latencies.shift();
    const sorted = [...latencies].sort((a, b) => a - b);
    const median = sorted[sorted.length >> 1];
    el.latency.textContent = `${ms < 10 ? ms.toFixed(1) : ms.toFixed(0)} ms`;
    el.latency.title = `median of the last ${latencies.length} updates: ${median.toFixed(1)} ms`;
    el.latency.dataset.ms = ms.toFixed(3);
  }
  for (const v of [...sentAt.keys()]) if (v <= p.version) sentAt.delete(v);
  if (p.version === version) setStatus("ready", "up to date");
  refreshTokens();
  refreshSelection();
}

// -- semantic tokens (coalesced: at most one request in flight) --

let tokensBusy = false, tokensAgain = false;

async function refreshTokens() {
  if (!ready || !el.colour.checked) return;
  if (tokensBusy) { tokensAgain = true; return; }
  tokensBusy = true;
  try {
    do {
      tokensAgain = false;
      const doc = view.state.doc;
      const asked = version;
      // the encoding of the count on screen: the server handles messages in order, so a
      // request sent once the new encoding's count has arrived is answered in that encoding
      const askedEncoding = el.encodingUsed.dataset.encoding ?? "";
      let from = 0, to = doc.length;
      if (doc.length >= COLOUR_ALL_BELOW) ({ from, to } = view.viewport);
      const range = { start: position(doc, from), end: position(doc, to) };
      let res: Json;
      try {
        res = await client.request("textDocument/semanticTokens/range", { textDocument: { uri: URI }, range });
      } catch (e) {
        console.warn("semantic tokens:", e);
        break;
      }
      // a reply for an older text or an older encoding is dropped and asked again
      if (asked === version && view.state.doc === doc
          && askedEncoding === (el.encodingUsed.dataset.encoding ?? "")) {
        view.dispatch({ effects: setTokens.of(decorationsFrom(doc, res?.data ?? [])) });
        el.editor.dataset.colouredVersion = String(asked);
        el.editor.dataset.colouredEncoding = askedEncoding;
        el.editor.dataset.colouredTokens = String(Math.floor((res?.data?.length ?? 0) / 5));
      } else {
        tokensAgain = true;
      }
    } while (tokensAgain);
  } finally {
    tokensBusy = false;
  }
}

// -- selection count --

let selBusy = false, selAgain = false;

async function refreshSelection() {
  if (!ready) return;
  if (selBusy) { selAgain = true; return; }
  selBusy = true;
  try {
    do {
      selAgain = false;
      const state = view.state;
      const sel = state.selection.main;
      if (sel.empty) {
        el.selection.textContent = "–";
        delete el.selection.dataset.tokens;
        break;
      }
      const range = { start: position(state.doc, sel.from), end: position(state.doc, sel.to) };
      const asked = version;
      let res: Json;
      try {
        res = await client.request("livetok/tokenCount", { textDocument: { uri: URI }, range });
      } catch (e) {
        console.warn("selection count:", e);
        break;
      }
      if (asked === version && view.state.selection.main.eq(sel)) {
        const chars = [...state.sliceDoc(sel.from, sel.to)].length;
        el.selection.textContent = `${fmt(res.rangeTokens)} tokens · ${fmt(chars)} chars`;
        el.selection.dataset.tokens = String(res.rangeTokens);
        el.selection.dataset.from = String(sel.from);
        el.selection.dataset.to = String(sel.to);
      } else {
        selAgain = true;
      }
    } while (selAgain);
  } finally {
    selBusy = false;
  }
}

// ---------------------------------------------------------------------------------------------
// the editor

const view = new EditorView({
  parent: el.editor,
  state: EditorState.create({
    doc: INITIAL_TEXT,
    extensions: [
      lineNumbers(),
      history(),
      drawSelection(),
      EditorState.allowMultipleSelections.of(true), // multi-cursor edits: several changes per didChange
      rectangularSelection(),
      crosshairCursor(),
      highlightActiveLine(),
      EditorView.lineWrapping,
      keymap.of([...defaultKeymap, ...historyKeymap]),
      tokenField,
      EditorView.updateListener.of((u: ViewUpdate) => {
        for (const tr of u.transactions) if (tr.docChanged) syncChanges(tr);
        if (u.docChanged) setStatus("busy", "counting…");
        if (u.viewportChanged && u.state.doc.length >= COLOUR_ALL_BELOW) refreshTokens();
        if (u.selectionSet && !u.docChanged) refreshSelection();
      }),
    ],
  }),
});

function replaceAll(text: string) {
  view.dispatch({
    changes: { from: 0, to: view.state.doc.length, insert: text },
    annotations: [fullSync.of(true), Transaction.addToHistory.of(false)],
    selection: { anchor: 0 },
    scrollIntoView: true,
  });
}

// -- samples --

async function loadSample(bytes: number, label: string) {
  replaying = false; // a replay in progress would apply its edits to the sample
  setStatus("busy", `fetching the ${label} sample…`);
  const res = await fetch(`/api/sample?size=${bytes}`);
  if (!res.ok) {
    setStatus("error", `sample: ${res.status} ${await res.text()}`);
    return;
  }
  const text = await res.text();
  replaceAll(text);
  setStatus("busy", `tokenizing ${fmt(text.length)} characters…`);
}

// -- trace replay --

interface Trace { startContent: string; endContent: string; txns: { patches: [number, number, string][] }[] }
let replaying = false;
let hasAstral = false; // with no astral characters, code point offsets equal UTF-16 offsets
const ASTRAL = /[\uD800-\uDFFF]/;

function cpToUtf16(doc: Text, cp: number): number {
  if (!hasAstral) return Math.min(cp, doc.length);
  let units = 0, seen = 0;
  for (const it = doc.iter(); !it.next().done;) {
    const s = it.value;
    for (let i = 0; i < s.length; i++) {
      if (seen === cp) return units;
      const c = s.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) { i++; units++; }
      units++; seen++;
    }
  }
  return units;
}

async function replay() {
  if (replaying) { replaying = false; return; }
  const name = el.trace.value;
  if (!name) return;
  el.replayStatus.textContent = `fetching ${name}…`;
  const res = await fetch(`/api/traces/${encodeURIComponent(name)}`);
  if (!res.ok) { el.replayStatus.textContent = `${res.status} ${await res.text()}`; return; }
  const trace: Trace = await res.json();
  replaying = true;
  el.replay.textContent = "Stop";
  el.replay.dataset.state = "running";
  hasAstral = ASTRAL.test(trace.startContent);
  replaceAll(trace.startContent);
  const t0 = performance.now();
  let i = 0, edits = 0;
  await new Promise<void>((done) => {
    const step = () => {
      if (!replaying) return done();
      const per = Number(el.speed.value) || 50;
      // one CodeMirror transaction (so one didChange) per trace transaction, handed to the
      // view together: one DOM update per frame
      const trs: Transaction[] = [];
      let state = view.state;
      for (let k = 0; k < per && i < trace.txns.length; k++, i++) {
        let doc = state.doc;
        let cs = ChangeSet.empty(doc.length);
        for (const [pos, ndel, ins] of trace.txns[i].patches) {
          if (ASTRAL.test(ins)) hasAstral = true;
          const from = cpToUtf16(doc, pos), to = cpToUtf16(doc, pos + ndel);
          const c = ChangeSet.of({ from, to, insert: ins }, doc.length);
          doc = c.apply(doc);
          cs = cs.compose(c);
          edits++;
        }
        if (cs.empty) continue;
        const tr = state.update({ changes: cs, annotations: Transaction.addToHistory.of(false) });
        trs.push(tr);
        state = tr.state;
      }
      if (trs.length) view.dispatch(trs);
      el.replayStatus.textContent = `${name}: ${fmt(i)} / ${fmt(trace.txns.length)} transactions`;
      if (i >= trace.txns.length) return done();
      requestAnimationFrame(step);
    };
    step();
  });
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  const complete = i >= trace.txns.length;
  const ok = view.state.doc.toString() === trace.endContent;
  el.replayStatus.textContent = complete
    ? `${name}: ${fmt(edits)} edits in ${secs} s · final text ${ok ? "matches" : "DIFFERS FROM"} endContent`
    : `${name}: stopped after ${fmt(i)} transactions`;
  el.replayStatus.dataset.result = complete ? (ok ? "match" : "differs") : "stopped";
  replaying = false;
  el.replay.textContent = "Replay trace";
  el.replay.dataset.state = "idle";
}

// ---------------------------------------------------------------------------------------------
// start

async function start() {
  const params = new URLSearchParams(location.search);
  const wsUrl = params.get("ws") ?? `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/lsp`;
  const encoding = params.get("encoding") ?? "o200k_base";

  const config = await (await fetch("/api/config")).json();
  for (const name of config.encodings as string[]) el.encoding.add(new Option(name, name, false, name === encoding));
  if (config.traces.length) {
    for (const t of config.traces) el.trace.add(new Option(`${t.name} (${Math.round(t.bytes / 1024)} KB)`, t.name));
  } else {
    el.trace.add(new Option("no traces", ""));
    el.trace.disabled = el.replay.disabled = el.speed.disabled = true;
    el.replay.title = el.trace.title = config.tracesMissing;
  }
  el.info.textContent = `livetok ${config.version} ·`;

  client.onNotification = (method, p) => {
    if (method === "livetok/didChangeTokenCount") onCount(p);
    else if (method === "$/progress" && p?.value?.kind !== "end") setStatus("busy", p?.value?.message ?? "working…");
    else if (method === "window/logMessage" || method === "window/showMessage") console.log("server:", p.message);
  };
  client.onClose = (why) => { ready = false; setStatus("error", `${why}: reload the page`); };
  await client.connect(wsUrl);
  const init = await client.request("initialize", {
    processId: null,
    rootUri: null,
    clientInfo: { name: "livetok-demo" },
    capabilities: {
      general: { positionEncodings: ["utf-16"] },
      window: { workDoneProgress: true },
      textDocument: {
        synchronization: { dynamicRegistration: false },
        semanticTokens: {
          requests: { range: true, full: true },
          tokenTypes: ["keyword", "string"],
          tokenModifiers: [],
          formats: ["relative"],
        },
      },
    },
    initializationOptions: { livetok: { encoding, semanticTokens: true } },
  });
  const unit = init?.capabilities?.positionEncoding ?? "utf-16";
  if (unit !== "utf-16") throw new Error(`server chose position encoding ${unit}, the demo needs utf-16`);
  if (!init?.capabilities?.semanticTokensProvider?.range) el.colour.disabled = true;
  client.notify("initialized", {});
  ready = true;
  version = 1;
  sentAt.set(version, performance.now());
  client.notify("textDocument/didOpen", {
    textDocument: { uri: URI, languageId: "plaintext", version, text: view.state.doc.toString() },
  });
  setStatus("busy", "counting…");
}

el.sample1.onclick = () => loadSample(1 << 20, "1 MB");
el.sample10.onclick = () => loadSample(10 << 20, "10 MB");
el.reset.onclick = () => { replaying = false; replaceAll(INITIAL_TEXT); };
el.replay.onclick = () => replay();
el.encoding.onchange = () => {
  setStatus("busy", `switching to ${el.encoding.value}…`);
  client.notify("workspace/didChangeConfiguration", { settings: { livetok: { encoding: el.encoding.value } } });
};
el.colour.onchange = () => {
  el.editor.classList.toggle("no-colour", !el.colour.checked);
  if (el.colour.checked) refreshTokens();
};

// for tests and for poking around in the console
(window as any).livetokDemo = {
  view,
  client,
  text: () => view.state.doc.toString(),
  get version() { return version; },
  get shownVersion() { return shownVersion; },
  get ready() { return ready; },
  /** the coloured spans: [from, to, "tok-a" | "tok-b"] in UTF-16 offsets */
  tokenRanges: () => {
    const out: [number, number, string][] = [];
    for (const it = view.state.field(tokenField).iter(); it.value; it.next()) out.push([it.from, it.to, it.value.spec.class]);
    return out;
  },
};

start().catch((e) => { console.error(e); setStatus("error", String(e.message ?? e)); });
view.focus();
