#!/usr/bin/env python3
"""Compiles the NCCL branch of common/parallel/communicator.cpp (SPOTLIGHT_WITH_NCCL: the trainer's
and the sequence-parallel groups on CUDA devices) against this machine's LibTorch headers and the
CUDA toolkit's nccl.h and runtime headers, so the branch cannot rot on machines that have no GPU.

It takes the file's compile command from the build's compile_commands.json, adds
-DSPOTLIGHT_WITH_NCCL=1 and the toolkit's include folder, and runs it with -fsyntax-only. A CPU-only
LibTorch (Debian's) ships the c10/cuda headers without the one its CUDA build generates
(c10/cuda/impl/cuda_cmake_macros.h); the test supplies it in a scratch folder. It then checks, from
the preprocessed file, that the NCCL branch was the one compiled.

Exit status 0 when it compiles, 1 when it does not, 77 (skipped) when this machine has no CUDA
toolkit with nccl.h or no c10d NCCL header.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

SKIP = 77

parser = argparse.ArgumentParser()
parser.add_argument("--build", required=True, help="the build folder (compile_commands.json)")
parser.add_argument("--source", required=True, help="the source file to compile")
parser.add_argument("--cuda-include", default="", help="the CUDA toolkit's include folder")
args = parser.parse_args()

if not args.cuda_include or not os.path.isfile(os.path.join(args.cuda_include, "nccl.h")):
    print(f"SKIPPED: no CUDA toolkit with nccl.h (include folder: '{args.cuda_include}')")
    sys.exit(SKIP)
if not os.path.isfile(os.path.join(args.cuda_include, "cuda_runtime_api.h")):
    print(f"SKIPPED: {args.cuda_include} has no cuda_runtime_api.h")
    sys.exit(SKIP)

with open(os.path.join(args.build, "compile_commands.json")) as f:
    commands = json.load(f)
source = os.path.realpath(args.source)
entry = next((c for c in commands if os.path.realpath(c["file"]) == source), None)
if entry is None:
    print(f"FAIL  {source} is not in {args.build}/compile_commands.json")
    sys.exit(1)
argv = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])

# Drop the output, the precompiled header (built without the NCCL switch) and the source; keep
# the compiler, definitions, include folders and language flags.
kept = []
skip_next = False
for arg in argv[1:]:
    if skip_next:
        skip_next = False
        continue
    if arg in ("-o", "-c", "-include", "-MF", "-MT", "-MQ"):
        skip_next = True
        continue
    if arg in ("-MD", "-MMD", "-Winvalid-pch") or os.path.realpath(arg) == source:
        continue
    kept.append(arg)
include_dirs = [a[2:] for a in kept if a.startswith("-I")]
include_dirs += [kept[i + 1] for i, a in enumerate(kept[:-1]) if a == "-isystem"]


def find_header(relative):
    for d in include_dirs + ["/usr/include", "/usr/local/include"]:
        if os.path.isfile(os.path.join(d, relative)):
            return os.path.join(d, relative)
    return None


nccl_header = "torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp"
if find_header(nccl_header) is None:
    print(f"SKIPPED: this LibTorch has no {nccl_header}")
    sys.exit(SKIP)

with tempfile.TemporaryDirectory(prefix="nccl-compile-") as scratch:
    extra = []
    if find_header("c10/cuda/impl/cuda_cmake_macros.h") is None:
        shim = os.path.join(scratch, "c10", "cuda", "impl")
        os.makedirs(shim)
        with open(os.path.join(shim, "cuda_cmake_macros.h"), "w") as f:
            f.write("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        extra += ["-isystem", scratch]
        print("note  this LibTorch lacks c10/cuda/impl/cuda_cmake_macros.h (a CPU-only build); "
              "supplied")
    base = [argv[0]] + kept + ["-DSPOTLIGHT_WITH_NCCL=1"] + extra + ["-isystem", args.cuda_include]

    compiled = subprocess.run(base + ["-fsyntax-only", source], text=True, capture_output=True,
                              cwd=entry.get("directory", args.build))
    if compiled.returncode != 0:
        print(compiled.stderr[-8000:])
        print(f"FAIL  {os.path.basename(source)} does not compile with SPOTLIGHT_WITH_NCCL "
              f"against {args.cuda_include}")
        sys.exit(1)
    print(f"ok    {os.path.basename(source)} compiles with SPOTLIGHT_WITH_NCCL against "
          f"{args.cuda_include}")

    pre = subprocess.run(base + ["-E", "-P", source], text=True, capture_output=True,
                         cwd=entry.get("directory", args.build))
    # The branch's own code, after the headers: a group of c10d::ProcessGroupNCCL is made.
    body = pre.stdout[pre.stdout.find("namespace spotlight"):] if pre.returncode == 0 else ""
    if "make_intrusive<c10d::ProcessGroupNCCL>" not in body:
        print("FAIL  the preprocessed file does not make a c10d::ProcessGroupNCCL: the NCCL branch "
              "was not compiled")
        sys.exit(1)
    print("ok    the NCCL branch (c10d::ProcessGroupNCCL) was the one compiled")
