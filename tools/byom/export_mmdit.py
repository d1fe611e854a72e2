#!/usr/bin/python3
"""Builds tools/byom/mmdit.py's MMDiT, optionally with LoRA adapters, and exports it to TorchScript.

    export_mmdit.py --out model.pt [--state-out initial.safetensors] [--config-out model.json]
                    [--hidden 32 --depth 2 --heads 2 --channels 4 --latent-size 16 --patch 2]
                    [--context-dim 24 --pooled-dim 16] [--lora-rank 4 --lora-alpha 4]
                    [--seed 0] [--weights native.safetensors]

--weights loads parameters by name from a safetensors file (e.g. the built-in C++ MMDiT's
checkpoint: its text_encoder.* tensors are ignored), so the export is the C++ model's twin.
--config-out writes the constructor arguments, so check_checkpoint.py can rebuild the module.
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mmdit  # noqa: E402
import safetensors_io  # noqa: E402


def build(config):
    module = mmdit.MMDiT(**config["mmdit"])
    if config.get("lora_rank", 0) > 0:
        mmdit.add_lora(module, config["lora_rank"], config["lora_alpha"], tuple(config["lora_targets"]))
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--state-out")
    parser.add_argument("--config-out")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--mlp-ratio", type=int, default=4)
    parser.add_argument("--channels", type=int, default=4)
    parser.add_argument("--latent-size", type=int, default=16)
    parser.add_argument("--patch", type=int, default=2)
    parser.add_argument("--context-dim", type=int, default=0)
    parser.add_argument("--pooled-dim", type=int, default=0)
    parser.add_argument("--lora-rank", type=int, default=0)
    parser.add_argument("--lora-alpha", type=float, default=4.0)
    parser.add_argument("--lora-targets", default="qkv,proj,fc1,fc2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--weights")
    args = parser.parse_args()

    config = {
        "mmdit": {
            "hidden": args.hidden,
            "depth": args.depth,
            "heads": args.heads,
            "mlp_ratio": args.mlp_ratio,
            "channels": args.channels,
            "latent_size": args.latent_size,
            "patch": args.patch,
            "context_dim": args.context_dim,
            "pooled_dim": args.pooled_dim,
        },
        "lora_rank": args.lora_rank,
        "lora_alpha": args.lora_alpha,
        "lora_targets": args.lora_targets.split(","),
    }
    torch.manual_seed(args.seed)
    module = build(config)
    if args.weights:
        tensors = safetensors_io.load_file(args.weights)
        state = module.state_dict()
        missing = [name for name in state if "lora" not in name and name not in tensors]
        if missing:
            sys.exit(f"export_mmdit: {args.weights} lacks {missing[:5]}")
        with torch.no_grad():
            for name, tensor in state.items():
                if name in tensors:
                    tensor.copy_(tensors[name])
    module.eval()
    scripted = torch.jit.script(module)
    scripted.save(args.out)
    if args.state_out:
        safetensors_io.save_file({k: v for k, v in module.state_dict().items()}, args.state_out)
    if args.config_out:
        with open(args.config_out, "w") as f:
            json.dump(config, f, indent=2)
    print(f"export_mmdit: wrote {args.out} ({sum(p.numel() for p in module.parameters())} parameters)")


if __name__ == "__main__":
    main()
