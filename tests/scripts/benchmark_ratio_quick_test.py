#!/usr/bin/env python3
"""`scripts/benchmark.py --quick --ratio 1:2` end to end (CTest benchmark_ratio_quick_test, label
e2e): none and async on the strict recipe, one seed, devices as cgroup CPU slices, every run
stopped by its wall-time budget after its first iteration (trainer.max_seconds). Skipped (exit 77)
where the cgroup cpu controller is not writable. Checks what the ratio study relies on: the
strict reward paid by the trainer and by the reward service (validation reports both kinds),
per-prompt rewards kept, each role in its slice and never above its quota, the primary
comparison in the table, and a resumed study rerunning nothing."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(root, "scripts"))
import benchmark_slices  # noqa: E402

DEVICE_CPU = 0.5


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--cache", required=True)
    a = p.parse_args()
    ok, why = benchmark_slices.check()
    if not ok:
        print(f"benchmark --ratio: skipped: {why}")
        return benchmark_slices.SKIP
    out = tempfile.mkdtemp(prefix="spotlight-benchmark-ratio-")
    cmd = [sys.executable, os.path.join(root, "scripts", "benchmark.py"), "--quick",
           "--ratio", "1:2", "--modes", "none,async", "--primary", "async:none@1:2",
           "--recipe", os.path.join(root, "deploy", "config", "benchmark-strict.yaml"),
           "--budget-seconds", "0.001", "--device-cpu", str(DEVICE_CPU),
           "--candidates-per-spot", "8", "--out", out, "--build", a.build, "--cache", a.cache,
           "--", "--set", "validation.prompts=32", "--set", "trainer.prompts_per_iteration=2"]
    try:
        subprocess.run(cmd, check=True)
        results = json.load(open(os.path.join(out, "results.json")))
        problems = []
        runs = {r["run"]: r for r in results["runs"]}
        if sorted(runs) != ["async-1x2-s0", "none-1x2-s0"]:
            problems.append(f"runs {sorted(runs)}")
        for name, r in runs.items():
            # The budget (not the 3-iteration cap) ended the run, validated, after iteration 0.
            if [v["version"] for v in r["validation"]] != [0, 1] or len(r["iterations"]) != 1:
                problems.append(f"{name}: validated {[v['version'] for v in r['validation']]} "
                                f"after {len(r['iterations'])} iterations, expected [0, 1] after 1")
            for v in r["validation"]:
                if v.get("mean_strict_reward") is None or v.get("mean_partial_reward") is None:
                    problems.append(f"{name}: validation lacks one of the reward kinds")
                elif v["mean_reward"] != v["mean_strict_reward"]:
                    problems.append(f"{name}: mean_reward {v['mean_reward']} is not the strict "
                                    f"reward {v['mean_strict_reward']}")
            groups = [g for i in r["iterations"] for g in i.get("group_rewards") or []]
            if len(groups) != 2 or any(len(g) != 8 for g in groups):
                problems.append(f"{name}: group rewards {groups}, expected 2 prompts x G = 8")
            if any(x not in (0.0, 1.0) for g in groups for x in g):
                problems.append(f"{name}: a trained reward is not 0 or 1: {groups}")
            # Slices: the trainer in `reserved`, each explorer in its own spot slice, none of
            # them above its quota (CPU seconds <= cores x wall + one period's quota).
            slices = r.get("slices") or {}
            if slices.get("reserved", {}).get("cores") != DEVICE_CPU:
                problems.append(f"{name}: reserved slice {slices.get('reserved')}")
            if not slices.get("reserved", {}).get("nr_periods"):
                problems.append(f"{name}: the reserved slice ran nothing (no CFS periods)")
            for proc in r["processes"]:
                cores = proc.get("slice_cores")
                if cores is None:
                    problems.append(f"{name}: {proc['name']} has no slice")
                elif proc["cpu_seconds"] > cores * proc["wall_seconds"] + 0.2:
                    problems.append(f"{name}: {proc['name']} used {proc['cpu_seconds']:.2f} CPU s "
                                    f"in {proc['wall_seconds']:.2f} s, above its {cores} cores")
            explorers = sorted(p["slice"] for p in r["processes"] if p["role"] == "explorer")
            want = ["spot-1", "spot-2"] if r["mode"] == "async" else []
            if explorers != want:
                problems.append(f"{name}: explorers in slices {explorers}, expected {want}")
        if "async-1x2-s0" in runs:
            cands = [c for i in runs["async-1x2-s0"]["iterations"]
                     for c in i.get("candidate_rewards") or []]
            # N = 8 per spot device x 2: the reward service scored them strictly too.
            if not cands or any(len(c) != 16 for c in cands):
                problems.append(f"async: candidate rewards {cands}, expected 16 per prompt")
            if any(x not in (0.0, 1.0) for c in cands for x in c):
                problems.append("async: an explored reward is not 0 or 1 (the reward service "
                                "did not pay the strict reward)")
        if not (results.get("primary") or {}).get("result"):
            problems.append(f"no primary comparison: {results.get('primary')}")
        shares = results["by_ratio"]["1:2"]["per_mode"].get("async", {}).get("cpu_share_by_slice")
        if not shares or shares["reserved"]["slice_cores"] != DEVICE_CPU:
            problems.append(f"async: CPU share by slice {shares}")
        table = open(os.path.join(out, "table.md")).read()
        for must in ("Primary comparison", "Ratio 1:2", "CPU share per device slice"):
            if must not in table:
                problems.append(f"table.md lacks '{must}'")
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        if json.load(open(os.path.join(out, "results.json")))["runs"] != results["runs"]:
            problems.append("a resumed study changed finished runs")
        if problems:
            print("benchmark --quick --ratio: FAILED\n  " + "\n  ".join(problems))
            return 1
        print("benchmark --quick --ratio 1:2: strict reward, slices and outputs complete")
        print(table)
        return 0
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
