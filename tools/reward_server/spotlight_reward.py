#!/usr/bin/python3
"""A reward service in Python that Spotlight's explorers and trainer call unchanged.

It speaks the protocol of docs/reward-protocol.md (ZeroMQ ROUTER, msgpack messages) and runs a
user function on batches of requests:

    def score(inputs, prompts):
        # inputs: numpy float32, [N, C, H, W] latents (content "latents") or [N, H, W, 3] RGB
        #         images in [0, 1] (content "images"); prompts: list of N strings
        return rewards                      # N numbers, or
        return {"rewards": [...],           # N numbers
                "correct": [...],           # optional: N booleans (default: reward > 0.5)
                "components": {"name": [...], ...}}  # optional: N numbers per named part

Run it with a function from a file,

    spotlight_reward.py --score my_reward.py:score --bind tcp://0.0.0.0:5557 --metrics-bind 0.0.0.0:9104

or from Python: `spotlight_reward.serve(score, Options(bind=...))`. Decoding latents with the
model's VAE belongs in `score`. Only Debian's python3-zmq, python3-msgpack and python3-numpy are
needed. Requests from every client are batched (up to --max-batch requests, waiting
--batch-window-ms after the first), each batch is one `score` call; malformed or unacceptable
requests get an error reply and are counted, never stopping the server; SIGTERM/SIGINT answer the
batch in hand and exit 0. /metrics serves Prometheus text under the C++ service's metric names.
"""

import argparse
import importlib.util
import math
import signal
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import msgpack
import numpy as np
import zmq

PROTOCOL_VERSION = 1  # RPC frame header
STATUS_OK, STATUS_HANDLER_ERROR, STATUS_MALFORMED, STATUS_TOO_LARGE = 0, 1, 2, 3
REQUEST_TYPE, REPLY_TYPE = "reward_request", "reward_reply"
REQUEST_VERSIONS = (1, 2)
WIRE_ERROR_KINDS = (
    "too_large", "not_msgpack", "bad_envelope", "unknown_type", "unexpected_type",
    "unsupported_version", "missing_field", "wrong_type", "bad_value",
)
RPC_REJECT_REASONS = ("frame_count", "delimiter", "header", "too_large", "handshake")
CONTENT_KINDS = ("images", "latents")


@dataclass
class Options:
    bind: str = "tcp://127.0.0.1:5557"
    metrics_bind: str = ""  # host:port of /metrics; empty: off
    max_batch: int = 32  # requests per score() call
    batch_window_ms: float = 5.0  # wait for more requests after the first of a batch
    max_request_bytes: int = 64 << 20  # larger payloads: a "too large" RPC status
    max_images: int = 4096  # samples per score() call; a request above it is refused
    handshake_timeout_ms: int = 5000  # as the C++ service (reward.handshake_timeout_ms)
    content: str = "any"  # "images", "latents" or "any": what requests may carry
    channels: int = 0  # required channels (0: any); likewise width/height
    width: int = 0
    height: int = 0
    # [lo, hi] the function's rewards lie in, declared in every reply; clients refuse rewards
    # outside it (the task is dead-lettered as a reward fault).
    reward_range: tuple = (0.0, 1.0)


class WireError(Exception):
    """A request that is not a well-formed reward_request; `kind` is the metric label."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class Metrics:
    """Counters and gauges under the C++ reward service's names (spotlight_reward_*)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counters = {}
        self.gauges = {}
        self.sums = {}
        for kind in WIRE_ERROR_KINDS + ("bad_image", "bad_prompt", "score_failed"):
            self.counters[("spotlight_reward_errors_total", (("kind", kind),))] = 0.0
        for reason in RPC_REJECT_REASONS + WIRE_ERROR_KINDS:
            self.counters[("spotlight_reward_rejected_messages_total", (("reason", reason),))] = 0.0
        for name in ("requests", "batches", "images_scored", "correct", "malformed"):
            self.counters[(f"spotlight_reward_{name}_total", ())] = 0.0

    def inc(self, name, labels=(), by=1.0):
        with self.lock:
            key = (name, tuple(labels))
            self.counters[key] = self.counters.get(key, 0.0) + by

    def set(self, name, value):
        with self.lock:
            self.gauges[name] = value

    def observe(self, name, value):
        with self.lock:
            total, count = self.sums.get(name, (0.0, 0))
            self.sums[name] = (total + value, count + 1)

    def text(self):
        def fmt(name, labels):
            if not labels:
                return name
            return name + "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"

        lines = []
        with self.lock:
            for name in sorted({n for n, _ in self.counters}):
                lines.append(f"# TYPE {name} counter")
                for (n, labels), value in sorted(self.counters.items()):
                    if n == name:
                        lines.append(f"{fmt(n, labels)} {value:g}")
            for name, value in sorted(self.gauges.items()):
                lines += [f"# TYPE {name} gauge", f"{name} {value:.17g}"]
            for name, (total, count) in sorted(self.sums.items()):
                lines += [f"# TYPE {name} summary", f"{name}_sum {total:.17g}", f"{name}_count {count}"]
        return "\n".join(lines) + "\n"


