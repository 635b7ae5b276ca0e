"""A real Emacs: ``emacs -nw`` on a pseudo-terminal loads ``demo/emacs/livetok.el`` (the file the
docs load), opens a file with eglot or lsp-mode as the LSP client, types emoji and CJK text
into the buffer, and after every step the count the server reports is tiktoken's for the
buffer's text. (A terminal rather than ``--batch``: in batch mode ``format-mode-line`` gives
nothing, and the mode line is what livetok.el adds.)

After each step the Lisp below sends the pending changes (eglot sends them on an idle timer,
which never runs while the script is busy), waits until ``livetok-count`` (set by livetok.el's notification
handler) holds the buffer's latest version, asks ``livetok/tokenCount`` for the range from
the start of the line to point (so a position after an emoji must mean the same to client
and server: UTF-16 for eglot, UTF-32 for lsp-mode 8, which sends code points), and records
the text. The Python side compares with tiktoken and checks the mode line.

Needs Debian's ``emacs-nox`` with ``elpa-eglot`` (eglot 1.9) or ``elpa-lsp-mode`` (lsp-mode 8);
installs them with ``scripts/install-editors.sh emacs`` as root with apt if missing, else
skips saying why. About 3 s per client once installed.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from .._refs import tiktoken_ref
from ..conftest import slow_except
from .test_server_neovim import PERCENT_CASES, share

ROOT = Path(__file__).resolve().parents[2]
LIVETOK_EL = ROOT / "demo" / "emacs" / "livetok.el"
INSTALL = ROOT / "scripts" / "install-editors.sh"
START = "Hello world.\nSecond line with words.\n"

# Each step is Lisp run in the buffer; "typing" goes through the command loop's
# self-insert-command (execute-kbd-macro), like keys typed by hand.
STEPS = [
    '(goto-char (point-max)) (execute-kbd-macro (vconcat "Emoji 😀 and 中文 here"))',
    '(execute-kbd-macro (vconcat " 👩\u200d💻 日本語のテキスト"))',
    '(execute-kbd-macro (kbd "RET")) (execute-kbd-macro (vconcat "new line é ñ 🎉"))',
    # back on the emoji line, just after the 😀 (an astral character: 2 UTF-16 units, 1 code point)
    '(goto-char (point-min)) (search-forward "😀") (execute-kbd-macro (vconcat "X字"))',
    '(execute-kbd-macro (kbd "DEL DEL DEL"))',  # deletes 字, X and the emoji
    '(goto-char (point-min)) (search-forward "中") (delete-region (1- (point)) (point))',
    '(goto-char (point-max)) (execute-kbd-macro (vconcat "end 🙂"))',
]

DRIVER = r"""
(setq debug-on-error nil)
(require 'cl-lib)
(require 'json)
(defvar test-out (getenv "LIVETOK_TEST_OUT"))
(defvar test-client (intern (getenv "LIVETOK_TEST_CLIENT")))
(defun test-finish (result)
  (let ((coding-system-for-write 'utf-8))
    (with-temp-file test-out (insert (json-encode result))))
  (kill-emacs 0))
(defun test-wait (what pred &optional seconds)
  "Wait (bounded) until PRED returns non-nil, reading server output meanwhile."
  (let ((deadline (+ (float-time) (or seconds 60))))
    (while (not (funcall pred))
      (when (> (float-time) deadline) (error "timed out waiting for %s" what))
      (accept-process-output nil 0.05))))
(condition-case err
    (progn
      (load (getenv "LIVETOK_EL") nil t)
      (setq livetok-command (mapcar (lambda (arg) (if (string= arg ":autoport") :autoport arg))
                                    (split-string (getenv "LIVETOK_TEST_CMD") "\t")))
      (setq livetok-settings (list :encoding (getenv "LIVETOK_TEST_ENCODING") :contextWindow 1000))
      (pcase test-client
        ('eglot
         (require 'eglot)
         (setq eglot-sync-connect t eglot-autoshutdown t eglot-send-changes-idle-time 3600))
        ('lsp
         (setq lsp-client-packages nil lsp-session-file (expand-file-name "lsp-session" (getenv "HOME"))
               lsp-enabled-clients '(livetok) lsp-keep-workspace-alive nil lsp-enable-file-watchers nil
               lsp-headerline-breadcrumb-enable nil lsp-modeline-code-actions-enable nil
               lsp-modeline-diagnostics-enable nil lsp-lens-enable nil lsp-completion-enable nil
               lsp-diagnostics-provider :none lsp-enable-symbol-highlighting nil lsp-log-io nil
               lsp-restart 'ignore lsp-enable-snippet nil)
         (require 'lsp-mode)))
      (find-file (getenv "LIVETOK_TEST_FILE"))
      (let ((version nil) (ask nil) (flush #'ignore))
        (pcase test-client
          ('eglot
           (apply #'eglot (eglot--guess-contact))
           (test-wait "eglot to manage the buffer" (lambda () (bound-and-true-p eglot--managed-mode)))
           (setq version (lambda () eglot--versioned-identifier)
                 flush (lambda () (eglot--signal-textDocument/didChange))
                 ask (lambda ()
                       (jsonrpc-request (eglot-current-server) :livetok/tokenCount
                                        (list :textDocument (eglot--TextDocumentIdentifier)
                                              :range (list :start (eglot--pos-to-lsp-position (line-beginning-position))
                                                           :end (eglot--pos-to-lsp-position (point))))))))
          ('lsp
           (lsp-workspace-folders-add default-directory)
           (lsp)
           (test-wait "lsp-mode to start livetok"
                      (lambda () (cl-some (lambda (w) (eq (lsp--workspace-status w) 'initialized))
                                          (lsp-workspaces))))
           (setq version (lambda () lsp--cur-version)
                 ask (lambda ()
                       (let ((r (lsp-request "livetok/tokenCount"
                                             (list :textDocument (lsp--text-document-identifier)
                                                   :range (lsp--region-to-range (line-beginning-position) (point))))))
                         (if (hash-table-p r) (list :rangeTokens (gethash "rangeTokens" r)) r))))))
        (test-wait "the first count" (lambda () livetok-count))
        (let ((steps nil))
          (dolist (step (read (getenv "LIVETOK_TEST_STEPS")))
            (eval (car (read-from-string (concat "(progn " step ")"))) t)
            (funcall flush)
            (let ((want (funcall version)))
              (test-wait (format "the count of version %s" want)
                         (lambda () (>= (or (plist-get livetok-count :version) -1) want))))
            (push (list :text (buffer-substring-no-properties (point-min) (point-max))
                        :version (plist-get livetok-count :version)
                        :tokens (plist-get livetok-count :tokens)
                        :characters (plist-get livetok-count :characters)
                        :prefix (buffer-substring-no-properties (line-beginning-position) (point))
                        :rangeTokens (plist-get (funcall ask) :rangeTokens))
                  steps))
          (test-finish
           (list :steps (vconcat (nreverse steps))
                 :modeLine (format-mode-line mode-line-format)
                 :component (livetok-mode-line-string)
                 ;; the command line of a server started over TCP (nil on stdio)
                 :tcpCommand (cl-some (lambda (p) (let ((c (process-command p)))
                                                    (and (member "--tcp" c) (vconcat c))))
                                      (process-list))
                 :percent (vconcat (mapcar (lambda (c) (livetok-format-percent (car c) (cadr c)))
                                           (read (getenv "LIVETOK_TEST_PERCENT"))))
                 :unknown (with-current-buffer "*Messages*"
                            (save-excursion (goto-char (point-min))
                                            (if (search-forward "Unknown notification" nil t) t :json-false))))))))
  (error (test-finish (list :error (error-message-string err)))))
"""


def find_emacs(package: str) -> str:
    """``emacs`` with ``package`` (``elpa-eglot``/``elpa-lsp-mode``) installed, or skip."""
    def have() -> bool:
        ok = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True,
                            text=True).stdout.endswith("installed") if shutil.which("dpkg-query") else False
        return bool(shutil.which("emacs")) and ok
    if not have():
        proc = subprocess.run(["bash", str(INSTALL), "emacs"], capture_output=True, text=True, timeout=900)
        if not have():
            pytest.skip(f"emacs with {package} is not installed and could not be: {proc.stderr[-400:]}")
    return shutil.which("emacs")  # type: ignore[return-value]


def run_in_terminal(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[int, str]:
    """Run ``cmd`` with a pseudo-terminal (160x40) as its controlling terminal; returns the
    exit code and the tail of what it drew. Killed after ``timeout`` seconds."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                            env={**env, "TERM": "vt100"}, start_new_session=True,
                            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    screen: list[bytes] = []

    def drain() -> None:  # a terminal nobody reads would block Emacs once its buffer fills
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            screen.append(data)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    reader.join(timeout=5)
    os.close(master)
    return code, b"".join(screen)[-3000:].decode("utf-8", "replace")


# a real editor: eglot over TCP by default (livetok.el's mode line, settings and counts); the
# other transport and lsp-mode (8 s of CPU to load) under slow. The code point columns that
# lsp-mode 8 sends are read by the server in the default run
# (test_server_e2e.py::test_position_encoding_can_be_forced)
@pytest.mark.parametrize(("client", "package", "transport"), slow_except(
    [(c, p, t) for c, p in [("eglot", "elpa-eglot"), ("lsp", "elpa-lsp-mode")]
     for t in ["stdio", "tcp"]],
    {("eglot", "elpa-eglot", "tcp")}))
def test_emacs_types_and_counts_match_tiktoken(tmp_path: Path, client: str, package: str,
                                               transport: str) -> None:
    """The steps above, with the server on stdio or over TCP (``livetok-command`` with
    ``:autoport`` and no ``--once``: livetok.el adds it; the settings still arrive, as the
    count in cl100k_base there shows)."""
    encoding = "o200k_base" if transport == "stdio" else "cl100k_base"
    emacs = find_emacs(package)
    doc = tmp_path / "notes.txt"
    doc.write_text(START, encoding="utf-8")
    driver = tmp_path / "driver.el"
    driver.write_text(DRIVER, encoding="utf-8")
    out = tmp_path / "out.json"
    env = {**os.environ, "HOME": str(tmp_path), "LIVETOK_EL": str(LIVETOK_EL),
           "LIVETOK_TEST_OUT": str(out), "LIVETOK_TEST_CLIENT": client,
           "LIVETOK_TEST_FILE": str(doc), "LIVETOK_TEST_ENCODING": encoding,
           "LIVETOK_TEST_CMD": "\t".join([sys.executable, "-m", "livetok.server", "serve",
                                          *(["--tcp", ":autoport"] if transport == "tcp" else [])]),
           "LIVETOK_TEST_PERCENT": "(" + " ".join(f"({t} {w})" for t, w, _ in PERCENT_CASES) + ")",
           # a Lisp list of strings
           "LIVETOK_TEST_STEPS": "(" + " ".join(json.dumps(s, ensure_ascii=False) for s in STEPS) + ")"}
    # -q, not -Q: Debian's site start-up tells package.el where the elpa-* packages are
    code, screen = run_in_terminal([emacs, "-nw", "-q", "--eval", "(package-initialize)",
                                    "-l", str(driver)], env, tmp_path, timeout=180)
    assert out.exists(), f"emacs wrote no result (exit {code}); its screen:\n{screen}"
    res = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in res, f"{res['error']}\n--- screen ---\n{screen}"
    enc = tiktoken_ref(encoding)
    assert len(res["steps"]) == len(STEPS)
    for i, step in enumerate(res["steps"]):
        text = step["text"]
        assert step["tokens"] == len(enc.encode_ordinary(text)), f"step {i}: {STEPS[i]}\n{text!r}"
        assert step["characters"] == len(text), f"step {i}: {STEPS[i]}"
        assert step["rangeTokens"] == len(enc.encode_ordinary(step["prefix"])), \
            f"step {i}: range to point {step['prefix']!r}"
    final = res["steps"][-1]["text"]
    assert "中文" not in final and "文" in final and "👩\u200d💻" in final and "🙂" in final
    assert "😀" not in final and "X字" not in final
    n = len(enc.encode_ordinary(final))
    assert res["component"] == f"{n:,} tokens · {encoding} · {share(n, 1000)} of window"
    assert f" {res['component']} " in res["modeLine"], res["modeLine"]
    assert res["percent"] == [c[2] for c in PERCENT_CASES]
    assert res["unknown"] is False, "the client reported an unknown notification"
    if transport == "stdio":
        assert res["tcpCommand"] is None
    else:  # a port in place of :autoport, and --once so the server ends with its client
        tail = res["tcpCommand"][-3:]
        assert tail[0] == "--tcp" and tail[1].isdigit() and tail[2] == "--once", res["tcpCommand"]
