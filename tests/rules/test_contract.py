#!/usr/bin/env python3
"""The rules contract (rules/README.md) against the C that relies on it.

Reads every server/**/*.c for the capture names the engine and the
language server look up (ddx_hit_fact / ddx_incident_fact with a string
literal, a helper that passes its name parameter on to them, or a table of
names that such a call indexes) and fails when one is not listed in the
README's "Capture names the engine reads" table. The same for the priority
tiers: every DDX_*_PRIORITY the C defines must be in the README's "Priority
tiers" table, and the rule schema's priority must say so too.

usage: test_contract.py [REPO_ROOT]
"""
import glob
import json
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
failures = []


def check(ok, msg):
    if not ok:
        failures.append(msg)


def strip_comments(src):
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", src, flags=re.S)


sources = sorted(glob.glob(os.path.join(root, "server", "**", "*.c"), recursive=True))
check(sources, "no C sources under server/")
texts = {p: strip_comments(open(p, encoding="utf-8").read()) for p in sources}

# Functions that read a fact by a name: the two lookups, and every function
# with a `const char *NAME` parameter that it hands to one of them.
readers = {"ddx_hit_fact", "ddx_incident_fact"}
changed = True
while changed:
    changed = False
    for src in texts.values():
        for m in re.finditer(r"\b(\w+)\s*\(([^()]*\bconst char \*(\w+))\s*\)\s*\{", src):
            fn, param = m.group(1), m.group(3)
            body = src[m.end(): m.end() + 600]
            if fn not in readers and re.search(
                    r"\b(%s)\s*\(\s*[^,()]+,\s*%s\s*\)" % ("|".join(readers), re.escape(param)), body):
                readers.add(fn)
                changed = True

call = re.compile(r"\b(%s)\s*\(\s*[^,()]+(?:\([^()]*\))?[^,()]*,\s*([^)]*?)\s*\)" % "|".join(sorted(readers)))
names = {}  # capture name -> first file that reads it
for path, src in texts.items():
    for m in call.finditer(src):
        arg = m.group(2)
        lit = re.fullmatch(r'"([A-Za-z_][A-Za-z0-9_]*)"', arg)
        if lit:
            names.setdefault(lit.group(1), path)
            continue
        idx = re.fullmatch(r"(\w+)\[[^\]]*\]", arg)  # a table of names: names[i]
        if idx:
            table = re.search(r"\b%s\s*\[\s*\]\s*=\s*\{([^}]*)\}" % re.escape(idx.group(1)), src)
            check(table, f"{path}: {m.group(0)}: the table {idx.group(1)}[] is not found")
            for t in re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', table.group(1) if table else ""):
                names.setdefault(t, path)

check(len(names) >= 10, f"only {len(names)} capture names found in the C: is the search broken?")

readme = open(os.path.join(root, "rules", "README.md"), encoding="utf-8").read()


def section(title):
    m = re.search(r"^## %s\n(.*?)(?=^## )" % re.escape(title), readme, re.M | re.S)
    check(m, f"rules/README.md has no section '## {title}'")
    return m.group(1) if m else ""


listed = set()
for row in re.findall(r"^\| (.*?) \|", section("Capture names the engine reads"), re.M):
    listed.update(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", row))
for n in sorted(names):
    check(n in listed, f"{os.path.relpath(names[n], root)} reads the capture `{n}`, "
          "which rules/README.md ('Capture names the engine reads') does not list")
for n in sorted(listed - set(names)):
    check(False, f"rules/README.md lists the capture `{n}`, which no C source reads")

# The priority tiers.
tiers = {}
for path, src in texts.items():
    for m in re.finditer(r"#define (DDX_\w+_PRIORITY) (\d+)", open(path, encoding="utf-8").read()):
        tiers[m.group(1)] = int(m.group(2))
check(tiers, "no DDX_*_PRIORITY in the C: is the search broken?")
tier_text = section("Priority tiers")
rows = re.findall(r"^\| (.*?) \|", tier_text, re.M)
for name, v in sorted(tiers.items()):
    check(name in tier_text, f"rules/README.md ('Priority tiers') does not name {name}")
    check(any(re.search(r"\b%d\b" % v, r) for r in rows),
          f"{name} is {v} in the C; no row of rules/README.md's 'Priority tiers' says {v}")
schema = json.load(open(os.path.join(root, "rules", "rule.schema.json"), encoding="utf-8"))
pdesc = schema["properties"]["priority"].get("description", "")
for name, v in sorted(tiers.items()):
    check(re.search(r"\b%d\b" % v, pdesc), f"rule.schema.json: priority's description does not say {v} ({name})")
cdesc = schema["definitions"]["pattern"]["properties"]["regex"].get("description", "")
for n in ("rank", "local_rank", "gpu"):
    check(f"`{n}`" in cdesc or f"'{n}'" in cdesc or n in cdesc,
          f"rule.schema.json: a signature regex's description does not name the capture {n}")

# The engine names no class by id: a quoted rule id in the C (family.name)
# outside the tests would be a hidden contract.
ids = {os.path.splitext(os.path.basename(p))[0]
       for p in glob.glob(os.path.join(root, "rules", "**", "*.json"), recursive=True)
       if not p.endswith(".schema.json") and not p.endswith(".phases.json")}
for path, src in texts.items():
    for m in re.finditer(r'"([a-z0-9]+(?:\.[a-z0-9-]+)+)"', src):
        check(m.group(1) not in ids, f"{os.path.relpath(path, root)}: names the class {m.group(1)} "
              "by id (find it by its fields, or list it under 'Reserved ids' in rules/README.md)")

if failures:
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print(f"rules contract: {len(names)} capture names read by the C, all in rules/README.md; "
      f"tiers {', '.join(f'{k}={v}' for k, v in sorted(tiers.items()))}")
