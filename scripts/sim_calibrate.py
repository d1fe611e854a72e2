#!/usr/bin/env python3
"""Fits the cluster simulator's learning model to our own runs (tools/simulator/calibration.hpp).

  scripts/sim-calibrate RESULTS.json [RESULTS.json ...] [--runs DIR ...] [--out DIR]

RESULTS.json: what scripts/benchmark wrote (results.json of a pilot, a mini-study or the study).
From each it takes every run's validation curve and iterations-to-target (the benchmark's own
analysis: metric, smoothing, target), the staleness audits' Kendall tau, and, where a run's
directory still exists, its metrics.jsonl: the per-prompt rewards the trainer records
(group_rewards, candidate_rewards, selected). --runs adds run directories that are not part of a
benchmark (scripts/sim-measure makes them): their iteration-0 candidate rewards describe the
base, and runs that explore with fewer steps than they roll out (N = G, every candidate trained)
give the ranking agreement of partial exploration.

--base MEASURED.json takes the base's candidate rewards and the partial-step taus from an earlier
measured file when the inputs' run directories are gone (a clean clone): the committed one makes
a refit from a new results.json one command:

  scripts/sim-calibrate RESULTS.json --base deploy/sim/calibration/measured.json

A results.json that keeps the per-prompt rewards in its runs' iterations (the fields metrics.jsonl
has: candidate_rewards, group_rewards, selected) needs no run directory: those iterations are read
as the run's metrics. Binary rewards need no option: the fit reads K = 1 off the base's candidate
rewards.

Writes to --out (default deploy/sim/calibration):
  measured.json  what the fit uses, made from the inputs above (configurations = mode x N x S,
                 each with its runs, Kaplan-Meier median iterations-to-target and a bootstrap 95%
                 interval over runs; base candidate rewards; Kendall taus)
  fitted.json    `spotlight-sim fit`'s parameters and how well they reproduce measured.json
  fit.txt        its printout
  contrast/      the same for the contrast law (`spotlight-sim fit --law contrast`: a skill per
                 prompt category, selection's gain a consequence), with --contrast-fit-configs
                 naming the configurations it fits (the rest is held out) and gains.json, the
                 gain check of every configuration
Runs that appear in several inputs (same mode, arm and seed) are counted once.
"""
import argparse
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchmark_stats as st  # noqa: E402

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_jsonl(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def flat_yaml(path):
    """The recipe's keys as dotted names (nested maps only)."""
    import yaml
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    out = {}

    def walk(prefix, node):
        for k, v in node.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict):
                walk(key, v)
            else:
                out[key] = v
    walk("", data)
    return out


def kendall_tau_b(a, b):
    """Kendall tau-b of two equally long lists; None when either is constant."""
    n = len(a)
    concordant = discordant = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da = (a[i] > a[j]) - (a[i] < a[j])
            db = (b[i] > b[j]) - (b[i] < b[j])
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif da == db:
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b))
    if denominator == 0:
        return None
    return (concordant - discordant) / denominator


def run_settings(results, recipe_keys):
    """The exploration arm every run of a results.json shares (recipe + --set overrides)."""
    keys = dict(recipe_keys)
    for o in results["settings"].get("overrides") or []:
        k, _, v = o.partition("=")
        keys[k] = v
    steps = int(keys.get("sampler.steps", 10))
    explore = int(keys.get("exploration.steps", 0)) or steps
    return {
        "prompts": int(keys.get("trainer.prompts_per_iteration", 8)),
        "group_size": int(keys.get("trainer.group_size", 8)),
        "rollout_steps": steps,
        "candidates": int(keys.get("exploration.candidates", 24)),
        "explore_steps": explore,
    }


def km_with_interval(events, resamples=2000):
    median = st.km_median(events)
    seeds = list(range(len(events)))
    _, low, high, _ = st.paired_bootstrap(
        seeds, lambda sample: st.km_median([events[i] for i in sample]), resamples)
    return median, low, high


def finite_or_none(x):
    return None if x == st.INF or (isinstance(x, float) and math.isnan(x)) else x


