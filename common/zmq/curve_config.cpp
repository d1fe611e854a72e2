#include "common/zmq/curve_config.hpp"

#include "common/config/error.hpp"
#include "common/zmq/errors.hpp"

namespace spotlight::zmqio {
namespace {

[[noreturn]] void fail(const config::Config& config, std::string_view key, const std::string& why) {
  throw config::ConfigError(std::string(key), "config: '" + std::string(key) + "' (" +
                                                  config.origin(std::string(key)) + "): " + why);
}

}  // namespace

CurveOptions curve_server_options(const config::Config& config, std::string_view secret_file_key) {
  CurveOptions out;
  const std::string file = config.get_string(std::string(secret_file_key));
  if (file.empty()) return out;
  try {
    require_curve();
    out.server = load_curve_keypair(file);
  } catch (const CurveError& e) {
    fail(config, secret_file_key, e.what());
  }
  return out;
}

CurveOptions curve_client_options(const config::Config& config,
                                  std::string_view server_public_file_key,
                                  std::string_view client_secret_file_key) {
  CurveOptions out;
  const std::string server_file = config.get_string(std::string(server_public_file_key));
  const std::string client_file = config.get_string(std::string(client_secret_file_key));
  if (server_file.empty()) {
    if (!client_file.empty()) {
      fail(config, client_secret_file_key,
           "set, but '" + std::string(server_public_file_key) +
               "' is empty: a CURVE client needs the server's public key");
    }
    return out;
  }
  CurveClientKeys keys;
  try {
    require_curve();
    keys.server_public_key = load_curve_public_key(server_file);
  } catch (const CurveError& e) {
    fail(config, server_public_file_key, e.what());
  }
  try {
    keys.own = client_file.empty() ? generate_curve_keypair() : load_curve_keypair(client_file);
  } catch (const CurveError& e) {
    fail(config, client_secret_file_key, e.what());
  }
  out.client = std::move(keys);
  return out;
}

CurveKeyPair generate_curve_key_files(const std::filesystem::path& secret_file,
                                      const std::filesystem::path& public_file) {
  const CurveKeyPair keys = generate_curve_keypair();
  save_curve_keypair(secret_file, keys);
  save_curve_public_key(public_file, keys.public_key);
  return keys;
}

}  // namespace spotlight::zmqio
