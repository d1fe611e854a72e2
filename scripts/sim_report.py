#!/usr/bin/env python3
"""The cluster study as a decision: Spotlight (async) against the reserved-only alternatives.

  scripts/sim_report.py deploy/sim/study.jsonl --out deploy/sim \\
      [--sensitivity NAME=LOW_LABEL:LOW.jsonl,HIGH_LABEL:HIGH.jsonl ...] \\
      [--gains-check deploy/sim/calibration/contrast/*gains.json ...]

The selection gain g (iterations of plain GRPO to the target / iterations of async) is an input:
the study ran async for iterations(none) / g iterations at each swept g, so its time and cost at
any g are known, and every alternative's at its own learning (no selection: none's iterations).
For each alternative, in order none-matched (reserved GPUs bought with async's spot budget), then
offload (the paper's baseline) and offload-pipelined, then none, the report gives the break-even
gain: the g above which async is faster (time) or cheaper (cost), the median over traces and
offsets of the paired ratios crossing 1. The spot price enters here (every run records its spot
GPU-hours), and so does none-matched at each price: R' = R + price x (async's mean spot GPUs held)
reserved GPUs at data-parallel efficiency e^log2(R'/R) for none's iterations.

Writes report.md, page.json (`spotlight-sim page` renders it as report.html), breakeven.json (every
cell of the map) and map.png.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchmark_stats as st  # noqa: E402

ALTERNATIVES = ["none-matched", "offload", "offload-pipelined", "none"]
PRICES = [0.2, 0.27, 0.35, 0.5]


def median(xs):
    return st.percentile(list(xs), 50)


def short(trace):
    parts = trace.replace(".json", "").split("_")
    return "-".join(p for p in parts if p.startswith("us-") or p.startswith("eu-")) or trace


def fmt(x, spec="{:.2f}"):
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return "n/a"
    return spec.format(x)


def load(path):
    head, best, figures, runs = None, [], [], []
    with open(path) as f:
        for line in f:
            j = json.loads(line)
            if "study" in j:
                head = j["study"]
            elif "best_of_n" in j:
                best.append(j)
            elif "published_figures" in j:
                figures = j["published_figures"]
            else:
                runs.append(j)
    if head is None:
        sys.exit(f"{path}: no study description line")
    return head, best, figures, runs


class Study:
    """Runs indexed by (calibration, trace, ratio, startup, mode, gain) -> {offset: run}."""

    def __init__(self, path):
        self.head, self.best, self.figures, runs = load(path)
        self.costs = self.head["costs"]
        self.by = {}
        for r in runs:
            key = (r["calibration"], r["trace"], r["ratio"], r.get("startup", 0), r["mode"],
                   r.get("gain"))
            self.by.setdefault(key, {})[r["offset"]] = r

    def get(self, cal, trace, ratio, startup, mode, gain=None):
        if mode in ("none", "sync"):
            return self.by.get((cal, "", 0, 0, mode, None), {})
        return self.by.get((cal, trace, ratio, startup, mode, gain), {})

    def calibrations(self):
        return [c["name"] for c in self.head["calibrations"]]

    def cost(self, r, price):
        """A run's cost with spot priced at `price` x reserved."""
        return r["reserved_cost"] + r["spot_gpu_hours"] * price * self.costs[
            "reserved_price_per_hour"]

    def matched(self, none_run, held, price):
        """none-matched: (seconds, cost) of none's iterations on R + price x held reserved GPUs."""
        r = self.head["reserved_gpus"]
        gpus = r + price * held
        scale = gpus / r
        eff = self.costs["dp_efficiency_per_doubling"] ** math.log2(scale) if scale > 1 else 1.0
        seconds = none_run["seconds"] * r / (gpus * eff)
        return seconds, gpus * seconds * self.costs["reserved_price_per_hour"] / 3600

    def alternative(self, cal, trace, ratio, startup, alt, price, held):
        """{offset: (seconds, cost)} of an alternative."""
        if alt == "none-matched":
            return {i: self.matched(r, held, price)
                    for i, r in self.get(cal, trace, ratio, startup, "none").items()}
        return {i: (r["seconds"], self.cost(r, price))
                for i, r in self.get(cal, trace, ratio, startup, alt).items()}

    def async_at(self, cal, trace, ratio, startup, gain, price):
        runs = self.get(cal, trace, ratio, startup, "async-gain", gain)
        held = sum(r["mean_held_spot"] for r in runs.values()) / max(1, len(runs))
        return {i: (r["seconds"], self.cost(r, price)) for i, r in runs.items()}, held

    def ratios_vs(self, cal, traces, ratio, startup, alt, price, gain):
        """Paired ratios alternative / async at `gain` over traces and offsets: (time, cost)."""
        times, costs = [], []
        for trace in traces:
            mine, held = self.async_at(cal, trace, ratio, startup, gain, price)
            theirs = self.alternative(cal, trace, ratio, startup, alt, price, held)
            for i in sorted(set(mine) & set(theirs)):
                times.append(theirs[i][0] / mine[i][0])
                costs.append(theirs[i][1] / mine[i][1])
        return times, costs

    def breakeven(self, cal, traces, ratio, startup, alt, price):
        """The gains at which async's median time and cost ratios against `alt` reach 1: each
        (value, how) with how '=' (interpolated), '<=' (already at the smallest gain) or '>'
        (not within the swept gains)."""
        gains = sorted(self.head["gains"])
        curves = {"time": [], "cost": []}
        for g in gains:
            t, c = self.ratios_vs(cal, traces, ratio, startup, alt, price, g)
            if not t:
                return None
            curves["time"].append(median(t))
            curves["cost"].append(median(c))
        return {k: crossing(gains, v) for k, v in curves.items()}


