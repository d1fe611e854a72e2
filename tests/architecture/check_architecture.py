#!/usr/bin/env python3
"""Checks the module boundaries of deploy/architecture.json against the real build.

  check_architecture.py --source DIR --build DIR     the CMake target graph of a configured build
                                                     (re-configured into a scratch folder with
                                                     cmake --graphviz) and the #include graph
  check_architecture.py --source DIR --build DIR --define KEY=VALUE
                                                     the same, configured with KEY=VALUE instead
                                                     of the cache's (e.g. SPOTLIGHT_CUDA_KERNELS=OFF:
                                                     the build of a machine without a CUDA compiler)
  check_architecture.py --source DIR --dot FILE      the same with a graph already written
  check_architecture.py --self-test                  plants violations in a scratch tree and
                                                     checks that each one is reported

Rules (deploy/architecture.json says which modules and groups exist):
  - every CMake target belongs to exactly one module, is a test target, or is a known
    third-party library; every listed target is in the build unless optional_targets names it
    (a target that exists only with an optional toolchain, such as a CUDA compiler);
  - a link edge A -> B between modules needs B in A's deps; A -> a third-party library needs
    its group in A's external ("system" is allowed everywhere);
  - a torch_free target reaches no LibTorch library through any chain of links;
  - a file under a module path may include headers of its own module, of its deps and
    header_deps, and third-party headers of its external groups; never another module's
    detail/ headers, never tests/, and a restricted header only from the modules listed.
Exit status 0 when everything holds, 1 with one line per violation otherwise, 2 on bad usage.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
NODE_RE = re.compile(r'^\s*"(node\d+)"\s*\[\s*label\s*=\s*"((?:[^"\\]|\\.)*)"')
EDGE_RE = re.compile(r'^\s*"(node\d+)"\s*->\s*"(node\d+)"(?:\s*\[\s*style\s*=\s*(\w+)\s*\])?')


class Architecture:
    def __init__(self, spec):
        self.modules = spec["modules"]
        self.external = {name: (
            [re.compile(p) for p in group.get("targets", [])],
            list(group.get("headers", []))) for name, group in spec["external"].items()}
        self.restricted = spec.get("restricted_headers", {})
        self.torch_free = set(spec.get("torch_free", []))
        self.unchecked = [re.compile(p) for p in spec.get("unchecked_targets", [])]
        self.optional = dict(spec.get("optional_targets", {}))
        self.target_module = {}
        self.problems = []
        for module, entry in self.modules.items():
            for target in entry.get("targets", []):
                if target in self.target_module:
                    self.problems.append(f"architecture: target {target} is listed under both "
                                         f"{self.target_module[target]} and {module}")
                self.target_module[target] = module
        for target in sorted(self.optional):
            if target not in self.target_module:
                self.problems.append(f"architecture: optional target {target} is in no module")
            for dep in entry.get("deps", []) + entry.get("header_deps", []):
                if dep not in self.modules:
                    self.problems.append(f"architecture: {module} allows unknown module {dep}")
            for group in entry.get("external", []):
                if group not in self.external:
                    self.problems.append(f"architecture: {module} allows unknown group {group}")

    def module_of_path(self, path):
        best = None
        for module in self.modules:
            if path.startswith(module + "/") and (best is None or len(module) > len(best)):
                best = module
        return best

    def external_group_of_target(self, label):
        for name, (patterns, _) in self.external.items():
            if any(p.search(label) for p in patterns):
                return name
        return None

    def external_group_of_header(self, header):
        for name, (_, prefixes) in self.external.items():
            if any(header == p or (p.endswith("/") and header.startswith(p)) for p in prefixes):
                return name
        return None

    def is_unchecked(self, label):
        return any(p.search(label) for p in self.unchecked)

    def allowed_externals(self, module):
        return set(self.modules[module].get("external", [])) | {"system"}


def parse_dot(text):
    """(labels by node id, [(from id, to id, style)]) of a cmake --graphviz file."""
    labels, edges = {}, []
    for line in text.splitlines():
        m = NODE_RE.match(line)
        if m:
            labels[m.group(1)] = m.group(2).replace('\\"', '"')
            continue
        m = EDGE_RE.match(line)
        if m:
            edges.append((m.group(1), m.group(2), m.group(3) or "solid"))
    return labels, edges


def check_targets(arch, dot_text):
    problems = []
    labels, edges = parse_dot(dot_text)
    kind = {}
    for node, label in labels.items():
        if label in arch.target_module:
            kind[node] = ("module", arch.target_module[label])
        elif arch.is_unchecked(label):
            kind[node] = ("unchecked", None)
        elif arch.external_group_of_target(label):
            kind[node] = ("external", arch.external_group_of_target(label))
        else:
            kind[node] = ("unknown", None)
            problems.append(f"target {label}: in no module of deploy/architecture.json (declare "
                            "its module, or its third-party group)")
    declared = set(arch.target_module)
    missing = declared - set(labels.values()) - set(arch.optional)
    for target in sorted(missing):
        problems.append(f"target {target}: listed in deploy/architecture.json but not in the build")
    out = {}
    for a, b, _ in edges:
        out.setdefault(a, []).append(b)
        ka, kb = kind.get(a), kind.get(b)
        if ka is None or kb is None or ka[0] != "module":
            continue
        module = ka[1]
        if kb[0] == "module":
            if kb[1] != module and kb[1] not in arch.modules[module].get("deps", []):
                problems.append(f"link {labels[a]} -> {labels[b]}: {module} may not depend on "
                                f"{kb[1]}")
        elif kb[0] == "external":
            if kb[1] not in arch.allowed_externals(module):
                problems.append(f"link {labels[a]} -> {labels[b]}: {module} may not use "
                                f"third-party group '{kb[1]}'")
        elif kb[0] == "unchecked":
            problems.append(f"link {labels[a]} -> {labels[b]}: a module links test code")
    by_label = {label: node for node, label in labels.items()}
    for target in sorted(arch.torch_free):
        if target not in by_label:
            problems.append(f"torch_free target {target}: not in the build")
            continue
        path = reaches(by_label[target], out, lambda n: kind.get(n) == ("external", "torch"))
        if path:
            problems.append(f"target {target} must not link LibTorch, but links it through " +
                            " -> ".join(labels[n] for n in path))
    return problems, len(labels), len(edges)


def reaches(start, out, goal):
    """The first path (breadth first) from start to a node for which goal() holds, or None."""
    previous = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        if goal(node):
            path = []
            while node is not None:
                path.append(node)
                node = previous[node]
            return list(reversed(path))
        for nxt in out.get(node, []):
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    return None


def tracked_files(source):
    try:
        out = subprocess.run(["git", "-C", source, "ls-files"], check=True, capture_output=True,
                             text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
        for dirpath, _, names in os.walk(source):
            for name in names:
                out.append(os.path.relpath(os.path.join(dirpath, name), source))
    return sorted(f for f in out if f.endswith(SOURCE_SUFFIXES))


def check_includes(arch, source):
    problems = []
    files = [f for f in tracked_files(source) if arch.module_of_path(f)]
    count = 0
    for path in files:
        module = arch.module_of_path(path)
        entry = arch.modules[module]
        allowed = {module} | set(entry.get("deps", [])) | set(entry.get("header_deps", []))
        with open(os.path.join(source, path), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        for number, line in enumerate(lines, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            count += 1
            where = f"{path}:{number}"
            header = m.group(2)
            if m.group(1) == "<":
                group = arch.external_group_of_header(header)
                if group and group not in arch.allowed_externals(module):
                    problems.append(f"{where}: #include <{header}>: {module} may not use "
                                    f"third-party group '{group}'")
                continue
            if header.startswith("tests/"):
                problems.append(f"{where}: #include \"{header}\": production code includes "
                                "test code")
                continue
            target = arch.module_of_path(header)
            if target is None:
                continue
            if target != module and "/detail/" in header:
                problems.append(f"{where}: #include \"{header}\": detail/ headers are private "
                                f"to {target}")
            elif target not in allowed:
                problems.append(f"{where}: #include \"{header}\": {module} may not depend on "
                                f"{target}")
            elif (header in arch.restricted and target != module and
                  module not in arch.restricted[header]):
                problems.append(f"{where}: #include \"{header}\": only "
                                f"{', '.join(arch.restricted[header])} may include it")
    return problems, len(files), count


def graph_of_build(source, build, defines=()):
    """cmake --graphviz of the build's configuration, configured again in a scratch folder so that
    the build's own files are not touched."""
    cache = {}
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):[A-Z_]+=(.*)$", line.strip())
            if m:
                cache[m.group(1)] = m.group(2)
    for define in defines:
        key, _, value = define.partition("=")
        cache[key] = value
    scratch = tempfile.mkdtemp(prefix="spotlight-architecture-")
    try:
        with open(os.path.join(scratch, "CMakeGraphVizOptions.cmake"), "w") as f:
            f.write("set(GRAPHVIZ_GENERATE_PER_TARGET FALSE)\n"
                    "set(GRAPHVIZ_GENERATE_DEPENDERS FALSE)\n")
        command = ["cmake", "-S", source, "-B", scratch, "--graphviz=" + os.path.join(scratch,
                                                                                      "targets.dot")]
        if cache.get("CMAKE_GENERATOR"):
            command += ["-G", cache["CMAKE_GENERATOR"]]
        for key, value in sorted(cache.items()):
            if key.startswith("SPOTLIGHT_") or key in ("CMAKE_BUILD_TYPE", "CMAKE_CXX_COMPILER",
                                                       "CMAKE_PREFIX_PATH", "Torch_DIR"):
                command.append(f"-D{key}={value}")
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError("cmake --graphviz failed:\n" + result.stdout + result.stderr)
        with open(os.path.join(scratch, "targets.dot"), encoding="utf-8") as f:
            return f.read()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_checks(source, spec, dot_text):
    arch = Architecture(spec)
    problems = list(arch.problems)
    target_problems, targets, edges = check_targets(arch, dot_text)
    include_problems, files, includes = check_includes(arch, source)
    summary = (f"{targets} targets, {edges} link edges, {files} files, {includes} includes "
               f"checked against {len(arch.modules)} modules")
    return problems + target_problems + include_problems, summary


