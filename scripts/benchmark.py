#!/usr/bin/env python3
"""The headline benchmark: does Spotlight reach plain Flow-GRPO's validation score sooner and
cheaper? Every mode runs on the same base checkpoint with the same run seeds, interleaved, on
pinned cores (one per role), started by the local-cluster launcher (spotlight-cluster):

  reserved core (--reserved-cpu, default 0): the trainer alone, run.threads=1, in every mode
  spot core     (--spot-cpu, default 1):     explorers, planner, reward service, redis

  none        plain Flow-GRPO, the trainer on the reserved core             billed 1 reserved
  none-2      plain Flow-GRPO on both cores, data-parallel (2 trainer ranks) billed 2 reserved
  offload     the paper's baseline: rollouts of the current weights on the  1 reserved + 1 spot
              spot core, training on the reserved core, each waiting for the other
  sync        exploration on the trainer (reserved core), on the critical path   1 reserved
  sync-stale  as sync, exploring with the previous iteration's weights           1 reserved
  async       Spotlight: trainer on the reserved core, explorers on the spot one 1 reserved + 1 spot

A mode whose exploration.mode this build's trainer does not accept is skipped and listed as such.

Per run: validation is deferred (validation.defer: the trainer saves the weights of every
validation point and `spotlight-trainer validate` scores them after the run, outside the timed
interval, so time and cost both exclude validation); the time line is the trainer's
elapsed_seconds (wall clock from its first iteration, checkpoints and weight publishing included,
validation and staleness audits excluded); cost is that time x the hourly price of every core the
mode holds. Outputs in --out (written after every run, so a partial study is readable, and
resumable: finished runs are kept when the same command runs again):

  table.md      time/cost-to-target (Kaplan-Meier medians, runs that never reach the target kept as
                censored), iterations-to-target, seconds per iteration, bootstrap 95% CIs of every
                ratio against none, none-2 and offload (paired by seed), the mechanism's signals,
                CPU seconds per role, every run
  curves.png    score against iterations and against wall time, mean and 95% band per mode
  results.json  all of it, machine-readable, with every process's CPU seconds and CPU set

  ./scripts/benchmark --pilot                 # `none` with a longer budget: proposes the target
  ./scripts/benchmark --target 0.62           # the study (the recipe's seeds and budget)
  ./scripts/benchmark --quick                 # 1 seed, a few iterations, every mode (CI)

Ablation of async (not in the default --modes): async-keep (no purge of passed iterations),
async-bandit, async-deadline (planner policies on the grid N 4..24 x S 4,8), async-adaptive
(per-prompt allocation), async-reuse (off-policy trajectory reuse), async-all (deadline +
adaptive + reuse); each is async with the --set overrides in ABLATIONS.
"""
import argparse
import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchmark_stats as st  # noqa: E402

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_VERSION = 1

# The modes: one entry each. `exploration` is the trainer's exploration.mode; cpus are "reserved"
# or "spot" roles; `reserved`/`spot` are the cores billed at each price.
MODES = {
    "none": dict(exploration="none", trainer=["reserved"], explorers=0, reserved=1, spot=0,
                 about="plain Flow-GRPO on the reserved core"),
    "none-2": dict(exploration="none", trainer=["reserved", "spot"], explorers=0, reserved=2,
                   spot=0, ranks=2,
                   about="plain Flow-GRPO data-parallel on both cores, both billed as reserved"),
    "offload": dict(exploration="offload", trainer=["reserved"], explorers=1, reserved=1, spot=1,
                    about="rollouts on the spot core, training on the reserved core, in turn"),
    "sync": dict(exploration="sync", trainer=["reserved"], explorers=0, reserved=1, spot=0,
                 about="exploration on the trainer, on the critical path"),
    "sync-stale": dict(exploration="sync-stale", trainer=["reserved"], explorers=0, reserved=1,
                       spot=0, about="as sync, exploring with the previous weights"),
    "async": dict(exploration="async", trainer=["reserved"], explorers=1, reserved=1, spot=1,
                  about="Spotlight: explorers on the spot core with the previous weights"),
}
ALL_MODES = list(MODES)  # the headline study's modes (the default of --modes)
# --- trainer ranks: `ranks` R > 1 runs the trainer data-parallel (spotlight-cluster
# --trainer-ranks R, one rank per core of `trainer`); none-2t is the former none-2, one trainer
# with a thread per core, kept to compare against.
MODES["none-2t"] = dict(MODES["none-2"], ranks=1,
                        about="plain Flow-GRPO on both cores as one trainer with 2 threads")
# --- end trainer ranks

# Ablation variants of async (issue #14): each is async with overrides, so every change can be
# switched on and off against the same seeds. Run them with --modes (e.g. --modes none,async,
# async-deadline,async-adaptive,async-reuse,async-all). `async` itself keeps the recipe's fixed
# policy and allocation; every variant purges the tasks of passed iterations unless it says not to.
ABLATION_GRID = ["planner.candidates=4,8,12,16,24", "planner.steps=4,8"]
ABLATIONS = {
    "async-keep": (["planner.purge_passed=false"],
                   "async without purging the tasks of passed iterations (the old behaviour)"),
    "async-bandit": (["planner.policy=bandit"] + ABLATION_GRID,
                     "async, N and S by the UCB bandit on group variance"),
    "async-deadline": (["planner.policy=deadline"] + ABLATION_GRID,
                       "async, the widest N x S that finishes in time with P >= 0.9"),
    "async-adaptive": (["exploration.allocation=adaptive"],
                       "async, per-prompt Beta allocation within the fixed P x N work"),
    "async-reuse": (["exploration.reuse=off_policy"],
                    "async, training on the explored trajectories (importance ratio)"),
    "async-all": (["planner.policy=deadline", "exploration.allocation=adaptive",
                   "exploration.reuse=off_policy"] + ABLATION_GRID,
                  "async with the deadline rule, adaptive allocation and trajectory reuse"),
}
for _name, (_sets, _about) in ABLATIONS.items():
    MODES[_name] = dict(MODES["async"], set=_sets, about=_about)