def crossing(xs, ys, level=1.0):
    for i in range(len(xs)):
        if ys[i] >= level:
            if i == 0:
                return (xs[0], "<=")
            x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
            return (x0 + (level - y0) * (x1 - x0) / (y1 - y0) if y1 != y0 else x1, "=")
    return (xs[-1], ">")


def show(be):
    if be is None:
        return "n/a"
    value, how = be
    return {"=": f"{value:.2f}", "<=": f"<={value:g}", ">": f">{value:g}"}[how]


def cell(be):
    return "" if be is None else f"{show(be['time'])} / {show(be['cost'])}"


class Report:
    """The report as markdown lines and, block for block, as a report page (page.json, rendered by
    `spotlight-sim page`)."""

    def __init__(self, title, subtitle):
        self.lines = [f"# {title}\n"]
        self.page = {"title": title, "subtitle": subtitle, "sections": []}

    def section(self, ident, title, level=2):
        self.lines.append(f"\n{'#' * level} {title}\n")
        self.page["sections"].append({"id": ident, "title": title, "blocks": []})

    def block(self, block):
        if not self.page["sections"]:
            self.page["sections"].append({"id": "about", "title": "About", "blocks": []})
        self.page["sections"][-1]["blocks"].append(block)

    def para(self, text):
        self.lines.append(text + "\n")
        self.block({"type": "paragraph", "text": text.replace("`", "").replace("**", "")})

    def table(self, header, rows):
        self.lines.append("| " + " | ".join(header) + " |")
        self.lines.append("|---" * len(header) + "|")
        for r in rows:
            self.lines.append("| " + " | ".join(str(c) for c in r) + " |")
        self.lines.append("")
        self.block({"type": "table", "header": header,
                    "rows": [[str(c).replace("`", "") for c in r] for r in rows]})


