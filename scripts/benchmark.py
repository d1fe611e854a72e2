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

Device ratios (--ratio 1:1,1:2,1:4): instead of pinned cores, one reserved device and k spot
devices as equal CPU slices (cgroup cpu quota, scripts/benchmark_slices.py), every mode at every
ratio, the same wall-time budget per run (--budget-seconds), exploration width N = 16 k; modes
none, none-matched (async's spot budget spent on a wider reserved slice), offload, sync, async
and async-bandit; the primary comparison (--primary, default async:none@1:4) is shown first:

  ./scripts/benchmark --ratio 1:1,1:2,1:4 --recipe deploy/config/benchmark-strict.yaml \
      --budget-seconds 150 --validate-every 4 --target 0.40 --out runs/strict-ratios

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
import benchmark_slices as sl  # noqa: E402
import benchmark_stats as st  # noqa: E402

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_VERSION = 2  # 2: device ratios (--ratio), per-prompt rewards, time budget

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
    # With --ratio only: async's spot budget (k x the spot price) spent on reserved capacity.
    # Until the trainer trains data-parallel over ranks, that is one trainer whose device slice is
    # 1 + spot_ratio x k devices wide (a faster reserved device at the same price as async's
    # fleet), not data parallelism.
    "none-matched": dict(exploration="none", trainer=["reserved"], explorers=0, reserved=1,
                         spot=0, matched=True,
                         about="plain Flow-GRPO on reserved capacity bought with async's spot "
                               "budget (one trainer on a 1 + 0.27 k device slice)"),
}
ALL_MODES = [m for m in MODES if m != "none-matched"]  # the pinned study's modes (default)
# --- trainer ranks: `ranks` R > 1 runs the trainer data-parallel (spotlight-cluster
# --trainer-ranks R, one rank per core of `trainer`); none-2t is the former none-2, one trainer
# with a thread per core, kept to compare against.
MODES["none-2t"] = dict(MODES["none-2"], ranks=1,
                        about="plain Flow-GRPO on both cores as one trainer with 2 threads")
# --- end trainer ranks
# The ratio study (--ratio): plain GRPO, its cost-matched twin, the paper's offload baseline,
# exploration on the critical path, Spotlight, and the ablation's best variant (the bandit: the
# only one not slower than none and cheaper than none-2 with an interval above 1).
RATIO_MODES = ["none", "none-matched", "offload", "sync", "async", "async-bandit"]

# Ablation variants of async: each is async with overrides, so every change can be
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
REFERENCES = ["none", "none-2", "none-matched", "offload"]


def parse_ratios(text):
    """'1:1,1:2,1:4' -> [1, 2, 4]: spot devices per reserved one (one reserved device)."""
    out = []
    for part in text.split(","):
        r, _, k = part.partition(":")
        if r.strip() != "1" or not k.strip().isdigit() or int(k) < 1:
            raise SystemExit(f"benchmark: --ratio takes 1:k with k >= 1 spot devices, got {part!r}")
        out.append(int(k))
    return out


def candidates_at(a, k):
    """Exploration candidates per prompt at 1:k (--candidates-per-spot x k, at most the cap)."""
    return min(a.candidates_cap, a.candidates_per_spot * k)


def ratio_name(k):
    return "pinned" if k is None else f"1:{k}"