def _serve_metrics(metrics, address):
    host, _, port = address.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's naming)
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = metrics.text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# --- the wire format (common/wire) -------------------------------------------------------------


def _no_duplicates(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise WireError("bad_value", f"key '{key}' given twice")
        result[key] = value
    return result


def decode_request(payload, options):
    """Returns the request as a dict; raises WireError naming what is wrong."""
    if len(payload) > options.max_request_bytes:
        raise WireError("too_large", f"message larger than limit ({len(payload)} bytes)")
    try:
        root = msgpack.unpackb(payload, raw=False, strict_map_key=False, object_pairs_hook=_no_duplicates)
    except WireError:
        raise
    except Exception as e:  # msgpack raises several types for garbage
        raise WireError("not_msgpack", f"not msgpack ({e})") from None
    if not isinstance(root, dict):
        raise WireError("bad_envelope", "bad envelope: expected a map")
    kind, version, body = root.get("type"), root.get("version"), root.get("body")
    if not isinstance(kind, str):
        raise WireError("bad_envelope", "bad envelope: 'type' must be a string")
    if not isinstance(version, int) or isinstance(version, bool):
        raise WireError("bad_envelope", "bad envelope: 'version' must be an int64")
    if kind != REQUEST_TYPE:
        raise WireError("unexpected_type", f"expected '{REQUEST_TYPE}', got '{kind}'")
    prefix = f"message '{kind}' v{version}: "
    if version not in REQUEST_VERSIONS:
        raise WireError("unsupported_version", f"{prefix}version must be in [1, 2]")
    if not isinstance(body, dict):
        raise WireError("bad_envelope", "bad envelope: 'body' must be a map")

    def get(name, types, what):
        if name not in body:
            raise WireError("missing_field", f"{prefix}field '{name}' missing")
        value = body[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise WireError("wrong_type", f"{prefix}field '{name}' has wrong type (expected {what})")
        return value

    request = {
        "request_id": get("request_id", (str,), "string"),
        "prompts": get("prompts", (list,), "array of string"),
        "images": get("images", (bytes,), "bin"),
        "width": get("width", (int,), "int64"),
        "height": get("height", (int,), "int64"),
        "count": get("count", (int,), "int64"),
        "channels": get("channels", (int,), "int64"),
        "content": get("content", (str,), "string") if version >= 2 else "images",
    }
    if not all(isinstance(p, str) for p in request["prompts"]):
        raise WireError("wrong_type", f"{prefix}field 'prompts' has wrong type (expected array of string)")
    for name in ("width", "height", "count"):
        if request[name] < 0:
            raise WireError("bad_value", f"{prefix}field '{name}' must be >= 0")
    if request["channels"] < 1:
        raise WireError("bad_value", f"{prefix}field 'channels' must be >= 1")
    if request["content"] not in CONTENT_KINDS:
        raise WireError("bad_value", f"{prefix}field 'content' must be 'images' or 'latents'")
    if len(request["prompts"]) != request["count"]:
        raise WireError("bad_value", f"{prefix}field 'prompts' has {len(request['prompts'])} entries, "
                        f"'count' is {request['count']}")
    expected = request["count"] * request["height"] * request["width"] * request["channels"] * 4
    if len(request["images"]) != expected:
        raise WireError("bad_value", f"{prefix}field 'images' has {len(request['images']) / 4:g} values, "
                        "expected count x height x width x channels")
    return request


def encode_reply(request_id, rewards=(), correct=(), error="", components=None, reward_range=None):
    body = {
        "request_id": request_id,
        "rewards": [float(r) for r in rewards],
        "correct": [bool(c) for c in correct],
        "error": error,
    }
    if reward_range is not None:
        body["range"] = [float(reward_range[0]), float(reward_range[1])]
    if components:
        names = list(components)
        body["components"] = names
        body["component_rewards"] = [float(components[n][i]) for i in range(len(body["rewards"])) for n in names]
    return msgpack.packb({"type": REPLY_TYPE, "version": 1, "body": body}, use_bin_type=True)


# --- the RPC framing (common/rpc) --------------------------------------------------------------


def _reply_frames(peer, request_id, status, body):
    return [peer, b"", struct.pack(">BQB", PROTOCOL_VERSION, request_id, status), body]


def _parse_frames(frames, options):
    """(peer, id, payload) or (peer, id-or-0, None, reason, status, message)."""
    peer = frames[0]
    rest = frames[1:]
    rid = None
    if len(rest) >= 2 and len(rest[1]) == 9 and rest[1][0] == PROTOCOL_VERSION:
        rid = struct.unpack(">Q", rest[1][1:])[0]
    if len(rest) != 3:
        return peer, rid or 0, None, "frame_count", STATUS_MALFORMED, (
            f"expected 3 frames (empty delimiter, header, payload), got {len(rest)}")
    if rest[0]:
        return peer, rid or 0, None, "delimiter", STATUS_MALFORMED, "first frame must be empty"
    if rid is None:
        return peer, 0, None, "header", STATUS_MALFORMED, (
            f"header frame must be 9 bytes: protocol version {PROTOCOL_VERSION} and a 64-bit request id")
    if len(rest[2]) > options.max_request_bytes:
        return peer, rid, None, "too_large", STATUS_TOO_LARGE, (
            f"payload of {len(rest[2])} bytes exceeds max_request_bytes {options.max_request_bytes}")
    return peer, rid, rest[2], None, STATUS_OK, ""


# --- scoring ---------------------------------------------------------------------------------


def _check_content(request, options):
    what = f"reward_request '{request['request_id']}'"
    if options.content != "any" and request["content"] != options.content:
        return f"{what}: carries {request['content']}, this service scores {options.content}"
    if request["content"] == "images" and request["count"] and request["channels"] != 3:
        return f"{what}: images must have 3 channels, got {request['channels']}"
    for name in ("channels", "width", "height"):
        want = getattr(options, name)
        if want and request["count"] and request[name] != want:
            return f"{what}: {name} is {request[name]}, this service scores {want}"
    if request["count"] > options.max_images:
        return f"{what}: {request['count']} samples exceed the limit of {options.max_images}"
    return None


def _normalise(result, n):
    """The user's return value as (rewards, correct, components); raises ValueError."""
    components = None
    correct = None
    if isinstance(result, dict):
        rewards = result.get("rewards")
        correct = result.get("correct")
        components = result.get("components")
    else:
        rewards = result
    rewards = np.asarray(rewards, dtype=np.float64).reshape(-1)
    if rewards.size != n:
        raise ValueError(f"returned {rewards.size} rewards for {n} samples")
    if not np.all(np.isfinite(rewards)):
        raise ValueError("returned a NaN or infinite reward")
    correct = [bool(c) for c in correct] if correct is not None else [bool(r > 0.5) for r in rewards]
    if len(correct) != n:
        raise ValueError(f"returned {len(correct)} 'correct' flags for {n} samples")
    if components:
        components = {str(k): np.asarray(v, dtype=np.float64).reshape(-1) for k, v in components.items()}
        for name, values in components.items():
            if values.size != n or not np.all(np.isfinite(values)):
                raise ValueError(f"component '{name}' must have {n} finite values")
    return rewards, correct, components


class RewardServer:
    def __init__(self, score, options=None):
        self.score = score
        self.options = options or Options()
        self.metrics = Metrics()
        self.context = zmq.Context.instance()
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.MAXMSGSIZE, self.options.max_request_bytes + 4096)
        self.socket.setsockopt(zmq.HANDSHAKE_IVL, self.options.handshake_timeout_ms)
        self.socket.setsockopt(zmq.SNDHWM, 1000)
        self.socket.setsockopt(zmq.RCVHWM, 1000)
        self.stopping = threading.Event()
        self.endpoint = None
        self.metrics_server = None

    def bind(self):
        self.socket.bind(self.options.bind)
        self.endpoint = self.socket.getsockopt(zmq.LAST_ENDPOINT).decode()
        if self.options.metrics_bind:
            self.metrics_server = _serve_metrics(self.metrics, self.options.metrics_bind)
        return self.endpoint

    def stop(self):
        self.stopping.set()

    def run(self):
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        batch = []
        deadline = None
        while not self.stopping.is_set():
            timeout = 200 if not batch else max(0, (deadline - time.monotonic()) * 1000)
            if poller.poll(int(min(timeout, 200))):
                while len(batch) < self.options.max_batch:
                    try:
                        frames = self.socket.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    parsed = _parse_frames(frames, self.options)
                    peer, rid, payload = parsed[0], parsed[1], parsed[2]
                    if payload is None:
                        _, _, _, reason, status, message = parsed
                        self.metrics.inc("spotlight_reward_rejected_messages_total", (("reason", reason),))
                        self._send(_reply_frames(peer, rid, status, message.encode()))
                        continue
                    if not batch:
                        deadline = time.monotonic() + self.options.batch_window_ms / 1000
                    batch.append((peer, rid, payload))
            if batch and (len(batch) >= self.options.max_batch or time.monotonic() >= deadline):
                self.handle(batch)
                batch = []
        if batch:
            self.handle(batch)
        self.socket.close(0)
        if self.metrics_server:
            self.metrics_server.shutdown()
            self.metrics_server.server_close()

    def _send(self, frames):
        try:
            self.socket.send_multipart(frames, zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # the peer is gone or past its high-water mark: nothing to answer

    def handle(self, batch):
        """Scores one batch [(peer, id, payload)] with one score() call and answers each."""
        m = self.metrics
        m.inc("spotlight_reward_batches_total")
        m.inc("spotlight_reward_requests_total", by=len(batch))
        good = []  # (peer, id, request, array)
        for peer, rid, payload in batch:
            try:
                request = decode_request(payload, self.options)
            except WireError as e:
                m.inc("spotlight_reward_malformed_total")
                m.inc("spotlight_reward_errors_total", (("kind", e.kind),))
                m.inc("spotlight_reward_rejected_messages_total", (("reason", e.kind),))
                self._send(_reply_frames(peer, rid, STATUS_OK, encode_reply("", error=f"wire: {e}")))
                continue
            problem = _check_content(request, self.options)
            array = None
            if problem is None:
                array = np.frombuffer(request["images"], dtype="<f4").reshape(
                    request["count"], request["height"], request["width"], request["channels"])
                if not np.all(np.isfinite(array)):
                    problem = f"reward_request '{request['request_id']}': samples hold NaN or Inf"
            if problem is not None:
                m.inc("spotlight_reward_malformed_total")
                m.inc("spotlight_reward_errors_total", (("kind", "bad_image"),))
                self._send(_reply_frames(peer, rid, STATUS_OK, encode_reply(request["request_id"], error=problem)))
                continue
            if request["content"] == "latents":
                array = array.transpose(0, 3, 1, 2)  # channels-last on the wire -> [N, C, H, W]
            good.append((peer, rid, request, array))
        # One score() call per content kind and sample shape (usually exactly one).
        groups = {}
        for item in good:
            groups.setdefault((item[2]["content"],) + item[3].shape[1:], []).append(item)
        for items in groups.values():
            self._score_group(items)

    def _score_group(self, items):
        m = self.metrics
        inputs = np.ascontiguousarray(np.concatenate([item[3] for item in items]))
        prompts = [p for item in items for p in item[2]["prompts"]]
        started = time.monotonic()
        try:
            rewards, correct, components = _normalise(self.score(inputs, prompts), len(prompts))
        except Exception as e:  # the user's function failed: every request of the group says why
            m.inc("spotlight_reward_errors_total", (("kind", "score_failed"),), by=len(items))
            print(f"spotlight_reward: score failed on {len(prompts)} samples: {e!r}", file=sys.stderr, flush=True)
            for peer, rid, request, _ in items:
                self._send(_reply_frames(peer, rid, STATUS_OK, encode_reply(
                    request["request_id"], error=f"score failed: {e!r}")))
            return
        m.observe("spotlight_reward_score_seconds", time.monotonic() - started)
        m.inc("spotlight_reward_images_scored_total", by=len(prompts))
        m.inc("spotlight_reward_correct_total", by=sum(correct))
        if len(prompts):
            m.set("spotlight_reward_reward_mean", float(np.mean(rewards)))
            m.set("spotlight_reward_reward_std", float(np.std(rewards)))
        begin = 0
        for peer, rid, request, _ in items:
            end = begin + request["count"]
            parts = {n: v[begin:end] for n, v in components.items()} if components else None
            self._send(_reply_frames(peer, rid, STATUS_OK, encode_reply(
                request["request_id"], rewards[begin:end], correct[begin:end], "", parts,
                self.options.reward_range)))
            begin = end


def serve(score, options=None):
    """Binds, serves until SIGTERM/SIGINT, answers the batch in hand and returns."""
    server = RewardServer(score, options)
    endpoint = server.bind()
    for signo in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signo, lambda *_: server.stop())
    metrics = f", metrics on http://{options.metrics_bind}/metrics" if options and options.metrics_bind else ""
    print(f"spotlight_reward: listening on {endpoint}{metrics}", flush=True)
    server.run()
    print("spotlight_reward: stopped", flush=True)


def load_function(spec):
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise SystemExit(f"spotlight_reward: --score must be FILE.py:FUNCTION, got '{spec}'")
    loaded = importlib.util.spec_from_file_location("spotlight_user_reward", path)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return getattr(module, name)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--score", required=True, help="FILE.py:FUNCTION(inputs, prompts) -> rewards")
    d = Options()
    parser.add_argument("--bind", default=d.bind)
    parser.add_argument("--metrics-bind", default=d.metrics_bind, help="host:port of /metrics; empty: off")
    parser.add_argument("--max-batch", type=int, default=d.max_batch)
    parser.add_argument("--batch-window-ms", type=float, default=d.batch_window_ms)
    parser.add_argument("--max-request-bytes", type=int, default=d.max_request_bytes)
    parser.add_argument("--max-images", type=int, default=d.max_images)
    parser.add_argument("--handshake-timeout-ms", type=int, default=d.handshake_timeout_ms)
    parser.add_argument("--content", choices=("any",) + CONTENT_KINDS, default=d.content)
    parser.add_argument("--channels", type=int, default=0)
    parser.add_argument("--width", type=int, default=0)
    parser.add_argument("--height", type=int, default=0)
    parser.add_argument("--range", type=float, nargs=2, default=list(d.reward_range), metavar=("LO", "HI"),
                        help="the range the function's rewards lie in, declared to clients (default 0 1)")
    args = parser.parse_args(argv)
    if not (math.isfinite(args.range[0]) and math.isfinite(args.range[1]) and args.range[0] < args.range[1]):
        parser.error("--range needs two finite numbers LO < HI")
    if args.max_batch < 1 or args.max_images < 1 or args.max_request_bytes < 1024 or args.batch_window_ms < 0:
        parser.error("--max-batch and --max-images must be >= 1, --max-request-bytes >= 1024, "
                     "--batch-window-ms >= 0")
    options = Options(
        bind=args.bind, metrics_bind=args.metrics_bind, max_batch=args.max_batch,
        batch_window_ms=args.batch_window_ms, max_request_bytes=args.max_request_bytes,
        max_images=args.max_images, handshake_timeout_ms=args.handshake_timeout_ms,
        content=args.content, channels=args.channels, width=args.width, height=args.height,
        reward_range=(args.range[0], args.range[1]))
    serve(load_function(args.score), options)


if __name__ == "__main__":
    main()
