#!/usr/bin/env bash
# A hostile rule pack and a hostile log cannot drive the terminal: every
# text from a rule (title, fix, verify, ...) or a log (the line, its facts,
# the file name) reaches stdout with its control characters escaped (\x1b,
# \x07, \u009b), valid UTF-8 kept, and the report's own colours the only
# escape sequences; a rule id outside ^[a-z0-9]+(\.[a-z0-9-]+)+$ is refused
# with the file and field named.
# usage: test_escape.sh path/to/ddx   (run from the repository root)
. "$(dirname "$0")/lib.sh" "$@"
expect_rc() { # expect_rc WANT DESC CMD...
  local want=$1 desc=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "$desc: exit $rc, wanted $want; stderr: $(head -c 400 "$T/err" | cat -v)"; fi
}
contains() { # contains FILE TEXT DESC
  if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in $(head -c 600 "$1" | cat -v)"; fi
}
# clean FILE DESC [colours]: no raw control byte (C0 but tab and newline, DEL,
# C1 as UTF-8 or as a lone byte) in FILE; with "colours", ESC only as the
# report's own colour sequences.
clean() {
  python3 - "$1" "${3:-}" <<'EOF' && ok || bad "$2: raw control bytes reach stdout: $(head -c 600 "$1" | cat -v)"
import re, sys
data = open(sys.argv[1], "rb").read()
if sys.argv[2] == "colours":
    data = re.sub(rb"\x1b\[(?:1|1;31|1;33|36|2|0)m", b"", data)
text = data.decode("utf-8", errors="surrogateescape")  # a byte that is not UTF-8: U+DC80-U+DCFF
sys.exit(1 if re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\udc80-\udcff]", text) else 0)
EOF
}

# --- a rule pack whose texts hold ESC[31m, BEL, C1 CSI (U+009B) and an OSC title
mkdir -p "$T/pack"
cat >"$T/pack/evil.inject.json" <<'JSON'
{"id": "evil.inject", "title": "Evil \u001b[31mRED\u001b[0m title\u0007 \u009b2J end",
 "phase": "step", "severity": "error", "role": "cause", "priority": 50,
 "signatures": [{"regex": "EVILBOOM (?<what>\\S+)", "literals": ["EVILBOOM "]}],
 "summary": "summary \u001b[5mblink\u001b[0m", "mechanism": "mechanism \u0007bell. Second.",
 "fix": ["run \u001b]0;pwned\u0007 now", "then \u009b6n this"],
 "verify": "verify \u001b[8mhidden\u001b[0m", "missing": ["missing \u001b[2K"],
 "config_patches": [{"id": "p", "title": "patch \u001b[41mbg\u001b[0m", "ops": [{"op": "set", "path": "a", "value": "\u001b[1m"}]}],
 "references": ["https://example.com/\u001b[31m"],
 "samples": {"positive": [{"text": "EVILBOOM x"}]}}
JSON
# a log line with an OSC title, a screen clear, BEL, a C1 CSI and UTF-8, in a
# file whose name holds an escape too
log="$T/run"$'\e[1m'".log"
printf 'step 1 ok\nEVILBOOM fact\a\xc2\x9b6n \e]0;owned\a \e[2J tail \xe2\x96\x88 \xc3\xa9 done\n' >"$log"

expect_rc 0 "the hostile pack itself loads" "$DDX" rules check "$T/pack"
expect_rc 1 "the hostile log is diagnosed" "$DDX" diagnose --rules "$T/pack" "$log"
cp "$T/out" "$T/plain.txt"
clean "$T/plain.txt" "text report"
contains "$T/plain.txt" 'Evil \x1b[31mRED\x1b[0m title\x07 \u009b2J end' "the title is shown escaped"
contains "$T/plain.txt" 'run \x1b]0;pwned\x07 now' "the fix is shown escaped"
contains "$T/plain.txt" 'then \u009b6n this' "a C1 control in the fix is shown escaped"
contains "$T/plain.txt" 'verify \x1b[8mhidden\x1b[0m' "verify is shown escaped"
contains "$T/plain.txt" 'summary \x1b[5mblink\x1b[0m' "the summary is shown escaped"
contains "$T/plain.txt" 'patch \x1b[41mbg\x1b[0m' "a quick fix title is shown escaped"
contains "$T/plain.txt" 'missing \x1b[2K' "a missing fact is shown escaped"
contains "$T/plain.txt" 'fact\x07\u009b6n' "the log's BEL and C1 CSI are shown escaped (line and facts)"
contains "$T/plain.txt" "run\\x1b[1m.log" "the file name is shown escaped"
contains "$T/plain.txt" "$(printf '\xe2\x96\x88 \xc3\xa9 done')" "valid UTF-8 is kept as it is"