def devices(mode, a, k):
    """(reserved, spot) devices the mode holds and is billed for: pinned cores without a ratio;
    at 1:k, k spot devices for the exploring modes and 1 + spot_ratio x k reserved devices'
    worth of capacity for none-matched."""
    m = MODES[mode]
    if k is None:
        return m["reserved"], m["spot"]
    if m.get("matched"):
        return 1 + a.spot_ratio * k, 0
    return m["reserved"], (k if m["explorers"] else 0)


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
             f"validation.every={self.a.validate_every}"]
        if self.a.validate_every_seconds:
            s.append(f"validation.every_seconds={self.a.validate_every_seconds}")
        if self.a.budget_seconds:
            s.append(f"trainer.max_seconds={self.a.budget_seconds}")
        s += list(self.a.overrides)
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

    def slices_for(self, run_id, mode, k, explorers, run_dir):
        """The run's device groups and the wrapper binaries that join them (run_dir/bin): the
        trainer's slice is its devices x --device-cpu, explorer N joins spot-N, and redis, the
        planner and the reward service share a services group (--services-cpu, not billed)."""
        slices = sl.Slices(f"{os.getpid()}-{run_id}", shares=self.a.slice_shares)
        reserved, _ = devices(mode, self.a, k)
        slices.add("reserved", reserved * self.a.device_cpu)
        for i in range(1, explorers + 1):
            slices.add(f"spot-{i}", self.a.device_cpu)
        slices.add("services", self.a.services_cpu)
        bin_dir = os.path.join(run_dir, "bin")
        for name, group in (("trainer", "reserved"), ("planner", "services"),
                            ("reward", "services")):
            slices.wrap(os.path.join(self.bin, name, f"spotlight-{name}"),
                        os.path.join(bin_dir, name, f"spotlight-{name}"), group=group)
        slices.wrap(os.path.join(self.bin, "explorer", "spotlight-explorer"),
                    os.path.join(bin_dir, "explorer", "spotlight-explorer"),
                    by_explorer_id="spot-")
        redis = shutil.which("redis-server") or "redis-server"
        slices.wrap(redis, os.path.join(bin_dir, "redis-server"), group="services")
        return slices, bin_dir

    def run(self, mode, seed, base, k=None):
        m = MODES[mode]
        run_id = f"{mode}-s{seed}" if k is None else f"{mode}-1x{k}-s{seed}"
        run_dir = os.path.join(self.a.out, "runs", run_id)
        if os.path.exists(os.path.join(run_dir, "run.json")):
            return json.load(open(os.path.join(run_dir, "run.json")))
        shutil.rmtree(run_dir, ignore_errors=True)  # an interrupted attempt: start over
        os.makedirs(run_dir)
        explorers = m["explorers"] if k is None else (k if m["explorers"] else 0)
        reserved, _ = devices(mode, self.a, k)
        ranks = m.get("ranks", 1) if k is None else 1
        threads = (len(m["trainer"]) // ranks if k is None
                   else max(1, math.ceil(reserved * self.a.device_cpu - 1e-9)))
        cmd = [self.cluster, "--config", self.a.recipe, "--base", base,
               "--quiet", "--trainer-threads", str(threads), "--trainer-ranks", str(ranks),
               "--explorers", str(explorers), "--explorer-threads", "1",
               "--set", f"run.dir={run_dir}", "--set", f"run.id=bench-{run_id}",
               "--set", f"run.seed={seed}", "--set", f"exploration.mode={m['exploration']}"]
        if k is not None and self.a.candidates_per_spot:
            # The spot pool sets the exploration width: N = candidates-per-spot x k (capped).
            cmd += ["--set", f"exploration.candidates={candidates_at(self.a, k)}"]
        for setting in m.get("set", []):
            cmd += ["--set", setting]
        slices = None
        if k is None:
            cmd += ["--bin-dir", self.bin, "--trainer-cpus", self.cpus(m["trainer"])]
            if explorers:
                cmd += ["--spot-cpus", self.cpus(["spot"])]
        else:
            # Devices as CPU slices: no pinning, each role limited by its group's quota.
            slices, bin_dir = self.slices_for(run_id, mode, k, explorers, run_dir)
            cmd += ["--bin-dir", bin_dir, "--redis-server", os.path.join(bin_dir, "redis-server")]
        for s in self.settings():
            cmd += ["--set", s]
        # SCHED_FIFO (with --realtime), inherited by every process the launcher starts (redis
        # included): on its pinned core each role then runs ahead of any ordinary process, so the
        # timed interval measures the roles, not whatever else the machine is doing.
        cmd = self.prioritised(cmd)
        load_before = load_average()
        started = time.time()
        try:
            with open(os.path.join(run_dir, "launcher.log"), "w") as log:
                rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        finally:
            slice_counters = slices.close() if slices else None
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
                      load_average_before=load_before, load_average_after=load_average(),
                      ratio=k, slices=slice_counters)
        if k is not None:
            add_cpu_shares(result, slice_counters)
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
            "reward_mean", "kendall_tau", "fallback_prompts", "explore_weights_version",
            "rollouts_reused", "rollouts_sampled", "dead_lettered_tasks")
    # Per prompt (for recomputing flat-group shares and success rates, and for fitting the
    # simulator's learning law): the G rewards trained on, the explored candidates' rewards and
    # the trained seeds' indices among them.
    per_prompt = ("group_rewards", "candidate_rewards", "selected")
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
        "iterations": [{k: m.get(k) for k in keys}
                       | {k: rounded(m[k]) for k in per_prompt if k in m} for m in metrics],
        "validation": [{"version": v["version"]} | v["validation"] for v in validation],
        "processes": processes,
        "pinning_held": all(p["cpus"] == "" or p["cpus"] == p["cpus_allowed"] for p in processes),
        "cost_ledger": summary.get("cost"),
    }


def rounded(x):
    """Per-prompt rewards to 4 decimals (exact for the strict reward's 0 and 1)."""
    if isinstance(x, list):
        return [rounded(v) for v in x]
    return round(x, 4) if isinstance(x, float) else x


def slice_of(process, counters):
    """The device group a process ran in (see Study.slices_for)."""
    if process["role"] == "trainer":
        return "reserved"
    if process["role"] == "explorer":
        return "spot-" + process["name"].rsplit("-", 1)[-1]
    return "services"


def add_cpu_shares(result, counters):
    """Each process's CPU share (CPU seconds from /proc over its wall time, in cores) beside its
    slice, and per role the largest share relative to its slice."""
    counters = counters or {}
    for p in result["processes"]:
        group = slice_of(p, counters)
        p["slice"] = group
        p["slice_cores"] = counters.get(group, {}).get("cores")
        p["cpu_share"] = p["cpu_seconds"] / p["wall_seconds"] if p["wall_seconds"] else None


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


