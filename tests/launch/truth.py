"""truth.py - what a careful reader can know from a captured case: is the initiating rank
named by the text, and by which evidence. Used by run.py to fill each sidecar's
rank_knowable, rank_rule and rank_sources; the rules are written out in README.md.

Evidence kinds (each ties a rank to the decisive event of the mode):
  prefix    the decisive line carries torchrun --tee's `[defaultN]:` (one node: N = rank)
  file      the decisive line is in torchrun --log_dir's DIR/<run>/attempt_K/N/std{out,err}.log
  table     the decisive line (or the signal) is inside one ChildFailedError table entry
            (`rank : N (local_rank: M)`), the only entry that shows it
  table-only the table lists one failed rank only (`Failures: <NO_OTHER_FAILURES>`, the
            others ended by the agent's SIGTERM): the one rank that failed by itself
  agent     the elastic agent's `failed (exitcode: -S) local_rank: N` for a signal mode
  spawn     torch.multiprocessing.spawn's `-- Process N terminated with the following error:`
            above the decisive line, or `process N terminated with signal SIGX`
  message   the decisive line names its rank itself (nan: `rank N step S loss nan`, the
            earliest step; desync: the one rank whose CollectiveFingerPrint OpType differs
            from the others' in the mismatch messages)
  progress  the script's `rank N step S loss L` lines: every rank of the world printed them
            and exactly one rank's last step is behind all others' (it stopped first)
  complement (hang) every rank but one is shown failing (a timeout tied to its rank, or a
            table entry) among ranks 0..M, M the highest rank the text names anywhere
            (ranks are contiguous: a rank missing below M exists and is silent), or among
            ranks 0..F+T-1 when the F failed ranks and the T processes the agent sent SIGTERM
            (pids no table entry shows) outnumber them
Modes whose failure is every rank's alike or the launcher's own (rdzv, rdzv-nodes, port
under a launcher, missing-all, version-mismatch) have rank null and are never knowable.
"""
import os
import re

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PREFIX = re.compile(r"^\[default(\d+)\]:")
FILE_RANK = re.compile(r"attempt_\d+[/\\](\d+)[/\\](?:stdout|stderr|error)\.(?:log|json)$")
# (?<![A-Za-z]): two ranks' prints can share a line ("...loss 1.0915rank 2 step 1 ...")
PROGRESS = re.compile(r"(?<![A-Za-z])rank (\d+) step (\d+) loss (nan|-?inf|-?[\d.]+)")

DECISIVE = {
    "value": r"ValueError: invalid literal",
    "key": r"KeyError: 'labels'",
    "assert": r"AssertionError: micro batch",
    "shape": r"mat1 and mat2 shapes cannot be multiplied",
    "zerodiv": r"ZeroDivisionError",
    "fnf": r"FileNotFoundError",
    "alloc": r"DefaultCPUAllocator: can't allocate memory",
    "missing-one": r"No module named 'flash_attn'",
    "missing-all": r"No module named 'flash_attn'",
    "sigkill": r"Signal 9 \(SIGKILL\)|exitcode\s*: -9\b|terminated with signal SIGKILL",
    "segfault": r"Signal 11 \(SIGSEGV\)|exitcode\s*: -11\b|Segmentation fault|terminated with signal SIGSEGV",
    "sigbus": r"Signal 7 \(SIGBUS\)|exitcode\s*: -7\b|Bus error|terminated with signal SIGBUS",
    "nan": r"loss nan",
    "desync": r"Detected mismatch between collectives",
    "hang": r"Timed out waiting \d+ms for (?:send|recv) operation",
    "rdzv": r"store_based_barrier|Socket Timeout|Timed out|wait timeout",
    "rdzv-nodes": r"RendezvousTimeoutError",
    "port": r"Address already in use",
    "version-mismatch": r"'NoneType' object has no attribute 'get'",
}
SIGNAL_EXIT = {"sigkill": -9, "segfault": -11, "sigbus": -7}
NULL_MODES = ("rdzv", "rdzv-nodes", "missing-all", "version-mismatch")


def read_texts(folder, how):
    """{relative path: text} of every file the case's `how` names (folders walked)."""
    out = {}
    for h in how:
        p = os.path.join(folder, h)
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for f in sorted(files):
                    q = os.path.join(root, f)
                    with open(q, "rb") as fh:
                        out[os.path.relpath(q, folder)] = fh.read().decode("utf-8", "replace")
        elif os.path.exists(p):
            with open(p, "rb") as fh:
                out[h] = fh.read().decode("utf-8", "replace")
    return out


