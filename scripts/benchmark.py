#!/usr/bin/env python3
"""The three-way benchmark (issue #5): exploration.mode none, sync and async on the embedded task
with the same cores, the same base checkpoint and the same run seeds. Runs are interleaved across
modes (seed 0: none, sync, async; seed 1: ...) so that a disturbance of the machine spreads over
the modes. Reports, in one run directory:

  table.md      time-to-target, cost-to-target, final score per mode (mean over seeds) and the
                ratios against none; every run; the arms the async planner chose and why
  curves.png    validation score against training wall time and against cost, every run
  results.json  everything above, machine-readable

Resources: `--cores` threads in all (default: every core). none/sync: one trainer with all of them
(reserved devices = cores). async: the trainer with cores - explorers threads (reserved) and
`--explorers` explorers with one thread each (spot devices), the planner's bandit choosing how much
to explore. Scoring is in-process everywhere (no reward service). A "device" is a core here; the
cost is device-seconds (busy and idle) x price (cost.reserved_price_per_hour, spot = ratio x it).

Time-to-target is the trainer's training wall time (validation excluded, as metrics.jsonl's
wall_seconds) at the first validation whose GenEval-like score reaches the target; cost-to-target
is the run's accounted cost (cost.jsonl) after that iteration. The target defaults to the mean final
score of the none runs ("what plain Flow-GRPO reaches with the whole budget").
"""
import argparse, datetime, json, os, shutil, socket, statistics, subprocess, sys, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pretrained_base(a, cache):
    """The recipe's base checkpoint: the trainer owns the cache key, reuses the base in `cache` or
    pretrains it there, and prints its path."""
    trainer = os.path.join(a.build, "services", "trainer", "spotlight-trainer")
    done = subprocess.run([trainer, "pretrain", "--config", a.recipe, "--set", f"run.threads={a.cores}",
                           "--set", f"pretrain.cache_dir={cache}"],
                          check=True, stdout=subprocess.PIPE, text=True)
    return done.stdout.strip().splitlines()[-1]


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Runner:
    def __init__(self, a, out, base):
        self.a, self.out, self.base = a, out, base
        self.bin = os.path.join(a.build, "services")

    def common(self, mode, seed, run_dir, run_id):
        s = ["--config", self.a.recipe, "--set", f"run.dir={run_dir}", "--set", f"run.id={run_id}",
             "--set", f"run.seed={seed}", "--set", f"model.base={self.base}",
             "--set", f"exploration.mode={mode}"]
        if self.a.iterations:
            s += ["--set", f"trainer.iterations={self.a.iterations}"]
        for o in self.a.overrides:
            s += ["--set", o]
        return s

    def run(self, mode, seed):
        run_id = f"{mode}-s{seed}"
        run_dir = os.path.join(self.out, run_id)
        logs = os.path.join(run_dir, "logs")
        os.makedirs(logs, exist_ok=True)
        env = dict(os.environ, OMP_WAIT_POLICY="passive")
        common = self.common(mode, seed, run_dir, run_id)
        procs = []

        def start(name, cmd):
            f = open(os.path.join(logs, name + ".log"), "w")
            p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
            procs.append((name, p))
            return p

        cores = self.a.cores
        started = time.time()
        try:
            if mode == "async":
                redis_port, bus_port = free_port(), free_port()
                os.makedirs(os.path.join(run_dir, "redis"), exist_ok=True)
                start("redis", ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                                "--dir", os.path.join(run_dir, "redis"), "--appendonly", "yes",
                                "--save", "", "--protected-mode", "yes"])
                for _ in range(100):
                    if subprocess.run(["redis-cli", "-p", str(redis_port), "ping"],
                                      capture_output=True).returncode == 0:
                        break
                    time.sleep(0.1)
                common += ["--set", f"redis.port={redis_port}",
                           "--set", f"bus.trainer_endpoint=tcp://127.0.0.1:{bus_port}",
                           "--set", "reward.endpoint=", "--set", "planner.policy=bandit"]
                start("planner", [os.path.join(self.bin, "planner", "spotlight-planner")] + common)
                for i in range(self.a.explorers):
                    start(f"explorer-{i + 1}",
                          [os.path.join(self.bin, "explorer", "spotlight-explorer")] + common +
                          ["--set", f"explorer.id=explorer-{i + 1}", "--set", "run.threads=1",
                           "--set", "cost.devices=1"])
                threads = max(1, cores - self.a.explorers)
            else:
                threads = cores
            trainer = start("trainer", [os.path.join(self.bin, "trainer", "spotlight-trainer"),
                                        "train"] + common +
                            ["--set", f"run.threads={threads}", "--set", f"cost.devices={threads}"])
            rc = trainer.wait()
            if rc != 0:
                raise RuntimeError(f"{run_id}: trainer exited with {rc}; see {logs}/trainer.log")
            # Planner and explorers stop by themselves once the trainer is done.
            deadline = time.time() + 20
            for name, p in procs:
                if name == "redis":
                    continue
                try:
                    p.wait(timeout=max(0.1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    pass
        finally:
            for name, p in procs:
                if p.poll() is None:
                    p.terminate()
            for name, p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
        return collect(run_id, mode, seed, run_dir, time.time() - started)


def collect(run_id, mode, seed, run_dir, elapsed):
    metrics = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
    costs = {c["iteration"]: c for c in read_jsonl(os.path.join(run_dir, "cost.jsonl"))}
    summary = json.load(open(os.path.join(run_dir, "summary.json")))
    curve = []
    for m in metrics:
        if "validation" not in m:
            continue
        it = m["iteration"]
        cost = 0.0 if it < 0 else costs.get(it, {}).get("cost")
        curve.append({"iteration": it + 1, "wall_seconds": m.get("wall_seconds", 0.0) if it >= 0 else 0.0,
                      "cost": cost, "score": m["validation"]["geneval_score"]})
    plans = read_jsonl(os.path.join(run_dir, "planner.jsonl"))
    return {"run": run_id, "mode": mode, "seed": seed, "dir": run_dir, "elapsed_seconds": elapsed,
            "curve": curve, "summary": summary,
            "mean_iteration_seconds": summary.get("mean_iteration_seconds"),
            "plans": [{k: p.get(k) for k in ("iteration", "candidates", "steps", "reason",
                                              "budget_seconds", "live_explorers",
                                              "seconds_per_sample_step")} for p in plans]}


def reach(curve, target):
    for point in curve:
        if point["score"] >= target:
            return point
    return None


def mean_sd(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None
    return statistics.mean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def fmt(x, spec=".3f"):
    return "n/a" if x is None else format(x, spec)


def analyse(runs, modes, target_arg):
    finals = {m: [r["curve"][-1]["score"] for r in runs if r["mode"] == m and r["curve"]] for m in modes}
    if target_arg == "auto":
        if not finals.get("none"):
            raise SystemExit("benchmark: --target auto needs mode none; give --target SCORE")
        target = statistics.mean(finals["none"])
    else:
        target = float(target_arg)
    per_mode = {}
    for r in runs:
        hit = reach(r["curve"], target)
        r["time_to_target"] = hit["wall_seconds"] if hit else None
        r["cost_to_target"] = hit["cost"] if hit else None
        r["iteration_to_target"] = hit["iteration"] if hit else None
        r["final_score"] = r["curve"][-1]["score"] if r["curve"] else None
        r["total_cost"] = r["summary"].get("cost", {}).get("total")
        r["train_wall_seconds"] = r["summary"].get("train_wall_seconds")
    for m in modes:
        rs = [r for r in runs if r["mode"] == m]
        reached = [r for r in rs if r["time_to_target"] is not None]
        t, t_sd = mean_sd([r["time_to_target"] for r in reached])
        c, c_sd = mean_sd([r["cost_to_target"] for r in reached])
        f, f_sd = mean_sd([r["final_score"] for r in rs])
        w, _ = mean_sd([r["train_wall_seconds"] for r in rs])
        tc, _ = mean_sd([r["total_cost"] for r in rs])
        per_mode[m] = {"runs": len(rs), "reached": len(reached), "time_to_target": t,
                       "time_to_target_sd": t_sd, "cost_to_target": c, "cost_to_target_sd": c_sd,
                       "final_score": f, "final_score_sd": f_sd, "train_wall_seconds": w,
                       "total_cost": tc}
    ref = per_mode.get("none")
    for m, s in per_mode.items():
        ok = ref and ref["time_to_target"] and s["time_to_target"]
        s["speedup_vs_none"] = ref["time_to_target"] / s["time_to_target"] if ok else None
        okc = ref and ref["cost_to_target"] and s["cost_to_target"]
        s["cost_ratio_vs_none"] = ref["cost_to_target"] / s["cost_to_target"] if okc else None
    return target, per_mode


def plot(runs, modes, target, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("benchmark: python3-matplotlib missing (scripts/bootstrap installs it); no plot",
              file=sys.stderr)
        return False
    colours = {"none": "tab:gray", "sync": "tab:blue", "async": "tab:red"}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in runs:
        xs = [p["wall_seconds"] for p in r["curve"]]
        cs = [p["cost"] for p in r["curve"]]
        ys = [p["score"] for p in r["curve"]]
        label = r["mode"] if r["seed"] == min(x["seed"] for x in runs if x["mode"] == r["mode"]) else None
        axes[0].plot(xs, ys, marker="o", ms=3, color=colours.get(r["mode"]), alpha=0.8, label=label)
        if all(c is not None for c in cs):
            axes[1].plot(cs, ys, marker="o", ms=3, color=colours.get(r["mode"]), alpha=0.8, label=label)
    for ax, xl in ((axes[0], "training wall time (s, validation excluded)"), (axes[1], "cost so far")):
        ax.axhline(target, color="k", ls="--", lw=1, label="target")
        ax.set_xlabel(xl)
        ax.set_ylabel("validation GenEval-like score")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Validation score per run (one line per mode and seed)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def write_table(path, a, runs, modes, target, per_mode, base_score):
    L = []
    L.append(f"# Benchmark: exploration.mode {', '.join(modes)} on the embedded task\n")
    L.append(f"- recipe `{os.path.relpath(a.recipe, root)}`"
             + (f", trainer.iterations={a.iterations}" if a.iterations else "")
             + (f", overrides {' '.join(a.overrides)}" if a.overrides else ""))
    L.append(f"- seeds {a.seeds}; runs interleaved across modes; {a.cores} cores for every run "
             f"(async: trainer {max(1, a.cores - a.explorers)} thread(s) + {a.explorers} explorer(s) x 1 thread)")
    L.append(f"- base score {fmt(base_score)}; target score {target:.3f} "
             f"({'mean final score of none' if a.target == 'auto' else 'given'})")
    L.append(f"- prices: reserved {a.reserved_price} per device-hour, spot {a.spot_ratio} x reserved; "
             "a device is a core")
    L.append("")
    L.append("| mode | reached target | time to target (s) | cost to target | speed-up vs none | cheaper vs none | final score | train wall (s) | total cost |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for m in modes:
        s = per_mode[m]
        L.append(f"| {m} | {s['reached']}/{s['runs']} | {fmt(s['time_to_target'], '.0f')} ± {fmt(s['time_to_target_sd'], '.0f')} "
                 f"| {fmt(s['cost_to_target'], '.4f')} | {fmt(s['speedup_vs_none'], '.2f')}x | {fmt(s['cost_ratio_vs_none'], '.2f')}x "
                 f"| {fmt(s['final_score'])} ± {fmt(s['final_score_sd'])} | {fmt(s['train_wall_seconds'], '.0f')} | {fmt(s['total_cost'], '.4f')} |")
    L.append("")
    L.append("Means over the seeds that reached the target (time, cost) or over all seeds (final score, wall, total cost).")
    L.append("")
    L.append("| run | iterations to target | time to target (s) | cost to target | final score | mean iteration (s) | total cost |")
    L.append("|---|---|---|---|---|---|---|")
    for r in runs:
        L.append(f"| {r['run']} | {fmt(r['iteration_to_target'], 'd') if r['iteration_to_target'] is not None else 'not reached'} "
                 f"| {fmt(r['time_to_target'], '.0f')} | {fmt(r['cost_to_target'], '.4f')} | {fmt(r['final_score'])} "
                 f"| {fmt(r['mean_iteration_seconds'], '.1f')} | {fmt(r['total_cost'], '.4f')} |")
    arms = [r for r in runs if r["plans"]]
    if arms:
        L.append("")
        L.append("## Arms the async planner chose (candidates N x exploration steps S)")
        L.append("")
        for r in arms:
            counts = {}
            for p in r["plans"]:
                key = f"{p['candidates']}x{p['steps']}" if p["candidates"] else "none"
                counts[key] = counts.get(key, 0) + 1
            seq = " ".join(f"{p['candidates']}x{p['steps']}" if p["candidates"] else "0" for p in r["plans"])
            L.append(f"- {r['run']}: {', '.join(f'{k}: {v}' for k, v in sorted(counts.items()))}; per iteration: {seq}")
            reasons = {}
            for p in r["plans"]:
                reasons[p["reason"]] = reasons.get(p["reason"], 0) + 1
            L.append(f"  - reasons: {', '.join(f'{k} ({v})' for k, v in reasons.items())}")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default="none,sync,async")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--iterations", type=int, default=0, help="trainer.iterations (0: the recipe's)")
    p.add_argument("--recipe", default=os.path.join(root, "deploy", "config", "demo.yaml"))
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--explorers", type=int, default=1, help="async: explorers (1 thread each)")
    p.add_argument("--target", default="auto", help="validation score to reach, or auto")
    p.add_argument("--out", default="")
    p.add_argument("--build", default=os.environ.get("SPOTLIGHT_BUILD_DIR", os.path.join(root, "build")))
    p.add_argument("--reuse", default="", help="analyse the runs already in this directory")
    a = p.parse_args(argv)
    a.overrides = []
    while extra:
        if extra[0] == "--set" and len(extra) > 1:
            a.overrides.append(extra[1])
            extra = extra[2:]
        else:
            raise SystemExit(f"benchmark: expected --set key=value after --, got {extra[0]}")
    a.recipe = os.path.abspath(a.recipe)
    if a.explorers >= a.cores and "async" in a.modes:
        print(f"benchmark: note: {a.explorers} explorers on {a.cores} cores leave the trainer 1 thread "
              "(more threads than cores)", file=sys.stderr)
    a.reserved_price, a.spot_ratio = 4.0, 0.27
    for o in a.overrides:
        if o.startswith("cost.reserved_price_per_hour="):
            a.reserved_price = float(o.split("=", 1)[1])
        if o.startswith("cost.spot_price_ratio="):
            a.spot_ratio = float(o.split("=", 1)[1])
    modes = a.modes.split(",")
    seeds = [int(s) for s in a.seeds.split(",")]

    out = a.reuse or a.out or os.path.join(root, "runs", "benchmark-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    cache = os.path.join(root, "runs", "cache")
    os.makedirs(cache, exist_ok=True)
    runs = []
    if a.reuse:
        for seed in seeds:
            for mode in modes:
                d = os.path.join(out, f"{mode}-s{seed}")
                if os.path.exists(os.path.join(d, "summary.json")):
                    runs.append(collect(f"{mode}-s{seed}", mode, seed, d, 0.0))
    else:
        print(f"== the base model (pretrained once per recipe into {cache}) ==", flush=True)
        base = pretrained_base(a, cache)
        runner = Runner(a, out, base)
        for seed in seeds:
            for mode in modes:
                print(f"== {mode}, seed {seed} ({len(runs) + 1}/{len(seeds) * len(modes)}) ==", flush=True)
                r = runner.run(mode, seed)
                print(f"   final score {r['curve'][-1]['score'] if r['curve'] else float('nan'):.3f}, "
                      f"train wall {r['summary'].get('train_wall_seconds', 0):.0f} s, "
                      f"cost {r['summary'].get('cost', {}).get('total', float('nan')):.4f}", flush=True)
                runs.append(r)
    target, per_mode = analyse(runs, modes, a.target)
    base_score = next((r["summary"].get("base_geneval_score") for r in runs), None)
    write_table(os.path.join(out, "table.md"), a, runs, modes, target, per_mode, base_score)
    plotted = plot(runs, modes, target, os.path.join(out, "curves.png"))
    json.dump({"target": target, "modes": per_mode, "runs": runs, "cores": a.cores,
               "explorers": a.explorers, "recipe": a.recipe, "iterations": a.iterations,
               "overrides": a.overrides, "seeds": seeds}, open(os.path.join(out, "results.json"), "w"), indent=1)
    print(open(os.path.join(out, "table.md")).read())
    print(f"== wrote {out}/table.md, results.json" + (", curves.png" if plotted else ""))


if __name__ == "__main__":
    main()
