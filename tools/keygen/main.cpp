// spotlight-keygen SECRET_FILE PUBLIC_FILE: a fresh ZeroMQ CURVE key pair for a server socket
// (trainer bus, reward service). SECRET_FILE (mode 0600) goes to the server's
// *.curve.server_secret_file key; PUBLIC_FILE to its clients' *.curve.server_public_file.
#include <cstdio>
#include <exception>
#include <iostream>

#include "common/config/arguments.hpp"
#include "common/config/error.hpp"
#include "common/zmq/curve_config.hpp"

int main(int argc, char** argv) {
  const spotlight::config::ArgumentParser parser(
      "usage: spotlight-keygen SECRET_FILE PUBLIC_FILE\n"
      "Writes a fresh CURVE key pair to SECRET_FILE (mode 0600; for a server's\n"
      "*.curve.server_secret_file) and its public key to PUBLIC_FILE (for the clients'\n"
      "*.curve.server_public_file).");
  try {
    const auto args = parser.parse(argc, argv);
    if (args.help()) {
      std::cout << parser.help();
      return 0;
    }
    if (args.positional().size() != 2 || !args.rest().empty()) {
      throw spotlight::config::ConfigError("", "expected SECRET_FILE PUBLIC_FILE");
    }
    const std::string& secret = args.positional()[0];
    const std::string& pub = args.positional()[1];
    const auto keys = spotlight::zmqio::generate_curve_key_files(secret, pub);
    std::printf("public key %s\nwrote %s (secret, 0600) and %s (public)\n", keys.public_key.c_str(),
                secret.c_str(), pub.c_str());
    return 0;
  } catch (const spotlight::config::ConfigError& e) {
    std::fprintf(stderr, "spotlight-keygen: %s\n%s", e.what(), parser.help().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spotlight-keygen: %s\n", e.what());
    return 1;
  }
}
