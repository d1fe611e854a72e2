#!/usr/bin/env python3
"""Writes the Grafana dashboards in this folder (run-overview, exploration, systems) from the
panel lists below: edit a list, run `python3 dashboards/generate.py`, commit the JSON.

Every query may use only metrics some service exports (tests/dashboards checks it against the
sources) plus Prometheus's own `up`. The compose end-to-end test (tests/compose) checks that every
panel's query returns data from a running job.

Text panels (kind "text") show HTML instead of a query: the run overview's newest validation grid
is an <img> of the trainer's /validation/latest.png, loaded by the viewer's browser from the URL in
the dashboard variable `trainer_url` (default: compose's published trainer port). Grafana must
render the panel's HTML as is: compose sets GF_PANELS_DISABLE_SANITIZE_HTML (see docs/dashboards.md)."""
import json
import os

DATASOURCE = {"type": "prometheus", "uid": "spotlight-prometheus"}

# Where the viewer's browser reaches the trainer's metrics port (compose publishes it on loopback).
TRAINER_URL = "http://127.0.0.1:9100"
# The newest validation grid; ${__to} changes on every refresh, so the browser fetches it again.
GRID_HTML = ('<img src="${trainer_url}/validation/latest.png?t=${__to}" width="100%" '
             'alt="newest validation grid (none yet, or the trainer is not reachable at '
             '${trainer_url})">')

# (title, unit, [(expr, legend)], kind, description); kind "timeseries" or "stat".
RUN_OVERVIEW = [
    ("Validation score (GenEval-like)", "percentunit",
     [("spotlight_trainer_validation_score", "validation score")], "timeseries",
     "Held-out prompts, fixed seeds, ODE sampler; updated every validation.every iterations."),
    ("Newest validation grid", "none", GRID_HTML, "text",
     "The first validation prompts with fixed seeds, each image captioned with its reward (green: "
     "correct); served by the trainer at /validation/latest.png. Set trainer_url above to where "
     "your browser reaches the trainer's metrics port."),
    ("Iterations", "none",
     [("spotlight_trainer_iterations_completed", "completed"),
      ("spotlight_trainer_iterations_target", "target")], "timeseries",
     "Iterations trained so far and the run's trainer.iterations."),
    ("Rollout reward", "none",
     [("spotlight_trainer_reward_mean", "mean"), ("spotlight_trainer_reward_std", "std")],
     "timeseries", "Reward of the on-policy rollouts of the last iteration."),
    ("Validation reward", "none",
     [("spotlight_trainer_validation_reward", "validation mean reward")], "timeseries",
     "Mean reward of the newest validation."),
    ("Estimated time to the last iteration", "s",
     [("(spotlight_trainer_iterations_target - spotlight_trainer_iterations_completed)"
       " * spotlight_trainer_iteration_seconds_sum / spotlight_trainer_iteration_seconds_count",
       "seconds left")], "stat",
     "Iterations left times the mean iteration time so far."),
    ("Cost so far", "none",
     [("sum(spotlight_trainer_cost_total)", "trainer (reserved)"),
      ("sum(spotlight_explorer_cost_total)", "explorers now running (spot)")], "timeseries",
     "Device cost at the cost.* prices; explorers' counters restart with each replica."),
    ("Mean iteration time", "s",
     [("spotlight_trainer_iteration_seconds_sum / spotlight_trainer_iteration_seconds_count",
       "mean")], "stat", "Wall time per iteration, staleness audit excluded."),
]

