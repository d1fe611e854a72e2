#!/usr/bin/env python3
"""Compose end-to-end test (CTest label `compose`).

Builds the services' image from the binaries of this build (deploy/docker/Dockerfile.prebuilt),
makes the base images from Debian's packages where no registry has them (scripts/offline-images),
starts compose.yaml with the `smoke` recipe and 2 explorers, scales to 3 explorers while the job
runs, lets the job finish, checks that every query of every dashboard panel returned data in
Prometheus during the run, and takes everything down with its volumes. With --trainer-ranks 2 the
trainer is a data-parallel group of two containers (profile `ranks`): both ranks must finish, and
Prometheus must have scraped rank 1's per-rank series.

Installs docker.io and docker-compose (Debian) and starts dockerd when missing and running as root;
exits 77 (CTest: skipped) with the reason only where docker cannot run at all. Grafana's image is
not buildable from Debian's packages: without it the job runs without Grafana (said so); the
dashboards' JSON is checked by tests/dashboards. Measured figures go to stdout and to
--result (JSON).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

SKIP = 77
IMAGE = "spotlight:compose-test"
SERVICES = ["redis", "reward", "planner", "trainer", "explorer", "prometheus"]
GRAFANA_IMAGE_DEFAULT = "grafana/grafana-oss:10.4.2"


class Failure(Exception):
    pass


def log(message):
    print(f"[compose_e2e {time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(cmd, check=True, capture=False, env=None, timeout=None):
    result = subprocess.run(cmd, check=False, text=True, env=env, timeout=timeout,
                            stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.STDOUT if capture else None)
    if check and result.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited {result.returncode}"
                      + (f":\n{result.stdout[-3000:]}" if capture else ""))
    return result


def wait_for(what, predicate, timeout_s, poll_s=2.0):
    """Polls `predicate` until it returns a truthy value or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(poll_s)