def self_test():
    """Plants one violation of each kind in a scratch tree and checks that each is reported, and
    that the same tree without them passes."""
    spec = {
        "external": {"system": {"targets": ["^Threads::Threads$"], "headers": []},
                     "torch": {"targets": ["^torch$"], "headers": ["torch/"]},
                     "zmq": {"targets": ["^PkgConfig::ZMQ$"], "headers": ["zmq.hpp"]}},
        "modules": {
            "common/low": {"targets": ["low"], "deps": [], "external": ["zmq"]},
            "common/mid": {"targets": ["mid"], "deps": ["common/low", "common/heavy"]},
            "common/heavy": {"targets": ["heavy"], "deps": [], "external": ["torch"]},
            "services/app": {"targets": ["app_lib", "app"], "deps": ["common/mid"]},
        },
        "restricted_headers": {"common/low/raw.hpp": ["common/mid"]},
        "torch_free": ["app"],
        "unchecked_targets": ["_test$"],
        "optional_targets": {"low_cuda": "only with a CUDA compiler"},
    }
    spec["modules"]["common/low"]["targets"].append("low_cuda")
    clean_files = {
        "common/low/low.hpp": "#pragma once\n#include <zmq.hpp>\n",
        "common/low/raw.hpp": "#pragma once\n",
        "common/low/detail/impl.hpp": "#pragma once\n",
        "common/low/low.cpp": '#include "common/low/low.hpp"\n#include "common/low/detail/impl.hpp"\n',
        "common/mid/mid.cpp": '#include "common/low/low.hpp"\n#include "common/low/raw.hpp"\n',
        "common/heavy/heavy.cpp": "#include <torch/torch.h>\n",
        "services/app/app.cpp": '#include "common/mid/mid.hpp"\n#include <vector>\n',
        "tests/app_test.cpp": '#include "common/low/detail/impl.hpp"\n',
    }
    clean_dot = "\n".join([
        'digraph "x" {',
        '    "node0" [ label = "low", shape = octagon ];',
        '    "node1" [ label = "mid", shape = octagon ];',
        '    "node2" [ label = "heavy", shape = octagon ];',
        '    "node3" [ label = "app_lib", shape = octagon ];',
        '    "node4" [ label = "app", shape = egg ];',
        '    "node5" [ label = "PkgConfig::ZMQ", shape = pentagon ];',
        '    "node6" [ label = "torch", shape = pentagon ];',
        '    "node7" [ label = "app_test", shape = egg ];',
        '    "node8" [ label = "Threads::Threads", shape = pentagon ];',
        '    "node0" -> "node5" [ style = solid ] // low -> PkgConfig::ZMQ',
        '    "node1" -> "node0" [ style = dashed ] // mid -> low',
        '    "node2" -> "node6" // heavy -> torch',
        '    "node3" -> "node1" [ style = dashed ] // app_lib -> mid',
        '    "node3" -> "node8" // app_lib -> Threads::Threads',
        '    "node4" -> "node3" // app -> app_lib',
        '    "node7" -> "node2" // app_test -> heavy',
        "}", ""])
    planted = [
        # (file edits, extra dot lines, the text the report must contain)
        ({"services/app/app2.cpp": '#include "common/low/low.hpp"\n'}, [],
         "services/app/app2.cpp:1: #include \"common/low/low.hpp\": services/app may not depend "
         "on common/low"),
        ({"common/mid/mid2.cpp": '#include "common/low/detail/impl.hpp"\n'}, [],
         "detail/ headers are private to common/low"),
        ({"services/app/app3.cpp": '#include <zmq.hpp>\n'}, [],
         "services/app may not use third-party group 'zmq'"),
        ({"common/mid/mid3.cpp": '#include "tests/helper.hpp"\n'}, [],
         "production code includes test code"),
        ({"services/app/app4.cpp": '#include "common/mid/mid.hpp"\n'
                                   '#include "common/low/raw.hpp"\n'}, [],
         "common/low/raw.hpp"),
        ({}, ['    "node3" -> "node0" // app_lib -> low'],
         "link app_lib -> low: services/app may not depend on common/low"),
        ({}, ['    "node1" -> "node2" // mid -> heavy'],
         "target app must not link LibTorch, but links it through app -> app_lib -> mid -> heavy "
         "-> torch"),
        ({}, ['    "node9" [ label = "stray", shape = octagon ];'],
         "target stray: in no module"),
        ({}, ['    "node0" -> "node6" // low -> torch'],
         "link low -> torch: common/low may not use third-party group 'torch'"),
        ({}, ['    "node1" -> "node7" // mid -> app_test'],
         "link mid -> app_test: a module links test code"),
    ]
    # (spec edit, the text the report must contain): a required target absent from the build, an
    # optional target that belongs to no module.
    planted_specs = [
        (lambda s: s["modules"]["common/low"]["targets"].append("low_extra"),
         "target low_extra: listed in deploy/architecture.json but not in the build"),
        (lambda s: s["optional_targets"].update({"ghost": "never"}),
         "architecture: optional target ghost is in no module"),
    ]

    def make_tree(files):
        root = tempfile.mkdtemp(prefix="spotlight-architecture-selftest-")
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        return root

    failures = []
    root = make_tree(clean_files)
    try:
        problems, _ = run_checks(root, spec, clean_dot)
        if problems:
            failures.append("the clean tree is reported:\n  " + "\n  ".join(problems))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for edits, dot_lines, expected in planted:
        root = make_tree({**clean_files, **edits})
        dot = clean_dot.replace("}\n", "\n".join(dot_lines) + "\n}\n")
        try:
            problems, _ = run_checks(root, spec, dot)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        if not any(expected in p for p in problems):
            failures.append(f"not reported: {expected!r}; got {problems}")
    for edit, expected in planted_specs:
        edited = json.loads(json.dumps(spec))
        edit(edited)
        root = make_tree(clean_files)
        try:
            problems, _ = run_checks(root, edited, clean_dot)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        if not any(expected in p for p in problems):
            failures.append(f"not reported: {expected!r}; got {problems}")
    if failures:
        print("architecture self-test FAILED:\n" + "\n".join(failures))
        return 1
    print(f"architecture self-test: the clean tree passes (its optional target absent), all "
          f"{len(planted) + len(planted_specs)} planted violations are reported")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="the repository root")
    parser.add_argument("--build", help="a configured build folder (its CMakeCache.txt)")
    parser.add_argument("--dot", help="a cmake --graphviz file instead of --build")
    parser.add_argument("--define", action="append", default=[], metavar="KEY=VALUE",
                        help="configure with this cache entry instead of the build's (repeatable)")
    parser.add_argument("--spec", help="default: <source>/deploy/architecture.json")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.source or not (args.build or args.dot):
        parser.print_usage(sys.stderr)
        return 2
    with open(args.spec or os.path.join(args.source, "deploy", "architecture.json")) as f:
        spec = json.load(f)
    if args.dot:
        with open(args.dot, encoding="utf-8") as f:
            dot_text = f.read()
    else:
        dot_text = graph_of_build(args.source, args.build, args.define)
    problems, summary = run_checks(args.source, spec, dot_text)
    for p in problems:
        print(p)
    print(("FAILED: " + str(len(problems)) + " violations; " if problems else "ok: ") + summary)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