EXPLORATION = [
    ("Queue depth", "none",
     [("spotlight_planner_queue_depth", "not acknowledged"),
      ("spotlight_planner_dead_letters", "dead letters")], "timeseries",
     "Seed tasks waiting or leased, and tasks in the dead-letter stream."),
    ("Oldest lease age", "s",
     [("spotlight_planner_oldest_lease_age_seconds", "oldest lease")], "timeseries",
     "Idle time of the stalest lease; a dead explorer's leases grow until reclaimed."),
    ("Queue flow", "ops",
     [("rate(spotlight_planner_queue_leased_total[1m])", "leased"),
      ("rate(spotlight_planner_queue_acked_total[1m])", "acknowledged"),
      ("rate(spotlight_planner_queue_reclaimed_total[1m])", "reclaimed"),
      ("rate(spotlight_planner_queue_dead_lettered_total[1m])", "dead-lettered")], "timeseries",
     "Queue-wide rates from the totals kept in Redis."),
    ("Reclaims and hand-backs", "none",
     [("spotlight_planner_queue_reclaimed_total", "reclaimed (expired leases)"),
      ("spotlight_planner_released_leases_total", "released (dead explorers)")], "timeseries",
     "Leases that had to be re-delivered."),
    ("Explorers", "none",
     [("spotlight_planner_live_explorers", "live (heartbeat)"),
      ("spotlight_planner_desired_explorers", "desired (planner)"),
      ("count(up{job=\"explorer\"} == 1)", "scraped")], "timeseries",
     "Explorers with a fresh heartbeat, the pool at which the widest exploration would finish "
     "in time (what an autoscaler follows), and explorer replicas Prometheus reaches."),
    ("Exploration time", "s",
     [("spotlight_planner_predicted_exploration_seconds", "predicted"),
      ("spotlight_planner_exploration_seconds", "measured")], "timeseries",
     "The planner's predicted and measured time to explore an iteration."),
    ("Purged tasks", "none",
     [("sum by (reason) (spotlight_planner_purged_tasks_total)", "{{reason}}"),
      ("spotlight_planner_uniform_prompts_total", "uniform prompts")], "timeseries",
     "Seed tasks removed unrun (iteration passed, prompt explored enough, budget spent) and "
     "prompts whose explored rewards were all alike."),
    ("Staleness (versions)", "none",
     [("sum(rate(spotlight_explorer_staleness_versions_sum[2m]))"
       " / sum(rate(spotlight_explorer_staleness_versions_count[2m]))", "mean"),
      ("max(spotlight_trainer_weights_version) - min(spotlight_explorer_weights_version)",
       "trainer - oldest explorer")], "timeseries",
     "Iteration explored for minus the weights version used (design: 1)."),
    ("Kendall tau (staleness audit)", "none",
     [("spotlight_trainer_kendall_tau", "tau")], "timeseries",
     "Rank correlation of stale and fresh rewards of the same seeds."),
    ("Selection", "none",
     [("spotlight_trainer_selected_group_variance", "selected-group variance"),
      ("spotlight_trainer_zero_std_group_ratio", "zero-std group ratio")], "timeseries",
     "What exploration buys: variance of the selected groups, groups that teach nothing."),
    ("Explorer samples/s", "none",
     [("sum(rate(spotlight_explorer_tasks_completed_total[1m]))", "all explorers"),
      ("spotlight_explorer_samples_per_second", "{{instance}} (last chunk)")], "timeseries",
     "Seed tasks explored per second."),
    ("Preemptions", "none",
     [("sum(spotlight_explorer_preemption_notices_total)", "notices (SIGTERM)"),
      ("sum(spotlight_explorer_inflight_commits_total)", "in-flight commits"),
      ("sum(spotlight_explorer_resumes_total)", "resumes")], "timeseries",
     "Preemption notices of the explorers now running, the samples they committed mid-way and "
     "the committed samples resumed elsewhere."),
    ("Fallback prompts", "none",
     [("spotlight_trainer_fallback_prompts_total", "prompts on random seeds")], "timeseries",
     "Prompts whose explored seeds were not ready in time."),
    ("Rollouts reused", "none",
     [("sum by (source) (rate(spotlight_trainer_rollouts_total[2m]))", "{{source}}/s"),
      ("sum(rate(spotlight_explorer_trajectories_kept_total[2m]))", "trajectories kept/s")],
     "timeseries",
     "Rollouts the trainer took from exploration instead of sampling (exploration.reuse), and "
     "the trajectories explorers keep for it."),
    ("Importance ratio", "none",
     [("spotlight_trainer_importance_ratio_mean", "mean pi/pi_old"),
      ("spotlight_trainer_importance_log_ratio_max_abs", "max |log ratio|"),
      ("spotlight_trainer_clip_fraction", "clipped fraction")], "timeseries",
     "Last iteration's ratios over trained sample-steps: 1 and 0 on-policy at the first update, "
     "off 1 when trained on stale trajectories (exploration.reuse=off_policy)."),
]