class Docker:
    """Makes docker usable: installs it (Debian) and starts dockerd when needed and possible."""

    def __init__(self, work):
        self.work = work
        self.dockerd = None

    def ensure(self):
        root = os.geteuid() == 0
        missing = [p for p, exe in [("docker.io", "dockerd"), ("docker-compose", "docker-compose"),
                                    ("mmdebstrap", "mmdebstrap")] if not shutil.which(exe)]
        if missing:
            if not (root and shutil.which("apt-get")):
                sys.exit(self.skip(f"{', '.join(missing)} missing and not root to install them"))
            log(f"installing {' '.join(missing)} from Debian")
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            run(["apt-get", "update", "-q"], env=env, capture=True)
            run(["apt-get", "install", "-y", "-q", "--no-install-recommends"] + missing, env=env,
                capture=True)
        if self.info_ok():
            return
        if not root:
            sys.exit(self.skip("docker daemon not reachable and not root to start one"))
        log("starting dockerd")
        dockerd_log = open(os.path.join(self.work, "dockerd.log"), "w")
        self.dockerd = subprocess.Popen(["dockerd"], stdout=dockerd_log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        try:
            wait_for("dockerd", lambda: self.dockerd.poll() is not None or self.info_ok(), 90, 1)
        except Failure:
            pass
        if not self.info_ok():
            tail = open(os.path.join(self.work, "dockerd.log")).read()[-2000:]
            self.stop()
            sys.exit(self.skip(f"dockerd does not start here:\n{tail}"))

    @staticmethod
    def info_ok():
        return run(["docker", "info"], check=False, capture=True).returncode == 0

    @staticmethod
    def skip(reason):
        print(f"SKIPPED: docker cannot run on this machine: {reason}", flush=True)
        return SKIP

    def stop(self):
        if self.dockerd and self.dockerd.poll() is None:
            self.dockerd.terminate()
            try:
                self.dockerd.wait(30)
            except subprocess.TimeoutExpired:
                self.dockerd.kill()


def image_exists(name):
    return run(["docker", "image", "inspect", name], check=False, capture=True).returncode == 0


def image_size_mb(name):
    out = run(["docker", "image", "inspect", "-f", "{{.Size}}", name], capture=True).stdout
    return round(int(out.strip()) / 1e6)


def build_image(source, build):
    """The runtime image from this build's binaries: a small context with bin/ and deploy/."""
    context = tempfile.mkdtemp(prefix="spotlight-image-")
    try:
        os.makedirs(os.path.join(context, "bin"))
        for folder, service in [("services", "trainer"), ("services", "planner"),
                                ("services", "explorer"), ("services", "reward"),
                                ("tools", "chaos")]:
            binary = os.path.join(build, folder, service, f"spotlight-{service}")
            if not os.path.exists(binary):
                raise Failure(f"{binary} is not built (run scripts/build first)")
            target = os.path.join(context, "bin", f"spotlight-{service}")
            shutil.copy2(binary, target)
            run(["strip", target], check=False)
        shutil.copytree(os.path.join(source, "deploy", "docker"),
                        os.path.join(context, "deploy", "docker"))
        shutil.copytree(os.path.join(source, "deploy", "config"),
                        os.path.join(context, "deploy", "config"))
        shutil.copytree(os.path.join(source, "deploy", "traces"),
                        os.path.join(context, "deploy", "traces"))
        env = dict(os.environ, DOCKER_BUILDKIT="0")
        run(["docker", "build", "-q", "-f",
             os.path.join(context, "deploy", "docker", "Dockerfile.prebuilt"), "-t", IMAGE,
             context], env=env, capture=True)
    finally:
        shutil.rmtree(context, ignore_errors=True)


def dashboard_queries(source):
    folder = os.path.join(source, "dashboards")
    queries = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as f:
            board = json.load(f)
        for panel in board.get("panels", []):
            for target in panel.get("targets", []):
                queries.append((board["title"], panel["title"], target["refId"], target["expr"]))
    return queries


class Prometheus:
    def __init__(self, address):
        self.base = f"http://{address}"

    def get(self, path, params):
        url = f"{self.base}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.load(response)
        if body.get("status") != "success":
            raise Failure(f"Prometheus {path} {params}: {body}")
        return body["data"]

    def ready(self):
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    def scalar(self, expr):
        """The first series' value of an instant query, or None."""
        try:
            result = self.get("/api/v1/query", {"query": expr})["result"]
        except (OSError, Failure):
            return None
        return float(result[0]["value"][1]) if result else None

    def range_points(self, expr, start, end):
        """(series, points that are numbers) of a range query over [start, end]."""
        result = self.get("/api/v1/query_range",
                          {"query": expr, "start": start, "end": end, "step": "5s"})["result"]
        points = [float(v) for series in result for _, v in series["values"]
                  if v not in ("NaN", "+Inf", "-Inf")]
        return len(result), points


class Compose:
    def __init__(self, source, project, services, env):
        command = os.environ.get("SPOTLIGHT_COMPOSE", "docker-compose").split()
        self.base = command + ["-f", os.path.join(source, "compose.yaml"), "-p", project]
        self.services = services
        self.env = env

    def __call__(self, *args, check=True, capture=False, timeout=None):
        return run(self.base + list(args), check=check, capture=capture, env=self.env,
                   timeout=timeout)

    def up(self, explorers):
        self("up", "-d", "--no-build", "--scale", f"explorer={explorers}", *self.services,
             capture=True)

    def scale_explorers(self, explorers):
        # Only the explorer service: `up` of a finished service would start it again.
        self("up", "-d", "--no-build", "--no-deps", "--no-recreate", "--scale",
             f"explorer={explorers}", "explorer", capture=True)

    def containers(self, service):
        return self("ps", "-q", service, capture=True).stdout.split()


def state(container):
    """(status, exit code); a container that restarted (restart: on-failure) failed."""
    out = run(["docker", "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}} {{.RestartCount}}",
               container], capture=True).stdout.split()
    if int(out[2]) > 0:
        logs = run(["docker", "logs", "--tail", "30", container], check=False, capture=True)
        raise Failure(f"container {container[:12]} failed and was restarted:\n{logs.stdout}")
    return out[0], int(out[1])


def remove_abandoned_projects(source):
    """Takes down what an earlier run killed by a timeout left (its project names its pid)."""
    out = run(["docker", "ps", "-a", "--format", '{{.Label "com.docker.compose.project"}}'],
              capture=True).stdout.split()
    for project in sorted(set(out)):
        if not project.startswith("spotlight-e2e-"):
            continue
        pid = int(project.rsplit("-", 1)[1])
        try:
            os.kill(pid, 0)
            continue  # still running: another test's
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        log(f"removing the abandoned project {project}")
        command = os.environ.get("SPOTLIGHT_COMPOSE", "docker-compose").split()
        run(command + ["-f", os.path.join(source, "compose.yaml"), "-p", project, "down", "-v",
                       "--remove-orphans"], check=False, capture=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--result", default="")
    parser.add_argument("--trainer-ranks", type=int, choices=[1, 2], default=1)
    args = parser.parse_args()
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="spotlight-compose-")
    docker = Docker(work)
    docker.ensure()
    # SIGTERM (a CI runner giving up) takes the finally path below, like Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    remove_abandoned_projects(args.source)
    figures = {}
    compose = None
    try:
        t = time.monotonic()
        run([os.path.join(args.source, "scripts", "offline-images")], capture=True)
        figures["offline_images_seconds"] = round(time.monotonic() - t, 1)
        t = time.monotonic()
        build_image(args.source, args.build)
        figures["image_build_seconds"] = round(time.monotonic() - t, 1)
        grafana_image = os.environ.get("SPOTLIGHT_GRAFANA_IMAGE", GRAFANA_IMAGE_DEFAULT)
        services = list(SERVICES)
        if image_exists(grafana_image):
            services.append("grafana")
        else:
            log(f"NOTE: {grafana_image} is not available (no registry, and Debian has no Grafana):"
                " running without Grafana; tests/dashboards checks the dashboards' JSON")
        figures["images_mb"] = {
            name: image_size_mb(name)
            for name in [IMAGE, "debian:bookworm-slim", "redis:7.0-bookworm",
                         "prom/prometheus:v2.42.0"]}
        project = f"spotlight-e2e-{os.getpid()}"
        env = dict(os.environ, SPOTLIGHT_IMAGE=IMAGE, SPOTLIGHT_RECIPE="smoke",
                   SPOTLIGHT_RUN_ID="e2e", SPOTLIGHT_PROMETHEUS_PORT="0",
                   SPOTLIGHT_GRAFANA_PORT="0", SPOTLIGHT_GRAFANA_IMAGE=grafana_image,
                   SPOTLIGHT_TRAINER_RANKS=str(args.trainer_ranks))
        trainers = ["trainer"] + (["trainer-1"] if args.trainer_ranks == 2 else [])
        services += trainers[1:]
        figures["trainer_ranks"] = args.trainer_ranks
        compose = Compose(args.source, project, services, env)

        log(f"up: project {project}, services {' '.join(services)}, 2 explorers")
        up_at = time.time()
        t_up = time.monotonic()
        compose.up(2)
        address = compose("port", "prometheus", "9090", capture=True).stdout.strip()
        prometheus = Prometheus(address)
        wait_for("Prometheus ready", prometheus.ready, 120)
        trainer = compose.containers("trainer")[0]

        def first_iteration():
            status, code = state(trainer)
            if status == "exited":
                raise Failure(f"the trainer exited ({code}) before its first iteration")
            value = prometheus.scalar("spotlight_trainer_iterations_completed")
            return value is not None and value >= 1

        wait_for("the first finished iteration", first_iteration, 900, 2)
        figures["cold_up_to_first_iteration_seconds"] = round(time.monotonic() - t_up, 1)
        log(f"first iteration finished {figures['cold_up_to_first_iteration_seconds']} s after up;"
            " scaling to 3 explorers")
        compose.scale_explorers(3)
        explorers = compose.containers("explorer")
        if len(explorers) != 3:
            raise Failure(f"expected 3 explorer containers, found {len(explorers)}")

        def three_explorers():
            scraped = prometheus.scalar('count(up{job="explorer"} == 1)')
            live = prometheus.scalar("spotlight_planner_live_explorers")
            done = prometheus.scalar("spotlight_trainer_iterations_completed")
            target = prometheus.scalar("spotlight_trainer_iterations_target")
            if done is not None and target is not None and done >= target:
                raise Failure("the job finished before the third explorer was seen: "
                              "make the smoke recipe longer")
            return scraped == 3 and live == 3

        wait_for("3 explorers scraped by Prometheus and live in the planner", three_explorers, 180)
        log("3 explorers scraped and live; waiting for the job to finish")

        def finished():
            status, code = state(trainer)
            if status == "exited":
                return (code,)
            return None

        (code,) = wait_for("the trainer to finish", finished, 1200, 3)
        figures["up_to_job_finished_seconds"] = round(time.monotonic() - t_up, 1)
        if code != 0:
            raise Failure(f"the trainer exited {code}")
        if args.trainer_ranks == 2:
            ranks_seen = prometheus.range_points(
                'count(spotlight_trainer_rank_iterations_total{job="trainer-ranks"})',
                up_at, time.time())[1]
            if not ranks_seen:
                raise Failure("Prometheus never scraped rank 1's per-rank series (job trainer-ranks)")
        for service in trainers[1:] + ["planner", "explorer"]:
            for container in compose.containers(service):
                def exited(c=container):
                    status, code = state(c)
                    return (code,) if status == "exited" else None
                (code,) = wait_for(f"{service} {container[:12]} to stop by itself", exited, 120)
                if code != 0:
                    raise Failure(f"{service} {container[:12]} exited {code}")
        log(f"the trainer ({args.trainer_ranks} rank(s)), the planner and 3 explorers exited 0")

        end = time.time()
        wait_for("a last scrape", lambda: True, 1)
        empty = []
        rows = []
        for board, panel, ref, expr in dashboard_queries(args.source):
            series, points = prometheus.range_points(expr, up_at, end)
            last = f"{points[-1]:.4g}" if points else "-"
            rows.append({"dashboard": board, "panel": panel, "ref": ref, "expr": expr,
                         "series": series, "points": len(points), "last": last})
            if not points:
                empty.append(f"{board} / {panel} [{ref}]: {expr}")
        figures["panel_queries"] = rows
        print("\nPrometheus range queries over the run, per dashboard panel:")
        for r in rows:
            print(f"  {r['dashboard']} / {r['panel']} [{r['ref']}]: {r['series']} series, "
                  f"{r['points']} points, last {r['last']}")
        if empty:
            raise Failure("panel queries without data:\n  " + "\n  ".join(empty))

        t = time.monotonic()
        compose("down", "-v", "--remove-orphans", capture=True)
        figures["down_seconds"] = round(time.monotonic() - t, 1)
        left = run(["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"],
                   capture=True).stdout.split()
        volumes = run(["docker", "volume", "ls", "-q", "--filter",
                       f"label=com.docker.compose.project={project}"], capture=True).stdout.split()
        compose = None
        if left or volumes:
            raise Failure(f"down left containers {left} and volumes {volumes}")
        figures["test_seconds"] = round(time.monotonic() - started, 1)
        print("\nfigures: " + json.dumps({k: v for k, v in figures.items() if k != "panel_queries"}),
              flush=True)
        if args.result:
            with open(args.result, "w") as f:
                json.dump(figures, f, indent=2)
        log("PASSED")
        return 0
    except Failure as e:
        log(f"FAILED: {e}")
        if compose is not None:
            logs = compose("logs", "--no-color", "--tail", "40", check=False, capture=True)
            print(logs.stdout[-20000:], flush=True)
        return 1
    finally:
        if compose is not None:
            compose("down", "-v", "--remove-orphans", check=False, capture=True)
        docker.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