def lines_of(texts):
    """[(source, rank from prefix or file or None, text without prefix)] in file order."""
    out = []
    for src, t in texts.items():
        m = FILE_RANK.search(src.replace(os.sep, "/"))
        frank = int(m.group(1)) if m else None
        for ln in re.split(r"\r\n|\r|\n", ANSI.sub("", t)):
            pm = PREFIX.match(ln)
            if pm:
                out.append(("prefix", int(pm.group(1)), ln[pm.end():]))
            elif frank is not None:
                out.append(("file", frank, ln))
            else:
                out.append((None, None, ln))
    return out


def table_entries(lines):
    """ChildFailedError entries: [(rank, exitcode, [lines of the entry])]."""
    out, cur = [], None
    for _, _, ln in lines:
        s = ln.strip()
        if re.match(r"^\[\d+\]:$", s) or s.startswith("=====") or s.startswith("-----") or s == "Failures:" or \
                s.startswith("Root Cause"):
            if cur and cur[0] is not None:
                out.append(tuple(cur))
            cur = [None, None, []] if re.match(r"^\[\d+\]:$", s) else None
            continue
        if cur is None:
            continue
        m = re.match(r"rank\s*:\s*(\d+) \(local_rank", s)
        if m:
            cur[0] = int(m.group(1))
        m = re.match(r"exitcode\s*:\s*(-?\d+)", s)
        if m:
            cur[1] = int(m.group(1))
        cur[2].append(s)
    if cur and cur[0] is not None:
        out.append(tuple(cur))
    return out


def spawn_blocks(lines):
    """{rank: [lines]} of torch.multiprocessing.spawn's `-- Process N terminated` blocks,
    and {rank: signal name} of `process N terminated with signal SIGX`."""
    blocks, sig, cur = {}, {}, None
    for _, _, ln in lines:
        m = re.search(r"-- Process (\d+) terminated with the following error:", ln)
        if m:
            cur = int(m.group(1))
            blocks.setdefault(cur, [])
            continue
        m = re.search(r"process (\d+) terminated with signal (SIG\w+)", ln)
        if m:
            sig[int(m.group(1))] = m.group(2)
        if cur is not None:
            blocks[cur].append(ln)
            if re.match(r"^\S*(Error|Exception)\b.*", ln) and not ln.startswith("Traceback"):
                cur = None
    return blocks, sig


def world_named(lines, entries, blocks, sig):
    ranks = {r for s, r, _ in lines if r is not None}
    ranks |= {e[0] for e in entries} | set(blocks) | set(sig)
    for _, _, ln in lines:
        for m in PROGRESS.finditer(ln):
            ranks.add(int(m.group(1)))
    return ranks


def progress_rank(lines, nproc):
    last = {}
    for _, _, ln in lines:
        for m in PROGRESS.finditer(ln):
            r, st = int(m.group(1)), int(m.group(2))
            last[r] = max(last.get(r, 0), st)
    if set(last) != set(range(nproc)):
        return None
    lo = min(last.values())
    behind = [r for r, st in last.items() if st == lo]
    return behind[0] if len(behind) == 1 and lo < max(last.values()) else None


