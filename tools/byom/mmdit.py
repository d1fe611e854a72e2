"""An MMDiT-like transformer in PyTorch with Spotlight's TorchScript signature.

    forward(latents [B, C, H, W], timesteps [B] in [0, 1] (1 = noise),
            prompt_embeds [B, L, D], pooled [B, P]) -> velocity [B, C, H, W]

It is the example of docs/your-model.md and the model of the end-to-end test, and it is a twin
of the built-in C++ MMDiT (common/model/mmdit.cpp) without its text encoder: with
`context_dim == pooled_dim == hidden` it has the same parameters under the same names and computes
the same function, so `tests/common/policy/torchscript_bench` can compare the two runtimes on one
architecture. With other dimensions it projects the prompt embeddings first (SD3's
context_embedder and pooled projection). `add_lora` wraps linear layers with low-rank adapters
whose parameter names contain "lora" (trainer.trainable: ['*lora*']).
"""

import math
from typing import List

import torch
from torch import nn
import torch.nn.functional as F

TIME_FREQUENCIES = 128


class LoRALinear(nn.Module):
    """y = x W^T + b + scale * up(down(x)); W and b keep the wrapped layer's names."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.weight = base.weight
        self.bias = base.bias
        self.lora_down = nn.Linear(base.in_features, rank, bias=False)
        self.lora_up = nn.Linear(rank, base.out_features, bias=False)
        nn.init.normal_(self.lora_down.weight, std=1.0 / rank)
        nn.init.zeros_(self.lora_up.weight)
        self.scale = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias) + self.lora_up(self.lora_down(x)) * self.scale


def _modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def _split_heads(qkv: torch.Tensor, heads: int) -> List[torch.Tensor]:
    b, l = qkv.size(0), qkv.size(1)
    d = qkv.size(2) // 3 // heads
    return qkv.view(b, l, 3, heads, d).permute(2, 0, 3, 1, 4).unbind(0)


def _merge_heads(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(1, 2).reshape(x.size(0), x.size(2), x.size(1) * x.size(3))


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scale = 1.0 / math.sqrt(q.size(-1))
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * scale, -1), v)


class StreamWeights(nn.Module):
    def __init__(self, hidden: int, mlp_ratio: int):
        super().__init__()
        self.modulation = nn.Linear(hidden, 6 * hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.fc1 = nn.Linear(hidden, mlp_ratio * hidden)
        self.fc2 = nn.Linear(mlp_ratio * hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.norm2 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)

    def mlp(self, h: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(_modulate(self.norm2(h), shift, scale)), approximate="tanh"))


class JointBlock(nn.Module):
    def __init__(self, hidden: int, heads: int, mlp_ratio: int):
        super().__init__()
        self.heads = heads
        self.image = StreamWeights(hidden, mlp_ratio)
        self.text = StreamWeights(hidden, mlp_ratio)

    def forward(self, x: torch.Tensor, c: torch.Tensor, cond: torch.Tensor):
        mx = self.image.modulation(cond).chunk(6, 1)
        mc = self.text.modulation(cond).chunk(6, 1)
        qx = _split_heads(self.image.qkv(_modulate(self.image.norm1(x), mx[0], mx[1])), self.heads)
        qc = _split_heads(self.text.qkv(_modulate(self.text.norm1(c), mc[0], mc[1])), self.heads)
        out = _merge_heads(
            _attention(
                torch.cat([qc[0], qx[0]], 2), torch.cat([qc[1], qx[1]], 2), torch.cat([qc[2], qx[2]], 2)
            )
        )
        text_len = c.size(1)
        out_c = out.narrow(1, 0, text_len)
        out_x = out.narrow(1, text_len, x.size(1))
        x1 = x + mx[2].unsqueeze(1) * self.image.proj(out_x)
        c1 = c + mc[2].unsqueeze(1) * self.text.proj(out_c)
        x1 = x1 + mx[5].unsqueeze(1) * self.image.mlp(x1, mx[3], mx[4])
        c1 = c1 + mc[5].unsqueeze(1) * self.text.mlp(c1, mc[3], mc[4])
        return x1, c1


class MMDiT(nn.Module):
    def __init__(
        self,
        hidden: int = 32,
        depth: int = 2,
        heads: int = 2,
        mlp_ratio: int = 4,
        channels: int = 4,
        latent_size: int = 16,
        patch: int = 2,
        context_dim: int = 0,
        pooled_dim: int = 0,
    ):
        super().__init__()
        if latent_size % patch or hidden % heads:
            raise ValueError("latent_size must divide by patch and hidden by heads")
        self.channels = channels
        self.latent_size = latent_size
        self.patch = patch
        self.grid = latent_size // patch
        self.hidden = hidden
        tokens = self.grid * self.grid
        # 0: the prompt embeddings already have `hidden` features (the C++ MMDiT's twin).
        self.context_dim = context_dim
        self.pooled_dim = pooled_dim
        if context_dim:
            self.context_embedder = nn.Linear(context_dim, hidden)
        else:
            self.context_embedder = nn.Identity()
        if pooled_dim:
            self.pooled_embedder = nn.Linear(pooled_dim, hidden)
        else:
            self.pooled_embedder = nn.Identity()
        self.patch_embed = nn.Linear(channels * patch * patch, hidden)
        self.image_position = nn.Parameter(torch.randn(1, tokens, hidden) * 0.02)
        self.time_fc1 = nn.Linear(TIME_FREQUENCIES, hidden)
        self.time_fc2 = nn.Linear(hidden, hidden)
        self.pooled_fc = nn.Linear(hidden, hidden)
        self.blocks = nn.ModuleList([JointBlock(hidden, heads, mlp_ratio) for _ in range(depth)])
        self.final_norm = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Linear(hidden, 2 * hidden)
        self.final_proj = nn.Linear(hidden, channels * patch * patch)

    def timestep_embedding(self, t: torch.Tensor) -> torch.Tensor:
        half = 64  # TIME_FREQUENCIES // 2 (TorchScript reads no module globals)
        freqs = torch.exp(
            -math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half
        )
        args = (t.to(torch.float32) * 1000.0).unsqueeze(1) * freqs.unsqueeze(0)
        return torch.cat([torch.cos(args), torch.sin(args)], 1).to(t.dtype)

    def patchify(self, x: torch.Tensor) -> torch.Tensor:
        b = x.size(0)
        g, p = self.grid, self.patch
        return (
            x.reshape(b, self.channels, g, p, g, p)
            .permute(0, 2, 4, 1, 3, 5)
            .reshape(b, g * g, self.channels * p * p)
        )

    def unpatchify(self, x: torch.Tensor) -> torch.Tensor:
        b = x.size(0)
        g, p = self.grid, self.patch
        return (
            x.reshape(b, g, g, self.channels, p, p)
            .permute(0, 3, 1, 4, 2, 5)
            .reshape(b, self.channels, self.latent_size, self.latent_size)
        )

    def forward(
        self, latents: torch.Tensor, timesteps: torch.Tensor, prompt_embeds: torch.Tensor, pooled: torch.Tensor
    ) -> torch.Tensor:
        text = self.context_embedder(prompt_embeds)
        temb = self.time_fc2(F.silu(self.time_fc1(self.timestep_embedding(timesteps))))
        cond = F.silu(temb + self.pooled_fc(self.pooled_embedder(pooled)))
        h = self.patch_embed(self.patchify(latents)) + self.image_position
        c = text
        for block in self.blocks:
            h, c = block(h, c, cond)
        m = self.final_modulation(cond).chunk(2, 1)
        return self.unpatchify(self.final_proj(_modulate(self.final_norm(h), m[0], m[1])))


def add_lora(module: nn.Module, rank: int, alpha: float, targets=("qkv", "proj")) -> nn.Module:
    """Wraps every nn.Linear whose attribute name is in `targets` with a LoRALinear (in place)."""
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if name in targets and isinstance(child, nn.Linear):
                setattr(parent, name, LoRALinear(child, rank, alpha))
    return module
