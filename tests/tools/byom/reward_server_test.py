"""tools/reward_server/spotlight_reward.py over real ZeroMQ sockets: batching, latents and images,
components, and a clear error (counted in /metrics) for every kind of bad input."""

import os
import struct
import sys
import threading
import unittest
import urllib.request

import msgpack
import numpy as np
import zmq

ROOT = os.environ.get("SPOTLIGHT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../../.."))
sys.path.insert(0, os.path.join(ROOT, "tools", "reward_server"))
import spotlight_reward  # noqa: E402

calls = []


def score(inputs, prompts):
    calls.append((inputs.shape, list(prompts)))
    if any(p == "explode" for p in prompts):
        raise RuntimeError("boom")
    if any(p == "nan" for p in prompts):
        return [float("nan")] * len(prompts)
    mean = inputs.reshape(len(inputs), -1).mean(axis=1)
    return {"rewards": mean, "components": {"mean": mean, "twice": 2 * mean}}


def request(request_id, samples, prompts, content=None):
    n, h, w, c = samples.shape
    body = {"request_id": request_id, "prompts": prompts, "images": samples.astype("<f4").tobytes(),
            "width": w, "height": h, "count": n, "channels": c}
    version = 1
    if content:
        body["content"] = content
        version = 2
    return msgpack.packb({"type": "reward_request", "version": version, "body": body}, use_bin_type=True)


class RewardServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with socket_port() as port:
            metrics = port
        options = spotlight_reward.Options(
            bind="tcp://127.0.0.1:*", metrics_bind=f"127.0.0.1:{metrics}", max_batch=8,
            batch_window_ms=50, max_request_bytes=4096, max_images=16, reward_range=(-2.0, 120.0))
        cls.server = spotlight_reward.RewardServer(score, options)
        cls.endpoint = cls.server.bind()
        cls.metrics_url = f"http://127.0.0.1:{metrics}/metrics"
        cls.thread = threading.Thread(target=cls.server.run)
        cls.thread.start()
        cls.context = zmq.Context.instance()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.thread.join(10)

    def client(self):
        s = self.context.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(self.endpoint)
        self.addCleanup(s.close)
        return s

    def call(self, socket, payload, rid=7, frames=None):
        socket.send_multipart(frames or [b"", struct.pack(">BQ", 1, rid), payload])
        self.assertTrue(socket.poll(10000), "no reply")
        reply = socket.recv_multipart()
        self.assertEqual(len(reply), 3)
        version, got, status = struct.unpack(">BQB", reply[1])
        self.assertEqual(version, 1)
        return got, status, reply[2]

    def reply(self, socket, payload, rid=7):
        got, status, body = self.call(socket, payload, rid)
        self.assertEqual((got, status), (rid, 0))
        message = msgpack.unpackb(body, raw=False)
        self.assertEqual((message["type"], message["version"]), ("reward_reply", 1))
        return message["body"]

    def test_scores_latents_channels_first_with_components(self):
        latents = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)  # [N, H, W, C] on the wire
        body = self.reply(self.client(), request("r1", latents, ["a", "b"], content="latents"))
        self.assertEqual(body["error"], "")
        self.assertEqual(body["request_id"], "r1")
        np.testing.assert_allclose(body["rewards"], latents.reshape(2, -1).mean(axis=1))
        self.assertEqual(body["components"], ["mean", "twice"])
        self.assertEqual(len(body["component_rewards"]), 4)
        self.assertAlmostEqual(body["component_rewards"][1], 2 * body["component_rewards"][0])
        self.assertEqual(body["correct"], [r > 0.5 for r in body["rewards"]])
        self.assertIn(((2, 5, 3, 4), ["a", "b"]), calls)  # the function saw [N, C, H, W]

    def test_every_score_declares_the_reward_range(self):
        # Clients check every reward against it (docs/reward-protocol.md, "Reward range").
        images = np.full((1, 2, 2, 3), 0.5, dtype=np.float32)
        body = self.reply(self.client(), request("r-range", images, ["a"]))
        self.assertEqual(body["error"], "")
        self.assertEqual(body["range"], [-2.0, 120.0])

    def test_batches_concurrent_requests_into_one_call(self):
        sockets = [self.client() for _ in range(3)]
        before = len(calls)
        for i, s in enumerate(sockets):
            s.send_multipart([b"", struct.pack(">BQ", 1, i), request(f"b{i}", np.full((1, 2, 2, 3), i / 10, np.float32), [f"p{i}"])])
        for i, s in enumerate(sockets):
            self.assertTrue(s.poll(10000))
            body = msgpack.unpackb(s.recv_multipart()[2], raw=False)["body"]
            self.assertEqual(body["request_id"], f"b{i}")
            self.assertAlmostEqual(body["rewards"][0], i / 10, places=6)
        self.assertEqual(len(calls) - before, 1, "three requests within the window: one score() call")

    def test_refuses_bad_input_with_an_error_and_counts_it(self):
        s = self.client()
        cases = {
            b"\xc1": "not msgpack",
            msgpack.packb({"type": "heartbeat", "version": 1, "body": {}}): "expected 'reward_request'",
            msgpack.packb({"type": "reward_request", "version": 3, "body": {}}): "version must be in [1, 2]",
            request("x", np.zeros((1, 2, 2, 4), np.float32), ["p"]): "images must have 3 channels",
            request("x", np.full((1, 2, 2, 3), np.nan, np.float32), ["p"]): "NaN or Inf",
            request("x", np.zeros((1, 2, 2, 3), np.float32), ["p"], content="pixels"): "must be 'images' or 'latents'",
            request("x", np.zeros((1, 2, 2, 3), np.float32), ["explode"]): "score failed",
            request("x", np.zeros((1, 2, 2, 3), np.float32), ["nan"]): "NaN or infinite reward",
            request("x", np.zeros((17, 1, 1, 3), np.float32), ["p"] * 17): "exceed the limit of 16",
        }
        for payload, expected in cases.items():
            body = self.reply(s, payload)
            self.assertIn(expected, body["error"])
            self.assertEqual(body["rewards"], [])
        # Counts and sizes that disagree, a duplicated key.
        bad = msgpack.unpackb(request("y", np.zeros((1, 2, 2, 3), np.float32), ["p"]), raw=False)
        bad["body"]["count"] = 2
        self.assertIn("'prompts' has 1 entries", self.reply(s, msgpack.packb(bad, use_bin_type=True))["error"])
        duplicate = b"\x83\xa4type\xaereward_request\xa7version\x01\xa4type\xaereward_request"
        self.assertIn("given twice", self.reply(s, duplicate)["error"])
        # RPC framing: wrong frame count, bad header, too large.
        got, status, text = self.call(s, b"", frames=[b"", b"\x01"])
        self.assertEqual(status, 2)
        self.assertIn(b"expected 3 frames", text)
        got, status, text = self.call(s, b"x", frames=[b"", b"\x02" + bytes(8), b"x"])
        self.assertEqual((got, status), (0, 2))
        got, status, text = self.call(s, b"x" * 5000, rid=9)
        self.assertEqual((got, status), (9, 3))
        # The server still works, and /metrics counted everything by kind.
        self.assertEqual(self.reply(s, request("ok", np.ones((1, 2, 2, 3), np.float32), ["p"]))["error"], "")
        text = urllib.request.urlopen(self.metrics_url, timeout=10).read().decode()
        for line in ('spotlight_reward_errors_total{kind="not_msgpack"} 1',
                     'spotlight_reward_errors_total{kind="score_failed"} 2',
                     'spotlight_reward_rejected_messages_total{reason="frame_count"} 1',
                     'spotlight_reward_rejected_messages_total{reason="too_large"} 1'):
            self.assertIn(line, text)


class socket_port:
    def __enter__(self):
        import socket
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        return self.s.getsockname()[1]

    def __exit__(self, *args):
        self.s.close()


if __name__ == "__main__":
    unittest.main()