def evidence(side, texts):
    """{kind: rank} of every evidence kind present for the decisive event, and whether
    the decisive text is present at all."""
    mode, nproc = side["mode"], side["nproc"]
    dec = re.compile(DECISIVE[mode])
    lines = lines_of(texts)
    present = any(dec.search(ln) for _, _, ln in lines)
    ev = {}
    entries = table_entries(lines)
    blocks, sig = spawn_blocks(lines)
    if mode == "nan":
        first = {}
        for src, r, ln in lines:
            for m in re.finditer(r"(?<![A-Za-z])rank (\d+) step (\d+) loss nan", ln):
                first.setdefault(int(m.group(1)), int(m.group(2)))
        if first:
            lo = min(first.values())
            at = [r for r, st in first.items() if st == lo]
            if len(at) == 1:
                ev["message"] = at[0]
        return ev, present
    if mode == "desync":
        ops = {}
        for _, _, ln in lines:
            for m in re.finditer(r"Rank (\d+) is running collective: CollectiveFingerPrint\(OpType=(\w+)", ln):
                ops[int(m.group(1))] = m.group(2)
        if len(ops) >= 3:
            count = {}
            for op in ops.values():
                count[op] = count.get(op, 0) + 1
            odd = [r for r, op in ops.items() if count[op] == 1 and len(ops) - 1 >= 2]
            if len(odd) == 1 and len(count) == 2:
                ev["message"] = odd[0]
        return ev, present
    if mode == "hang":
        failed = set()
        for src, r, ln in lines:
            if r is not None and dec.search(ln):
                failed.add(r)
        failed |= {e[0] for e in entries if e[1] is not None and e[1] > 0}
        failed |= set(blocks)
        named = world_named(lines, entries, blocks, sig)
        world = set(range(max(named) + 1)) if named else set()  # ranks are 0..N-1: a gap is a rank
        # processes the agent ended (`Sending process PID closing signal SIGTERM`) whose pid no
        # table entry shows are ranks too (one node): they widen the world past the ranks named
        table_pids = {m.group(1) for _, _, ln in lines for m in [re.search(r"exitcode\s*:\s*-?\d+ \(pid: (\d+)\)", ln)] if m}
        termed = {m.group(1) for _, _, ln in lines
                  for m in [re.search(r"Sending process (\d+) closing signal SIGTERM", ln)] if m} - table_pids
        if named and len(failed) + len(termed) > len(world):
            world = set(range(len(failed) + len(termed)))
        if len(world - failed) == 1:
            ev["complement"] = (world - failed).pop()
        pr = progress_rank(lines, nproc)
        if pr is not None:
            ev["progress"] = pr
        return ev, present
    # one rank fails by itself: exceptions, signals, allocation, a missing module, port under spawn
    ranks = {r for s, r, ln in lines if s in ("prefix", "file") and dec.search(ln)}
    if mode in SIGNAL_EXIT:  # a signal is shown by the launcher, not on the rank's own stream
        ranks = {r for s, r, ln in lines if s in ("prefix", "file") and
                 re.search(r"Fatal Python error: (Segmentation fault|Bus error)", ln)}
    if len(ranks) == 1:
        ev["prefix" if any(s == "prefix" for s, _, _ in lines) else "file"] = ranks.pop()
    hit = [e[0] for e in entries if any(dec.search(x) for x in e[2]) or
           (mode in SIGNAL_EXIT and e[1] == SIGNAL_EXIT[mode])]
    if len(set(hit)) == 1:
        ev["table"] = hit[0]
    failed = {e[0] for e in entries if e[1] is not None and e[1] != 0}
    if len(failed) == 1 and "table" not in ev:  # the only rank the launcher saw fail (the rest: SIGTERM)
        ev["table-only"] = failed.pop()
    if mode in SIGNAL_EXIT:
        ag = {int(m.group(2)) for _, _, ln in lines
              for m in [re.search(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+)", ln)]
              if m and int(m.group(1)) == SIGNAL_EXIT[mode]}
        if len(ag) == 1:
            ev["agent"] = ag.pop()
        want = {"sigkill": "SIGKILL", "segfault": "SIGSEGV", "sigbus": "SIGBUS"}[mode]
        sp = [r for r, s in sig.items() if s == want]
        if len(sp) == 1:
            ev["spawn"] = sp[0]
    else:
        sp = [r for r, b in blocks.items() if any(dec.search(x) for x in b)]
        if len(sp) == 1:
            ev["spawn"] = sp[0]
    if side.get("log") == "all" and mode not in ("port", "missing-one"):
        pr = progress_rank(lines, nproc)
        if pr is not None:
            ev["progress"] = pr
    return ev, present


def knowable(side, texts):
    """(rank_knowable, rule, problems): problems are expectations of the case its text
    does not meet (the failure did not happen as designed)."""
    ev, present = evidence(side, texts)
    problems = [] if present else ["the decisive text /%s/ is missing" % DECISIVE[side["mode"]]]
    side["rank_sources"] = ev
    want = side["initiating_rank"]
    if want is None or side["mode"] in NULL_MODES or (side["mode"] == "port" and side["launcher"] != "spawn"):
        return False, "null: the failure is every rank's alike or the launcher's own", problems
    right = {k: r for k, r in ev.items() if r == want}
    wrong = {k: r for k, r in ev.items() if r != want}
    if wrong:
        problems.append("evidence names another rank than the truth: %s" % wrong)
    if right:
        return True, "named by " + ", ".join(sorted(right)), problems
    return False, "no text ties the failure to a rank", problems
