"""A toy reward on latents, for the end-to-end test and as the smallest example of a score
function for spotlight_reward.py:

    spotlight_reward.py --score toy_latent_reward.py:score --content latents --range -1000 1000

reward = mean of latent channel 0 (the policy learns to raise it; not in the default declared
range [0, 1], hence --range); correct = reward > 0.
Components: the channel-0 mean and the mean absolute latent value.
"""

import numpy as np


def score(latents, prompts):
    # latents: [N, C, H, W] float32; prompts: N strings (unused by this rule)
    channel0 = latents[:, 0].reshape(len(latents), -1).mean(axis=1)
    magnitude = np.abs(latents).reshape(len(latents), -1).mean(axis=1)
    return {
        "rewards": channel0,
        "correct": channel0 > 0.0,
        "components": {"channel0_mean": channel0, "abs_mean": magnitude},
    }
