#!/usr/bin/env python3
"""Short runs of the embedded recipe that the simulator's fit needs beside a benchmark
(scripts/sim-calibrate --runs): nothing here is timed, only rewards are recorded.

  scripts/sim-measure [--out runs/sim-measure] [--base-seeds 100-119] [--partial-seeds 0-3]
                      [--partial-steps 2,4] [--partial-iterations 6]

  base/seed-S     sync, 1 iteration, N = --base-candidates (32) at full steps: the base's
                  per-prompt candidate rewards (8 prompts per seed)
  partial-S<k>/seed-S
                  sync with N = G (every candidate is rolled out and trained) explored with k of
                  the rollout's steps: explored against rolled-out rewards of the same seeds and
                  weights, the ranking agreement of partial exploration

Every run is `spotlight-cluster` with the benchmark's recipe (deploy/config/benchmark.yaml) and
its cached base; validation is cut to the minimum (deferred, one prompt). A run whose directory
holds metrics.jsonl with every iteration is kept when the command runs again.
"""
import argparse
import json
import os
import subprocess

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def seeds(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out += list(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


def finished(run_dir, iterations):
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return False
    with open(path) as f:
        its = {json.loads(line).get("iteration") for line in f if line.strip()}
    return all(k in its for k in range(iterations))


def run(a, run_dir, seed, iterations, sets):
    if finished(run_dir, iterations):
        print(f"== {run_dir}: done before, kept")
        return
    os.makedirs(run_dir, exist_ok=True)
    cmd = [os.path.join(a.build, "tools", "cluster", "spotlight-cluster"),
           "--config", a.recipe, "--base-cache", a.cache,
           "--set", f"run.dir={run_dir}", "--set", f"run.seed={seed}",
           "--set", "exploration.mode=sync", "--set", f"trainer.iterations={iterations}",
           "--set", "validation.defer=true", "--set", "validation.prompts=1",
           "--set", f"validation.every={iterations}", "--set", "audit.every=0"]
    for s in sets:
        cmd += ["--set", s]
    print("== " + " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=root, check=True, stdout=subprocess.DEVNULL)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(root, "runs", "sim-measure"))
    p.add_argument("--recipe", default=os.path.join(root, "deploy", "config", "benchmark.yaml"))
    p.add_argument("--cache", default=os.path.join(root, "runs", "cache"))
    p.add_argument("--build", default=os.environ.get("SPOTLIGHT_BUILD_DIR",
                                                     os.path.join(root, "build")))
    p.add_argument("--base-seeds", default="100-119")
    p.add_argument("--base-candidates", type=int, default=32)
    p.add_argument("--partial-seeds", default="0-3")
    p.add_argument("--partial-steps", default="2,4")
    p.add_argument("--partial-iterations", type=int, default=6)
    p.add_argument("--group-size", type=int, default=4, help="the recipe's trainer.group_size")
    a = p.parse_args()
    for seed in seeds(a.base_seeds):
        run(a, os.path.join(a.out, "base", f"seed-{seed}"), seed, 1,
            [f"exploration.candidates={a.base_candidates}", "exploration.steps=0"])
    for steps in seeds(a.partial_steps):
        for seed in seeds(a.partial_seeds):
            run(a, os.path.join(a.out, f"partial-S{steps}", f"seed-{seed}"), seed,
                a.partial_iterations,
                [f"exploration.candidates={a.group_size}", f"exploration.steps={steps}"])


if __name__ == "__main__":
    main()