def hourly_price(mode, a, k=None):
    reserved, spot = devices(mode, a, k)
    return reserved * a.reserved_price + spot * a.reserved_price * a.spot_ratio


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
    # Recomputed from the per-prompt rewards: flat groups (every reward equal, as the trainer
    # decides), the success rate of the rollouts trained on, and of the explored candidates.
    groups = [g for i in its for g in (i.get("group_rewards") or [])]
    if groups:
        out["flat_group_share"] = sum(all(x == g[0] for x in g) for g in groups) / len(groups)
        out["trained_reward_mean"] = st.mean([x for g in groups for x in g])
    candidates = [c for i in its for c in (i.get("candidate_rewards") or []) if c]
    if candidates:
        out["explored_flat_share"] = (sum(all(x == c[0] for x in c) for c in candidates)
                                      / len(candidates))
        out["explored_reward_mean"] = st.mean([x for c in candidates for x in c])
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


def analyse(runs, modes, a, target, k=None):
    """One ratio's runs (k spot devices per reserved one; None: pinned cores)."""
    runs = [r for r in runs if r.get("ratio") == k]
    modes = [m for m in modes if any(r["mode"] == m for r in runs)]
    seeds_by_mode = {m: sorted(r["seed"] for r in runs if r["mode"] == m) for m in modes}
    common = sorted(set.intersection(*[set(s) for s in seeds_by_mode.values()])) if modes else []
    by = {(r["mode"], r["seed"]): r for r in runs}
    for r in runs:
        its, secs, reached = first_reach(r, target, a)
        r["to_target"] = {"iterations": its, "seconds": secs, "reached": reached,
                          "cost": secs * hourly_price(r["mode"], a, k) / 3600.0}
        r["seconds_per_iteration"] = iteration_seconds(r)
        r["signals"] = signals(r)
        series = score_series(r, a.metric, 1)
        r["base_score"] = series[0][1] if series and series[0][0] == 0 else None
        r["final_score"] = series[-1][1] if series else None

    def events(mode, seeds, key):
        return [(by[(mode, s)]["to_target"][key], by[(mode, s)]["to_target"]["reached"])
                for s in seeds]

    # Time horizon of the restricted mean: the wall-time budget, else the shortest run.
    horizon = a.budget_seconds or min((elapsed_at(r, r["validation"][-1]["version"]) or 0
                                       for r in runs if r["validation"]), default=0)
    per_mode = {}
    for m in modes:
        rs = [by[(m, s)] for s in seeds_by_mode[m]]
        seeds = seeds_by_mode[m]
        ev_it = events(m, seeds, "iterations")
        ev_s = events(m, seeds, "seconds")
        per_mode[m] = {
            "runs": len(rs),
            "reached": sum(r["to_target"]["reached"] for r in rs),
            "iterations_to_target_km_median": st.km_median(ev_it),
            "reached_share_km": st.km_reached_share(ev_it),
            "seconds_to_target_km_median": st.km_median(ev_s),
            "seconds_to_target_km_median_midpoint": st.km_median(ev_s, "midpoint"),
            "seconds_to_target_rmst": st.rmst(ev_s, horizon) if horizon else None,
            "rmst_horizon_seconds": horizon,
            "iterations_run": st.mean([len(r["iterations"]) for r in rs]),
            "cost_to_target_km_median": st.km_median(events(m, seeds, "cost")),
            "iterations_to_target_rmst": st.rmst(ev_it, a.iterations),
            "seconds_per_iteration": st.mean([r["seconds_per_iteration"] for r in rs]),
            "seconds_per_iteration_se": st.std_error([r["seconds_per_iteration"] for r in rs]),
            "final_score": st.mean([r["final_score"] for r in rs]),
            "final_score_se": st.std_error([r["final_score"] for r in rs]),
            "hourly_price": hourly_price(m, a, k),
            "devices": dict(zip(("reserved", "spot"), devices(m, a, k))),
            "signals": {k: st.mean([r["signals"].get(k) for r in rs])
                        for k in sorted({k for r in rs for k in r["signals"]})},
            "cpu_seconds_by_role": {},
            "pinning_held": all(r["pinning_held"] for r in rs),
        }
        for role in sorted({p["role"] for r in rs for p in r["processes"]}):
            per_mode[m]["cpu_seconds_by_role"][role] = st.mean(
                [sum(p["cpu_seconds"] for p in r["processes"] if p["role"] == role) for r in rs])
        if k is not None:
            # Per device group: its slice, the CPU share its processes got (cores, from /proc:
            # their CPU seconds over the longest one's wall time), and its throttled seconds.
            shares = {}
            for r in rs:
                for group, c in (r.get("slices") or {}).items():
                    ps = [p for p in r["processes"] if p.get("slice") == group]
                    wall = max((p["wall_seconds"] for p in ps), default=0)
                    if not wall:
                        continue
                    name = "spot" if group.startswith("spot-") else group
                    shares.setdefault(name, {"slice_cores": c["cores"], "share": [],
                                             "throttled_seconds": []})
                    shares[name]["share"].append(sum(p["cpu_seconds"] for p in ps) / wall)
                    shares[name]["throttled_seconds"].append(c.get("throttled_seconds"))
            per_mode[m]["cpu_share_by_slice"] = {
                g: {"slice_cores": v["slice_cores"], "share_mean": st.mean(v["share"]),
                    "share_max": max(v["share"]), "throttled_seconds": st.mean(v["throttled_seconds"])}
                for g, v in shares.items()}
    # Ratios against the references, paired by seed (seeds every compared mode ran).
    ratios = {}
    stats = {
        "time_to_target": lambda m, s: st.km_median(events(m, s, "seconds")),
        "time_to_target_midpoint": lambda m, s: st.km_median(events(m, s, "seconds"), "midpoint"),
        "time_to_target_rmst": lambda m, s: st.rmst(events(m, s, "seconds"), horizon),
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
                    "undefined_resamples": round(undefined * a.bootstrap),
                    "resamples": a.bootstrap, "seeds": len(seeds)}
            # Paired difference of the final score (mode - reference), same seeds.
            pairs = {x: (by[(m, x)]["final_score"], by[(ref, x)]["final_score"]) for x in seeds
                     if by[(m, x)]["final_score"] is not None
                     and by[(ref, x)]["final_score"] is not None}
            d, lo, hi = st.mean_difference(pairs, a.bootstrap)
            ratios[ref][m]["final_score_difference"] = {"difference": d, "ci_low": lo,
                                                         "ci_high": hi, "seeds": len(pairs)}
    return {"ratio": ratio_name(k), "per_mode": per_mode, "ratios": ratios,
            "common_seeds": common, "modes": modes}


