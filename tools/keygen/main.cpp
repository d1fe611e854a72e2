// spotlight-keygen SECRET_FILE PUBLIC_FILE: a fresh ZeroMQ CURVE key pair for a server socket
// (trainer bus, reward service). SECRET_FILE (mode 0600) goes to the server's
// *.curve.server_secret_file key; PUBLIC_FILE to its clients' *.curve.server_public_file.
#include <cstdio>
#include <exception>

#include "common/zmq/curve_config.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: spotlight-keygen SECRET_FILE PUBLIC_FILE\n");
    return 2;
  }
  try {
    const auto keys = spotlight::zmqio::generate_curve_key_files(argv[1], argv[2]);
    std::printf("public key %s\nwrote %s (secret, 0600) and %s (public)\n", keys.public_key.c_str(),
                argv[1], argv[2]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spotlight-keygen: %s\n", e.what());
    return 1;
  }
}