REFERENCES = ["none", "none-2", "offload"]


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a torn last line
    return out


def parse_seeds(text):
    seeds = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            seeds += list(range(int(lo), int(hi) + 1))
        elif part:
            seeds.append(int(part))
    return seeds


def load_average():
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return None


class Study:
    def __init__(self, a):
        self.a = a
        self.bin = os.path.join(a.build, "services")
        self.cluster = os.path.join(a.build, "tools", "cluster", "spotlight-cluster")
        self.trainer = os.path.join(self.bin, "trainer", "spotlight-trainer")

    # --- configuration -------------------------------------------------------------------------

    def settings(self):
        """--set overrides every run of the study shares (after the recipe file)."""
        s = [f"trainer.iterations={self.a.iterations}", "validation.defer=true",
             f"validation.every={self.a.validate_every}"] + list(self.a.overrides)
        return s

    def mode_available(self, mode):
        """Whether this build's trainer accepts the mode's exploration.mode (its config check
        runs before the subcommand, so a bogus subcommand costs nothing)."""
        r = subprocess.run([self.trainer, "no-such-subcommand", "--config", self.a.recipe,
                            "--set", f"exploration.mode={MODES[mode]['exploration']}"],
                           capture_output=True, text=True)
        return "exploration.mode" not in r.stderr

    def prioritised(self, cmd):
        """cmd under SCHED_FIFO at --realtime's priority, or as it is without --realtime."""
        return ["chrt", "--fifo", str(self.a.realtime)] + cmd if self.a.realtime else cmd

    def cpus(self, roles):
        return ",".join(str(self.a.reserved_cpu if r == "reserved" else self.a.spot_cpu)
                        for r in roles)

    def ensure_base(self):
        """The base checkpoint: the launcher's cache (pretrained on both cores when missing)."""
        cmd = [self.cluster, "--config", self.a.recipe, "--base-cache", self.a.cache,
               "--base-only", "--bin-dir", self.bin, "--quiet",
               "--set", f"run.dir={os.path.join(self.a.out, 'pretrain')}"]
        for s in self.a.overrides:
            cmd += ["--set", s]
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
        return out.strip().splitlines()[-1]

    # --- one run ----------------------------------------------------------------------------

    def run(self, mode, seed, base):
        m = MODES[mode]
        run_id = f"{mode}-s{seed}"
        run_dir = os.path.join(self.a.out, "runs", run_id)
        if os.path.exists(os.path.join(run_dir, "run.json")):
            return json.load(open(os.path.join(run_dir, "run.json")))
        shutil.rmtree(run_dir, ignore_errors=True)  # an interrupted attempt: start over
        os.makedirs(run_dir)
        cmd = [self.cluster, "--config", self.a.recipe, "--base", base, "--bin-dir", self.bin,
               "--quiet", "--trainer-cpus", self.cpus(m["trainer"]),
               "--trainer-threads", str(len(m["trainer"]) // m.get("ranks", 1)),
               "--trainer-ranks", str(m.get("ranks", 1)),
               "--explorers", str(m["explorers"]), "--explorer-threads", "1",
               "--set", f"run.dir={run_dir}", "--set", f"run.id=bench-{run_id}",
               "--set", f"run.seed={seed}", "--set", f"exploration.mode={m['exploration']}"]
        for setting in m.get("set", []):
            cmd += ["--set", setting]
        if m["explorers"]:
            cmd += ["--spot-cpus", self.cpus(["spot"])]
        for s in self.settings():
            cmd += ["--set", s]
        # SCHED_FIFO (with --realtime), inherited by every process the launcher starts (redis
        # included): on its pinned core each role then runs ahead of any ordinary process, so the
        # timed interval measures the roles, not whatever else the machine is doing.
        cmd = self.prioritised(cmd)
        load_before = load_average()
        started = time.time()
        with open(os.path.join(run_dir, "launcher.log"), "w") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        wall = time.time() - started
        if rc != 0:
            raise RuntimeError(f"{run_id}: the job failed (exit {rc}); see {run_dir}/logs and "
                               f"{run_dir}/launcher.log")
        # Deferred validation: after the run, on every core, outside the timed interval.
        v_started = time.time()
        vcmd = [self.trainer, "validate", "--config", self.a.recipe,
                "--set", f"run.dir={run_dir}", "--set", f"run.threads={self.a.validation_threads}"]
        for s in self.settings():
            vcmd += ["--set", s]
        # Validation too: outside the timed interval, but on a busy machine it would otherwise take
        # 3-5x as long (and it is most of a run's wall time).
        vcmd = self.prioritised(vcmd)
        with open(os.path.join(run_dir, "logs", "validate.log"), "w") as log:
            subprocess.run(vcmd, stdout=log, stderr=subprocess.STDOUT, check=True,
                           env=dict(os.environ, OMP_WAIT_POLICY="passive"))
        validate_seconds = time.time() - v_started
        if not self.a.keep_weights:
            shutil.rmtree(os.path.join(run_dir, "validation"), ignore_errors=True)
            shutil.rmtree(os.path.join(run_dir, "checkpoints"), ignore_errors=True)
        result = collect(run_id, mode, seed, run_dir)
        result.update(launcher_seconds=wall, validate_seconds=validate_seconds,
                      load_average_before=load_before, load_average_after=load_average())
        with open(os.path.join(run_dir, "run.json.tmp"), "w") as f:
            json.dump(result, f, indent=1)
        os.replace(os.path.join(run_dir, "run.json.tmp"), os.path.join(run_dir, "run.json"))
        return result


def planner_record(run_dir):
    """What the planner decided and threw away (async modes): its plans from planner.jsonl
    (bandit, deadline or adaptive runs) and the purged/uniform counts of its summary line."""
    out = {}
    lines = read_jsonl(os.path.join(run_dir, "planner.jsonl"))
    plans = [d for d in lines if "event" not in d]
    explored = {d["iteration"]: d for d in lines if d.get("event") == "explored"}
    if plans:
        out["plans"] = [{k: d.get(k) for k in ("iteration", "candidates", "steps", "reason",
                                                "live_explorers", "budget_seconds",
                                                "predicted_seconds", "finish_probability",
                                                "desired_explorers")}
                        | {"explored_seconds": explored.get(d["iteration"], {}).get("seconds")}
                        for d in plans]
    log = os.path.join(run_dir, "logs", "planner.log")
    if os.path.exists(log):
        import re
        for line in open(log, errors="replace"):
            m = re.search(r"purged (\d+) waiting tasks of passed iterations, (\d+) of prompts "
                          r"explored enough and (\d+) past an iteration's budget, saw (\d+) "
                          r"uniform prompts", line)
            if m:
                out.update(purged_passed=int(m[1]), purged_satisfied=int(m[2]),
                           purged_budget=int(m[3]), uniform_prompts=int(m[4]))
    return out


def collect(run_id, mode, seed, run_dir):
    """One run's raw series: per-iteration metrics, validation scores, processes."""
    metrics = [m for m in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if m["iteration"] >= 0]
    validation = sorted(read_jsonl(os.path.join(run_dir, "validation.jsonl")),
                        key=lambda v: v["version"])
    manifest = json.load(open(os.path.join(run_dir, "cluster.json")))
    summary = json.load(open(os.path.join(run_dir, "summary.json")))
    keys = ("iteration", "elapsed_seconds", "iteration_seconds", "explore_seconds",
            "rollout_seconds", "reward_seconds", "train_seconds", "audit_seconds",
            "zero_std_ratio", "mean_abs_advantage", "group_variance", "selected_variance",
            "reward_mean", "kendall_tau", "fallback_prompts")
    processes = []
    for p in manifest["processes"]:
        wall = max(0.0, (p["ended_unix_ms"] - p["started_unix_ms"]) / 1000.0)
        processes.append({k: p.get(k) for k in ("name", "role", "cpus", "cpus_allowed", "threads",
                                               "exit", "stopped_by", "cpu_user_seconds",
                                               "cpu_system_seconds", "cpu_seconds")}
                         | {"wall_seconds": wall})
    return {
        "planner": planner_record(run_dir),
        "run": run_id, "mode": mode, "seed": seed, "dir": os.path.relpath(run_dir, root),
        "iterations": [{k: m.get(k) for k in keys} for m in metrics],
        "validation": [{"version": v["version"]} | v["validation"] for v in validation],
        "processes": processes,
        "pinning_held": all(p["cpus"] == "" or p["cpus"] == p["cpus_allowed"] for p in processes),
        "cost_ledger": summary.get("cost"),
    }


# --- analysis ----------------------------------------------------------------------------------


def score_series(run, metric, smooth):
    """[(version, score)], version = iterations completed; a trailing mean over `smooth` points."""
    raw = [(v["version"], v[metric]) for v in run["validation"]]
    out = []
    for i, (version, _) in enumerate(raw):
        window = [s for _, s in raw[max(0, i - smooth + 1):i + 1]]
        out.append((version, sum(window) / len(window)))
    return out


def elapsed_at(run, version):
    """The trainer's elapsed seconds after `version` iterations (0 for the base)."""
    if version <= 0:
        return 0.0
    for it in run["iterations"]:
        if it["iteration"] == version - 1:
            return it["elapsed_seconds"]
    return None


def hourly_price(mode, a):
    m = MODES[mode]
    return m["reserved"] * a.reserved_price + m["spot"] * a.reserved_price * a.spot_ratio


def first_reach(run, target, a):
    """(iterations, seconds, reached): the first validation point at or above the target, else
    censored at the last one (the run ended first)."""
    series = score_series(run, a.metric, a.smooth)
    for version, score in series:
        if version > 0 and score >= target:
            return version, elapsed_at(run, version), True
    last = series[-1][0] if series else 0
    return last, elapsed_at(run, last) or 0.0, False


def iteration_seconds(run):
    """Mean seconds per iteration on the time line, the first iteration excluded (start-up)."""
    its = run["iterations"]
    if len(its) < 2:
        return its[0]["elapsed_seconds"] if its else None
    return (its[-1]["elapsed_seconds"] - its[0]["elapsed_seconds"]) / (len(its) - 1)


def signals(run):
    its = run["iterations"]
    if not its:
        return {}
    total = sum(i["iteration_seconds"] for i in its)
    taus = [i["kendall_tau"] for i in its if i.get("kendall_tau") is not None]
    out = {
        "zero_std_share": st.mean([i["zero_std_ratio"] for i in its]),
        "mean_abs_advantage": st.mean([i.get("mean_abs_advantage") for i in its]),
        "trained_group_variance": st.mean([i["group_variance"] for i in its]),
        "selected_variance": st.mean([i["selected_variance"] for i in its]),
        "kendall_tau": st.mean(taus),
        "trainer_wait_share": sum(i["explore_seconds"] for i in its) / total if total else None,
        "audit_share": sum(i.get("audit_seconds") or 0 for i in its) / total if total else None,
        "fallback_prompts": sum(i.get("fallback_prompts") or 0 for i in its),
    }
    planner = run.get("planner") or {}
    plans = planner.get("plans") or []
    if plans:
        def plan_mean(key):
            return st.mean([p.get(key) for p in plans])
        out.update(planned_candidates=plan_mean("candidates"), planned_steps=plan_mean("steps"),
                   predicted_seconds=plan_mean("predicted_seconds"),
                   explored_seconds=plan_mean("explored_seconds"),
                   desired_explorers=plan_mean("desired_explorers"))
    if "purged_passed" in planner:
        out["purged_tasks"] = (planner["purged_passed"] + planner["purged_satisfied"]
                               + planner["purged_budget"])
        out["uniform_prompts"] = planner["uniform_prompts"]
    explorers = [p for p in run["processes"] if p["role"] == "explorer"]
    if explorers:
        busy = sum(p["cpu_seconds"] for p in explorers)
        held = sum(p["wall_seconds"] for p in explorers)
        out["explorer_idle_share_cpu"] = 1 - busy / held if held else None
        ledger = run.get("cost_ledger") or {}
        b, i = ledger.get("spot_busy_device_seconds"), ledger.get("spot_idle_device_seconds")
        out["explorer_idle_share_ledger"] = i / (b + i) if b is not None and i and b + i else None
    return out


def analyse(runs, modes, a, target):
    seeds_by_mode = {m: sorted(r["seed"] for r in runs if r["mode"] == m) for m in modes}
    common = sorted(set.intersection(*[set(s) for s in seeds_by_mode.values()])) if modes else []
    by = {(r["mode"], r["seed"]): r for r in runs}
    for r in runs:
        its, secs, reached = first_reach(r, target, a)
        r["to_target"] = {"iterations": its, "seconds": secs, "reached": reached,
                          "cost": secs * hourly_price(r["mode"], a) / 3600.0}
        r["seconds_per_iteration"] = iteration_seconds(r)
        r["signals"] = signals(r)
        series = score_series(r, a.metric, 1)
        r["base_score"] = series[0][1] if series and series[0][0] == 0 else None
        r["final_score"] = series[-1][1] if series else None

    def events(mode, seeds, key):
        return [(by[(mode, s)]["to_target"][key], by[(mode, s)]["to_target"]["reached"])
                for s in seeds]

    per_mode = {}
    for m in modes:
        rs = [by[(m, s)] for s in seeds_by_mode[m]]
        seeds = seeds_by_mode[m]
        ev_it = events(m, seeds, "iterations")
        per_mode[m] = {
            "runs": len(rs),
            "reached": sum(r["to_target"]["reached"] for r in rs),
            "iterations_to_target_km_median": st.km_median(ev_it),
            "reached_share_km": st.km_reached_share(ev_it),
            "seconds_to_target_km_median": st.km_median(events(m, seeds, "seconds")),
            "cost_to_target_km_median": st.km_median(events(m, seeds, "cost")),
            "iterations_to_target_rmst": st.rmst(ev_it, a.iterations),
            "seconds_per_iteration": st.mean([r["seconds_per_iteration"] for r in rs]),
            "seconds_per_iteration_se": st.std_error([r["seconds_per_iteration"] for r in rs]),
            "final_score": st.mean([r["final_score"] for r in rs]),
            "final_score_se": st.std_error([r["final_score"] for r in rs]),
            "hourly_price": hourly_price(m, a),
            "signals": {k: st.mean([r["signals"].get(k) for r in rs])
                        for k in sorted({k for r in rs for k in r["signals"]})},
            "cpu_seconds_by_role": {},
            "pinning_held": all(r["pinning_held"] for r in rs),
        }
        for role in sorted({p["role"] for r in rs for p in r["processes"]}):
            per_mode[m]["cpu_seconds_by_role"][role] = st.mean(
                [sum(p["cpu_seconds"] for p in r["processes"] if p["role"] == role) for r in rs])
    # Ratios against the references, paired by seed (seeds every compared mode ran).
    ratios = {}
    stats = {
        "time_to_target": lambda m, s: st.km_median(events(m, s, "seconds")),
        "cost_to_target": lambda m, s: st.km_median(events(m, s, "cost")),
        "iterations_to_target": lambda m, s: st.km_median(events(m, s, "iterations")),
        "seconds_per_iteration": lambda m, s: st.mean([by[(m, x)]["seconds_per_iteration"]
                                                       for x in s]),
    }
    for ref in [r for r in REFERENCES if r in modes]:
        for m in modes:
            if m == ref:
                continue
            seeds = sorted(set(seeds_by_mode[ref]) & set(seeds_by_mode[m]))
            if not seeds:
                continue
            for name, f in stats.items():
                point, lo, hi, undefined = st.paired_bootstrap(
                    seeds, lambda s, f=f, m=m, ref=ref: st.ratio(f(ref, s), f(m, s)),
                    resamples=a.bootstrap)
                ratios.setdefault(ref, {}).setdefault(m, {})[name] = {
                    "ratio": point, "ci_low": lo, "ci_high": hi, "undefined_share": undefined,
                    "seeds": len(seeds)}
    return {"per_mode": per_mode, "ratios": ratios, "common_seeds": common}


def propose_target(runs, a):
    """The pilot's target: the lowest score whose Kaplan-Meier median iterations-to-target over
    the `none` runs is at least 70% of the budget, so that none reaches it at about that point
    (first passages of a noisy rising curve come earlier than the mean curve's crossing, so the
    mean score at 70% would be reached sooner). Scores are smoothed as the study scores them."""
    at = max(1, round(0.7 * a.iterations))
    candidates = sorted({s for r in runs for v, s in score_series(r, a.metric, a.smooth) if v > 0})
    for target in candidates:
        events = []
        for r in runs:
            its, _, reached = first_reach(r, target, a)
            events.append((its, reached))
        if st.km_median(events) >= at:
            return target, at
    return (candidates[-1] if candidates else None), at


# --- reports -----------------------------------------------------------------------------------


def fmt(x, spec=".3f"):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if x == st.INF:
        return "not reached"
    return format(x, spec)


def fmt_ratio(r):
    if not r:
        return "n/a"
    def one(x):
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return "n/a"
        return "∞" if x == st.INF else f"{x:.2f}"
    return f"{one(r['ratio'])}x [{one(r['ci_low'])}, {one(r['ci_high'])}]"


def write_table(path, a, runs, modes, skipped, target, analysis, meta):
    pm, ratios = analysis["per_mode"], analysis["ratios"]
    L = [f"# Benchmark: {', '.join(modes)} on the embedded task\n"]
    L.append(f"- recipe `{os.path.relpath(a.recipe, root)}`, {a.iterations} iterations per run, "
             f"validation every {a.validate_every} (deferred: outside the timed interval)"
             + (f"; overrides `{' '.join(a.overrides)}`" if a.overrides else ""))
    L.append(f"- score: validation {meta['metric_about']}; standard error of one validation "
             f"{fmt(meta.get('validation_se'), '.4f')} over {meta.get('validation_samples')} "
             f"prompt x seed pairs (fixed pairs: the same at every validation)"
             + (f", trailing mean of {a.smooth} validations" if a.smooth > 1 else ""))
    L.append(f"- base score {fmt(meta.get('base_score'))}; target {fmt(target)} ({meta['target_about']})")
    L.append(f"- seeds {','.join(map(str, a.seeds))}, runs interleaved (seed-major, the mode order "
             f"rotating per seed); reserved core {a.reserved_cpu}, spot core {a.spot_cpu}; "
             f"prices: reserved {a.reserved_price}/core-hour, spot {a.spot_ratio} x reserved")
    L.append(f"- 1-minute load average when each run started: {fmt(meta.get('load_min'), '.1f')} to "
             f"{fmt(meta.get('load_max'), '.1f')} on {meta.get('cpus')} CPUs"
             + (f"; every role ran at real-time priority (SCHED_FIFO {a.realtime}) on its pinned "
                "core, so other work on the machine got only what the roles left idle"
                if a.realtime else " (wall times need it below ~0.5 to mean anything)"))
    if skipped:
        L.append(f"- not run (this build's trainer does not accept their exploration.mode): "
                 f"{', '.join(skipped)}")
    L.append("")
    L.append("## Time and cost to the target\n")
    L.append("Kaplan-Meier medians over seeds (a run that never reached the target is censored at "
             "its end, not dropped); ratios are reference / mode (> 1: the mode is faster or "
             "cheaper), paired-by-seed bootstrap 95% CI.\n")
    L.append("| mode | reached | time to target (s) | cost to target | iterations to target "
             "| s / iteration | final score |")
    L.append("|---|---|---|---|---|---|---|")
    for m in modes:
        s = pm[m]
        L.append(f"| {m} | {s['reached']}/{s['runs']} | {fmt(s['seconds_to_target_km_median'], '.1f')} "
                 f"| {fmt(s['cost_to_target_km_median'], '.5f')} "
                 f"| {fmt(s['iterations_to_target_km_median'], 'd') if isinstance(s['iterations_to_target_km_median'], int) else fmt(s['iterations_to_target_km_median'], '.0f')} "
                 f"| {fmt(s['seconds_per_iteration'], '.2f')} ± {fmt(s['seconds_per_iteration_se'], '.2f')} "
                 f"| {fmt(s['final_score'])} ± {fmt(s['final_score_se'])} |")
    for ref, by_mode in ratios.items():
        L.append(f"\n### Against {ref}\n")
        L.append("| mode | time-to-target speed-up | cost-to-target saving | iterations-to-target "
                 "| seconds-per-iteration |")
        L.append("|---|---|---|---|---|")
        for m in modes:
            if m not in by_mode:
                continue
            r = by_mode[m]
            L.append(f"| {m} | {fmt_ratio(r['time_to_target'])} | {fmt_ratio(r['cost_to_target'])} "
                     f"| {fmt_ratio(r['iterations_to_target'])} | {fmt_ratio(r['seconds_per_iteration'])} |")
    L.append("\nTime-to-target ≈ iterations-to-target x seconds-per-iteration: the two right "
             "columns say which of them a speed-up comes from.\n")
    L.append("## The mechanism, per mode\n")
    L.append("Means over runs of per-iteration values. Wait share: the trainer's time waiting for "
             "explored seeds (async) or exploring on the critical path (sync modes), of its "
             "iteration time. Explorer idle: 1 - explorer CPU seconds / its wall time (and from "
             "the cost ledger: idle / held device-seconds).\n")
    L.append("| mode | zero-variance groups | mean \\|A\\| | trained group variance | selected "
             "variance | Kendall tau | trainer wait share | audit share | explorer idle (CPU / ledger) |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for m in modes:
        g = pm[m]["signals"]
        L.append(f"| {m} | {fmt(g.get('zero_std_share'), '.2f')} | {fmt(g.get('mean_abs_advantage'))} "
                 f"| {fmt(g.get('trained_group_variance'), '.4f')} | {fmt(g.get('selected_variance'), '.4f')} "
                 f"| {fmt(g.get('kendall_tau'), '.2f')} | {fmt(g.get('trainer_wait_share'), '.2f')} "
                 f"| {fmt(g.get('audit_share'), '.3f')} "
                 f"| {fmt(g.get('explorer_idle_share_cpu'), '.2f')} / {fmt(g.get('explorer_idle_share_ledger'), '.2f')} |")
    planned = [m for m in modes if pm[m]["signals"].get("planned_candidates") is not None
               or pm[m]["signals"].get("purged_tasks") is not None]
    if planned:
        L.append("\n## The planner, per mode (async modes)\n")
        L.append("Means over runs. Planned N: candidates per prompt of its plans (planner.jsonl); "
                 "predicted and measured exploration seconds per iteration; purged: seed tasks "
                 "removed unrun per run (passed iterations, prompts explored enough, budget "
                 "spent); uniform: prompts whose explored rewards were all alike.\n")
        L.append("| mode | planned N | planned S | predicted s | explored s | desired explorers "
                 "| purged | uniform prompts |")
        L.append("|---|---|---|---|---|---|---|---|")
        for m in planned:
            g = pm[m]["signals"]
            L.append(f"| {m} | {fmt(g.get('planned_candidates'), '.1f')} "
                     f"| {fmt(g.get('planned_steps'), '.1f')} | {fmt(g.get('predicted_seconds'), '.2f')} "
                     f"| {fmt(g.get('explored_seconds'), '.2f')} | {fmt(g.get('desired_explorers'), '.1f')} "
                     f"| {fmt(g.get('purged_tasks'), '.0f')} | {fmt(g.get('uniform_prompts'), '.1f')} |")
    L.append("\n## Where the CPU went (mean CPU seconds per run, from /proc via the launcher)\n")
    roles = sorted({role for m in modes for role in pm[m]["cpu_seconds_by_role"]})
    L.append("| mode | pinning held | " + " | ".join(roles) + " |")
    L.append("|---|---|" + "---|" * len(roles))
    for m in modes:
        c = pm[m]["cpu_seconds_by_role"]
        L.append(f"| {m} | {'yes' if pm[m]['pinning_held'] else 'NO'} | "
                 + " | ".join(fmt(c.get(r), '.1f') for r in roles) + " |")
    L.append("\n## Every run\n")
    L.append("| run | iterations to target | seconds to target | cost to target | s / iteration "
             "| base | final | launcher wall (s) | validation (s) |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        t = r["to_target"]
        L.append(f"| {r['run']} | {t['iterations'] if t['reached'] else '> ' + str(t['iterations'])} "
                 f"| {fmt(t['seconds'], '.1f')}{'' if t['reached'] else ' (censored)'} | {fmt(t['cost'], '.5f')} "
                 f"| {fmt(r['seconds_per_iteration'], '.2f')} | {fmt(r['base_score'])} | {fmt(r['final_score'])} "
                 f"| {fmt(r.get('launcher_seconds'), '.0f')} | {fmt(r.get('validate_seconds'), '.0f')} |")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(L) + "\n")
    os.replace(path + ".tmp", path)


COLOURS = {"none": "tab:gray", "none-2": "black", "offload": "tab:purple", "sync": "tab:blue",
           "sync-stale": "tab:cyan", "async": "tab:red"}


def band(curves, grid):
    """Mean and 95% normal band over runs of piecewise-linear curves sampled on `grid`; a run
    contributes only inside its own range."""
    means, lows, highs, xs = [], [], [], []
    for x in grid:
        ys = []
        for c in curves:
            if not c or x < c[0][0] or x > c[-1][0]:
                continue
            for (x0, y0), (x1, y1) in zip(c, c[1:]):
                if x0 <= x <= x1:
                    ys.append(y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0))
                    break
            else:
                ys.append(c[-1][1])
        if not ys:
            continue
        m = sum(ys) / len(ys)
        se = st.std_error(ys) or 0.0
        xs.append(x)
        means.append(m)
        lows.append(m - 1.96 * se)
        highs.append(m + 1.96 * se)
    return xs, means, lows, highs


def plot(path, runs, modes, target, a):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("benchmark: python3-matplotlib missing (scripts/bootstrap installs it); no plot",
              file=sys.stderr)
        return False
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    for m in modes:
        rs = [r for r in runs if r["mode"] == m]
        by_it = [score_series(r, a.metric, 1) for r in rs]
        by_time = [[(elapsed_at(r, v), s) for v, s in score_series(r, a.metric, 1)] for r in rs]
        xs, mu, lo, hi = band(by_it, list(range(0, a.iterations + 1)))
        axes[0].plot(xs, mu, color=COLOURS.get(m), label=f"{m} ({len(rs)} runs)")
        axes[0].fill_between(xs, lo, hi, color=COLOURS.get(m), alpha=0.15)
        # Over time the runs end at different points: the mean and band cover the span every run
        # has, each run is also drawn thin to its own end.
        for c in by_time:
            axes[1].plot([x for x, _ in c], [y for _, y in c], color=COLOURS.get(m), lw=0.5,
                         alpha=0.4)
        t_common = min((c[-1][0] for c in by_time if c), default=0)
        grid = [t_common * i / 100 for i in range(101)]
        xs, mu, lo, hi = band(by_time, grid)
        axes[1].plot(xs, mu, color=COLOURS.get(m), label=m)
        axes[1].fill_between(xs, lo, hi, color=COLOURS.get(m), alpha=0.15)
    for ax, xl in ((axes[0], "iterations"),
                   (axes[1], "trainer wall time (s; validation and audits excluded)")):
        ax.axhline(target, color="k", ls="--", lw=1,
                   label="target" + (f" (on a trailing mean of {a.smooth})" if a.smooth > 1 else ""))
        ax.set_xlabel(xl)
        ax.set_ylabel(f"validation {a.metric.replace('_', ' ')}")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Validation score: mean over seeds with a 95% band (normal, over runs); right: "
                 "thin lines are single runs")
    fig.tight_layout()
    fig.savefig(path + ".tmp.png", dpi=110)
    os.replace(path + ".tmp.png", path)
    plt.close(fig)
    return True


