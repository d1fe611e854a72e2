#!/usr/bin/env python3
"""Counts how configuration is read in the product code (common/, services/, tools/; not tests).

  lookups      calls of a Config accessor with a literal key: get<T>("k"), get_int("k"),
               get_double, get_bool, get_string, get_string_list, get_double_list
  mode_compares  exploration modes compared as text: `mode == "async"`, `get_string(
               "exploration.mode") == "offload"` and the like (none, sync, sync-stale, async,
               offload)
  run_schema   lines of common/run's run_schema() body
  run_deps     modules common/run may depend on (deploy/architecture.json)

Usage: tools/config_lookups.py [repo root]   (prints one `name value` per line)
"""
import json
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
ACCESSOR = re.compile(
    r"\.(?:get<[^>]+>|get_int|get_double|get_bool|get_string|get_string_list|get_double_list)"
    r"\(\s*\"")
MODE = re.compile(r"mode\w*(?:\([^)]*\)|\"\))?\s*[!=]=\s*\"(?:none|sync|sync-stale|async|offload)\"")

lookups = 0
mode_compares = 0
for folder in ("common", "services", "tools"):
    for path in sorted((root / folder).rglob("*")):
        if path.suffix not in (".cpp", ".hpp") or "/tests/" in str(path):
            continue
        for line in path.read_text(errors="replace").splitlines():
            lookups += len(ACCESSOR.findall(line))
            mode_compares += len(MODE.findall(line))

body = 0
text = (root / "common/run/run_config.cpp").read_text().splitlines()
for i, line in enumerate(text):
    if re.match(r"const config::Schema& run_schema\(\) \{", line):
        j = i + 1
        while text[j] != "}":
            j += 1
        body = j - i - 1
        break

arch = json.loads((root / "deploy/architecture.json").read_text())
run = arch["modules"]["common/run"]
print("lookups", lookups)
print("mode_compares", mode_compares)
print("run_schema_lines", body)
print("run_deps", len(run["deps"]))
print("run_header_deps", len(run.get("header_deps", [])))
