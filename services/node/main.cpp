// spotlight-node: `spotlight-node rank --store-port=P ...` is one rank process of a node
// (services/node/rank_worker.hpp); the node scheduler spawns these.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "common/config/error.hpp"
#include "services/node/rank_worker.hpp"

int main(int argc, char** argv) {
  const auto parser = spotlight::node::rank_command_line();
  try {
    const auto args = parser.parse(argc, argv);
    if (args.help()) {
      std::cout << parser.help();
      return 0;
    }
    if (args.positional() != std::vector<std::string>{"rank"}) {
      throw spotlight::config::ConfigError("", "expected the subcommand 'rank'");
    }
    const auto options = spotlight::node::RankWorkerOptions::from(args);
    return spotlight::node::run_rank_worker(options, std::cin, std::cout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spotlight-node: %s\n%s", e.what(), parser.help().c_str());
    return 2;
  }
}
