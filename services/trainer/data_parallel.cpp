#include "services/trainer/data_parallel.hpp"

#include <chrono>
#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace spotlight::trainer {
namespace {

using Json = nlohmann::json;

Json tensor_to_json(const at::Tensor& t) {
  const auto cpu = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(cpu.numel()) * sizeof(float));
  std::memcpy(bytes.data(), cpu.data_ptr<float>(), bytes.size());
  return Json{{"shape", cpu.sizes().vec()}, {"data", Json::binary(std::move(bytes))}};
}

at::Tensor tensor_from_json(const Json& j, const at::TensorOptions& options) {
  const auto shape = j.at("shape").get<std::vector<std::int64_t>>();
  const auto& bytes = j.at("data").get_binary();
  auto t = torch::empty(shape, torch::kFloat);
  if (static_cast<std::size_t>(t.numel()) * sizeof(float) != bytes.size()) {
    throw std::runtime_error("data parallel: a shared rollout tensor has the wrong size");
  }
  std::memcpy(t.data_ptr<float>(), bytes.data(), bytes.size());
  return t.to(options);
}

Json rollout_to_json(const rollout::Rollout& r) {
  return Json{{"latents", tensor_to_json(r.latents)},
              {"log_probs", tensor_to_json(r.log_probs)},
              {"window", {r.window.begin, r.window.end}},
              {"weights_version", r.weights_version},
              {"reward", r.reward},
              {"correct", r.correct}};
}

rollout::Rollout rollout_from_json(const Json& j, const at::TensorOptions& options) {
  rollout::Rollout r;
  r.latents = tensor_from_json(j.at("latents"), options);
  r.log_probs = tensor_from_json(j.at("log_probs"), options);
  r.window.begin = j.at("window").at(0).get<int>();
  r.window.end = j.at("window").at(1).get<int>();
  r.weights_version = j.at("weights_version").get<std::int64_t>();
  r.reward = j.at("reward").get<double>();
  r.correct = j.at("correct").get<bool>();
  return r;
}

std::string encode_selection(const SeedSelection& s,
                             const std::function<int(std::size_t, std::size_t)>& owner) {
  Json j{{"seeds", s.seeds},
         {"candidate_rewards", s.candidate_rewards},
         {"candidate_seeds", s.candidate_seeds},
         {"explore_seconds", s.explore_seconds},
         {"selected_variance", s.selected_variance},
         {"fallback_prompts", s.fallback_prompts},
         {"explore_weights_version", s.explore_weights_version},
         {"explore_sampler_steps", s.explore_sampler_steps},
         {"rejected_trajectories", s.rejected_trajectories},
         {"quarantined_results", s.quarantined_results},
         {"lost_tasks", s.lost_tasks},
         {"dead_lettered_tasks", s.dead_lettered_tasks}};
  Json rollouts = Json::array();  // [prompt, index, rollout] of those rank 0 does not own
  for (std::size_t i = 0; i < s.rollouts.size(); ++i) {
    for (std::size_t g = 0; g < s.rollouts[i].size(); ++g) {
      if (s.rollouts[i][g] && owner(i, g) != 0) {
        rollouts.push_back(
            Json{{"prompt", i}, {"index", g}, {"rollout", rollout_to_json(*s.rollouts[i][g])}});
      }
    }
  }
  j["rollouts"] = std::move(rollouts);
  j["rollout_groups"] = s.rollouts.size();
  const auto cbor = Json::to_cbor(j);
  return {cbor.begin(), cbor.end()};
}

SeedSelection decode_selection(const std::string& bytes, const at::TensorOptions& options) {
  const Json j = Json::from_cbor(bytes);
  SeedSelection s;
  j.at("seeds").get_to(s.seeds);
  j.at("candidate_rewards").get_to(s.candidate_rewards);
  j.at("candidate_seeds").get_to(s.candidate_seeds);
  s.explore_seconds = j.at("explore_seconds").get<double>();
  s.selected_variance = j.at("selected_variance").get<double>();
  s.fallback_prompts = j.at("fallback_prompts").get<int>();
  s.explore_weights_version = j.at("explore_weights_version").get<std::int64_t>();
  s.explore_sampler_steps = j.at("explore_sampler_steps").get<std::int64_t>();
  j.at("rejected_trajectories").get_to(s.rejected_trajectories);
  s.quarantined_results = j.at("quarantined_results").get<int>();
  s.lost_tasks = j.at("lost_tasks").get<int>();
  s.dead_lettered_tasks = j.at("dead_lettered_tasks").get<int>();
  const auto groups = j.at("rollout_groups").get<std::size_t>();
  if (groups > 0) {
    s.rollouts.resize(groups);
    for (std::size_t i = 0; i < groups && i < s.seeds.size(); ++i)
      s.rollouts[i].resize(s.seeds[i].size());
  }
  for (const auto& entry : j.at("rollouts")) {
    const auto i = entry.at("prompt").get<std::size_t>();
    const auto g = entry.at("index").get<std::size_t>();
    if (i >= s.rollouts.size() || g >= s.rollouts[i].size()) {
      throw std::runtime_error("data parallel: a shared rollout is outside the selection");
    }
    s.rollouts[i][g] = rollout_from_json(entry.at("rollout"), options);
  }
  return s;
}

}  // namespace