def tau_group(mode, arm):
    """Seeds per audited group: the rollout group (none) or the explored candidates."""
    return arm["group_size"] if mode in ("none", "none-2", "offload") else arm["candidates"]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", help="benchmark results.json files")
    p.add_argument("--runs", nargs="*", default=[], help="extra run directories (sim-measure)")
    p.add_argument("--out", default=os.path.join(root, "deploy", "sim", "calibration"))
    p.add_argument("--build", default=os.environ.get("SPOTLIGHT_BUILD_DIR",
                                                     os.path.join(root, "build")))
    p.add_argument("--base", help="an earlier measured.json: base candidates and partial-step "
                   "taus when no run directory gives them")
    p.add_argument("--no-fit", action="store_true", help="write measured.json only")
    p.add_argument("--categories", type=int, default=4,
                   help="prompt categories of the contrast law (the embedded task has 4)")
    p.add_argument("--contrast-fit-configs", default=None,
                   help="LABEL,... the contrast law fits (default: all)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)

    configs = {}   # label -> {mode, arm, runs: {seed: run}}
    recipe = None
    base_score = None
    target = None
    audits = {}   # (mode-kind, group, steps) -> [tau]
    base_candidates = {}  # (seed, prompt) -> rewards (the most seeds seen)
    sources = []
    metrics_dirs = []
    inline = {}  # key -> (seed, iterations) of runs whose results.json keeps per-prompt rewards
    for path in a.results:
        results = json.load(open(path))
        sources.append(os.path.relpath(os.path.abspath(path), root))
        settings = results["settings"]
        recipe_path = settings["recipe"]
        if not os.path.isabs(recipe_path):
            recipe_path = os.path.join(root, recipe_path)
        arm = run_settings(results, flat_yaml(recipe_path))
        this = {"prompts": arm["prompts"], "group_size": arm["group_size"],
                "rollout_steps": arm["rollout_steps"], "iterations": settings["iterations"],
                "validate_every": settings["validate_every"], "smooth": settings["smooth"],
                "target": results["target"]}
        if recipe is None:
            recipe = this
        elif any(recipe[k] != this[k] for k in ("prompts", "group_size", "rollout_steps",
                                                   "iterations", "validate_every", "smooth")):
            raise SystemExit(f"sim-calibrate: {path} has another recipe than the first input")
        target = recipe["target"] = results["target"] if target is None else target
        base_score = results["meta"]["base_score"] if base_score is None else base_score
        metric = settings.get("metric", "mean_reward")
        none_curves = {r["seed"]: [[v["version"], v[metric]] for v in r["validation"]]
                       for r in results["runs"] if r["mode"] == "none"}
        for run in results["runs"]:
            mode = run["mode"]
            if mode == "none-2":
                continue  # the same iterations as none (both cores): no information of its own
            if mode == "offload" and none_curves.get(run["seed"]) == \
                    [[v["version"], v[metric]] for v in run["validation"]]:
                # offload trains on none's samples (the same seeds and weights, rolled out on the
                # other core): a curve equal to none's is none's run again, and counting it as a
                # configuration of its own would double none's weight in the fit.
                continue
            exploring = mode not in ("none", "offload")
            label = mode if not exploring else \
                f"{mode} N={arm['candidates']} S={arm['explore_steps']}"
            c = configs.setdefault(label, {"mode": mode,
                                           "candidates": arm["candidates"] if exploring else 0,
                                           "explore_steps": arm["explore_steps"] if exploring
                                           else arm["rollout_steps"],
                                           "runs": {}})
            if run["seed"] in c["runs"]:
                continue
            curve = [[v["version"], v[metric]] for v in run["validation"]]
            c["runs"][run["seed"]] = {"seed": run["seed"], "curve": curve}
            for it in run["iterations"]:
                if it.get("kendall_tau") is not None:
                    kind = "explored" if mode in ("sync", "sync-stale", "async") else "rollout"
                    steps = arm["explore_steps"] if kind == "explored" else arm["rollout_steps"]
                    audits.setdefault((mode, tau_group(mode, arm), steps), []).append(
                        it["kendall_tau"])
            run_dir = run.get("dir")
            if run_dir and not os.path.isabs(run_dir):
                run_dir = os.path.join(root, run_dir)
            if run_dir and os.path.isdir(run_dir):
                metrics_dirs.append((run_dir, arm, mode))
            elif any("candidate_rewards" in it for it in run["iterations"]):
                # The per-prompt rewards kept in results.json itself.
                inline[f"{path}#{run['run']}"] = (run["seed"], run["iterations"])
                metrics_dirs.append((f"{path}#{run['run']}", arm, mode))
    for d in a.runs:
        cfg = flat_yaml(os.path.join(d, "config.yaml"))
        arm = run_settings({"settings": {}}, cfg)
        metrics_dirs.append((d, arm, cfg.get("exploration.mode", "none")))

    # Per-prompt rewards: the base's candidates and partial-step agreement.
    partial = {}  # (steps, rollout_steps, group) -> [tau]
    seen_dirs = set()
    for d, arm, mode in metrics_dirs:
        if d in seen_dirs:
            continue
        seen_dirs.add(d)
        if d in inline:
            seed, lines = inline[d]
        else:
            lines = [m for m in read_jsonl(os.path.join(d, "metrics.jsonl")) if "iteration" in m]
            cfg_path = os.path.join(d, "config.yaml")
            seed = flat_yaml(cfg_path).get("run.seed", d) if os.path.exists(cfg_path) else d
        for m in lines:
            cands = m.get("candidate_rewards")
            if not cands:
                continue
            fresh_full = mode == "sync" and arm["explore_steps"] == arm["rollout_steps"]
            if m["iteration"] == 0 and fresh_full:
                for i, r in enumerate(cands):
                    key = f"{seed}/{i}"
                    if len(r) > len(base_candidates.get(key, [])):
                        base_candidates[key] = r
            if mode == "sync" and arm["explore_steps"] < arm["rollout_steps"]:
                for i, r in enumerate(cands):
                    sel = m["selected"][i]
                    if len(sel) != len(r) or min(sel) < 0:
                        continue  # only groups where every candidate was rolled out
                    explored = [r[j] for j in sel]
                    tau = kendall_tau_b(explored, m["group_rewards"][i])
                    if tau is not None:
                        partial.setdefault((arm["explore_steps"], arm["rollout_steps"],
                                            len(sel)), []).append(tau)

    out_configs = []
    for label, c in sorted(configs.items()):
        runs = []
        events = []
        for seed, r in sorted(c["runs"].items()):
            smooth = recipe["smooth"]
            reached = None
            for i, (version, _) in enumerate(r["curve"]):
                window = [s for _, s in r["curve"][max(0, i - smooth + 1):i + 1]]
                if version > 0 and sum(window) / len(window) >= target:
                    reached = version
                    break
            its = reached if reached is not None else r["curve"][-1][0]
            runs.append({"seed": seed, "iterations": its, "reached": reached is not None,
                         "curve": r["curve"]})
            events.append((its, reached is not None))
        median, low, high = km_with_interval(events)
        out_configs.append({"label": label, "mode": c["mode"], "candidates": c["candidates"],
                            "explore_steps": c["explore_steps"],
                            "km_median": finite_or_none(median),
                            "ci": [finite_or_none(low), finite_or_none(high)], "runs": runs})
    taus = []
    for (mode, group, steps), values in sorted(audits.items()):
        taus.append({"what": "staleness", "mode": mode, "steps": steps,
                     "rollout_steps": recipe["rollout_steps"], "staleness": 1, "group": group,
                     "tau": sum(values) / len(values), "groups": len(values)})
    for (steps, rollout, group), values in sorted(partial.items()):
        taus.append({"what": "steps", "steps": steps, "rollout_steps": rollout, "staleness": 0,
                     "group": group, "tau": sum(values) / len(values), "groups": len(values)})
    sources += [os.path.relpath(os.path.abspath(d), root) for d in a.runs]
    if a.base and not base_candidates:
        earlier = json.load(open(a.base))
        base_candidates = {f"{i:06d}": r for i, r in enumerate(earlier["base_candidates"])}
        if not partial:
            taus += [t for t in earlier["taus"] if t["what"] == "steps"]
        sources.append(f"{os.path.relpath(os.path.abspath(a.base), root)} (base candidates and "
                       "partial-step taus)")
    measured = {
        "about": "Made by scripts/sim-calibrate for spotlight-sim fit; every figure here was "
                 "measured by the runs named in `source`.",
        "source": sources,
        "recipe": recipe,
        "base_score": base_score,
        "base_candidates": [base_candidates[k] for k in sorted(base_candidates)],
        "configs": out_configs,
        "taus": taus,
    }
    if not measured["base_candidates"]:
        raise SystemExit("sim-calibrate: no base candidate rewards: give a sync run's directory "
                         "(its metrics.jsonl) with --runs, results whose run directories exist, "
                         "or --base deploy/sim/calibration/measured.json")
    path = os.path.join(a.out, "measured.json")
    with open(path, "w") as f:
        json.dump(measured, f, indent=1)
    print(f"wrote {path}: {len(out_configs)} configurations, "
          f"{len(measured['base_candidates'])} base prompts, {len(taus)} tau measurements")
    if a.no_fit:
        return
    sim = os.path.join(a.build, "tools", "simulator", "spotlight-sim")
    fitted = os.path.join(a.out, "fitted.json")
    proc = subprocess.run([sim, "fit", "--measured", os.path.relpath(path, root),
                           "--out", os.path.relpath(fitted, root)],
                          cwd=root, capture_output=True, text=True)
    with open(os.path.join(a.out, "fit.txt"), "w") as f:
        f.write(proc.stdout)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(proc.returncode)
    # The contrast law, and its gain check on every configuration (held out: those not fitted).
    cdir = os.path.join(a.out, "contrast")
    os.makedirs(cdir, exist_ok=True)
    cfit = os.path.join(cdir, "fitted.json")
    command = [sim, "fit", "--measured", os.path.relpath(path, root), "--out",
               os.path.relpath(cfit, root), "--law", "contrast", "--categories",
               str(a.categories)]
    if a.contrast_fit_configs:
        command += ["--fit-configs", a.contrast_fit_configs]
    proc = subprocess.run(command, cwd=root, capture_output=True, text=True)
    with open(os.path.join(cdir, "fit.txt"), "w") as f:
        f.write(proc.stdout)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(proc.returncode)


if __name__ == "__main__":
    main()
