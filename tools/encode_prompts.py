#!/usr/bin/python3
"""Encodes a user's prompts once, for Spotlight's `task.kind: prompt_file`.

    encode_prompts.py --train train.txt --validation validation.txt \\
        --encoder my_encoder.py:encode --out-prompts prompts.json --out-embeddings embeddings.safetensors

Reads one prompt per line (blank lines skipped) of each split and calls the encoder on batches of
them. The encoder is any Python function `encode(prompts: list[str]) -> (prompt_embeds, pooled)`
returning float tensors [N, L, D] and [N, P] (for SD3: the CLIP-L/G + T5 sequence and the pooled
CLIP vectors, as the pipeline's encode_prompt computes them). `--random-encoder L,D,P` uses a
small deterministic random encoder instead (tests, trying the pipeline without a model).

Writes the prompt file {"format": "spotlight-prompts", "version": 1, "train": [...],
"validation": [...]} and a safetensors file with train.prompt_embeds, train.pooled,
validation.prompt_embeds, validation.pooled (float32) whose metadata records the prompts, so the
trainer and explorers refuse a pair that was not encoded together.
"""

import argparse
import importlib.util
import json
import os
import sys
import zlib

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "byom"))
import safetensors_io  # noqa: E402

PROMPTS_FORMAT = "spotlight-prompts"
EMBEDDINGS_FORMAT = "spotlight-prompt-embeddings"


class RandomEncoder:
    """Words hashed into a fixed random embedding table, plus positions; pooled = tanh(mean W).
    Deterministic for a seed: the same prompt always encodes to the same tensors."""

    def __init__(self, length, dim, pooled_dim, seed=0, vocabulary=4096):
        generator = torch.Generator().manual_seed(seed)
        self.length = length
        self.vocabulary = vocabulary
        self.table = torch.randn(vocabulary, dim, generator=generator)
        self.position = torch.randn(length, dim, generator=generator) * 0.1
        self.pool = torch.randn(dim, pooled_dim, generator=generator) / dim**0.5

    def __call__(self, prompts):
        ids = torch.zeros(len(prompts), self.length, dtype=torch.long)
        mask = torch.zeros(len(prompts), self.length, 1)
        for i, prompt in enumerate(prompts):
            words = prompt.lower().split()[: self.length]
            for j, word in enumerate(words):
                ids[i, j] = 1 + zlib.crc32(word.encode()) % (self.vocabulary - 1)
                mask[i, j] = 1.0
        embeds = (self.table[ids] + self.position) * mask
        pooled = torch.tanh(embeds.sum(1) / mask.sum(1).clamp(min=1) @ self.pool)
        return embeds, pooled


def load_encoder(spec):
    path, _, name = spec.rpartition(":")
    if not path or not name:
        sys.exit(f"encode_prompts: --encoder must be FILE.py:FUNCTION, got '{spec}'")
    loaded = importlib.util.spec_from_file_location("spotlight_user_encoder", path)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return getattr(module, name)


def read_prompts(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def encode(encoder, prompts, batch):
    embeds, pooled = [], []
    for begin in range(0, len(prompts), batch):
        with torch.no_grad():
            e, p = encoder(prompts[begin : begin + batch])
        if e.dim() != 3 or p.dim() != 2 or e.size(0) != p.size(0):
            sys.exit(f"encode_prompts: the encoder must return [N, L, D] and [N, P], got {list(e.shape)} and {list(p.shape)}")
        if not (torch.isfinite(e).all() and torch.isfinite(p).all()):
            sys.exit("encode_prompts: the encoder returned NaN or Inf")
        embeds.append(e.detach().to("cpu", torch.float32))
        pooled.append(p.detach().to("cpu", torch.float32))
    return torch.cat(embeds), torch.cat(pooled)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", required=True, help="training prompts, one per line")
    parser.add_argument("--validation", required=True, help="validation prompts, one per line")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--encoder", help="FILE.py:FUNCTION(prompts) -> (prompt_embeds, pooled)")
    which.add_argument("--random-encoder", help="L,D,P: a random encoder of these dimensions")
    parser.add_argument("--seed", type=int, default=0, help="seed of --random-encoder")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--out-prompts", required=True)
    parser.add_argument("--out-embeddings", required=True)
    args = parser.parse_args(argv)

    splits = {"train": read_prompts(args.train), "validation": read_prompts(args.validation)}
    if not splits["train"]:
        sys.exit(f"encode_prompts: {args.train} has no prompts")
    if args.encoder:
        encoder = load_encoder(args.encoder)
    else:
        length, dim, pooled_dim = (int(x) for x in args.random_encoder.split(","))
        encoder = RandomEncoder(length, dim, pooled_dim, args.seed)

    tensors = {}
    for split, prompts in splits.items():
        if prompts:
            embeds, pooled = encode(encoder, prompts, args.batch)
        else:
            e, p = encode(encoder, splits["train"][:1], 1)
            embeds, pooled = e[:0], p[:0]
        tensors[f"{split}.prompt_embeds"] = embeds
        tensors[f"{split}.pooled"] = pooled
    shapes = {tuple(tensors[f"{s}.prompt_embeds"].shape[1:]) for s in splits}
    if len(shapes) != 1:
        sys.exit(f"encode_prompts: the splits encode to different shapes {shapes}")
    safetensors_io.save_file(
        tensors,
        args.out_embeddings,
        {"format": EMBEDDINGS_FORMAT, "prompts": json.dumps(splits, separators=(",", ":"))},
    )
    with open(args.out_prompts, "w", encoding="utf-8") as f:
        json.dump({"format": PROMPTS_FORMAT, "version": 1, **splits}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    e = tensors["train.prompt_embeds"]
    print(
        f"encode_prompts: {len(splits['train'])} train + {len(splits['validation'])} validation prompts, "
        f"prompt_embeds [L={e.size(1)}, D={e.size(2)}], pooled [P={tensors['train.pooled'].size(1)}]"
    )


if __name__ == "__main__":
    main()