int owner_of(std::size_t sample, int micro_batch, int ranks) {
  if (ranks <= 1) return 0;
  return static_cast<int>((sample / static_cast<std::size_t>(std::max(1, micro_batch))) %
                          static_cast<std::size_t>(ranks));
}

void broadcast_bytes(parallel::Communicator& group, std::string& bytes, at::Device device) {
  if (group.size() == 1) return;
  auto size = torch::tensor({static_cast<std::int64_t>(bytes.size())}, torch::kLong).to(device);
  group.broadcast(size, 0);
  const auto n = size.item<std::int64_t>();
  auto buffer = torch::empty({n}, torch::kUInt8);
  if (group.rank() == 0 && n > 0) std::memcpy(buffer.data_ptr<std::uint8_t>(), bytes.data(), n);
  if (n > 0) {
    auto on_device = buffer.to(device);
    group.broadcast(on_device, 0);
    buffer = on_device.to(torch::kCPU).contiguous();
  }
  if (group.rank() != 0) {
    bytes.assign(reinterpret_cast<const char*>(buffer.data_ptr<std::uint8_t>()),
                 static_cast<std::size_t>(n));
  }
}

void share_selection(parallel::Communicator& group, SeedSelection& selection,
                     const std::function<int(std::size_t, std::size_t)>& owner,
                     const at::TensorOptions& tensor_options) {
  if (group.size() == 1) return;
  std::string bytes;
  if (group.rank() == 0) bytes = encode_selection(selection, owner);
  broadcast_bytes(group, bytes, tensor_options.device());
  if (group.rank() != 0) selection = decode_selection(bytes, tensor_options);
}

void share_sample_table(parallel::Communicator& group, at::Tensor& table, at::Device device) {
  if (group.size() == 1) return;
  auto shared = table.to(device, torch::kDouble).contiguous();
  group.all_reduce(shared, parallel::ReduceOp::kSum);
  table = shared.to(torch::kCPU);
}

std::vector<double> reduce_values(parallel::Communicator& group, std::vector<double> values,
                                  parallel::ReduceOp op, at::Device device) {
  if (group.size() == 1 || values.empty()) return values;
  auto t = torch::tensor(values, torch::kDouble).to(device);
  group.all_reduce(t, op);
  t = t.to(torch::kCPU).contiguous();
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

GradientReduction reduce_gradients(parallel::Communicator& group,
                                   const std::vector<at::Tensor>& parameters,
                                   std::size_t bucket_bytes) {
  GradientReduction out;
  if (group.size() == 1) return out;
  const auto start = std::chrono::steady_clock::now();
  std::vector<at::Tensor> grads;
  for (const auto& p : parameters) {
    auto& grad = const_cast<at::Tensor&>(p).mutable_grad();
    if (!grad.defined()) grad = torch::zeros_like(p);  // no micro-batch of this rank used it
    grads.push_back(grad);
  }
  // Buckets: runs of gradients of one dtype and device, each at most bucket_bytes (a larger
  // gradient is a bucket alone), flattened into one buffer per all-reduce.
  std::size_t begin = 0;
  while (begin < grads.size()) {
    std::size_t end = begin;
    std::size_t bytes = 0;
    while (end < grads.size() && grads[end].scalar_type() == grads[begin].scalar_type() &&
           grads[end].device() == grads[begin].device()) {
      const auto b = static_cast<std::size_t>(grads[end].numel() * grads[end].element_size());
      if (end > begin && bytes + b > bucket_bytes) break;
      bytes += b;
      ++end;
    }
    std::vector<at::Tensor> flat;
    for (std::size_t i = begin; i < end; ++i)
      flat.push_back(grads[i].reshape({-1}));
    auto buffer = torch::cat(flat);
    group.all_reduce(buffer, parallel::ReduceOp::kSum);
    std::int64_t at = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const auto n = grads[i].numel();
      grads[i].copy_(buffer.narrow(0, at, n).view_as(grads[i]));
      at += n;
    }
    out.bytes += static_cast<std::int64_t>(bytes);
    ++out.buckets;
    begin = end;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

at::Tensor weights_checksum(const std::vector<at::Tensor>& parameters) {
  torch::NoGradGuard no_grad;
  auto sums = torch::zeros({3}, torch::kDouble);
  double index = 1.0;
  for (const auto& p : parameters) {
    const auto d = p.detach().to(torch::kCPU, torch::kDouble).reshape({-1});
    sums[0] += d.sum();
    sums[1] += (d * d).sum();
    sums[2] += (d * index).sum();  // a swap of two tensors changes this one
    index += 1.0;
  }
  return sums;
}

void check_weights_agree(parallel::Communicator& group, const std::vector<at::Tensor>& parameters,
                         std::int64_t iteration, at::Device device) {
  if (group.size() == 1) return;
  const auto mine = weights_checksum(parameters).to(device);
  const auto all = group.all_gather(mine).to(torch::kCPU);  // [ranks, 3]
  for (int r = 1; r < group.size(); ++r) {
    if (torch::equal(all[r], all[0])) continue;
    std::ostringstream message;
    message.precision(17);
    message << "trainer: the ranks' weights diverged after iteration " << iteration << ": rank 0 "
            << "checksum (" << all[0][0].item<double>() << ", " << all[0][1].item<double>()
            << "), rank " << r << " (" << all[r][0].item<double>() << ", "
            << all[r][1].item<double>() << "); the group stops (restart it from the checkpoint)";
    throw WeightsDiverged(message.str());
  }
}

}  // namespace spotlight::trainer
