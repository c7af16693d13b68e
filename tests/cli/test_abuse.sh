#!/usr/bin/env bash
# Hostile inputs for the CLI: each is answered, memory stays bounded, the
# output stays valid. usage: test_abuse.sh path/to/ddx (from the repo root)
. "$(dirname "$0")/lib.sh" "$@"
valid_json() { python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$1"; }
OOM='torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.06 GiB is free.'

# a 50 MB single line with the failure at its very end
python3 -c "import sys; sys.stdout.write('x' * 50_000_000 + ' $OOM\n')" >"$T/longline.log"
/usr/bin/time -f "%M" -o "$T/rss" "$DDX" diagnose --format json "$T/longline.log" >"$T/out" 2>/dev/null
rc=$?
[ $rc = 1 ] && valid_json "$T/out" && python3 -c "import json,sys; i=json.load(open(sys.argv[1]))['incidents'][0]; assert i['rule']=='torch.oom.generic' and i['line']==1" "$T/out" && ok || bad "50 MB line: rc $rc"
[ "$(tail -1 "$T/rss")" -lt 65536 ] && ok || bad "50 MB line used $(tail -1 "$T/rss") KB"

# 2 GB of NUL bytes (a sparse file): no lines, bounded memory
truncate -s 2G "$T/zeros.log"
/usr/bin/time -f "%M" -o "$T/rss" "$DDX" diagnose --format json "$T/zeros.log" >"$T/out" 2>/dev/null
rc=$?
[ $rc = 0 ] && valid_json "$T/out" && ok || bad "2 GB of NULs: rc $rc"
[ "$(tail -1 "$T/rss")" -lt 65536 ] && ok || bad "2 GB file used $(tail -1 "$T/rss") KB"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['stats']['bytes']==2**31, d['stats']" "$T/out" && ok || bad "2 GB counted"

# random binary with the failure text scattered in it, and invalid UTF-8
python3 - "$T/bin.log" "$OOM" <<'PY'
import os, random, sys
random.seed(5)
with open(sys.argv[1], "wb") as f:
    for i in range(2000):
        f.write(os.urandom(random.randrange(1, 4000)))
        if i % 500 == 0:
            f.write(b"\n\xff\xfe\xc0\xaf[rank3]: " + sys.argv[2].encode() + b" \xed\xa0\x80\n")
PY
"$DDX" diagnose --format json "$T/bin.log" >"$T/out" 2>/dev/null
rc=$?
[ $rc -le 1 ] && valid_json "$T/out" && ok || bad "binary log: rc $rc"
"$DDX" diagnose --format sarif "$T/bin.log" >"$T/out" 2>/dev/null
valid_json "$T/out" && ok || bad "binary log: SARIF not valid JSON"
"$DDX" diagnose --evidence "$T/bin.log" >/dev/null 2>&1; [ $? -le 1 ] && ok || bad "binary log: evidence"

# many tiny lines: a million empty lines and bare CRs
python3 -c "import sys; sys.stdout.write('\n' * 500000 + '\r' * 500000 + '$OOM\n')" >"$T/cr.log"
"$DDX" diagnose --format json "$T/cr.log" >"$T/out"
python3 -c "import json,sys; i=json.load(open(sys.argv[1]))['incidents'][0]; assert i['line']==1000001, i['line']" "$T/out" && ok || bad "a million CR/LF lines: wrong line"

# an unreadable input and a directory loop
mkdir -p "$T/loop" && ln -s "$T/loop" "$T/loop/self"
timeout 20 "$DDX" diagnose "$T/loop" >/dev/null 2>&1; rc=$?
[ $rc = 0 ] && ok || bad "a symlink loop in a folder: rc $rc"
if [ "$(id -u)" != 0 ]; then
  printf 'x\n' >"$T/noread.log" && chmod 000 "$T/noread.log"
  "$DDX" diagnose "$T/noread.log" >/dev/null 2>&1; [ $? = 2 ] && ok || bad "unreadable file"
fi

finish
