import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { clientOutputChannel, relabelClientLine } from "../output";

describe("client output", () => {
  test("the clean exit after shutdown is an info line", () => {
    assert.equal(
      relabelClientLine("[Error - 10:02:03 AM] Server process exited with code 0."),
      "[Info  - 10:02:03 AM] Server process exited normally (code 0).",
    );
  });

  test("a crash and other lines are unchanged", () => {
    for (const line of [
      "[Error - 10:02:03] Server process exited with code 1.",
      "[Error - 10:02:03] Server process exited with signal SIGKILL.",
      "starting: livetok serve",
      "Server process exited with code 0.",
    ]) {
      assert.equal(relabelClientLine(line), line);
    }
  });

  test("the wrapped channel relabels appendLine and passes everything else through", () => {
    const calls: string[] = [];
    const channel = {
      name: "livetok",
      appendLine(v: string) {
        calls.push(`line:${v}`);
      },
      append(v: string) {
        calls.push(`append:${v}`);
      },
    };
    const wrapped = clientOutputChannel(channel);
    wrapped.appendLine("[Error - 1:00] Server process exited with code 0.");
    wrapped.append("[Error - 1:00] Server process exited with code 0.");
    assert.equal(wrapped.name, "livetok");
    assert.deepEqual(calls, [
      "line:[Info  - 1:00] Server process exited normally (code 0).",
      "append:[Error - 1:00] Server process exited with code 0.",
    ]);
  });
});
