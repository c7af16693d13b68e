;;; eglot_test.el --- Emacs 28 + eglot 1.9 (Debian 12) headless against `ddx lsp'  -*- lexical-binding: t -*-
;;
;; Run by tests/emacs/run.sh:  emacs --batch -Q -l eglot_test.el
;; Env: DDX_SERVER  the server command (a wrapper around `ddx lsp --stdio'
;;                  that tees its stdin and stdout to <dir>/lsp.in, lsp.out)
;;      DDX_WS_LOG  a workspace with train.log and a stage-3 ds_config.json
;;                  (the server starts on the log: languageId "log")
;;      DDX_WS_CFG  a workspace with a ds_config.json with a misspelt key and
;;                  a train.log opened after it (the server starts on the JSON
;;                  buffer: eglot 1.9 sends languageId "json" for the log too)
;;      DDX_TIMEOUT seconds to wait for each thing (default 20)
;; Prints one `ok - ...' / `not ok - ...' line per check; exits 1 on failure.

(require 'package)
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(require 'eglot)
(require 'flymake)
(require 'json)
(require 'cl-lib)
(require 'subr-x)

(setq make-backup-files nil
      create-lockfiles nil
      auto-save-default nil
      eglot-sync-connect t
      eglot-connect-timeout 20
      eglot-autoreconnect nil
      ;; no prompt for edits to visited files; one to a file not visited
      ;; is still asked about (answered in the quick-fix check)
      eglot-confirm-server-initiated-edits nil
      jsonrpc-default-request-timeout 20)

(defvar ddx-timeout (string-to-number (or (getenv "DDX_TIMEOUT") "20")))
(defvar ddx-failed 0)
(defvar ddx-passed 0)

(defun ddx-report (ok what &optional detail)
  (if ok
      (progn (setq ddx-passed (1+ ddx-passed))
             (princ (format "ok - emacs eglot: %s\n" what)))
    (setq ddx-failed (1+ ddx-failed))
    (princ (format "not ok - emacs eglot: %s\n" what))
    (when detail
      (dolist (l (split-string (format "%s" detail) "\n"))
        (princ (format "#   %s\n" l))))))

(defun ddx-wait (pred)
  "Process output until PRED is non-nil or `ddx-timeout' seconds pass."
  (let ((deadline (+ (float-time) ddx-timeout)) v)
    (while (and (not (setq v (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    v))

;; A major mode for logs; JSON is js-mode in Emacs 28. One server for both.
(define-derived-mode ddx-log-mode text-mode "ddx-log")
(add-to-list 'auto-mode-alist '("\\.log\\'" . ddx-log-mode))
(setq eglot-server-programs
      `((((ddx-log-mode :language-id "log") (js-mode :language-id "json"))
         ;; the wrapper's argument: where it tees to (the buffer's folder)
         . ,(lambda (&optional _interactive)
              (append (split-string-and-unquote (getenv "DDX_SERVER"))
                      (list (directory-file-name (expand-file-name default-directory))))))))

(defun ddx-open (file)
  "Visit FILE, connect eglot (or attach to the project's server), start flymake."
  (let ((buf (find-file-noselect file)))
    (switch-to-buffer buf)
    (with-current-buffer buf
      (unless (eglot-current-server)
        (apply #'eglot (eglot--guess-contact)))
      (ddx-wait (lambda () (and (bound-and-true-p eglot--managed-mode) (eglot-current-server))))
      (unless flymake-mode (flymake-mode 1))
      (flymake-start))
    buf))

(defun ddx-diag-code (d)
  (let ((spec (cdr (assoc 'eglot-lsp-diag (flymake-diagnostic-data d)))))
    (and spec (plist-get spec :code))))

(defun ddx-flymake-codes (buf)
  (with-current-buffer buf
    (mapcar #'ddx-diag-code (flymake-diagnostics))))

(defun ddx-wait-diags (buf pred)
  (with-current-buffer buf
    (ddx-wait (lambda () (flymake-start) (funcall pred (flymake-diagnostics))))))

(defun ddx-goto-line (buf line)
  "Point at the start of the 0-based LINE of BUF."
  (with-current-buffer buf
    (goto-char (point-min))
    (forward-line line)
    (point)))

(defun ddx-read-file (f)
  (with-temp-buffer (insert-file-contents f) (buffer-string)))

(defun ddx-frames (file)
  "The JSON-RPC messages in FILE (Content-Length framed), as hash tables."
  (let ((text (if (file-exists-p file)
                  (with-temp-buffer
                    (set-buffer-multibyte nil)
                    (insert-file-contents-literally file)
                    (buffer-string))
                ""))
        (pos 0) msgs)
    ;; TEXT is unibyte: positions are bytes, as Content-Length counts
    (while (string-match "Content-Length: *\\([0-9]+\\)\r\n\\(?:[^\r\n]+\r\n\\)*\r\n" text pos)
      (let* ((len (string-to-number (match-string 1 text)))
             (start (match-end 0))
             (end (min (length text) (+ start len))))
        (push (condition-case nil
                  (json-parse-string (decode-coding-string (substring text start end) 'utf-8)
                                     :null-object :null)
                (error nil))
              msgs)
        (setq pos end)))
    (delq nil (nreverse msgs))))

(defmacro ddx-check (what &rest body)
  "Run BODY; a signal is a failed check WHAT."
  (if (getenv "DDX_DEBUG")               ; a backtrace instead
      `(progn ,@body)
    `(condition-case err (progn ,@body)
       (error (ddx-report nil ,what (error-message-string err))))))

(let* ((ws (file-name-as-directory (getenv "DDX_WS_LOG")))
       (log (expand-file-name "train.log" ws))
       (cfg (expand-file-name "ds_config.json" ws))
       (oom-line 45)
       lbuf server)
  ;; (1) diagnostics of the log, as flymake shows them
  (ddx-check "log diagnostics"
    (setq lbuf (ddx-open log))
    (setq server (with-current-buffer lbuf (eglot-current-server)))
    (let ((ok (ddx-wait-diags lbuf (lambda (ds) (member "ds.oom.zero3-gather" (mapcar #'ddx-diag-code ds))))))
      (ddx-report ok "train.log -> ds.oom.zero3-gather in flymake"
                  (format "flymake codes: %S" (ddx-flymake-codes lbuf)))
      (when ok
        (with-current-buffer lbuf
          (let* ((d (cl-find "ds.oom.zero3-gather" (flymake-diagnostics) :key #'ddx-diag-code :test #'equal))
                 (text (flymake-diagnostic-text d)))
            (ddx-report (and (string-match-p "ds\\.oom\\.zero3-gather" text)
                             (= (line-number-at-pos (flymake-diagnostic-beg d)) (1+ oom-line)))
                        "the flymake message names the rule, on the OOM line"
                        (format "%s (line %d)" text (line-number-at-pos (flymake-diagnostic-beg d)))))))))
  ;; (2) hover on the failure line
  (ddx-check "hover"
    (with-current-buffer lbuf
      (goto-char (+ (ddx-goto-line lbuf oom-line) 10))
      (let* ((h (jsonrpc-request (eglot--current-server-or-lose) :textDocument/hover
                                 (eglot--TextDocumentPositionParams)))
             (md (and h (plist-get (plist-get h :contents) :value))))
        (ddx-report (and md (string-match-p "ds\\.oom\\.zero3-gather" md)
                         (string-match-p "CUDA out of memory while ZeRO-3 all-gathers" md)
                         (equal (plist-get (plist-get h :contents) :kind) "markdown"))
                    "hover on the OOM line: markdown naming the rule"
                    (format "%S" h)))))
  ;; (3) code actions on the failure line: the quick fix that edits ds_config.json
  (ddx-check "quick fix"
    (with-current-buffer lbuf
      (let* ((beg (ddx-goto-line lbuf oom-line))
             (actions (eglot-code-actions beg (line-end-position) "quickfix"))
             (fix (cl-find-if (lambda (a) (and (string-match-p "stage3_prefetch_bucket_size" (plist-get a :title))
                                               (not (plist-get a :disabled))))
                              actions))
             (before (json-parse-string (ddx-read-file cfg))))
        (ddx-report fix "code actions on the OOM line offer the stage3_prefetch_bucket_size fix"
                    (format "%S" (mapcar (lambda (a) (plist-get a :title)) actions)))
        (when fix
          ;; ds_config.json is not visited: eglot asks before it edits it
          (let (asked)
            (cl-letf (((symbol-function 'y-or-n-p) (lambda (prompt) (setq asked prompt) t)))
              (eglot--apply-workspace-edit (plist-get fix :edit)))
            (ddx-report (and asked (string-match-p "ds_config\\.json" asked))
                        "eglot applies the edit to ds_config.json (asked: yes)" asked))
          (let ((cbuf (find-buffer-visiting cfg)))
            (ddx-report (and cbuf (buffer-modified-p cbuf)) "the edit is applied to a ds_config.json buffer")
            (when cbuf (with-current-buffer cbuf (save-buffer))))
          (let* ((after (json-parse-string (ddx-read-file cfg)))
                 (z (gethash "zero_optimization" after))
                 (v (and z (gethash "stage3_prefetch_bucket_size" z))))
            (ddx-report (and v (= v 10000000)
                             (equal (gethash "stage" z) 3)
                             (equal (json-encode (gethash "bf16" after)) (json-encode (gethash "bf16" before)))
                             (equal (json-encode (gethash "optimizer" after)) (json-encode (gethash "optimizer" before))))
                        "ds_config.json on disk: stage3_prefetch_bucket_size 1e7, the rest kept"
                        (ddx-read-file cfg)))))))
  nil)

(let* ((ws (file-name-as-directory (getenv "DDX_WS_CFG")))
       (cfg (expand-file-name "ds_config.json" ws))
       (log (expand-file-name "train.log" ws))
       cbuf lbuf)
  ;; (4) a ds_config.json with a misspelt key
  (ddx-check "ds_config diagnostics"
    (setq cbuf (ddx-open cfg))
    (let ((ok (ddx-wait-diags cbuf (lambda (ds) (member "ds-config.unknown-key" (mapcar #'ddx-diag-code ds))))))
      (ddx-report (and ok (with-current-buffer cbuf
                            (cl-some (lambda (d) (string-match-p "did you mean `stage3_prefetch_bucket_size`" (flymake-diagnostic-text d)))
                                     (flymake-diagnostics))))
                  "ds_config.json -> ds-config.unknown-key (did you mean ...)"
                  (format "flymake codes: %S" (ddx-flymake-codes cbuf)))
      (ddx-report (equal (eglot--language-id (with-current-buffer cbuf (eglot-current-server))) "json")
                  "the second server started on the JSON buffer")))
  ;; (5) a log opened after the JSON buffer, on the same server
  (ddx-check "log after json"
    (setq lbuf (ddx-open log))
    (ddx-report (eq (with-current-buffer lbuf (eglot-current-server))
                    (with-current-buffer cbuf (eglot-current-server)))
                "the log joins the JSON buffer's server")
    (let ((ok (ddx-wait-diags lbuf (lambda (ds) (member "ds.oom.zero3-gather" (mapcar #'ddx-diag-code ds))))))
      (ddx-report ok "train.log opened after a JSON buffer -> ds.oom.zero3-gather"
                  (format "flymake codes: %S" (ddx-flymake-codes lbuf))))
    ;; what made it a real check: eglot said "json" for the log
    (let ((open (cl-find-if (lambda (m)
                              (and (equal (gethash "method" m) "textDocument/didOpen")
                                   (string-suffix-p "/train.log" (gethash "uri" (gethash "textDocument" (gethash "params" m))))))
                            (ddx-frames (expand-file-name "lsp.in" ws)))))
      (ddx-report (and open (equal (gethash "languageId" (gethash "textDocument" (gethash "params" open))) "json"))
                  "eglot's didOpen of the log said languageId \"json\""))))

;; (6) shutdown: eglot sends shutdown ("params": null) and exit; the server's
;; reply is read from what the wrapper teed of its stdout.
(dolist (dir (list (getenv "DDX_WS_LOG") (getenv "DDX_WS_CFG")))
  (let* ((buf (find-buffer-visiting (expand-file-name "train.log" dir)))
         (server (and buf (with-current-buffer buf (eglot-current-server))))
         (name (file-name-nondirectory (directory-file-name dir))))
    (ddx-check (format "shutdown %s" name)
      (unless server (error "no server for %s" dir))
      (let ((events (jsonrpc-events-buffer server))
            (err (condition-case e (progn (eglot-shutdown server nil 10 t) nil)
                   (error (error-message-string e)))))
        (ddx-report (null err) (format "%s: eglot-shutdown returned (the server answered shutdown)" name) err)
        (let* ((in (ddx-frames (expand-file-name "lsp.in" dir)))
               (out (ddx-frames (expand-file-name "lsp.out" dir)))
               (req (cl-find "shutdown" in :key (lambda (m) (gethash "method" m)) :test #'equal))
               (id (and req (gethash "id" req)))
               (resp (and id (cl-find-if (lambda (m) (and (equal (gethash "id" m) id) (not (gethash "method" m))))
                                         out))))
          (ddx-report (and req (eq (gethash "params" req 'absent) :null))
                      (format "%s: eglot sent shutdown with \"params\": null" name)
                      (and req (json-encode req)))
          (ddx-report (and resp (eq (gethash "result" resp 'absent) :null) (not (gethash "error" resp)))
                      (format "%s: the server replied to shutdown (id %s) with \"result\": null" name id)
                      (format "%d frames from the server; last: %s" (length out)
                              (and out (json-serialize (car (last out)) :null-object :null)))))
        (ddx-report (and (buffer-live-p events)
                         (with-current-buffer events
                           (goto-char (point-min))
                           (re-search-forward "client-notification[^\n]*\n*(:jsonrpc \"2.0\" :method \"exit\"" nil t)))
                    (format "%s: eglot then sent exit" name))))))

(princ (format "# emacs eglot: pass %d, fail %d\n" ddx-passed ddx-failed))
(kill-emacs (if (= ddx-failed 0) 0 1))