expect_rc 1 "the hostile log in colour" "$DDX" diagnose --color --rules "$T/pack" "$log"
cp "$T/out" "$T/color.txt"
clean "$T/color.txt" "coloured text report" colours
contains "$T/color.txt" "$(printf '\e[1m')" "the report keeps its own colours"
contains "$T/color.txt" 'Evil \x1b[31mRED' "the coloured report escapes the title"

expect_rc 1 "evidence of the hostile log" "$DDX" diagnose --evidence --rules "$T/pack" "$log"
clean "$T/out" "evidence"
contains "$T/out" 'fact\x07\u009b6n' "evidence shows the line escaped"

expect_rc 1 "the hostile log from stdin" sh -c '"$1" diagnose --rules "$2" - <"$3"' sh "$DDX" "$T/pack" "$log"
clean "$T/out" "stdin text report"

expect_rc 0 "explain the hostile rule" "$DDX" explain --rules "$T/pack" evil.inject
clean "$T/out" "explain"
contains "$T/out" 'Evil \x1b[31mRED\x1b[0m title\x07 \u009b2J end' "explain shows the title escaped"
contains "$T/out" 'https://example.com/\x1b[31m' "explain shows a reference escaped"
contains "$T/out" '"value":"\u001B[1m"' "explain shows the patch ops as JSON"

# JSON keeps the text, escaped by JSON itself
expect_rc 1 "the hostile log as JSON" "$DDX" diagnose --format json --rules "$T/pack" "$log"
clean "$T/out" "JSON report"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
inc = d["incidents"][0]
assert inc["title"].startswith("Evil \x1b[31mRED"), inc["title"]
assert inc["fix"][0] == "run \x1b]0;pwned\x07 now", inc["fix"]
assert inc["title"].endswith("\x9b2J end"), inc["title"]' "$T/out" && ok || bad "JSON keeps the texts as they are"
contains "$T/out" 'title\u0007 \u009b2J end' "JSON writes a C1 control as \u009b"
expect_rc 1 "the hostile log as SARIF" "$DDX" diagnose --format sarif --rules "$T/pack" "$log"
clean "$T/out" "SARIF report"
expect_rc 0 "explain --json the hostile rule" "$DDX" explain --json --rules "$T/pack" evil.inject
clean "$T/out" "explain --json"

# --- rule ids: ^[a-z0-9]+(\.[a-z0-9-]+)+$, the file and field named, exit 2
bad_id() { # bad_id DESC JSON-ID SHOWN
  rm -rf "$T/ids" && mkdir -p "$T/ids"
  sed "s/\"id\": \"evil.inject\"/\"id\": \"$2\"/" "$T/pack/evil.inject.json" >"$T/ids/bad.json"
  expect_rc 2 "rules check refuses the id $1" "$DDX" rules check "$T/ids"
  contains "$T/err" "$T/ids/bad.json: \$.id: '$3' must match ^[a-z0-9]+(\\.[a-z0-9-]+)+\$" "the id $1 is refused with its file and field"
  clean "$T/err" "the error for the id $1"
  expect_rc 2 "diagnose refuses a pack with the id $1" "$DDX" diagnose --rules "$T/ids" "$log"
}
bad_id "with capitals" 'Bad.ID' 'Bad.ID'
bad_id "with JSON in it" 'a.b\\"} x{' 'a.b"} x{'
bad_id "without a dot" 'evil' 'evil'
bad_id "with a space" 'evil. inject' 'evil. inject'
bad_id "with an escape" 'evil.x\\u001b[31m' 'evil.x\x1b[31m'
bad_id "with a C1 control" 'evil.x\\u009b' 'evil.x\xc2\x9b'
bad_id "with an empty part" 'evil..inject' 'evil..inject'

# --- CLI messages and listings quote rule text, file names and JSON bytes
expect_rc 0 "rules list of the hostile pack" "$DDX" rules list --rules "$T/pack"
clean "$T/out" "rules list"
mkdir -p "$T/esc"
ename=$(printf '%s/esc/x\033[2Jy.json' "$T")
printf '{ "id": 1 \033]0;title\007 }' >"$ename"
expect_rc 2 "rules check of a malformed rule whose name and bytes hold escapes" "$DDX" rules check "$T/esc"
clean "$T/err" "a loader error naming such a file"
contains "$T/err" 'x\x1b[2Jy.json' "the file name is shown escaped"
printf '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 3, "\033[31mevil": 1}}' >"$T/esc.json"
"$DDX" check-config "$T/esc.json" >"$T/out" 2>"$T/err"
clean "$T/out" "check-config findings quoting a key with ESC"

finish
