#!/usr/bin/env python3
"""The cluster study's pipeline end to end on a small study (CTest sim_study_quick_test, label
unit): `spotlight-sim study` (one trace, one ratio, one start-up, two offsets, two gains, the
embedded calibration of the contrast law), then scripts/sim_report.py, then `spotlight-sim page`.
Fails unless report.md, page.json and report.html hold every alternative's break-even row and the
sections deploy/sim/README.md points to."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    a = p.parse_args()
    sim = os.path.join(a.build, "tools", "simulator", "spotlight-sim")
    trace = os.path.join(root, "deploy", "traces",
                         "availability_16-node_aws-08-27-2023_us-east-2b_v100_1.json")
    out = tempfile.mkdtemp(prefix="spotlight-sim-study-")
    try:
        study = os.path.join(out, "study.jsonl")
        fitted = os.path.join(root, "deploy", "sim", "calibration", "contrast", "fitted.json")
        subprocess.run([sim, "study", "--fitted", fitted, "--out", study, "--offsets", "2",
                        "--ratios", "1", "--gains", "1,2", "--startups", "120",
                        "--calibrations", "embedded", "--jobs", "2", trace], check=True)
        subprocess.run([sys.executable, os.path.join(root, "scripts", "sim_report.py"), study,
                        "--out", out, "--fitted", fitted], check=True)
        html = os.path.join(out, "report.html")
        subprocess.run([sim, "page", os.path.join(out, "page.json"), html], check=True)
        problems = []
        modes = {json.loads(line).get("mode") for line in open(study)}
        for m in ("none", "offload", "offload-pipelined", "async", "none-matched", "async-gain"):
            if m not in modes:
                problems.append(f"study.jsonl: no {m} run")
        page = json.load(open(os.path.join(out, "page.json")))
        ids = [s["id"] for s in page["sections"]]
        for want in ("about", "decision-embedded", "map-embedded", "law", "sensitivity",
                     "assumptions"):
            if want not in ids:
                problems.append(f"page.json: no section {want} (has {ids})")
        text = open(html).read()
        markdown = open(os.path.join(out, "report.md")).read()
        for m in ("none-matched", "offload", "offload-pipelined", "none"):
            if f"| {m} |" not in markdown:
                problems.append(f"report.md: no row for {m}")
            if f">{m}<" not in text:
                problems.append(f"report.html: no cell for {m}")
        if "<svg" not in text:
            problems.append("report.html: no chart")
        for problem in problems:
            print("FAIL:", problem)
        return 1 if problems else 0
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
