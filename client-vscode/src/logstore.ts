// Read-only in-memory log documents (scheme ddx-log:) for text that has no file: a terminal
// selection, a failed command's output, an excerpt of a file too big to open. The language server
// sees them like any open log, so its diagnostics, hovers and quick fixes work on them too.
import * as vscode from 'vscode';

export const LOG_SCHEME = 'ddx-log';

export class LogStore implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly order: string[] = [];
  private next = 1;
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly keep = 20) {}

  /** A new document holding `text`; `label` names it (ddx-log:/terminal/3-python-train.py.log). */
  add(kind: string, label: string, text: string): vscode.Uri {
    const slug = label.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'text';
    const uri = vscode.Uri.from({ scheme: LOG_SCHEME, path: `/${kind}/${this.next++}-${slug}.log` });
    const key = uri.toString();
    this.texts.set(key, text);
    this.order.push(key);
    while (this.order.length > this.keep) {
      const old = this.order.shift();
      if (old) this.texts.delete(old);
    }
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '(this ddx log excerpt is no longer kept)';
  }

  dispose(): void {
    this.changed.dispose();
    this.texts.clear();
  }
}

/** Removes ANSI/OSC escape sequences (terminal colours, shell-integration marks) and carriage-return rewrites stay as lines. */
export function stripTerminalEscapes(s: string): string {
  return s
    // OSC ... BEL or ST (shell integration 633/133, titles, hyperlinks)
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '')
    // CSI sequences (colours, cursor moves)
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
    // other two-byte escapes
    .replace(/\x1b[@-Z\\-_]/g, '');
}

/** Keeps the first `head` and the last bytes of a stream, up to `max` in all (memory stays bounded). */
export class BoundedText {
  private headText = '';
  private tail: string[] = [];
  private tailLen = 0;
  private dropped = 0;
  private readonly headMax: number;
  private readonly tailMax: number;

  constructor(max: number) {
    this.headMax = Math.floor(max / 8);
    this.tailMax = max - this.headMax;
  }

  push(chunk: string): void {
    if (this.headText.length < this.headMax) {
      const take = Math.min(chunk.length, this.headMax - this.headText.length);
      this.headText += chunk.slice(0, take);
      chunk = chunk.slice(take);
      if (!chunk) return;
    }
    this.tail.push(chunk);
    this.tailLen += chunk.length;
    while (this.tailLen > this.tailMax && this.tail.length > 0) {
      const over = this.tailLen - this.tailMax;
      const first = this.tail[0];
      if (first.length <= over) {
        this.tail.shift();
        this.tailLen -= first.length;
        this.dropped += first.length;
      } else {
        this.tail[0] = first.slice(over);
        this.tailLen -= over;
        this.dropped += over;
      }
    }
  }

  get length(): number {
    return this.headText.length + this.tailLen;
  }

  get droppedChars(): number {
    return this.dropped;
  }

  text(): string {
    const tail = this.tail.join('');
    if (!this.dropped) return this.headText + tail;
    // Cut at a line start so the kept tail does not begin mid-line.
    const nl = tail.indexOf('\n');
    const body = nl >= 0 && nl < 4096 ? tail.slice(nl + 1) : tail;
    return `${this.headText}\n[ddx: ${this.dropped} characters of output omitted]\n${body}`;
  }
}
