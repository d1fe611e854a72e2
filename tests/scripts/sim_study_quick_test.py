#!/usr/bin/env python3
"""The cluster study's pipeline end to end on a small study (CTest sim_study_quick_test, label
unit): `spotlight-sim study` (one trace, one ratio, two offsets, the embedded calibration), then
scripts/sim_report.py, then `spotlight-sim page`. Fails unless report.md, page.json and
report.html hold every compared mode and the sections docs/simulator.md points to."""
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
        subprocess.run([sim, "study", "--fitted",
                        os.path.join(root, "deploy", "sim", "calibration", "fitted.json"),
                        "--out", study, "--offsets", "2", "--ratios", "1", "--gains", "2",
                        "--calibrations", "embedded", "--jobs", "2", trace], check=True)
        subprocess.run([sys.executable, os.path.join(root, "scripts", "sim_report.py"), study,
                        "--out", out], check=True)
        html = os.path.join(out, "report.html")
        subprocess.run([sim, "page", os.path.join(out, "page.json"), html], check=True)
        problems = []
        modes = {json.loads(line).get("mode") for line in open(study)}
        for m in ("none", "sync", "offload", "async", "async-reuse", "none-matched", "async-gain"):
            if m not in modes:
                problems.append(f"study.jsonl: no {m} run")
        page = json.load(open(os.path.join(out, "page.json")))
        ids = [s["id"] for s in page["sections"]]
        for want in ("about", "calibration-embedded", "gain-embedded", "assumptions"):
            if want not in ids:
                problems.append(f"page.json: no section {want} (has {ids})")
        text = open(html).read()
        markdown = open(os.path.join(out, "report.md")).read()
        for m in ("offload", "async-reuse", "none-matched"):
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
