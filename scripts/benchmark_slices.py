"""Devices as equal CPU slices (scripts/benchmark.py --ratio): one CFS-quota group per device
under the cgroup `cpu` controller (v1 at /sys/fs/cgroup/cpu, or v2 where the unified hierarchy
has the cpu controller), and wrapper executables that move a role's process into its device's
group before exec'ing the real binary, so every thread it ever starts is limited by the quota.

The quota is a ceiling (cpu.cfs_quota_us / cpu.max): a slice of 0.3 cores gets at most 30 ms of
every 100 ms period, whatever the machine's load. Nothing here uses real-time scheduling: a
SCHED_FIFO/RR task would escape the CFS quota. What each role really got is measured from /proc
(utime + stime over the process's wall time) and the group's throttling counters, and reported
against its slice.

`python3 scripts/benchmark_slices.py` checks that groups can be made here (exit 0) or says why
not (exit 77, a CTest skip)."""
import os
import stat
import sys

V1 = "/sys/fs/cgroup/cpu"
V2 = "/sys/fs/cgroup"
PERIOD_US = 100000
SKIP = 77  # the exit status CTest reads as "skipped" (SKIP_RETURN_CODE)


class SlicesUnavailable(Exception):
    """The cpu controller cannot be used here (not mounted, not writable, not root)."""


def _controller():
    """(kind, root directory) of a writable cpu controller, or raises SlicesUnavailable."""
    if os.path.exists(os.path.join(V1, "cpu.cfs_quota_us")):
        root, kind = V1, "v1"
    elif os.path.exists(os.path.join(V2, "cgroup.controllers")) and \
            "cpu" in open(os.path.join(V2, "cgroup.controllers")).read().split():
        root, kind = V2, "v2"
    else:
        raise SlicesUnavailable("no cgroup cpu controller is mounted (neither v1 at "
                                f"{V1} nor v2 with cpu at {V2})")
    if not os.access(root, os.W_OK):
        raise SlicesUnavailable(f"{root} is not writable (device slices need root)")
    return kind, root


class Slices:
    """One run's device groups: `add(name, cores)` makes a group limited to `cores` CPUs;
    `wrap(...)` writes an executable that joins it; `close()` reads the groups' counters and
    removes them (their processes have exited by then)."""

    def __init__(self, tag, shares=1024):
        self.kind, root = _controller()
        self.base = os.path.join(root, f"spotlight-bench-{tag}")
        self.shares = shares
        self.groups = {}
        os.makedirs(self.base, exist_ok=True)
        if self.kind == "v2":
            # Child groups get the cpu controller only when the parent delegates it.
            with open(os.path.join(self.base, "cgroup.subtree_control"), "w") as f:
                f.write("+cpu")

    def add(self, name, cores):
        path = os.path.join(self.base, name)
        os.makedirs(path, exist_ok=True)
        quota = max(1000, int(round(cores * PERIOD_US)))
        if self.kind == "v1":
            _write(os.path.join(path, "cpu.cfs_period_us"), PERIOD_US)
            _write(os.path.join(path, "cpu.cfs_quota_us"), quota)
            _write(os.path.join(path, "cpu.shares"), self.shares)
        else:
            _write(os.path.join(path, "cpu.max"), f"{quota} {PERIOD_US}")
            _write(os.path.join(path, "cpu.weight"), max(1, min(10000, self.shares * 100 // 1024)))
        self.groups[name] = {"cores": cores, "quota_us": quota, "period_us": PERIOD_US,
                             "path": path}
        return path

    def wrap(self, real, wrapper, group=None, by_explorer_id=None):
        """An executable at `wrapper` that joins `group` (or, with by_explorer_id, the group
        by_explorer_id % its explorer number: explorer.id=explorer-N in its arguments) and
        execs `real` with its arguments."""
        os.makedirs(os.path.dirname(wrapper), exist_ok=True)
        procs = "cgroup.procs"
        # Exit 97 when the slice cannot be joined: the launcher sees the role fail to start,
        # never a role running outside its slice.
        lines = ["#!/bin/sh", "# Joins a device's CPU slice, then becomes the real binary."]
        if by_explorer_id:
            lines += ['n=1', 'for a in "$@"; do case "$a" in explorer.id=explorer-*) '
                      'n="${a#explorer.id=explorer-}";; esac; done',
                      f'echo $$ > "{self.base}/{by_explorer_id}$n/{procs}" || exit 97']
        else:
            lines.append(f'echo $$ > "{self.groups[group]["path"]}/{procs}" || exit 97')
        lines.append(f'exec "{real}" "$@"')
        with open(wrapper, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return wrapper

    def counters(self):
        """Per group: its slice and its throttling (periods, throttled periods and seconds)."""
        out = {}
        for name, g in self.groups.items():
            c = {"cores": g["cores"], "quota_us": g["quota_us"], "period_us": g["period_us"]}
            try:
                for line in open(os.path.join(g["path"], "cpu.stat")):
                    k, v = line.split()
                    c[k] = int(v)
            except OSError:
                pass
            if "throttled_time" in c:  # v1, nanoseconds
                c["throttled_seconds"] = c["throttled_time"] / 1e9
            elif "throttled_usec" in c:  # v2
                c["throttled_seconds"] = c["throttled_usec"] / 1e6
            out[name] = c
        return out

    def close(self):
        counters = self.counters()
        for g in self.groups.values():
            _remove(g["path"])
        _remove(self.base)
        return counters


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def _remove(path):
    """rmdir a group (its files are the kernel's: rmtree would fail); a group that still holds
    a process is left behind and named."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        print(f"benchmark: cannot remove cgroup {path}: {e}", file=sys.stderr)


def remove_stale():
    """Removes the groups of benchmarks that were killed before they could (their pid is gone
    and their groups hold no process); returns their names."""
    try:
        _, root = _controller()
    except SlicesUnavailable:
        return []
    removed = []
    for name in sorted(os.listdir(root)):
        if not name.startswith("spotlight-bench-"):
            continue
        pid = name[len("spotlight-bench-"):].split("-", 1)[0]
        if not pid.isdigit() or os.path.exists(f"/proc/{pid}"):
            continue
        base = os.path.join(root, name)
        for child in os.listdir(base):
            if os.path.isdir(os.path.join(base, child)):
                _remove(os.path.join(base, child))
        _remove(base)
        removed.append(name)
    return removed


def check():
    """Makes and removes a probe group; returns (ok, why)."""
    try:
        s = Slices(f"probe-{os.getpid()}")
        s.add("probe", 0.5)
        s.close()
        return True, f"cgroup {s.kind} cpu controller writable"
    except (SlicesUnavailable, OSError) as e:
        return False, str(e)


if __name__ == "__main__":
    ok, why = check()
    print(("device slices: " if ok else "device slices unavailable: ") + why)
    sys.exit(0 if ok else SKIP)