METRICS = {"mean_reward": "mean partial-credit reward (the RL reward, continuous)",
           "geneval_score": "GenEval-like strict accuracy (binary per image)"}


def report(a, runs, modes, skipped, target, target_about, extra=None):
    # Keep the interleaved order; only modes with runs.
    modes = [m for m in modes if any(r["mode"] == m for r in runs)]
    loads = [r["load_average_before"][0] for r in runs if r.get("load_average_before")]
    meta = {"metric_about": METRICS[a.metric], "target_about": target_about,
            "load_min": min(loads, default=None), "load_max": max(loads, default=None),
            "cpus": os.cpu_count()}
    vals = [v for r in runs for v in r["validation"]]
    if vals:
        se_key = "mean_reward_std_error" if a.metric == "mean_reward" else "geneval_std_error"
        meta["validation_se"] = st.mean([v.get(se_key) for v in vals])
        meta["validation_samples"] = vals[0].get("samples")
    bases = [v[a.metric] for r in runs for v in r["validation"] if v["version"] == 0]
    meta["base_score"] = st.mean(bases)
    analysis = analyse(runs, modes, a, target) if runs else {"per_mode": {}, "ratios": {}}
    write_table(os.path.join(a.out, "table.md"), a, runs, modes, skipped, target, analysis, meta)
    plotted = plot(os.path.join(a.out, "curves.png"), runs, modes, target, a) if runs else False
    out = {"version": RESULTS_VERSION, "target": target, "meta": meta, "modes": modes,
           "skipped_modes": skipped, "settings": vars_of(a), "analysis": analysis, "runs": runs}
    if extra:
        out.update(extra)
    with open(os.path.join(a.out, "results.json.tmp"), "w") as f:
        json.dump(out, f, indent=1, default=lambda x: None)
    os.replace(os.path.join(a.out, "results.json.tmp"), os.path.join(a.out, "results.json"))
    return plotted


