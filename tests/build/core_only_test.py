#!/usr/bin/env python3
"""Runs scripts/gpu-check --cpu --no-cuda (a core-only build without yaml-cpp, configured as on a
machine without a CUDA compiler whatever this one has; the GPU tests; every measurement at tiny
sizes) and checks what it built and wrote:

  - gpu-check succeeded and its results say so (mode cpu, every step ok, GPU tests skipped with
    a reason, every measurement present and positive, a trained GRPO iteration timed, the train
    command run, the simulator's t derived);
  - the core-only trainer links no Redis, ZeroMQ, msgpack or Prometheus library;
  - it refuses exploration.mode async and config files, each with an error saying why.
Exit status 0 when all hold; each failed check is printed.
"""
import argparse
import json
import os
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--source", required=True)
parser.add_argument("--build", required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()

failures = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what)
    if not condition:
        failures.append(what)


jobs = os.environ.get("SPOTLIGHT_JOBS", str(os.cpu_count() or 1))
run = subprocess.run([os.path.join(args.source, "scripts", "gpu-check"), "--cpu", "--no-cuda",
                      "--build-dir", args.build, "--out", args.out, "--jobs", jobs], text=True)
check(run.returncode == 0, f"scripts/gpu-check --cpu exits 0 (got {run.returncode})")
results_path = os.path.join(args.out, "results.json")
if not os.path.exists(results_path):
    print(f"no {results_path}: nothing more to check")
    sys.exit(1)
r = json.load(open(results_path))
check(r["mode"] == "cpu" and r["device"]["slug"] == "cpu", "results are a CPU dry run")
check(r["ok"] and not r["problems"], f"no problems reported: {r['problems']}")
check(all(s["status"] == "ok" for s in r["steps"]), "every step ok: " +
      ", ".join(f"{s['name']} {s['status']}" for s in r["steps"]))
cases = r["gpu_tests"]["cases"]
check(len(cases) == 2 and all(c["outcome"] == "skipped" and c["reason"] for c in cases),
      f"both GPU tests ran and skipped with a reason: {cases}")
check(r["matmul"]["tflops_median"] and r["matmul"]["tflops_median"] > 0, "a matmul peak")
for b in r["presets"]:
    check(b["forward"]["tflops"] > 0 and b["sampler"]["seconds_per_sample_step"] > 0,
          f"preset {b['model']['preset']}: forward FLOP/s and sampler time")
q = r.get("qwen_image_like") or {}
check(q.get("model", {}).get("image_tokens") == 4096 and q["model"]["preset_depth"] == 60,
      "the Qwen-Image-like forward: 4096 image tokens, priced at 60 blocks")
q512 = r.get("qwen_image_like_512") or {}
check(q512.get("model", {}).get("image_tokens") == 1024 and q512["model"]["preset_depth"] == 60,
      "the Qwen-Image-like forward at 512x512: 1024 image tokens, priced at 60 blocks")
sim = r.get("simulator", {})
check(sim.get("seconds_per_sample_step", 0) > 0 and sim.get("image_tokens") == 1024,
      f"the simulator's t, at its 1024 image tokens: {sim}")
g = r.get("grpo_iteration") or {}
check(g.get("rollout_seconds", 0) > 0 and g.get("train_seconds", 0) > 0 and
      g.get("optimizer_steps", 0) > 0, f"a GRPO iteration's time split, trained: {g}")
smoke = r.get("train_smoke") or {}
check(smoke.get("iterations") == [0, 1] and smoke.get("checkpoint") and smoke.get("summary"),
      f"train ran two checkpointed iterations: {smoke}")
report = os.path.join(args.out, "deploy", "gpu", "cpu.md")
check(os.path.exists(report) and "CPU dry run" in open(report).read(), "the markdown report")

trainer = os.path.join(args.build, "services", "trainer", "spotlight-trainer")
needed = subprocess.run(["readelf", "-d", trainer], capture_output=True, text=True).stdout
for lib in ["libzmq", "libhiredis", "libmsgpack", "libprometheus", "libyaml-cpp"]:
    check(lib not in needed, f"the core-only trainer does not link {lib}")
cache = open(os.path.join(args.build, "CMakeCache.txt")).read()
check("SPOTLIGHT_CORE_ONLY:BOOL=ON" in cache, "the build is core-only")
check("SPOTLIGHT_CUDA_KERNELS:BOOL=OFF" in cache,
      "the build is configured as without a CUDA compiler (SPOTLIGHT_CUDA_KERNELS=OFF)")

async_run = subprocess.run([trainer, "train", "--set", "exploration.mode=async", "--set",
                            f"run.dir={args.out}/async", "--set", "model.preset=micro"],
                           capture_output=True, text=True)
check(async_run.returncode != 0 and "needs the services build" in async_run.stderr,
      f"exploration.mode async is refused, saying why: {async_run.stderr.strip()[-200:]}")
config_file = os.path.join(args.out, "run.yaml")
with open(config_file, "w") as f:
    f.write("model:\n  preset: micro\n")
file_run = subprocess.run([trainer, "bench", "--config", config_file], capture_output=True,
                          text=True)
check(file_run.returncode != 0 and "no YAML support" in file_run.stderr,
      f"a config file is refused, saying why: {file_run.stderr.strip()[-200:]}")
sys.exit(1 if failures else 0)
