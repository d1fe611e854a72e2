// The process group factory: the torchrun environment read into options, and a group of ranks
// (as threads) formed through a real TCPStore that rank 0 hosts on MASTER_PORT.
#include "common/parallel/process_group.hpp"

#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

namespace spotlight::parallel {
namespace {

std::function<const char*(const char*)> env_of(const std::map<std::string, std::string>& env) {
  return [env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

TEST(ProcessGroupFromEnv, ReadsTheTorchrunVariables) {
  const auto o = process_group_from_env({}, env_of({{"RANK", "2"},
                                                    {"WORLD_SIZE", "4"},
                                                    {"MASTER_ADDR", "trainer-0.trainer"},
                                                    {"MASTER_PORT", "29501"}}));
  EXPECT_EQ(o.rank, 2);
  EXPECT_EQ(o.world_size, 4);
  EXPECT_EQ(o.master_addr, "trainer-0.trainer");
  EXPECT_EQ(o.master_port, 29501);
  const auto defaults = process_group_from_env({}, env_of({}));
  EXPECT_EQ(defaults.world_size, 1);
  EXPECT_EQ(defaults.master_port, kDefaultMasterPort);
}

TEST(ProcessGroupFromEnv, MalformedVariablesAreNamed) {
  const auto error_of = [](const std::map<std::string, std::string>& env) {
    try {
      process_group_from_env({}, env_of(env));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of({{"RANK", "x"}}).find("RANK='x'"), std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "0"}}).find("WORLD_SIZE='0'"), std::string::npos);
  EXPECT_NE(error_of({{"MASTER_PORT", "70000"}}).find("MASTER_PORT"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("outside WORLD_SIZE 2"),
            std::string::npos);
}

std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(OpenProcessGroup, RanksMeetThroughRankZerosStoreAndReduce) {
  constexpr int kRanks = 3;
  const auto port = free_port();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kRanks);
  std::vector<float> sums(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        ProcessGroupOptions o;
        o.rank = rank;
        o.world_size = kRanks;
        o.master_port = port;
        o.group.label = "trainer";
        auto group = open_process_group(o);
        EXPECT_EQ(group->backend(), "gloo");
        auto t = torch::full({4}, static_cast<float>(rank + 1));
        group->all_reduce(t, ReduceOp::kSum);
        sums[static_cast<size_t>(rank)] = t[3].item<float>();
        group->barrier();
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(rank)] = e.what();
      }
    });
  }
  for (auto& t : threads)
    t.join();
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(errors[static_cast<size_t>(rank)], "") << rank;
    EXPECT_EQ(sums[static_cast<size_t>(rank)], 6.0F) << rank;
  }
}

TEST(OpenProcessGroup, OneRankFormsNoGroup) {
  auto group = open_process_group({});
  EXPECT_EQ(group->size(), 1);
  EXPECT_EQ(group->backend(), "local");
}

}  // namespace
}  // namespace spotlight::parallel