def vars_of(a):
    """The settings, with paths inside the checkout relative to it (results travel)."""
    out = dict(vars(a))
    for k in ("recipe", "out", "cache", "build"):
        if isinstance(out.get(k), str) and out[k].startswith(root + os.sep):
            out[k] = os.path.relpath(out[k], root)
    return out


# What the runs depend on: a resumed study must agree (metric, smoothing and target are analysis).
STUDY_KEYS = ("recipe", "iterations", "validate_every", "overrides", "reserved_cpu", "spot_cpu",
              "realtime")


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default=",".join(ALL_MODES))
    p.add_argument("--seeds", default="0-9", help="run seeds, e.g. 0-9 or 0,3,5")
    p.add_argument("--iterations", type=int, default=0, help="budget per run (0: the recipe's)")
    p.add_argument("--target", default="auto",
                   help="score to reach, or auto: the lowest score none's median run reaches at "
                        "70%% of the budget or later")
    p.add_argument("--metric", default="mean_reward", choices=sorted(METRICS))
    p.add_argument("--smooth", type=int, default=2,
                   help="first reach on a trailing mean of this many validations (2: one noisy "
                        "validation alone does not count as reaching the target)")
    p.add_argument("--validate-every", type=int, default=2)
    p.add_argument("--recipe", default=os.path.join(root, "deploy", "config", "benchmark.yaml"))
    p.add_argument("--reserved-cpu", type=int, default=0)
    p.add_argument("--spot-cpu", type=int, default=1)
    p.add_argument("--validation-threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--reserved-price", type=float, default=4.0, help="per core-hour")
    p.add_argument("--spot-ratio", type=float, default=0.27)
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--out", default="")
    p.add_argument("--cache", default=os.path.join(root, "runs", "cache"))
    p.add_argument("--build", default=os.environ.get("SPOTLIGHT_BUILD_DIR",
                                                     os.path.join(root, "build")))
    p.add_argument("--realtime", type=int, default=0, metavar="PRIORITY",
                   help="run every role under SCHED_FIFO at this priority (1-99; needs root or "
                        "CAP_SYS_NICE), so a busy machine does not disturb the timed interval; "
                        "validation runs at that priority too, outside the timed interval")
    p.add_argument("--keep-weights", action="store_true",
                   help="keep each run's validation weights and checkpoints")
    p.add_argument("--analyse-only", action="store_true",
                   help="only re-analyse the finished runs in --out")
    p.add_argument("--pilot", action="store_true",
                   help="mode none only; proposes the target (score at 70%% of the budget)")
    p.add_argument("--quick", action="store_true",
                   help="1 seed, 3 iterations validated each, 64 validation pairs, a 150-step "
                        "base, every mode: checks the pipeline, not the claim")
    a = p.parse_args(argv)
    a.overrides = []
    while extra:
        if extra[0] == "--set" and len(extra) > 1:
            a.overrides.append(extra[1])
            extra = extra[2:]
        else:
            raise SystemExit(f"benchmark: expected --set key=value after --, got {extra[0]}")
    if a.quick:
        a.seeds = "0"
        a.iterations = a.iterations or 3
        a.validate_every = 1
        # A short pretraining (its own cached base) and small validations: the pipeline, fast.
        a.overrides = ["pretrain.steps=150", "validation.prompts=64", "audit.every=2"] + a.overrides
        a.bootstrap = min(a.bootstrap, 200)
    if a.pilot:
        a.modes = "none"
    a.recipe = os.path.abspath(a.recipe)
    if not a.iterations:
        a.iterations = recipe_iterations(a.recipe)
    a.seeds = parse_seeds(a.seeds)
    modes = a.modes.split(",")
    for m in modes:
        if m not in MODES:
            raise SystemExit(f"benchmark: unknown mode {m} (known: {', '.join(MODES)})")
    kind = "pilot" if a.pilot else "quick" if a.quick else "study"
    a.out = os.path.abspath(a.out or os.path.join(
        root, "runs", f"benchmark-{kind}-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
    os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
    study_path = os.path.join(a.out, "study.json")
    study = {k: getattr(a, k) for k in STUDY_KEYS}
    if os.path.exists(study_path):
        before = json.load(open(study_path))
        diff = [k for k in STUDY_KEYS if before.get(k) != study[k]]
        if diff:
            raise SystemExit(f"benchmark: {a.out} holds a study with other settings ({', '.join(diff)}); "
                             "use another --out")
    with open(study_path, "w") as f:
        json.dump(study, f, indent=1)

    s = Study(a)
    skipped = [] if a.analyse_only else [m for m in modes if not s.mode_available(m)]
    modes = [m for m in modes if m not in skipped]
    for m in skipped:
        print(f"== {m}: skipped, this trainer does not accept exploration.mode="
              f"{MODES[m]['exploration']} ==", flush=True)
    runs = []
    target, target_about = None, ""

    def current_target():
        if a.target != "auto":
            return float(a.target), "given"
        nones = [r for r in runs if r["mode"] == "none"]
        t, at = propose_target(nones, a) if nones else (None, None)
        return t, (f"auto: the lowest score that none's Kaplan-Meier median reaches at iteration "
                   f">= {at} of {a.iterations} (70%)")

    if a.analyse_only:
        for seed in a.seeds:
            for mode in modes:
                f = os.path.join(a.out, "runs", f"{mode}-s{seed}", "run.json")
                if os.path.exists(f):
                    runs.append(json.load(open(f)))
    else:
        base = s.ensure_base()
        print(f"== base checkpoint {base} ==", flush=True)
        total = len(a.seeds) * len(modes)
        for k, seed in enumerate(a.seeds):
            order = modes[k % len(modes):] + modes[:k % len(modes)]  # rotate per seed
            for mode in order:
                print(f"== {mode}, seed {seed} ({len(runs) + 1}/{total}) ==", flush=True)
                r = s.run(mode, seed, base)
                runs.append(r)
                last = r["validation"][-1] if r["validation"] else {}
                print(f"   {len(r['iterations'])} iterations, {fmt(r['iterations'][-1]['elapsed_seconds'] if r['iterations'] else None, '.1f')} s "
                      f"on the time line, final {a.metric} {fmt(last.get(a.metric))}", flush=True)
                target, target_about = current_target()
                if target is not None:
                    report(a, runs, modes, skipped, target, target_about)
    target, target_about = current_target()
    if target is None:
        raise SystemExit("benchmark: --target auto needs finished none runs")
    extra = None
    if a.pilot:
        extra = {"pilot": {"proposed_target": target, "at_iteration": round(0.7 * a.iterations),
                           "metric": a.metric, "smooth": a.smooth}}
    plotted = report(a, runs, modes, skipped, target, target_about, extra)
    print(open(os.path.join(a.out, "table.md")).read())
    print(f"== wrote {a.out}/table.md, results.json" + (", curves.png" if plotted else ""))


def recipe_iterations(recipe):
    """trainer.iterations of the recipe file (a plain two-level YAML map)."""
    section = None
    for line in open(recipe):
        if line[:1].isalpha():
            section = line.split(":")[0]
        elif section == "trainer" and line.strip().startswith("iterations:"):
            return int(line.split(":", 1)[1].split("#")[0])
    return 30  # the schema's default


if __name__ == "__main__":
    main()
