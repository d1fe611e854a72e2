// spotlight-node: `spotlight-node rank --store-port=P ...` is one rank process of a node
// (services/node/rank_worker.hpp); the node scheduler spawns these.
#include <cstdio>
#include <cstring>
#include <iostream>

#include "services/node/rank_worker.hpp"

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "rank") != 0) {
    std::fprintf(stderr, "usage: spotlight-node rank --store-port=P [--preset=tiny ...]\n");
    return 2;
  }
  try {
    auto options = spotlight::node::RankWorkerOptions::from_args(argc - 2, argv + 2);
    return spotlight::node::run_rank_worker(options, std::cin, std::cout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spotlight-node: %s\n", e.what());
    return 2;
  }
}
