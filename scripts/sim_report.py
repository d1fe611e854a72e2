#!/usr/bin/env python3
"""Tables and plots of the cluster study (spotlight-sim study's JSON lines).

  scripts/sim_report.py deploy/sim/study.jsonl --out deploy/sim

Writes report.md and page.json (the same as a report page: `spotlight-sim page` renders it as
report.html) (every mode against every baseline, per calibration, trace and reserved:spot
ratio: medians over the trace offsets and 2.5-97.5% ranges of the ratios paired by offset; the
selection gain the paper's figures need), frontier.png (time against cost per trace, the Pareto
frontier over modes and ratios) and sensitivity.png (speed-up and saving against none as a
function of the assumed gain of selection in iterations).
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchmark_stats as st  # noqa: E402

MODES = ["none", "none-matched", "sync", "offload", "async", "async-reuse"]
BASELINES = ["none", "none-matched", "offload", "sync"]
COMPARED = ["offload", "async", "async-reuse", "none-matched"]


def median(xs):
    return st.percentile(xs, 50)


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
    return head, best, figures, runs


class Index:
    def __init__(self, runs):
        self.by = {}
        for r in runs:
            key = (r["calibration"], r["trace"], r["ratio"], r["mode"], r.get("gain"))
            self.by.setdefault(key, {})[r["offset"]] = r

    def get(self, calibration, trace, ratio, mode, gain=None):
        if mode in ("none", "sync"):
            return self.by.get((calibration, "", 0, mode, None), {})
        return self.by.get((calibration, trace, ratio, mode, gain), {})


def paired(a, b, field):
    """Per offset: a[field] / b[field] (reference over mode)."""
    out = []
    for k in sorted(set(a) & set(b)):
        x, y = a[k][field], b[k][field]
        out.append(x / y if y > 0 else st.INF)
    return out


def interval(values):
    return median(values), st.percentile(values, 2.5), st.percentile(values, 97.5)


def crossing(xs, ys, level):
    """Smallest x where the piecewise-linear curve (xs, ys) reaches `level`; None if never."""
    for i in range(len(xs)):
        if ys[i] >= level:
            if i == 0:
                return xs[0]
            x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
            return x0 + (level - y0) * (x1 - x0) / (y1 - y0) if y1 != y0 else x1
    return None


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


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("study")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    out = a.out or os.path.dirname(os.path.abspath(a.study))
    head, best, figures, runs = load(a.study)
    idx = Index(runs)
    calibrations = [c["name"] for c in head["calibrations"]]
    traces = head["traces"]
    ratios = head["ratios"]
    gains = head["gains"]
    costs = head["costs"]
    rep = Report("Cluster study: Spotlight against every baseline at Qwen-Image scale",
                 f"spotlight-sim study, {head['offsets']} trace offsets per configuration")
    rep.section("about", "How to read it")
    rep.para(f"Made by `scripts/sim-study` from `{os.path.basename(a.study)}` (spotlight-sim study). "
             "Every figure below is a **simulation** under the assumptions listed at the end; none "
             f"is a measurement of a cluster. Medians over {head['offsets']} starting offsets per "
             f"trace (run i starts at i/{head['offsets']} of the trace and uses learning seed i); "
             "ratios are paired by offset (reference / mode: > 1 means the mode is faster or "
             "cheaper), with the 2.5-97.5% range over offsets in brackets.")
    rep.para(f"Shape: {head['reserved_gpus']} reserved GPUs ({costs['hardware']}); "
             f"{head['prompts']} prompts x {head['group_size']} images per iteration; "
             f"{head['rollout_steps']} SDE steps per rollout, {head['trained_steps']} trained; t = "
             f"{costs['seconds_per_sample_step']} s per sample-step "
             f"({'measured' if costs['measured'] else 'assumed'}); spot = "
             f"{costs['spot_price_ratio']} x reserved; reserved:spot ratios 1:"
             + ", 1:".join(f"{r:g}" for r in ratios) + ".")

    needed = {}
    for cal in calibrations:
        cinfo = next(c for c in head["calibrations"] if c["name"] == cal)
        rep.section(f"calibration-{cal}", f"Calibration `{cal}`")
        rep.para(f"{cinfo['about']}. Target score {cinfo['target_score']}.")
        none = idx.get(cal, None, None, "none")
        sync = idx.get(cal, None, None, "sync")
        rows = []
        for name, rs in (("none", none), ("sync", sync)):
            if not rs:
                continue
            v = list(rs.values())
            rows.append([name, f"{sum(r['reached'] for r in v)}/{len(v)}",
                         fmt(median([r['iterations'] for r in v]), '{:.0f}'),
                         fmt(median([r['seconds'] / 3600 for r in v])),
                         fmt(median([r['cost'] for r in v]), '{:.0f}')])
        rep.table(["baseline (reserved GPUs only)", "reached", "iterations", "time (h)", "cost"],
                  rows)
        header = ["trace", "ratio", "mode", "reached", "iterations", "time (h)", "cost",
                  "spot GPUs held", "spot busy", "fallback prompts"]
        for b in BASELINES:
            header += [f"vs {b}: speed-up", f"vs {b}: cost ratio"]
        rows = []
        for trace in traces:
            for ratio in ratios:
                refs = {b: idx.get(cal, trace, ratio, b) for b in BASELINES}
                for mode in COMPARED:
                    rs = idx.get(cal, trace, ratio, mode)
                    if not rs:
                        continue
                    v = list(rs.values())
                    cells = [short(trace), f"1:{ratio:g}", mode,
                             f"{sum(r['reached'] for r in v)}/{len(v)}",
                             fmt(median([r['iterations'] for r in v]), "{:.0f}"),
                             fmt(median([r['seconds'] / 3600 for r in v])),
                             fmt(median([r['cost'] for r in v]), "{:.0f}"),
                             fmt(median([r['mean_held_spot'] for r in v]), "{:.1f}"),
                             fmt(median([r['spot_busy_share'] for r in v])),
                             fmt(median([r['fallback_prompts'] for r in v]), "{:.0f}")]
                    for b in BASELINES:
                        if b == mode or not refs[b]:
                            cells += ["", ""]
                            continue
                        for field in ("seconds", "cost"):
                            m, lo, hi = interval(paired(refs[b], rs, field))
                            cells.append(f"{fmt(m)} [{fmt(lo)}, {fmt(hi)}]")
                    rows.append(cells)
        rep.table(header, rows)
        # Sensitivity: assumed gains.
        rep.section(f"gain-{cal}", f"`{cal}`: what selection must gain", level=3)
        rep.para("async stopped after iterations(none)/g iterations for an assumed gain g of "
                 "selection in iterations to the target; its time and cost against none at each "
                 "ratio (median over traces and offsets):")
        needed[cal] = {}
        rows = []
        for ratio in ratios:
            speed, cheap = [], []
            cells = [f"1:{ratio:g}"]
            for g in gains:
                s_all, c_all = [], []
                for trace in traces:
                    rs = idx.get(cal, trace, ratio, "async-gain", g)
                    s_all += paired(none, rs, "seconds")
                    c_all += paired(none, rs, "cost")
                speed.append(median(s_all) if s_all else float("nan"))
                cheap.append(median(c_all) if c_all else float("nan"))
                cells.append(f"{fmt(speed[-1])} / {fmt(cheap[-1])}")
            rows.append(cells)
            needed[cal][ratio] = {
                "speed-up 4x": crossing(gains, speed, 4.0),
                "cost ratio 1.4x": crossing(gains, cheap, 1.4),
                "cost ratio 6.4x": crossing(gains, cheap, 6.4),
                "speed": speed, "cheap": cheap}
        rep.table(["ratio"] + [f"g={g:g}: speed-up / cost ratio" for g in gains], rows)
        for what, title in (("speed", "speed-up against none"), ("cheap", "cost ratio against none")):
            rep.block({"type": "line_chart", "title": f"{cal}: {title} for an assumed gain g",
                       "x_label": "g = iterations(none) / iterations(async)",
                       "y_label": f"{title} (median)",
                       "series": [{"name": f"1:{r:g}", "x": gains,
                                   "y": [None if math.isnan(v) else v
                                         for v in needed[cal][r][what]]} for r in ratios]})
        rep.para("Gain g of selection (iterations of none / iterations of async) at which async "
                 "reaches the paper's figures against none (linear interpolation between the "
                 "simulated gains; 'beyond' if not within them):")
        rows = []
        for ratio in ratios:
            n = needed[cal][ratio]
            rows.append([f"1:{ratio:g}"] + [
                fmt(n[k], "{:.2f}") if n[k] is not None else f"beyond {gains[-1]:g}"
                for k in ("speed-up 4x", "cost ratio 1.4x", "cost ratio 6.4x")])
        rep.table(["ratio", "4x sooner", "1.4x cheaper", "6.4x cheaper"], rows)
    if best:
        rep.section("best-of-n", "Best-of-N pools (the model's answer to DanceGRPO's experiment)")
        g = best[0].get("group_size", "G")
        rep.para(f"Iterations to the target training on the G = {g} max-variance images of N "
                 "explored with full steps and fresh weights, against plain GRPO (N = G): "
                 "DanceGRPO trained on the top 8 and bottom 8 rewards of pools of 16, 64 and 256 "
                 "images per prompt (Stable Diffusion). Its curves' numbers were not read here, so "
                 "this is the model's prediction beside their experiment, not a fit to it.")
        rows = []
        for b in best:
            for pool in b.get("pools", []):
                rows.append([b["best_of_n"], pool["candidates"], pool["iterations"],
                             fmt(pool["gain"])])
        rep.table(["calibration", "N", "iterations", "gain"], rows)
    rep.section("assumptions", "Assumptions and sources")
    rows = [
        ["t: one sample, one step, one GPU", f"{costs['seconds_per_sample_step']} s",
         "measured" if costs["measured"] else "assumed", costs["source"]],
        ["trained step / sampler step", costs["train_cost_factor"], "assumed",
         "forward + backward"],
        ["spot GPU start-up", f"{costs['explorer_startup_seconds']} s", "assumed",
         "boot and weights"],
        ["weights to spot GPUs (offload, per iteration)", f"{costs['weight_publish_seconds']} s",
         "assumed", "on the critical path of offload only"],
        ["data-parallel efficiency per doubling", costs["dp_efficiency_per_doubling"], "assumed",
         "none-matched's extra reserved GPUs"],
        ["spot price", f"{costs['spot_price_ratio']} x reserved", "assumed",
         "the reference result's 69-77% below reserved; billed per second while held"],
        ["planner", f"time margin {head['time_margin']}, trainer waits at most "
         f"{head['max_wait_share']} x its compute", "configuration", "the services' defaults"]]
    for c in head["calibrations"]:
        lp = c["learning"]
        rows.append([f"learning model `{c['name']}`",
                     f"z0 {lp['z0']:.3f}, sigma_d {lp['sigma_d']:.3f}, K {lp['reward_levels']}, "
                     f"f_stale {lp['stale_flip']:.3f}, gamma {lp['steps_gamma']:.2f}, eta "
                     f"{lp['eta']:.4g}, c {lp['noise']:.4g}, w {lp['step_noise']:.3f}, off-policy "
                     f"efficiency {lp['offpolicy_efficiency']}", "fitted / assumed", c["about"]])
    for f in figures:
        rows.append([f["what"], f["value"], "published" + ("" if f["certain"] else " (unsure)"),
                     f["source"] + (": " + f["note"] if f["note"] else "")])
    rep.table(["figure", "value", "measured or assumed", "source"], rows)
    lines = rep.lines
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "needed.json"), "w") as f:
        json.dump(needed, f, indent=1)
    plots(out, head, idx, calibrations, traces, ratios, gains, needed)
    rep.section("figures", "Time against cost, and the gain selection must bring")
    rep.block({"type": "figures", "figures": [
        {"file": "frontier.png", "caption": "Median time and cost to the target per trace; grey: "
         "the Pareto frontier over modes and reserved:spot ratios"},
        {"file": "sensitivity.png", "caption": "Speed-up and cost ratio against none for an "
         "assumed gain of selection"}]})
    with open(os.path.join(out, "page.json"), "w") as f:
        json.dump(rep.page, f, indent=1)
    print(f"wrote {out}/report.md, page.json, frontier.png, sensitivity.png")


def plots(out, head, idx, calibrations, traces, ratios, gains, needed):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    markers = {"offload": "s", "async": "o", "async-reuse": "^", "none-matched": "D"}
    colours = {r: c for r, c in zip(ratios, ["#1b9e77", "#d95f02", "#7570b3", "#e7298a",
                                             "#66a61e", "#e6ab02"])}
    fig, axes = plt.subplots(len(calibrations), len(traces),
                             figsize=(5.2 * len(traces), 4.4 * len(calibrations)), squeeze=False)
    for row, cal in enumerate(calibrations):
        for col, trace in enumerate(traces):
            ax = axes[row][col]
            points = []
            for name in ("none", "sync"):
                rs = list(idx.get(cal, None, None, name).values())
                if rs:
                    x, y = median([r["seconds"] / 3600 for r in rs]), median([r["cost"] for r in rs])
                    ax.scatter([x], [y], c="black", marker="x" if name == "none" else "+", s=70,
                               label=name if row == 0 and col == 0 else None, zorder=3)
                    points.append((x, y))
            for ratio in ratios:
                for mode, marker in markers.items():
                    rs = list(idx.get(cal, trace, ratio, mode).values())
                    if not rs:
                        continue
                    x, y = median([r["seconds"] / 3600 for r in rs]), median([r["cost"] for r in rs])
                    ax.scatter([x], [y], c=colours[ratio], marker=marker, s=40, zorder=3,
                               label=f"{mode} 1:{ratio:g}" if row == 0 and col == 0 else None)
                    points.append((x, y))
            front = []
            for x, y in sorted(points):
                if not front or y < front[-1][1]:
                    front.append((x, y))
            if front:
                ax.step([p[0] for p in front], [p[1] for p in front], where="post", color="grey",
                        lw=1, zorder=2)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{cal}: {short(trace)}", fontsize=9)
            ax.set_xlabel("time to target (h, median)")
            ax.set_ylabel("cost to target (median)")
            ax.grid(alpha=0.3, which="both")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=7)
    fig.suptitle("Simulated time and cost to the target; grey: Pareto frontier over modes and "
                 "reserved:spot ratios", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 0.96))
    fig.savefig(os.path.join(out, "frontier.png"), dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(calibrations), figsize=(6 * len(calibrations), 4.4),
                             squeeze=False)
    for col, cal in enumerate(calibrations):
        ax = axes[0][col]
        for ratio in ratios:
            n = needed[cal][ratio]
            ax.plot(gains, n["speed"], "-o", color=colours[ratio], ms=3,
                    label=f"speed-up 1:{ratio:g}")
            ax.plot(gains, n["cheap"], "--", color=colours[ratio], label=f"cost ratio 1:{ratio:g}")
        ax.axhline(4, color="black", lw=1)
        ax.axhspan(1.4, 6.4, color="grey", alpha=0.12)
        ax.plot(gains, gains, ":", color="grey", lw=1, label="y = g")
        ax.set_xlabel("assumed gain of selection g = iterations(none) / iterations(async)")
        ax.set_ylabel("against none (median over traces and offsets)")
        ax.set_title(f"{cal}: line at 4x (paper's speed-up), band 1.4-6.4x (its savings)",
                     fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sensitivity.png"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
