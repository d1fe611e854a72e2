#!/usr/bin/python3
"""Checks a Spotlight checkpoint of an export_mmdit.py module from Python (the end-to-end test's
last step, and a recipe for getting trained weights back into PyTorch):

    check_checkpoint.py inputs  --config model.json --out inputs.safetensors [--batch 3 --seed 7]
    check_checkpoint.py compare --config model.json --checkpoint model.safetensors \\
        --inputs inputs.safetensors --outputs outputs.safetensors \\
        [--initial initial.safetensors --trainable '*lora*'] [--tolerance 1e-5]

`inputs` writes fixed latents, timesteps, prompt_embeds and pooled. `compare` rebuilds the eager
module, loads the checkpoint with load_state_dict(strict=True), runs it on the inputs and
requires the velocity the C++ side wrote (outputs.safetensors, tensor "velocity") within the
tolerance; with --initial it also requires every parameter outside the trainable patterns to be
bit-identical to the initial state and at least one inside them to have changed.
"""

import argparse
import fnmatch
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_mmdit  # noqa: E402
import safetensors_io  # noqa: E402


def make_inputs(args):
    config = json.load(open(args.config))["mmdit"]
    g = torch.Generator().manual_seed(args.seed)
    size, channels = config["latent_size"], config["channels"]
    context = config["context_dim"] or config["hidden"]
    pooled = config["pooled_dim"] or config["hidden"]
    tensors = {
        "latents": torch.randn(args.batch, channels, size, size, generator=g),
        "timesteps": torch.rand(args.batch, generator=g),
        "prompt_embeds": torch.randn(args.batch, args.text_length, context, generator=g),
        "pooled": torch.randn(args.batch, pooled, generator=g),
    }
    safetensors_io.save_file(tensors, args.out)


def compare(args):
    module = export_mmdit.build(json.load(open(args.config)))
    checkpoint = safetensors_io.load_file(args.checkpoint)
    module.load_state_dict(checkpoint, strict=True)
    module.eval()
    inputs = safetensors_io.load_file(args.inputs)
    with torch.no_grad():
        ours = module(inputs["latents"], inputs["timesteps"], inputs["prompt_embeds"], inputs["pooled"])
    theirs = safetensors_io.load_file(args.outputs)["velocity"]
    difference = (ours - theirs).abs().max().item()
    print(f"check_checkpoint: max |python - c++| velocity difference {difference:.3g} "
          f"(tolerance {args.tolerance:g}), |velocity| max {ours.abs().max().item():.3g}")
    failures = []
    if not difference <= args.tolerance:
        failures.append(f"velocity differs by {difference:.3g}")
    if args.initial:
        initial = safetensors_io.load_file(args.initial)
        changed, frozen_changed, trainable = [], [], 0
        for name, tensor in checkpoint.items():
            is_trainable = any(fnmatch.fnmatchcase(name, p) for p in args.trainable)
            trainable += is_trainable
            if not torch.equal(tensor, initial[name]):
                (changed if is_trainable else frozen_changed).append(name)
        print(f"check_checkpoint: {len(changed)} of {trainable} trainable tensors changed, "
              f"{len(frozen_changed)} frozen tensors changed")
        if frozen_changed:
            failures.append(f"frozen parameters changed: {frozen_changed[:5]}")
        if not changed:
            failures.append("no trainable parameter changed")
    if failures:
        sys.exit("check_checkpoint: " + "; ".join(failures))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inputs")
    p.add_argument("--config", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--batch", type=int, default=3)
    p.add_argument("--text-length", type=int, default=8)
    p.add_argument("--seed", type=int, default=7)
    p = sub.add_parser("compare")
    p.add_argument("--config", required=True)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--outputs", required=True)
    p.add_argument("--initial")
    p.add_argument("--trainable", action="append", default=[])
    p.add_argument("--tolerance", type=float, default=1e-5)
    args = parser.parse_args()
    if args.command == "inputs":
        make_inputs(args)
    else:
        if args.initial and not args.trainable:
            parser.error("--initial needs --trainable")
        compare(args)


if __name__ == "__main__":
    main()
