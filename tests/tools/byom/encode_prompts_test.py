"""tools/encode_prompts.py with its random encoder: the files the trainer reads, deterministic."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.environ.get("SPOTLIGHT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../../.."))
sys.path.insert(0, os.path.join(ROOT, "tools", "byom"))
import safetensors_io  # noqa: E402
import torch  # noqa: E402

SCRIPT = os.path.join(ROOT, "tools", "encode_prompts.py")


class EncodePrompts(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        with open(os.path.join(d, "train.txt"), "w") as f:
            f.write("a cat on a sofa\n\n  a red bicycle  \nune tour Eiffel \u00e9clair\n")
        with open(os.path.join(d, "validation.txt"), "w") as f:
            f.write("a lighthouse\n")

    def tearDown(self):
        self.dir.cleanup()

    def encode(self, out, *extra):
        d = self.dir.name
        return subprocess.run(
            [sys.executable, SCRIPT, "--train", os.path.join(d, "train.txt"), "--validation",
             os.path.join(d, "validation.txt"), "--out-prompts", os.path.join(d, out + ".json"),
             "--out-embeddings", os.path.join(d, out + ".safetensors"), *extra],
            capture_output=True, text=True)

    def test_writes_the_prompt_file_and_matching_embeddings(self):
        run = self.encode("a", "--random-encoder", "6,12,5", "--batch", "2")
        self.assertEqual(run.returncode, 0, run.stderr)
        d = self.dir.name
        with open(os.path.join(d, "a.json"), encoding="utf-8") as f:
            prompts = json.load(f)
        self.assertEqual(prompts["format"], "spotlight-prompts")
        self.assertEqual(prompts["version"], 1)
        self.assertEqual(prompts["train"], ["a cat on a sofa", "a red bicycle", "une tour Eiffel \u00e9clair"])
        self.assertEqual(prompts["validation"], ["a lighthouse"])
        tensors, metadata = safetensors_io.load_file_with_metadata(os.path.join(d, "a.safetensors"))
        self.assertEqual(metadata["format"], "spotlight-prompt-embeddings")
        self.assertEqual(json.loads(metadata["prompts"]), {"train": prompts["train"], "validation": prompts["validation"]})
        self.assertEqual(list(tensors["train.prompt_embeds"].shape), [3, 6, 12])
        self.assertEqual(list(tensors["train.pooled"].shape), [3, 5])
        self.assertEqual(list(tensors["validation.prompt_embeds"].shape), [1, 6, 12])
        self.assertEqual(tensors["train.pooled"].dtype, torch.float32)
        # Different prompts encode differently; the same prompt the same, whatever the batch.
        self.assertFalse(torch.equal(tensors["train.pooled"][0], tensors["train.pooled"][1]))
        again = self.encode("b", "--random-encoder", "6,12,5", "--batch", "32")
        self.assertEqual(again.returncode, 0, again.stderr)
        other = safetensors_io.load_file(os.path.join(d, "b.safetensors"))
        for name in tensors:
            self.assertTrue(torch.equal(tensors[name], other[name]), name)

    def test_a_user_encoder_that_returns_the_wrong_rank_is_refused(self):
        d = self.dir.name
        with open(os.path.join(d, "enc.py"), "w") as f:
            f.write("import torch\ndef encode(prompts):\n    return torch.zeros(len(prompts), 4), torch.zeros(len(prompts), 2)\n")
        run = self.encode("c", "--encoder", os.path.join(d, "enc.py") + ":encode")
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("must return [N, L, D] and [N, P]", run.stderr)


if __name__ == "__main__":
    unittest.main()
