// The output channel handed to the language client, with its one misleading line relabelled.
//
// subtle: no `vscode` import (the channel comes in from the extension), so it is unit tested
// under plain Node like status.ts.

/** What vscode-languageclient 9 writes when the server exits 0 (after our own shutdown). */
const CLEAN_EXIT = /^\[Error - ([^\]]*)\] Server process exited with code 0\.$/;

/**
 * A line the language client writes, as the output panel should show it.
 *
 * vscode-languageclient logs every exit of the server process at error level, including
 * the clean exit (code 0) that follows `shutdown`/`exit` on *Restart Server* or when VS Code
 * closes: `[Error - 10:02:03] Server process exited with code 0.` That one becomes an info
 * line; other lines pass unchanged (a crash's non-zero code stays an error).
 */
export function relabelClientLine(line: string): string {
  const m = CLEAN_EXIT.exec(line);
  return m === null ? line : `[Info  - ${m[1]}] Server process exited normally (code 0).`;
}

/** The part of `vscode.OutputChannel` relabelled here. */
export interface LineSink {
  appendLine(value: string): void;
}

/** `channel` with `appendLine` passed through `relabelClientLine`; every other member unchanged. */
export function clientOutputChannel<T extends LineSink>(channel: T): T {
  return new Proxy(channel, {
    get(target, prop) {
      if (prop === "appendLine") {
        return (value: string) => target.appendLine(relabelClientLine(value));
      }
      // subtle: read with the channel itself as `this`: VS Code's channel keeps private fields
      const value: unknown = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