SYSTEMS = [
    ("Trainer step time split", "s",
     [("rate(spotlight_trainer_step_seconds_total[2m])", "{{phase}}")], "timeseries",
     "Seconds per second in each phase: rollout, reward, train, wait_for_seeds, audit."),
    ("Last iteration by phase", "s",
     [("spotlight_trainer_step_seconds", "{{phase}}")], "timeseries",
     "The phases of the newest iteration."),
    ("Explorer chunk time split", "s",
     [("sum by (phase) (rate(spotlight_explorer_chunk_seconds_total[2m]))", "{{phase}}")],
     "timeseries",
     "Seconds per second all explorers spend in each phase of a chunk of seed tasks: sampling "
     "the images, scoring them at the reward service, recording results and trajectories."),
    ("Planner pass time split", "s",
     [("rate(spotlight_planner_plan_seconds_total[2m])", "{{phase}}")], "timeseries",
     "Seconds per second the planner spends in each phase of a planning pass: deciding the "
     "exploration, enqueueing seed tasks, recording the plan and reporting progress."),
    ("Throughput", "none",
     [("rate(spotlight_trainer_samples_total[2m])", "trainer rollout samples/s"),
      ("sum(rate(spotlight_explorer_tasks_completed_total[2m]))", "explored seeds/s"),
      ("rate(spotlight_reward_images_scored_total[2m])", "images scored/s")], "timeseries",
     "Samples per second through each service."),
    ("Reward service batches", "none",
     [("histogram_quantile(0.5, sum by (le) (rate(spotlight_reward_batch_size_images_bucket[2m])))",
       "median images per batch"),
      ("rate(spotlight_reward_requests_total[2m])", "requests/s")], "timeseries",
     "Batching of scoring requests from the trainer and every explorer."),
    ("Explorer weights fetch", "s",
     [("sum(rate(spotlight_explorer_weights_fetch_seconds_sum[5m]))"
       " / sum(rate(spotlight_explorer_weights_fetch_seconds_count[5m]))", "mean fetch+load"),
      ("sum(spotlight_explorer_weights_loaded_total)", "versions loaded")], "timeseries",
     "Pulling a new weights version from the weight store."),
    ("Errors", "none",
     [("sum(rate(spotlight_explorer_redis_errors_total[2m]))", "explorer Redis errors/s"),
      ("rate(spotlight_planner_redis_errors_total[2m])", "planner failed passes/s"),
      ("sum(rate(spotlight_reward_errors_total[2m]))", "reward error replies/s")], "timeseries",
     "Should stay at zero."),
    ("Device-seconds per second", "none",
     [("sum by (class, state) (rate(spotlight_trainer_device_seconds_total[2m]))",
       "trainer {{class}} {{state}}"),
      ("sum by (class, state) (rate(spotlight_explorer_device_seconds_total[2m]))",
       "explorers {{class}} {{state}}")], "timeseries",
     "Devices held, busy or idle: reserved (trainer) and spot (explorers)."),
    ("Trainer ranks: time per phase", "s",
     [("rate(spotlight_trainer_rank_phase_seconds_total[2m])", "rank {{rank}} {{phase}}")],
     "timeseries",
     "Data-parallel trainer (trainer.ranks): seconds per second each rank spends rolling out its "
     "samples, training its micro-batches and all-reducing gradients; one series per rank and "
     "phase (a rank's series stand alone when the others are idle)."),
    ("Trainer ranks: last iteration and all-reduce", "none",
     [("spotlight_trainer_rank_iteration_seconds", "rank {{rank}} iteration s"),
      ("rate(spotlight_trainer_rank_allreduce_bytes_total[2m])", "rank {{rank}} all-reduce B/s")],
     "timeseries",
     "Each rank's last iteration time (they should agree) and its gradient all-reduce traffic."),
    ("Targets up", "none", [("up", "{{job}} {{instance}}")], "timeseries",
     "Every scraped service."),
]


def panel(index, grid, title, unit, queries, kind, description):
    if kind == "text":  # `queries` is the panel's HTML
        return {
            "id": index + 1,
            "type": "text",
            "title": title,
            "description": description,
            "gridPos": grid,
            "options": {"mode": "html", "content": queries},
        }
    refs = "ABCDEFGH"
    return {
        "id": index + 1,
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": grid,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True}}
        if kind == "timeseries" else {"reduceOptions": {"calcs": ["lastNotNull"]}},
        "targets": [{"refId": refs[i], "datasource": DATASOURCE, "expr": expr,
                     "legendFormat": legend} for i, (expr, legend) in enumerate(queries)],
    }


def dashboard(uid, title, panels):
    variables = []
    if any(p[3] == "text" and "${trainer_url}" in p[2] for p in panels):
        variables.append({
            "name": "trainer_url",
            "label": "Trainer metrics URL (as your browser reaches it)",
            "type": "textbox",
            "query": TRAINER_URL,
            "current": {"text": TRAINER_URL, "value": TRAINER_URL},
            "options": [{"selected": True, "text": TRAINER_URL, "value": TRAINER_URL}],
            "hide": 0,
        })
    board = {
        "uid": uid,
        "title": title,
        "tags": ["spotlight"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": False,
        "refresh": "10s",
        "time": {"from": "now-30m", "to": "now"},
        "panels": [panel(i, grid, *p) for i, (grid, p) in enumerate(zip(layout(panels), panels))],
    }
    if variables:
        board["templating"] = {"list": variables}
    return board


def layout(panels):
    """Left to right, top to bottom: stats 8 wide, graphs 12 wide, text (images) 12 wide and tall."""
    x = y = row_height = 0
    for p in panels:
        w, h = {"stat": (8, 5), "text": (12, 14)}.get(p[3], (12, 8))
        if x + w > 24:
            x, y, row_height = 0, y + row_height, 0
        yield {"x": x, "y": y, "w": w, "h": h}
        x += w
        row_height = max(row_height, h)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, uid, title, panels in [
        ("run-overview", "spotlight-run", "Spotlight / Run overview", RUN_OVERVIEW),
        ("exploration", "spotlight-exploration", "Spotlight / Exploration", EXPLORATION),
        ("systems", "spotlight-systems", "Spotlight / Systems", SYSTEMS),
    ]:
        with open(os.path.join(here, name + ".json"), "w") as f:
            json.dump(dashboard(uid, title, panels), f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