def law_gains(s, cal, traces, ratios, startups):
    """The gain the learning law itself gives async (iterations of none / of async, paired by
    offset), over every trace, ratio and start-up: median and 2.5-97.5% range."""
    none = s.get(cal, None, None, None, "none")
    values = []
    for trace in traces:
        for ratio in ratios:
            for startup in startups:
                for i, r in s.get(cal, trace, ratio, startup, "async").items():
                    if i in none and r["iterations"] > 0:
                        values.append(none[i]["iterations"] / r["iterations"])
    if not values:
        return None
    return median(values), st.percentile(values, 2.5), st.percentile(values, 97.5)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("study")
    p.add_argument("--out", default=None)
    p.add_argument("--sensitivity", action="append", default=[],
                   help="NAME=LOW_LABEL:LOW.jsonl,HIGH_LABEL:HIGH.jsonl (one study per value)")
    p.add_argument("--gains-check", action="append", default=[],
                   help="spotlight-sim check --gains-json output (measured gains of selection)")
    p.add_argument("--fitted", default=None, help="the fitted learning law (fitted.json)")
    p.add_argument("--predictions", default=None,
                   help="`spotlight-sim predict` output: the law's gains where none is measured")
    a = p.parse_args()
    out = a.out or os.path.dirname(os.path.abspath(a.study))
    s = Study(a.study)
    head, costs = s.head, s.costs
    traces, ratios = head["traces"], head["ratios"]
    startups = head.get("startups", [costs["explorer_startup_seconds"]])
    gains = head["gains"]
    default_price = costs["spot_price_ratio"]
    default_startup = 120 if 120 in startups else startups[len(startups) // 2]
    prices = sorted(set(PRICES + [default_price]))

    rep = Report("Spotlight or a reserved-only job: the simulator's decision map",
                 f"spotlight-sim study, {head['offsets']} trace offsets per configuration")
    rep.section("about", "How to read it")
    rep.para(
        "Every figure is a **simulation** under the assumptions listed at the end (measured ones "
        "say so), not a measurement of a cluster. The question is the one a team asks: run "
        "Spotlight (async: explore seeds on spot GPUs, train on the max-variance ones) or a "
        "reserved-only job? The answer depends on how much selection shortens the run (the gain "
        "g = iterations of plain GRPO to the target / iterations of async), so g is an input "
        "swept from " + f"{min(gains):g} to {max(gains):g}" + "; the learning law's own prediction "
        "and our measurements are placed on it. A **break-even gain** is the g above which async "
        "is faster (time) or cheaper (cost) than the alternative: the median over traces and "
        f"{head['offsets']} paired trace offsets of alternative / async crossing 1. '<=1' means "
        "async wins even if selection bought nothing; '>4' that it does not win within the swept "
        "gains.")
    rep.para(
        f"Shape: {head['reserved_gpus']} reserved GPUs ({costs['hardware']}), "
        f"{head['prompts']} prompts x {head['group_size']} images per iteration, "
        f"{head['rollout_steps']} SDE steps per rollout; t = {costs['seconds_per_sample_step']} s "
        f"per sample-step ({'measured' if costs['measured'] else 'assumed'}); reserved:spot "
        "ratios 1:" + ", 1:".join(f"{r:g}" for r in ratios) + "; spot start-up "
        + ", ".join(f"{x:g}" for x in startups) + " s; spot price "
        + ", ".join(f"{x:g}" for x in prices) + " x reserved.")

    cells = []
    for cal in s.calibrations():
        cinfo = next(c for c in head["calibrations"] if c["name"] == cal)
        none = list(s.get(cal, None, None, None, "none").values())
        none_its = median([r["iterations"] for r in none]) if none else float("nan")
        rep.section(f"decision-{cal}", f"Calibration `{cal}`: the decision")
        rep.para(f"{cinfo['about']}. Target score {cinfo['target_score']}; plain GRPO needs "
                 f"{none_its:.0f} iterations (median), "
                 f"{median([r['seconds'] / 3600 for r in none]):.1f} h on the reserved GPUs.")
        law = law_gains(s, cal, traces, ratios, startups)
        bo = next((b for b in s.best if b["best_of_n"] == cal), None)
        placed = []
        if law:
            placed.append(f"the law's own gain for async on these traces: {law[0]:.2f} "
                          f"[{law[1]:.2f}, {law[2]:.2f}]")
        if bo:
            placed.append("the law's best-of-N (G = 16, fresh full-step pools, DanceGRPO's "
                          "setting): " + ", ".join(f"N = {q['candidates']}: {q['gain']:.2f}"
                                                   for q in bo["pools"]))
        rep.para("Where the gains fall: " + "; ".join(placed) + ".")
        # Headline: each alternative at the default start-up and price, per ratio.
        rows = []
        for alt in ALTERNATIVES:
            row = [alt]
            for ratio in ratios:
                be = s.breakeven(cal, traces, ratio, default_startup, alt, default_price)
                row.append(cell(be))
                if be:
                    cells.append({"calibration": cal, "alternative": alt, "ratio": ratio,
                                  "startup": default_startup, "price": default_price,
                                  "time": be["time"], "cost": be["cost"]})
            rows.append(row)
        rep.para(f"Break-even gain, time / cost, at start-up {default_startup:g} s and spot at "
                 f"{default_price:g} x reserved (alternatives in the order a team weighs them):")
        rep.table(["against"] + [f"1:{r:g}" for r in ratios], rows)
        # The map against none-matched over (start-up, price).
        rep.section(f"map-{cal}", f"Calibration `{cal}`: the map against none-matched")
        rows = []
        for startup in startups:
            for price in prices:
                row = [f"{startup:g} s", f"{price:g}"]
                for ratio in ratios:
                    be = s.breakeven(cal, traces, ratio, startup, "none-matched", price)
                    row.append(cell(be))
                    if be:
                        cells.append({"calibration": cal, "alternative": "none-matched",
                                      "ratio": ratio, "startup": startup, "price": price,
                                      "time": be["time"], "cost": be["cost"]})
                rows.append(row)
        rep.para("Break-even gain (time / cost) against none-matched: Spotlight wins a cell when "
                 "the gain selection really brings is above both numbers.")
        rep.table(["start-up", "spot price"] + [f"1:{r:g}" for r in ratios], rows)
        series = []
        for ratio in ratios:
            for startup in startups:
                ys = []
                for price in prices:
                    be = s.breakeven(cal, traces, ratio, startup, "none-matched", price)
                    ys.append(be["cost"][0] if be else None)
                if all(y is not None for y in ys):
                    series.append({"name": f"1:{ratio:g}, start-up {startup:g} s",
                                   "x": prices, "y": ys})
        if series:
            rep.block({"type": "line_chart",
                       "title": f"{cal}: break-even gain against none-matched (cost)",
                       "x_label": "spot price / reserved price",
                       "y_label": "break-even gain", "series": series})
        rows = []
        for alt in ("offload", "offload-pipelined", "none"):
            for startup in startups:
                row = [alt, f"{startup:g} s"]
                for ratio in ratios:
                    row.append(cell(s.breakeven(cal, traces, ratio, startup, alt, default_price)))
                rows.append(row)
        rep.para(f"The same against the other alternatives (spot at {default_price:g} x "
                 "reserved):")
        rep.table(["against", "start-up"] + [f"1:{r:g}" for r in ratios], rows)
        # Times and costs as simulated with the law's own learning.
        rows = []
        for ratio in ratios:
            for mode in ("async", "offload", "offload-pipelined", "none-matched"):
                rs = [r for t in traces
                      for r in s.get(cal, t, ratio, default_startup, mode).values()]
                if not rs:
                    continue
                rows.append([f"1:{ratio:g}", mode, fmt(median([r["iterations"] for r in rs]),
                                                       "{:.0f}"),
                             fmt(median([r["seconds"] / 3600 for r in rs])),
                             fmt(median([r["cost"] for r in rs]), "{:.0f}"),
                             fmt(median([r["mean_held_spot"] for r in rs]), "{:.1f}"),
                             fmt(median([r["spot_busy_share"] for r in rs])),
                             fmt(median([r["mean_wait_seconds"] for r in rs]), "{:.1f}")])
        rep.para(f"With the learning law's own gain (start-up {default_startup:g} s, spot at "
                 f"{default_price:g}; medians over traces and offsets; none: "
                 f"{median([r['seconds'] / 3600 for r in none]):.2f} h, "
                 f"{median([r['cost'] for r in none]):.0f}):")
        rep.table(["ratio", "mode", "iterations", "time (h)", "cost", "spot GPUs held",
                   "spot busy", "trainer wait (s/iteration)"], rows)

    # Measured gains and the law's fit.
    rep.section("law", "The learning law and the measured gains")
    rep.para(
        "Law `contrast` (tools/simulator/learning_model.hpp): each prompt has a category with a "
        "skill of its own; a trained group moves its prompt's logit by its own contrast "
        "s_g = sum_j A_j (r_j - mean) / G, the exact policy-gradient step of a prompt whose reward "
        "is logistic in one logit, so a flat group teaches nothing and a selected group teaches "
        "what it contains. A selected group's contrast counts selection_efficiency times (fitted). "
        "What selection gains is then a consequence of the reward (binary or partial), of the "
        "prompts' spread, of N and G and of what exploration observes, and not bounded.")
    if a.fitted:
        with open(a.fitted) as f:
            fitted = json.load(f)
        lp = fitted["params"]
        rep.para(f"Fitted on `{fitted['source']}` (configurations "
                 f"{', '.join(fitted.get('fitted_configurations', []))}): eta {lp['eta']:.4g}, "
                 f"selection efficiency {lp['selection_efficiency']:.3f}, local share "
                 f"{lp['local_share']:g} (the partial-credit runs do not identify it), step noise "
                 f"w {lp['step_noise']:.3f}, validation noise {lp['validation_noise']:.4f}; "
                 f"z0 {lp['z0']:.3f}, sigma_d {lp['sigma_d']:.3f}, K {lp['reward_levels']}, "
                 f"f_stale {lp['stale_flip']:.3f}, gamma {lp['steps_gamma']:.3f}.")
    rows = []
    for path in a.gains_check:
        with open(path) as f:
            g = json.load(f)
        for x in g["gains"]:
            held = x["label"] not in g.get("fitted_configurations", [])
            ci = x["ci"]
            name = os.path.basename(path).replace(".json", "")
            rows.append([name[len("gains-"):] if name.startswith("gains-") else name,
                         x["label"], "held out" if held else "fitted",
                         f"{x['measured_gain']:.2f}",
                         f"[{fmt(ci[0])}, {fmt(ci[1])}]", f"{x['simulated_gain']:.2f}",
                         "within" if x["within"] else
                         ("too little" if x["too_little"] else "too much")])
    if rows:
        rep.para("Measured gains of selection (end progress over plain GRPO's, paired bootstrap "
                 "95% over seeds) against the law's: the check fails on too little and on too "
                 "much (calibration_test). These are partial-credit runs on the embedded task; "
                 "the strict (binary) reward's gains are not measured yet.")
        rep.table(["measured in", "configuration", "fit", "measured gain", "95% interval",
                   "law", "verdict"], rows)

    if a.predictions:
        with open(a.predictions) as f:
            text = f.read().rstrip()
        rep.para("The law's gains where nothing is measured yet (`spotlight-sim predict`, end "
                 "progress of the expected score over none's after 30 iterations of 8 prompts): "
                 "the fit's partial credit, then the embedded task under the strict reward (K = 1) "
                 "at the per-category base rates its validations measured (single object 0.63, two "
                 "objects 0.15, counting 0.19, position 0.03), groups of 4 and of 8.")
        rep.lines.append("```\n" + text + "\n```\n")
        rep.block({"type": "preformatted", "text": text})

    # Which assumption moves the answer most.
    sens_rows = []
    base_cal = "published" if "published" in s.calibrations() else s.calibrations()[0]
    sens_ratio = 2 if 2 in ratios else ratios[len(ratios) // 2]

    def be_cost(study, startup=None, price=None):
        be = study.breakeven(base_cal, study.head["traces"], sens_ratio,
                             startup if startup is not None else default_startup,
                             "none-matched", price if price is not None else default_price)
        return be["cost"] if be else None

    def be_time(study, startup=None, price=None):
        be = study.breakeven(base_cal, study.head["traces"], sens_ratio,
                             startup if startup is not None else default_startup,
                             "none-matched", price if price is not None else default_price)
        return be["time"] if be else None

    base_c, base_t = be_cost(s), be_time(s)
    swings = []

    def add(name, low_label, low, high_label, high):
        lc, ht = low, high
        span = [v for v in (lc[0], ht[0]) if v is not None]
        swing = max(v[0] for v in span) - min(v[0] for v in span) if len(span) == 2 else 0
        swings.append((swing, name))
        sens_rows.append([name, low_label, show(lc[0]) + " / " + show(lc[1]), high_label,
                          show(ht[0]) + " / " + show(ht[1]), f"{swing:.2f}"])

    if len(startups) > 1:
        add("spot start-up", f"{min(startups):g} s",
            (be_cost(s, startup=min(startups)), be_time(s, startup=min(startups))),
            f"{max(startups):g} s",
            (be_cost(s, startup=max(startups)), be_time(s, startup=max(startups))))
    add("spot price", f"{min(prices):g}", (be_cost(s, price=min(prices)),
                                          be_time(s, price=min(prices))),
        f"{max(prices):g}", (be_cost(s, price=max(prices)), be_time(s, price=max(prices))))
    dp = costs["dp_efficiency_per_doubling"]

    def with_dp(value):
        costs["dp_efficiency_per_doubling"] = value
        out_ = (be_cost(s), be_time(s))
        costs["dp_efficiency_per_doubling"] = dp
        return out_

    add("none-matched's data-parallel efficiency per doubling", "0.8", with_dp(0.8), "1.0",
        with_dp(1.0))
    for spec in a.sensitivity:
        name, rest = spec.split("=", 1)
        (ll, lp_), (hl, hp) = [x.split(":", 1) for x in rest.split(",")]
        lo, hi = Study(lp_), Study(hp)
        add(name, ll, (be_cost(lo), be_time(lo)), hl, (be_cost(hi), be_time(hi)))
    swings.sort(reverse=True)
    rep.section("sensitivity", "Which assumption moves the answer most")
    rep.para(f"Break-even gain against none-matched (cost / time) in calibration `{base_cal}` at "
             f"1:{sens_ratio:g}, start-up {default_startup:g} s, spot at {default_price:g}: "
             f"{show(base_c)} / {show(base_t)} at the defaults; each assumption moved alone to "
             "its low and high value (swing: of the cost break-even). Largest first: "
             + (swings[0][1] if swings else "n/a") + ".")
    sens_rows.sort(key=lambda r: -float(r[-1]))
    rep.table(["assumption", "low", "break-even cost / time", "high", "break-even cost / time",
               "swing (cost)"], sens_rows)

    # Assumptions.
    rep.section("assumptions", "Every figure and where it comes from")
    rows = [["t: one sample-step on one GPU", f"{costs['seconds_per_sample_step']} s",
             "measured" if costs["measured"] else "assumed", costs["source"]],
            ["trained step / sampler step", f"{costs['train_cost_factor']}", "assumed",
             "forward + backward with the log-probability"],
            ["spot start-up", ", ".join(f"{x:g}" for x in startups) + " s", "swept",
             "boot, image pull, weights load"],
            ["weights to the spot GPUs / async's publish", f"{costs['weight_publish_seconds']} s",
             "assumed", "offload waits for it; async's trainer pays it every iteration"],
            ["async: audit share", f"{costs.get('async_audit_share', 0)}", "measured (embedded)",
             "six-mode study: 0.051 against none's 0.018"],
            ["async: least wait share", f"{costs.get('async_wait_share', 0)}",
             "measured (embedded)", "six-mode study: trainer wait share 0.254 (one spot core)"],
            ["offload-pipelined: progress of one-version-old rollouts relative to fresh ones",
             "; ".join(f"{c['name']} {c['learning']['offpolicy_efficiency']}"
                       for c in head["calibrations"]), "assumed", "not measured"],
            ["none-matched: data-parallel efficiency per doubling",
             f"{costs['dp_efficiency_per_doubling']}", "assumed",
             "until the data-parallel trainer measures it"],
            ["spot price", ", ".join(f"{x:g}" for x in prices) + " x reserved", "swept",
             "spot is typically 50-80% below reserved"],
            ["availability", ", ".join(short(t) for t in traces), "measured elsewhere",
             "16-node V100 spot traces, scaled to the pool's cap (assumed to carry over to "
             "H200 pools)"],
            ["reserved price", f"{costs['reserved_price_per_hour']} per GPU-hour", "unit",
             "every ratio is independent of it"]]
    for c in head["calibrations"]:
        lp = c["learning"]
        rows.append([f"learning law `{c['name']}`",
                     f"{lp.get('law', 'cosine')}: eta {lp['eta']:.4g}, K {lp['reward_levels']}, "
                     f"sigma_d {lp['sigma_d']:.3f}, C {lp.get('categories', 1)}, selection "
                     f"efficiency {lp.get('selection_efficiency', 1):.3f}, off-policy efficiency "
                     f"{lp['offpolicy_efficiency']}", "fitted / assumed", c["about"]])
    for f in s.figures:
        rows.append([f["what"], f["value"], "published" + ("" if f["certain"] else " (unsure)"),
                     f["source"] + (": " + f["note"] if f["note"] else "")])
    rep.table(["figure", "value", "measured or assumed", "source"], rows)

    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(rep.lines) + "\n")
    with open(os.path.join(out, "breakeven.json"), "w") as f:
        json.dump({"cells": cells, "sensitivity": [{"assumption": r[0], "low": r[1],
                                                    "low_breakeven": r[2], "high": r[3],
                                                    "high_breakeven": r[4], "swing": r[5]}
                                                   for r in sens_rows]}, f, indent=1)
    plot(out, s, traces, ratios, startups, prices)
    rep.section("figures", "The map")
    rep.block({"type": "figures", "figures": [
        {"file": "map.png", "caption": "Break-even gain against none-matched (cost) over the spot "
         "price, per reserved:spot ratio and start-up; Spotlight wins above a line"}]})
    with open(os.path.join(out, "page.json"), "w") as f:
        json.dump(rep.page, f, indent=1)
    print(f"wrote {out}/report.md, page.json, breakeven.json, map.png")


def plot(out, s, traces, ratios, startups, prices):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cals = s.calibrations()
    colours = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e"]
    fig, axes = plt.subplots(1, len(cals), figsize=(6 * len(cals), 4.4), squeeze=False)
    for col, cal in enumerate(cals):
        ax = axes[0][col]
        for k, ratio in enumerate(ratios):
            for startup, style in zip(startups, ["-", "--", ":"]):
                ys = []
                for price in prices:
                    be = s.breakeven(cal, traces, ratio, startup, "none-matched", price)
                    ys.append(be["cost"][0] if be else float("nan"))
                ax.plot(prices, ys, style, color=colours[k % len(colours)], marker="o", ms=3,
                        label=f"1:{ratio:g}, start-up {startup:g} s")
        ax.set_xlabel("spot price / reserved price")
        ax.set_ylabel("break-even gain against none-matched (cost)")
        ax.set_title(f"{cal}: Spotlight is cheaper above a line", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "map.png"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
