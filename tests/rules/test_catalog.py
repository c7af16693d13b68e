#!/usr/bin/env python3
"""Catalog checks that complement `ddx rules check` (which runs the samples
through the real engine): every rule file validates against the published
JSON Schema (so schema and C loader agree), ids match file names and the
taxonomy (docs/taxonomy.md), related/explains ids exist, at least two positive
samples come from real logs with their source URL, and every taxonomy class has an entry.

usage: test_catalog.py [RULES_DIR] [TAXONOMY_MD]"""
import glob
import json
import os
import re
import sys

try:
    import jsonschema
except ImportError:  # Debian: python3-jsonschema (make deps installs it)
    sys.exit("test_catalog.py needs python3-jsonschema (apt-get install python3-jsonschema)")

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
rules_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "rules")
taxonomy = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "docs", "taxonomy.md")

schema = json.load(open(os.path.join(rules_dir, "rule.schema.json")))
validator = jsonschema.Draft7Validator(schema)
tax_ids = set(re.findall(r"^- ([a-z0-9]+(?:\.[a-z0-9-]+)+)\s", open(taxonomy).read(), re.M))

passed = failed = 0
def check(cond, msg):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", msg)

files = sorted(f for f in glob.glob(os.path.join(rules_dir, "**", "*.json"), recursive=True)
               if not f.endswith((".schema.json", ".phases.json")))
rules = {}
for f in files:
    rel = os.path.relpath(f, root)
    r = json.load(open(f))
    errs = sorted(validator.iter_errors(r), key=lambda e: list(e.path))
    check(not errs, f"{rel}: " + "; ".join(f"$.{'.'.join(map(str, e.path))}: {e.message}" for e in errs[:3]))
    rid = r.get("id", "")
    rules[rid] = (rel, r)
    check(os.path.basename(f) == rid + ".json", f"{rel}: file name must be {rid}.json")
    check(rid in tax_ids, f"{rel}: id {rid} is not in the taxonomy")
    for k in ("summary", "mechanism", "symptoms", "affects", "checklist", "fix", "verify",
              "prevention", "fingerprint", "related", "references", "missing"):
        check(bool(r.get(k)), f"{rel}: catalog field {k} is empty or missing")
    real = [s for s in r.get("samples", {}).get("positive", [])
            if s.get("source", "").startswith(("http://", "https://"))]
    check(len(real) >= 2, f"{rel}: needs at least two positive samples from real logs with their source URL")
    check(len(r.get("samples", {}).get("negative", [])) >= 1, f"{rel}: needs a near-miss negative sample")

for rid, (rel, r) in rules.items():
    for k in ("related", "explains"):
        for other in r.get(k, []):
            check(other in rules, f"{rel}: {k} names unknown id {other}")

# The encyclopedia (ddx catalog): every entry has its family, code per stack,
# cheapest confirmation, scaling and inference notes; look-alike groups hold
# at least two classes, and the OOM classes an engineer must tell apart sit
# in one table.
groups = {}
for rid, (rel, r) in rules.items():
    for k in ("family", "examples", "confirm", "scale", "inference", "compare"):
        check(bool(r.get(k)), f"{rel}: encyclopedia field {k} is empty or missing")
    if r.get("compare"):
        groups.setdefault(r["compare"]["group"], []).append(rid)
for g, ids in groups.items():
    check(len(ids) >= 2, f"look-alike group {g!r} holds only {ids}: a comparison needs two classes")
oom = {"ds.oom.activations", "ds.oom.engine-init", "ds.oom.fragmentation", "ds.oom.optimizer-states",
       "ds.oom.zero3-gather", "torch.oom.generic", "host.oom-killer"}
check(len({rules[i][1].get("compare", {}).get("group") for i in oom if i in rules}) == 1,
      "the five DeepSpeed OOMs, torch.oom.generic and host.oom-killer share one look-alike table")

missing = sorted(tax_ids - set(rules))
check(not missing, f"taxonomy classes without a catalog entry: {', '.join(missing)}")
print(f"{len(rules)} rule files, {len(tax_ids)} taxonomy ids")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
