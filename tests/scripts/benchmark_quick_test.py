#!/usr/bin/env python3
"""`scripts/benchmark.py --quick` end to end (CTest benchmark_quick_test, label e2e): every mode
this build supports runs once through spotlight-cluster, and the outputs must hold what the
study's reader relies on. Fails on any missing piece; prints the table."""
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
    p.add_argument("--cache", required=True)
    a = p.parse_args()
    out = tempfile.mkdtemp(prefix="spotlight-benchmark-quick-")
    try:
        subprocess.run([sys.executable, os.path.join(root, "scripts", "benchmark.py"), "--quick",
                        "--out", out, "--build", a.build, "--cache", a.cache], check=True)
        results = json.load(open(os.path.join(out, "results.json")))
        problems = []
        ran = set(results["modes"])
        expected = {"none", "none-2", "offload", "sync", "sync-stale", "async"}
        if ran | set(results["skipped_modes"]) != expected:
            problems.append(f"modes run {sorted(ran)} + skipped {results['skipped_modes']} "
                            f"!= {sorted(expected)}")
        for must in ("none", "none-2", "sync", "async"):  # on main since issue #5
            if must not in ran:
                problems.append(f"mode {must} did not run")
        for r in results["runs"]:
            versions = [v["version"] for v in r["validation"]]
            if versions != [0, 1, 2, 3]:
                problems.append(f"{r['run']}: validated versions {versions}, expected 0-3")
            if len(r["iterations"]) != 3:
                problems.append(f"{r['run']}: {len(r['iterations'])} iterations, expected 3")
            if not r["pinning_held"]:
                problems.append(f"{r['run']}: a process ran outside its CPU set")
            elapsed = [i["elapsed_seconds"] for i in r["iterations"]]
            if elapsed != sorted(elapsed) or elapsed[0] <= 0:
                problems.append(f"{r['run']}: elapsed time line not increasing: {elapsed}")
            trainer = [p for p in r["processes"] if p["role"] == "trainer"]
            # none-2 trains data-parallel: one rank per core.
            want = ["0", "1"] if r["mode"] == "none-2" else ["0"]
            if len(trainer) != len(want) or any(p["cpu_seconds"] <= 0 for p in trainer):
                problems.append(f"{r['run']}: trainer CPU seconds missing")
            if [p["cpus_allowed"] for p in trainer] != want[:len(trainer)]:
                problems.append(f"{r['run']}: trainer ranks on CPUs "
                                f"{[p['cpus_allowed'] for p in trainer]}, expected {want}")
            spot = [p for p in r["processes"] if p["role"] != "trainer"]
            if r["mode"] in ("async", "offload") and not any(p["role"] == "explorer" for p in spot):
                problems.append(f"{r['run']}: no explorer")
            if any(p["cpus_allowed"] != "1" for p in spot):
                problems.append(f"{r['run']}: a spot process off the spot core")
        per_mode = results["analysis"]["per_mode"]
        for m in ran:
            if per_mode[m]["seconds_per_iteration"] is None:
                problems.append(f"{m}: no seconds per iteration")
        if "async" in ran and per_mode["async"]["signals"].get("explorer_idle_share_cpu") is None:
            problems.append("async: no explorer idle share")
        ratios = results["analysis"]["ratios"].get("none", {})
        if "async" in ran and "seconds_per_iteration" not in ratios.get("async", {}):
            problems.append("no async/none ratio")
        for f in ("table.md", "curves.png"):
            if not os.path.getsize(os.path.join(out, f)):
                problems.append(f"{f} is empty")
        # Resuming finds every run finished and reruns nothing.
        again = subprocess.run([sys.executable, os.path.join(root, "scripts", "benchmark.py"),
                                "--quick", "--out", out, "--build", a.build, "--cache", a.cache],
                               check=True, capture_output=True, text=True)
        if json.load(open(os.path.join(out, "results.json")))["runs"] != results["runs"]:
            problems.append("a resumed study changed finished runs")
        if problems:
            print("benchmark --quick: FAILED\n  " + "\n  ".join(problems))
            return 1
        print("benchmark --quick: outputs complete for modes " + ", ".join(sorted(ran)))
        return 0
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
