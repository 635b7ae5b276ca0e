;;; livetok.el --- Live, exact LLM token counts from the livetok language server  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "27.1"))
;; Keywords: tools, languages

;;; Commentary:

;; Shows the token count of a buffer in the mode line, from the livetok language server
;; (`livetok serve'), with either LSP client:
;;
;;   (load "/path/to/livetok/demo/emacs/livetok.el")
;;   (setq livetok-command '("/path/to/livetok/.venv/bin/livetok" "serve"))
;;   ;; then M-x eglot or M-x lsp in a `text-mode' or `markdown-mode' buffer
;;
;; - eglot (1.9 and later): registers `livetok-command' for `livetok-modes' in
;;   `eglot-server-programs' and handles the server's `livetok/didChangeTokenCount'
;;   notification (an `eglot-handle-notification' method).
;; - lsp-mode (8 and later): registers an add-on client `livetok' (it runs beside the
;;   buffer's other servers) with the same handler, so lsp-mode does not report
;;   "Unknown notification" on every change.  lsp-mode 8 counts `character' in code points
;;   and does not say so, so this client asks the server for UTF-32 positions
;;   (`positionEncoding' in the initialization options; `livetok serve --position-encoding
;;   utf-32' does the same from the command line).
;;
;; The count is kept in the buffer-local `livetok-count' and shown in the mode line
;; (`mode-line-misc-info') as "1,234 tokens · o200k_base · 1.0% of window".
;;
;; Over TCP instead of stdio, put `:autoport' where the port goes:
;;
;;   (setq livetok-command '("livetok" "serve" "--tcp" :autoport "--once"))
;;
;; The client picks a free port, starts the server with that port (a port alone means
;; 127.0.0.1) and connects to it.  Keep `--once': with `--tcp' the server listens until it
;; is killed and a client's `exit' ends only that client's session, while `--once' serves
;; that one client, refuses any other (another local user's) and ends the process when the
;; client leaves.  livetok.el adds `--once' to an `:autoport' command that lacks it.  eglot's
;; `:autoport' form takes no `:initializationOptions', so livetok.el starts eglot with its own
;; server class (`livetok-eglot-server') whose initialization options are `livetok-settings';
;; lsp-mode gets `lsp-tcp-connection'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(defgroup livetok nil
  "Live token counts from the livetok language server."
  :group 'tools
  :prefix "livetok-")

(defcustom livetok-command '("livetok" "serve")
  "The command that starts the livetok language server, as a list.
On stdio, e.g. (\"livetok\" \"serve\"); over TCP, with `:autoport' where the
port goes, e.g. (\"livetok\" \"serve\" \"--tcp\" :autoport \"--once\"): the client
picks a free port and connects to it; `--once' (added when missing) ends the
server when its client leaves.  Read when a server starts."
  :type '(repeat (choice string (const :autoport))))

(defcustom livetok-settings '(:encoding "o200k_base" :contextWindow 128000)
  "The `livetok' configuration section, a plist sent as initialization options.
Keys: `:encoding', `:encodingByLanguage', `:contextWindow', `:budget',
`:semanticTokens' (docs/protocol.md of the livetok repository).
Read when a server starts."
  :type 'plist)

(defcustom livetok-modes '(text-mode markdown-mode)
  "Major modes for which eglot and lsp-mode start livetok."
  :type '(repeat symbol))

(defvar-local livetok-count nil
  "The last count the server sent for this buffer, a plist:
`:uri', `:version', `:encoding', `:tokens', `:characters'.")

(defvar livetok-count-changed-hook nil
  "Run in a buffer after its `livetok-count' changed.")

(defun livetok--group-digits (n)
  "N with thousands separators: 1234567 -> \"1,234,567\"."
  (let ((s (number-to-string n)))
    (while (string-match "\\([0-9]\\)\\([0-9]\\{3\\}\\)\\($\\|,\\)" s)
      (setq s (replace-match "\\1,\\2\\3" t nil s)))
    s))

(defun livetok--div-round-half-up (a b)
  "A / B rounded half up, for non-negative integers."
  (/ (+ (* 2 a) b) (* 2 b)))

(defun livetok-format-percent (tokens window)
  "TOKENS as a share of WINDOW tokens, as every livetok client shows it.
Rounded half up to tenths of a percent: \"0.0%\" for no tokens,
\"<0.1%\" for tokens that round to zero tenths (below 0.05%), one
decimal below 10%, whole percents from there (\"10%\", \"1,172%\").
nil without a usable WINDOW."
  (when (and (integerp window) (> window 0))
    (let ((tenths (livetok--div-round-half-up (* 1000 tokens) window)))
      (cond ((and (> tokens 0) (= tenths 0)) "<0.1%")
            ((< tenths 100) (format "%d.%d%%" (/ tenths 10) (% tenths 10)))
            (t (concat (livetok--group-digits (livetok--div-round-half-up (* 100 tokens) window))
                       "%"))))))

(defun livetok-mode-line-string (&optional buffer)
  "The count of BUFFER (default: current) for the mode line.
nil before the server sent one."
  (with-current-buffer (or buffer (current-buffer))
    (when livetok-count
      (let* ((tokens (plist-get livetok-count :tokens))
             (window (if (plist-member livetok-settings :contextWindow)
                         (plist-get livetok-settings :contextWindow)
                       128000))
             (share (livetok-format-percent tokens window)))
        (concat (livetok--group-digits tokens) (if (= tokens 1) " token" " tokens")
                " · " (plist-get livetok-count :encoding)
                (and share (concat " · " share " of window")))))))

(defvar livetok-mode-line
  ;; subtle: `%' starts a mode-line %-construct ("3.3% of" would show as "3.3of")
  '(" " (:eval (replace-regexp-in-string "%" "%%" (livetok-mode-line-string) t t)) " ")
  "Mode-line construct showing the buffer's count (in `mode-line-misc-info').")
(put 'livetok-mode-line 'risky-local-variable t)
;; subtle: a list, not the bare symbol: `mode-line-misc-info' whose first element is a
;; symbol reads as (SYMBOL THEN ELSE) and would show the rest only when the symbol is set
(add-to-list 'mode-line-misc-info '(livetok-count ("" livetok-mode-line)))

(defun livetok--update (file count)
  "Store COUNT (a plist with `:version') in the buffer visiting FILE.
A count older than the one stored is dropped."
  (when-let ((buffer (and file (find-buffer-visiting file))))
    (with-current-buffer buffer
      (let ((known (plist-get livetok-count :version)))
        ;; notifications are coalesced and may cross a reply: never go back a version
        (unless (and known (< (plist-get count :version) known))
          (setq livetok-count count)
          (force-mode-line-update)
          (run-hooks 'livetok-count-changed-hook))))))

(defun livetok--autoport-p ()
  "Whether `livetok-command' runs the server over TCP (it holds `:autoport')."
  (memq :autoport livetok-command))

(defun livetok--tcp-command (&optional port)
  "`livetok-command' for TCP, with `--once' added if missing.
With `--tcp' a client's `exit' ends only its session and the server listens on;
`--once' ends the process when its one client leaves.  With PORT (a number),
PORT in place of `:autoport'."
  (let ((command (if (member "--once" livetok-command)
                     livetok-command
                   (append livetok-command '("--once")))))
    (if port (cl-subst (number-to-string port) :autoport command) command)))

(defun livetok--count-plist (get)
  "The count fields read with GET (a function of a keyword), as a plist."
  (cl-loop for key in '(:uri :version :encoding :tokens :characters)
           append (list key (funcall get key))))

;;;; eglot

(defvar eglot-server-programs)
(declare-function eglot--uri-to-path "eglot")

(defun livetok--eglot-contact (&rest _)
  "The eglot contact for livetok: `livetok-command' with `livetok-settings'.
Over TCP, eglot's `:autoport' form takes no `:initializationOptions': the
contact names `livetok-eglot-server', whose initialization options they are."
  (if (livetok--autoport-p)
      (cons 'livetok-eglot-server (livetok--tcp-command))
    (append livetok-command (list :initializationOptions (list :livetok livetok-settings)))))

(with-eval-after-load 'eglot
  (defclass livetok-eglot-server (eglot-lsp-server) ()
    :documentation "The livetok server started over TCP (an `:autoport' contact).")
  (cl-defmethod eglot-initialization-options ((_server livetok-eglot-server))
    "`livetok-settings', which an `:autoport' contact cannot carry."
    (list :livetok livetok-settings))
  (add-to-list 'eglot-server-programs (cons livetok-modes #'livetok--eglot-contact))
  (cl-defmethod eglot-handle-notification
    (_server (_method (eql livetok/didChangeTokenCount)) &rest params &key uri &allow-other-keys)
    "Handle livetok's count notification: the mode line shows it."
    (livetok--update (eglot--uri-to-path uri)
                     (livetok--count-plist (lambda (key) (plist-get params key))))))

;;;; lsp-mode

(declare-function lsp-register-client "lsp-mode")
(declare-function make-lsp-client "lsp-mode")
(declare-function lsp-stdio-connection "lsp-mode")
(declare-function lsp-tcp-connection "lsp-mode")
(declare-function lsp--uri-to-path "lsp-mode")

(defun livetok-lsp-on-count (_workspace params)
  "Handle livetok's count notification for lsp-mode (PARAMS: hash table or plist)."
  (let ((get (if (hash-table-p params)
                 (lambda (key) (gethash (substring (symbol-name key) 1) params))
               (lambda (key) (plist-get params key)))))
    (livetok--update (lsp--uri-to-path (funcall get :uri)) (livetok--count-plist get))))

(defun livetok--lsp-initialization-options ()
  "`livetok-settings' with UTF-32 positions: lsp-mode 8 sends code points."
  (list :livetok (append '(:positionEncoding "utf-32") livetok-settings)))

(defun livetok--lsp-connection ()
  "lsp-mode's connection for `livetok-command', read at each start:
stdio, or TCP (`lsp-tcp-connection') when it holds `:autoport'."
  (let ((stdio (lsp-stdio-connection (lambda () livetok-command)))
        (tcp (lsp-tcp-connection #'livetok--tcp-command)))
    (list :connect (lambda (&rest args)
                     (apply (plist-get (if (livetok--autoport-p) tcp stdio) :connect) args))
          :test? (lambda ()
                   (funcall (plist-get (if (livetok--autoport-p) tcp stdio) :test?))))))

(with-eval-after-load 'lsp-mode
  (let ((handlers (make-hash-table :test 'equal)))
    (puthash "livetok/didChangeTokenCount" #'livetok-lsp-on-count handlers)
    (lsp-register-client
     (make-lsp-client
      :server-id 'livetok
      :new-connection (livetok--lsp-connection)
      :activation-fn (lambda (&rest _) (apply #'derived-mode-p livetok-modes))
      :add-on? t
      :priority -1
      :initialization-options #'livetok--lsp-initialization-options
      :notification-handlers handlers))))

(provide 'livetok)
;;; livetok.el ends here