def mean_curve_halfway(runs, a):
    """The halfway target: half-way from the base to the end of none's mean validation curve
    (over its common validation points; each run's curve as the study smooths it)."""
    series = [dict(score_series(r, a.metric, a.smooth)) for r in runs if r["validation"]]
    common = sorted(set.intersection(*[set(x) for x in series])) if series else []
    if len(common) < 2:
        return None, None
    base = st.mean([x[common[0]] for x in series])
    end = st.mean([x[common[-1]] for x in series])
    return base + 0.5 * (end - base), common[-1]


def propose_target(runs, a):
    """The pilot's target, by --target-rule: halfway (half-way up none's mean curve) or km70."""
    if a.target_rule == "halfway":
        return mean_curve_halfway(runs, a)
    return propose_target_km70(runs, a)


def propose_target_km70(runs, a):
    """The old pilot's target: the lowest score whose Kaplan-Meier median iterations-to-target over
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


def write_table(path, a, runs, modes, skipped, target, analyses, meta, primary):
    """table.md: the settings, the primary comparison, then one section per ratio."""
    L = [f"# Benchmark: {', '.join(modes)} on the embedded task\n"]
    L.append(f"- recipe `{os.path.relpath(a.recipe, root)}`, {a.iterations} iterations per run, "
             + (f"validation every {a.validate_every_seconds} s of the trainer's time line"
                if a.validate_every_seconds else f"validation every {a.validate_every}")
             + " (deferred: outside the timed interval)"
             + (f"; overrides `{' '.join(a.overrides)}`" if a.overrides else ""))
    L.append(f"- score: validation {meta['metric_about']}; standard error of one validation "
             f"{fmt(meta.get('validation_se'), '.4f')} over {meta.get('validation_samples')} "
             f"prompt x seed pairs (fixed pairs: the same at every validation)"
             + (f", trailing mean of {a.smooth} validations" if a.smooth > 1 else ""))
    L.append(f"- base score {fmt(meta.get('base_score'))}; target {fmt(target)} ({meta['target_about']})")
    if a.ratios:
        L.append(f"- seeds {','.join(map(str, a.seeds))}, runs interleaved (seed-major, the ratio "
                 f"and mode order rotating per seed); devices as CPU slices (cgroup cpu quota) of "
                 f"{a.device_cpu} cores each: 1 reserved + k spot at 1:k, redis, planner and "
                 f"reward service in a {a.services_cpu}-core services slice (not billed); prices "
                 f"per device-hour: reserved {a.reserved_price}, spot {a.spot_ratio} x reserved")
    else:
        L.append(f"- seeds {','.join(map(str, a.seeds))}, runs interleaved (seed-major, the mode "
                 f"order rotating per seed); reserved core {a.reserved_cpu}, spot core "
                 f"{a.spot_cpu}; prices: reserved {a.reserved_price}/core-hour, spot "
                 f"{a.spot_ratio} x reserved")
    if a.budget_seconds:
        L.append(f"- budget: {a.budget_seconds} s of trainer wall time per run, every mode "
                 f"(trainer.max_seconds; at most {a.iterations} iterations)")
    L.append(f"- 1-minute load average when each run started: {fmt(meta.get('load_min'), '.1f')} to "
             f"{fmt(meta.get('load_max'), '.1f')} on {meta.get('cpus')} CPUs"
             + (f"; every role ran at real-time priority (SCHED_FIFO {a.realtime}) on its pinned "
                "core, so other work on the machine got only what the roles left idle"
                if a.realtime else " (wall times need it below ~0.5 to mean anything)"))
    if skipped:
        L.append(f"- not run (this build's trainer does not accept their exploration.mode): "
                 f"{', '.join(skipped)}")
    L.append("")
    if primary:
        L += primary_lines(primary)
    for k in (a.ratios or [None]):
        analysis = analyses[ratio_name(k)]
        if not analysis["modes"]:
            continue
        if a.ratios:
            n = f"; N = {candidates_at(a, k)} candidates per prompt" if a.candidates_per_spot else ""
            L.append(f"\n## Ratio {ratio_name(k)} (1 reserved device, {k} spot{n})\n")
        group_lines(L, a, analysis, "###" if a.ratios else "##")
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
           "sync-stale": "tab:cyan", "async": "tab:red", "none-matched": "tab:brown",
           "async-bandit": "tab:orange", "async-adaptive": "tab:green"}


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
    ratios = sorted({r.get("ratio") for r in runs}, key=lambda k: k or 0)
    fig, axes = plt.subplots(len(ratios), 2, figsize=(13, 4.8 * len(ratios)), squeeze=False)
    for row, k in enumerate(ratios):
        plot_ratio(axes[row], [r for r in runs if r.get("ratio") == k], modes, target, a, k)
    fig.suptitle("Validation score: mean over seeds with a 95% band (normal, over runs); right: "
                 "thin lines are single runs")
    fig.tight_layout()
    fig.savefig(path + ".tmp.png", dpi=110)
    os.replace(path + ".tmp.png", path)
    plt.close(fig)
    return True


def plot_ratio(axes, runs, modes, target, a, k):
    for m in modes:
        rs = [r for r in runs if r["mode"] == m]
        if not rs:
            continue
        by_it = [score_series(r, a.metric, 1) for r in rs]
        by_time = [[(elapsed_at(r, v), s) for v, s in score_series(r, a.metric, 1)] for r in rs]
        last = max(v for c in by_it for v, _ in c)
        xs, mu, lo, hi = band(by_it, list(range(0, last + 1)))
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
        if k is not None:
            ax.set_title(f"1 reserved : {k} spot devices", fontsize=9)
    axes[0].legend(fontsize=8)


METRICS = {"mean_reward": "mean reward of the kind the run trains on (reward.kind)",
           "mean_strict_reward": "mean strict reward (share of images with every clause right)",
           "mean_partial_reward": "mean partial-credit reward",
           "geneval_score": "GenEval-like strict accuracy (mean over categories)"}
METRIC_ERRORS = {"mean_reward": "mean_reward_std_error",
                 "mean_strict_reward": "mean_strict_reward_std_error",
                 "mean_partial_reward": "mean_partial_reward_std_error",
                 "geneval_score": "geneval_std_error"}


def report(a, runs, modes, skipped, target, target_about, extra=None):
    # Keep the interleaved order; only modes with runs.
    modes = [m for m in modes if any(r["mode"] == m for r in runs)]
    loads = [r["load_average_before"][0] for r in runs if r.get("load_average_before")]
    meta = {"metric_about": METRICS[a.metric], "target_about": target_about,
            "load_min": min(loads, default=None), "load_max": max(loads, default=None),
            "cpus": os.cpu_count()}
    vals = [v for r in runs for v in r["validation"]]
    if vals:
        meta["validation_se"] = st.mean([v.get(METRIC_ERRORS[a.metric]) for v in vals])
        meta["validation_samples"] = vals[0].get("samples")
        for kind in ("partial", "strict"):
            bases = [v.get(f"mean_{kind}_reward") for r in runs for v in r["validation"]
                     if v["version"] == 0 and r["mode"] == "none"]
            meta[f"none_base_{kind}_reward"] = st.mean(bases)
    bases = [v[a.metric] for r in runs for v in r["validation"] if v["version"] == 0]
    meta["base_score"] = st.mean(bases)
    analyses = {ratio_name(k): analyse(runs, modes, a, target, k) for k in (a.ratios or [None])}
    primary = primary_comparison(a, analyses) if a.primary_parsed else None
    write_table(os.path.join(a.out, "table.md"), a, runs, modes, skipped, target, analyses, meta,
                primary)
    plotted = plot(os.path.join(a.out, "curves.png"), runs, modes, target, a) if runs else False
    first = analyses[ratio_name((a.ratios or [None])[0])]
    out = {"version": RESULTS_VERSION, "target": target, "meta": meta, "modes": modes,
           "skipped_modes": skipped, "settings": vars_of(a), "primary": primary,
           "analysis": first, "by_ratio": analyses, "runs": runs}
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
              "realtime", "ratios", "device_cpu", "services_cpu", "budget_seconds", "primary",
              "candidates_per_spot", "candidates_cap", "validate_every_seconds")
# What a study.json written before a key existed meant by it.
STUDY_KEY_DEFAULTS = {"validate_every_seconds": 0.0}


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default="",
                   help=f"default: {','.join(ALL_MODES)}; with --ratio: {','.join(RATIO_MODES)}")
    p.add_argument("--seeds", default="0-9", help="run seeds, e.g. 0-9 or 0,3,5")
    p.add_argument("--iterations", type=int, default=0, help="budget per run (0: the recipe's)")
    p.add_argument("--target", default="auto",
                   help="score to reach, or auto: by --target-rule from the none runs")
    p.add_argument("--target-rule", default="halfway", choices=("halfway", "km70"),
                   help="auto target: half-way from the base to the end of none's mean curve "
                        "(halfway), or the lowest score none's KM median reaches at 70%% of the "
                        "iterations or later (km70, the first studies' rule)")
    p.add_argument("--ratio", default="",
                   help="device ratios 1:k (e.g. 1:1,1:2,1:4): one reserved device and k spot "
                        "devices as equal CPU slices (cgroup cpu quota) instead of pinned cores")
    p.add_argument("--device-cpu", type=float, default=0.3,
                   help="cores per device slice with --ratio (the same at every ratio)")
    p.add_argument("--services-cpu", type=float, default=0.4,
                   help="cores of the slice shared by redis, planner and reward service "
                        "(not billed) with --ratio")
    p.add_argument("--candidates-per-spot", type=int, default=16,
                   help="with --ratio: exploration.candidates = this x spot devices (0: the "
                        "recipe's), so the spot pool sets the exploration width")
    p.add_argument("--candidates-cap", type=int, default=64)
    p.add_argument("--slice-shares", type=int, default=4096,
                   help="cpu.shares of each slice (1024: an ordinary process's weight): under "
                        "contention a slice gets its quota before other work; never above it")
    p.add_argument("--budget-seconds", type=float, default=0,
                   help="wall-time budget of every run (trainer.max_seconds): every mode gets "
                        "the same time, not the same iterations (0: --iterations only)")
    p.add_argument("--primary", default="async:none@1:4",
                   help="the primary comparison MODE:REFERENCE@1:k, named before the study; "
                        "every other interval is secondary")
    p.add_argument("--metric", default="mean_reward", choices=sorted(METRICS))
    p.add_argument("--smooth", type=int, default=2,
                   help="first reach on a trailing mean of this many validations (2: one noisy "
                        "validation alone does not count as reaching the target)")
    p.add_argument("--validate-every", type=int, default=2)
    p.add_argument("--validate-every-seconds", type=float, default=0.0,
                   help="validate at each multiple of this many seconds of the trainer's time "
                        "line instead of every --validate-every iterations (the same resolution "
                        "for every mode under --budget-seconds)")
    p.add_argument("--recipe", default=os.path.join(root, "deploy", "config", "benchmark.yaml"))
    p.add_argument("--reserved-cpu", type=int, default=0)
    p.add_argument("--spot-cpu", type=int, default=1)
    p.add_argument("--validation-threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--reserved-price", type=float, default=1.0,
                   help="per core-hour (pinned) or device-hour (--ratio)")
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
    a.ratios = parse_ratios(a.ratio) if a.ratio else []
    if a.ratios and a.realtime:
        raise SystemExit("benchmark: --realtime with --ratio: a SCHED_FIFO task escapes its "
                         "slice's CFS quota, so the devices would not be equal")
    if a.ratios:
        ok, why = sl.check()
        if not ok:
            print(f"benchmark: device slices unavailable ({why}); skipped", flush=True)
            sys.exit(sl.SKIP)
        for name in sl.remove_stale():
            print(f"benchmark: removed the slices of an interrupted benchmark ({name})")
    a.modes = a.modes or ",".join(RATIO_MODES if a.ratios else ALL_MODES)
    a.primary_parsed = None
    if a.ratios:
        pm_, _, pk = a.primary.partition("@")
        pmode, _, pref = pm_.partition(":")
        a.primary_parsed = (pmode, pref, parse_ratios(pk)[0] if pk else a.ratios[-1])
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
        if MODES[m].get("matched") and not a.ratios:
            raise SystemExit(f"benchmark: {m} needs --ratio (its capacity is async's spot budget)")
    kind = "pilot" if a.pilot else "quick" if a.quick else "study"
    a.out = os.path.abspath(a.out or os.path.join(
        root, "runs", f"benchmark-{kind}-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
    os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
    study_path = os.path.join(a.out, "study.json")
    # The recipe relative to the checkout (a study travels with it); older study.json files
    # hold it absolute, and are compared the same way.
    study = {k: getattr(a, k) for k in STUDY_KEYS} | {"recipe": vars_of(a)["recipe"]}
    if os.path.exists(study_path):
        before = json.load(open(study_path))
        if str(before.get("recipe", "")).startswith(root + os.sep):
            before["recipe"] = os.path.relpath(before["recipe"], root)
        diff = [k for k in STUDY_KEYS if before.get(k, STUDY_KEY_DEFAULTS.get(k)) != study[k]]
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
        if a.target_rule == "halfway":
            return t, (f"auto: half-way from the base to none's mean curve at version {at} "
                       f"({len(nones)} none runs)")
        return t, (f"auto: the lowest score that none's Kaplan-Meier median reaches at iteration "
                   f">= {at} of {a.iterations} (70%)")

    ratios = a.ratios or [None]
    if a.pilot and a.ratios:
        ratios = ratios[:1]  # none holds no spot device: one ratio says all

    def run_id(mode, seed, k):
        return f"{mode}-s{seed}" if k is None else f"{mode}-1x{k}-s{seed}"

    if a.analyse_only:
        for seed in a.seeds:
            for k in ratios:
                for mode in modes:
                    f = os.path.join(a.out, "runs", run_id(mode, seed, k), "run.json")
                    if os.path.exists(f):
                        runs.append(json.load(open(f)))
    else:
        base = s.ensure_base()
        print(f"== base checkpoint {base} ==", flush=True)
        total = len(a.seeds) * len(modes) * len(ratios)
        for i, seed in enumerate(a.seeds):
            # Seed-major; the ratio and the mode order rotate per seed, so a slow drift of the
            # machine spreads over both.
            for k in ratios[i % len(ratios):] + ratios[:i % len(ratios)]:
                order = modes[i % len(modes):] + modes[:i % len(modes)]
                for mode in order:
                    print(f"== {mode}, {ratio_name(k)}, seed {seed} ({len(runs) + 1}/{total}) ==",
                          flush=True)
                    r = s.run(mode, seed, base, k)
                    runs.append(r)
                    last = r["validation"][-1] if r["validation"] else {}
                    print(f"   {len(r['iterations'])} iterations, {fmt(r['iterations'][-1]['elapsed_seconds'] if r['iterations'] else None, '.1f')} s "
                          f"on the time line, final {a.metric} {fmt(last.get(a.metric))}",
                          flush=True)
                    target, target_about = current_target()
                    if target is not None:
                        report(a, runs, modes, skipped, target, target_about)
    target, target_about = current_target()
    if target is None:
        raise SystemExit("benchmark: --target auto needs finished none runs")
    extra = None
    if a.pilot:
        extra = {"pilot": {"proposed_target": target, "rule": a.target_rule,
                           "about": target_about, "metric": a.metric, "smooth": a.smooth}}
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




def primary_comparison(a, analyses):
    """The comparison named before the study (--primary MODE:REFERENCE@1:k): reference / mode
    time to target (KM median, midpoint convention) with its paired-bootstrap interval."""
    mode, ref, k = a.primary_parsed
    analysis = analyses.get(ratio_name(k)) or {}
    r = ((analysis.get("ratios") or {}).get(ref) or {}).get(mode)
    return {"name": a.primary, "mode": mode, "reference": ref, "ratio": ratio_name(k),
            "statistic": "time to target, reference / mode, KM median (midpoint convention), "
                         "paired bootstrap 95% interval over seeds",
            "result": r and r.get("time_to_target_midpoint"),
            "also": r and {x: r.get(x) for x in ("time_to_target", "time_to_target_rmst",
                                                  "cost_to_target", "final_score_difference")}}


def primary_lines(p):
    L = ["## Primary comparison (named before the study)\n",
         f"**{p['mode']} against {p['reference']} at {p['ratio']}**: {p['statistic']}.\n"]
    if not p["result"]:
        L.append("Not measured yet: no seed has both runs at this ratio.\n")
        return L
    also = p["also"]
    L.append(f"- time to target: **{fmt_ratio(p['result'])}** ({p['result']['seeds']} seeds; "
             f"{p['result']['undefined_resamples']} of {p['result']['resamples']} resamples "
             "undefined)")
    L.append(f"- lower KM median {fmt_ratio(also['time_to_target'])}; restricted mean "
             f"{fmt_ratio(also['time_to_target_rmst'])}; cost {fmt_ratio(also['cost_to_target'])}")
    d = also.get("final_score_difference") or {}
    L.append(f"- final score difference {fmt(d.get('difference'), '+.3f')} "
             f"[{fmt(d.get('ci_low'), '+.3f')}, {fmt(d.get('ci_high'), '+.3f')}]\n")
    return L


def group_lines(L, a, analysis, h):
    """One ratio's section of table.md (headings at level `h`)."""
    pm, ratios, modes = analysis["per_mode"], analysis["ratios"], analysis["modes"]
    L.append(f"{h} Time and cost to the target\n")
    L.append("Kaplan-Meier medians over seeds (a run that never reached the target is censored at "
             "its end, not dropped); ratios are reference / mode (> 1: the mode is faster or "
             "cheaper), paired-by-seed bootstrap 95% CI.\n")
    L.append("Time to target: the lower KM median / the midpoint convention (where the survival "
             "sits at exactly 0.5, the middle of that interval) / the restricted mean over "
             f"{fmt(next(iter(pm.values()), {}).get('rmst_horizon_seconds'), '.0f')} s (a run "
             "that never reaches the target counts the whole horizon).\n")
    L.append("| mode | devices (reserved + spot) | reached | time to target (s): lower / midpoint "
             "/ RMST | cost to target | iterations to target | iterations run | s / iteration "
             "| final score |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for m in modes:
        s = pm[m]
        dv = s.get("devices") or {}
        L.append(f"| {m} | {fmt(dv.get('reserved'), '.2f')} + {fmt(dv.get('spot'), '.0f')} "
                 f"| {s['reached']}/{s['runs']} | {fmt(s['seconds_to_target_km_median'], '.1f')} "
                 f"/ {fmt(s.get('seconds_to_target_km_median_midpoint'), '.1f')} "
                 f"/ {fmt(s.get('seconds_to_target_rmst'), '.1f')} "
                 f"| {fmt(s['cost_to_target_km_median'], '.5f')} "
                 f"| {fmt(s['iterations_to_target_km_median'], 'd') if isinstance(s['iterations_to_target_km_median'], int) else fmt(s['iterations_to_target_km_median'], '.0f')} "
                 f"| {fmt(s.get('iterations_run'), '.1f')} "
                 f"| {fmt(s['seconds_per_iteration'], '.2f')} ± {fmt(s['seconds_per_iteration_se'], '.2f')} "
                 f"| {fmt(s['final_score'])} ± {fmt(s['final_score_se'])} |")
    for ref, by_mode in ratios.items():
        L.append(f"\n{h}# Against {ref}\n")
        L.append("Secondary comparisons (the primary one is named above). Undefined: bootstrap "
                 "resamples in which both medians were not reached (left out of the interval).\n")
        L.append("| mode | time-to-target speed-up (lower / midpoint / RMST) | undefined "
                 "| cost-to-target saving | iterations-to-target | seconds-per-iteration "
                 "| final score difference |")
        L.append("|---|---|---|---|---|---|---|")
        for m in modes:
            if m not in by_mode:
                continue
            r = by_mode[m]
            d = r.get("final_score_difference") or {}
            L.append(f"| {m} | {fmt_ratio(r['time_to_target'])} / "
                     f"{fmt_ratio(r.get('time_to_target_midpoint'))} / "
                     f"{fmt_ratio(r.get('time_to_target_rmst'))} "
                     f"| {r['time_to_target'].get('undefined_resamples', 'n/a')}/"
                     f"{r['time_to_target'].get('resamples', 'n/a')} "
                     f"| {fmt_ratio(r['cost_to_target'])} "
                     f"| {fmt_ratio(r['iterations_to_target'])} | {fmt_ratio(r['seconds_per_iteration'])} "
                     f"| {fmt(d.get('difference'), '+.3f')} [{fmt(d.get('ci_low'), '+.3f')}, "
                     f"{fmt(d.get('ci_high'), '+.3f')}] |")
    L.append("\nTime-to-target ≈ iterations-to-target x seconds-per-iteration: the two right "
             "columns say which of them a speed-up comes from.\n")
    L.append(f"{h} The mechanism, per mode\n")
    L.append("Means over runs of per-iteration values. Wait share: the trainer's time waiting for "
             "explored seeds (async) or exploring on the critical path (sync modes), of its "
             "iteration time. Explorer idle: 1 - explorer CPU seconds / its wall time (and from "
             "the cost ledger: idle / held device-seconds).\n")
    L.append("| mode | flat groups (trained / explored) | success (trained / explored) "
             "| mean \\|A\\| | trained group variance | selected "
             "variance | Kendall tau | trainer wait share | audit share | explorer idle (CPU / ledger) |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for m in modes:
        g = pm[m]["signals"]
        L.append(f"| {m} | {fmt(g.get('flat_group_share', g.get('zero_std_share')), '.2f')} / "
                 f"{fmt(g.get('explored_flat_share'), '.2f')} "
                 f"| {fmt(g.get('trained_reward_mean'), '.2f')} / {fmt(g.get('explored_reward_mean'), '.2f')} "
                 f"| {fmt(g.get('mean_abs_advantage'))} "
                 f"| {fmt(g.get('trained_group_variance'), '.4f')} | {fmt(g.get('selected_variance'), '.4f')} "
                 f"| {fmt(g.get('kendall_tau'), '.2f')} | {fmt(g.get('trainer_wait_share'), '.2f')} "
                 f"| {fmt(g.get('audit_share'), '.3f')} "
                 f"| {fmt(g.get('explorer_idle_share_cpu'), '.2f')} / {fmt(g.get('explorer_idle_share_ledger'), '.2f')} |")
    planned = [m for m in modes if pm[m]["signals"].get("planned_candidates") is not None
               or pm[m]["signals"].get("purged_tasks") is not None]
    if planned:
        L.append(f"\n{h} The planner, per mode (async modes)\n")
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
    L.append(f"\n{h} Where the CPU went (mean CPU seconds per run, from /proc via the launcher)\n")
    roles = sorted({role for m in modes for role in pm[m]["cpu_seconds_by_role"]})
    L.append("| mode | pinning held | " + " | ".join(roles) + " |")
    L.append("|---|---|" + "---|" * len(roles))
    for m in modes:
        c = pm[m]["cpu_seconds_by_role"]
        L.append(f"| {m} | {'yes' if pm[m]['pinning_held'] else 'NO'} | "
                 + " | ".join(fmt(c.get(r), '.1f') for r in roles) + " |")
    sliced = [m for m in modes if pm[m].get("cpu_share_by_slice")]
    if sliced:
        L.append(f"\n{h} CPU share per device slice against the slice\n")
        L.append("Cores: the CPU seconds of the slice's processes (from /proc) over the longest "
                 "one's wall time (start-up and idle waits included), mean and largest over runs; "
                 "the slice is its CFS quota. Throttled: seconds the kernel held the slice at its "
                 "quota.\n")
        L.append("| mode | slice | quota (cores) | CPU share (cores): mean / max | throttled (s) |")
        L.append("|---|---|---|---|---|")
        for m in sliced:
            for g, v in sorted(pm[m]["cpu_share_by_slice"].items()):
                L.append(f"| {m} | {g} | {fmt(v['slice_cores'], '.2f')} "
                         f"| {fmt(v['share_mean'], '.3f')} / {fmt(v['share_max'], '.3f')} "
                         f"| {fmt(v['throttled_seconds'], '.1f')} |")


if __name__ == "__main__":
    main()
