#pragma once
// CURVE keys from configuration: every key names a zcert *file* (curve.hpp), never a key itself,
// so secrets stay out of YAML and command lines. An empty file name means plain text.
//
//   # reward service (server)          # explorer (client of the reward service)
//   reward.curve.server_secret_file:    reward.curve.server_public_file: /keys/reward.pub
//     /keys/reward.key                  reward.curve.client_secret_file: ""   # ephemeral pair
//
// Create the files with `spotlight-keygen SECRET_FILE PUBLIC_FILE` (tools/keygen).

#include <filesystem>
#include <string>
#include <string_view>

#include "common/config/config.hpp"
#include "common/zmq/curve.hpp"

namespace spotlight::zmqio {

// The server side of a socket: `secret_file_key` names a zcert file with its key pair. Empty
// value: CURVE off. Throws config::ConfigError naming the key when the file is unusable (missing,
// malformed, a public key that does not match) or libzmq lacks CURVE.
CurveOptions curve_server_options(const config::Config& config, std::string_view secret_file_key);

// The client side: `server_public_file_key` names a zcert file with the server's public key
// (empty: CURVE off); `client_secret_file_key` a zcert file with this client's key pair (empty:
// a fresh ephemeral pair; servers here accept any client key, see curve.hpp). Throws
// config::ConfigError naming the key, also when only the client key file is set.
CurveOptions curve_client_options(const config::Config& config,
                                  std::string_view server_public_file_key,
                                  std::string_view client_secret_file_key);

// Generates a key pair and writes it to `secret_file` (mode 0600) and its public key alone to
// `public_file` (mode 0644), for distribution to clients. Throws CurveError.
CurveKeyPair generate_curve_key_files(const std::filesystem::path& secret_file,
                                      const std::filesystem::path& public_file);

}  // namespace spotlight::zmqio
