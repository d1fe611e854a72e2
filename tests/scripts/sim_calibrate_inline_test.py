#!/usr/bin/env python3
"""scripts/sim_calibrate.py reads the per-prompt rewards a results.json keeps in its runs'
iterations (candidate_rewards, group_rewards, selected: what metrics.jsonl has) when the runs'
directories are gone (CTest sim_calibrate_inline_test, label unit). Made from the committed
ten-seed study's results.json with rewards written into iteration 0 of each sync run: the
measured file's base candidates must be exactly those; without them and without --base the
script must refuse."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))


def main():
    results = json.load(open(os.path.join(root, "deploy", "benchmark", "study-10-seeds",
                                          "results.json")))
    out = tempfile.mkdtemp(prefix="spotlight-sim-calibrate-")
    try:
        rng = random.Random(7)
        expected = []
        for run in sorted(results["runs"], key=lambda r: r["seed"]):
            run["dir"] = os.path.join(out, "gone", run["run"])  # no run directory
            if run["mode"] != "sync":
                continue
            first = run["iterations"][0]
            first["candidate_rewards"] = [[rng.choice([0, 1 / 3, 2 / 3, 1]) for _ in range(16)]
                                          for _ in range(8)]
            first["selected"] = [list(range(4)) for _ in range(8)]
            first["group_rewards"] = [c[:4] for c in first["candidate_rewards"]]
            expected += first["candidate_rewards"]
        with_rewards = os.path.join(out, "results.json")
        json.dump(results, open(with_rewards, "w"))
        script = os.path.join(root, "scripts", "sim_calibrate.py")
        subprocess.run([sys.executable, script, with_rewards, "--no-fit", "--out",
                        os.path.join(out, "inline")], check=True, cwd=root)
        measured = json.load(open(os.path.join(out, "inline", "measured.json")))
        problems = []
        if sorted(map(tuple, measured["base_candidates"])) != sorted(map(tuple, expected)):
            problems.append(f"base candidates: {len(measured['base_candidates'])} prompts, "
                            f"expected the {len(expected)} written into results.json")
        for run in results["runs"]:
            run["iterations"][0].pop("candidate_rewards", None)
        without = os.path.join(out, "without.json")
        json.dump(results, open(without, "w"))
        proc = subprocess.run([sys.executable, script, without, "--no-fit", "--out",
                               os.path.join(out, "without")], cwd=root, capture_output=True,
                              text=True)
        if proc.returncode == 0 or "no base candidate rewards" not in proc.stderr + proc.stdout:
            problems.append("accepted a results.json without per-prompt rewards or --base")
        for p in problems:
            print("FAIL:", p)
        return 1 if problems else 0
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
