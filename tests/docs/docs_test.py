#!/usr/bin/env python3
"""The documentation against what it describes (CTest docs_test, label unit):
  - docs/architecture.md's dependency table is the one deploy/architecture.json generates, and
    every module of the file has a row in the page's module layout (scripts/architecture-table);
  - docs/dashboards.md explains every panel of dashboards/generate.py;
  - README.md is a front door: the two commands first, at most 200 lines, one "Measured so far"
    section;
  - every relative link of README.md and docs/*.md reaches a file of the checkout."""
import glob
import importlib.util
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README_LINES = 200
LINK_RE = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def architecture_table():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "architecture-table"),
                             "--check"], capture_output=True, text=True)
    return [line for line in (result.stdout + result.stderr).splitlines() if line] or (
        [f"architecture-table exited {result.returncode}"] if result.returncode else [])


def dashboard_panels():
    spec = importlib.util.spec_from_file_location("generate",
                                                  os.path.join(ROOT, "dashboards", "generate.py"))
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    page = open(os.path.join(ROOT, "docs", "dashboards.md")).read()
    problems = []
    for board in ("RUN_OVERVIEW", "EXPLORATION", "SYSTEMS"):
        for panel in getattr(generate, board):
            if f"| {panel[0]} |" not in page:
                problems.append(f"docs/dashboards.md: no row for the panel '{panel[0]}' ({board})")
    return problems


def readme():
    lines = open(os.path.join(ROOT, "README.md")).read().splitlines()
    problems = []
    if len(lines) > README_LINES:
        problems.append(f"README.md: {len(lines)} lines, more than {README_LINES}; move detail to "
                        "docs/")
    head = "\n".join(lines[:6])
    for command in ("./scripts/demo", "./scripts/test"):
        if command not in head:
            problems.append(f"README.md: {command} is not among its first lines")
    if sum(1 for line in lines if line.strip() == "## Measured so far") != 1:
        problems.append("README.md: needs exactly one '## Measured so far' section")
    return problems


def links():
    problems = []
    pages = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    for page in pages:
        for target in LINK_RE.findall(open(page).read()):
            if re.match(r"^[a-z]+:", target):
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(page), target))
            if not os.path.exists(path):
                problems.append(f"{os.path.relpath(page, ROOT)}: link to {target}, which does not "
                                "exist")
    return problems


def main():
    problems = architecture_table() + dashboard_panels() + readme() + links()
    for problem in problems:
        print("FAIL:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
