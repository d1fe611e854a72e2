#pragma once
// Optional CURVE encryption for bus and RPC sockets (libzmq's CurveZMQ: encryption plus server
// authentication). Keys are Z85 strings of 40 characters.
//
// Key files use the CZMQ zcert text format, which `zmakecert` also writes:
//
//     # comment
//     curve
//         public-key = "<40 Z85 chars>"
//         secret-key = "<40 Z85 chars>"      (absent in a public-only file)
//
// Contract: without a ZAP handler libzmq accepts every client key, so CURVE here gives
// confidentiality and lets clients authenticate the server; it does not restrict which clients
// may connect (bind to private addresses for that). Secret key files should be mode 0600.

#include <filesystem>
#include <optional>
#include <string>

namespace spotlight::zmqio {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 chars
  std::string secret_key;  // Z85, 40 chars
};

// The client side of a CURVE connection: its own key pair and the server's public key.
struct CurveClientKeys {
  CurveKeyPair own;
  std::string server_public_key;  // Z85, 40 chars
};

// At most one of the two may be set; none means plain text (the default).
struct CurveOptions {
  std::optional<CurveKeyPair> server;     // this socket is a CURVE server with these keys
  std::optional<CurveClientKeys> client;  // this socket is a CURVE client

  bool enabled() const { return server.has_value() || client.has_value(); }
};

// True when this libzmq was built with CURVE (zmq_has("curve")).
bool curve_available();

// Throws CurveError naming the reason when CURVE is unavailable.
void require_curve();

// A fresh random key pair. Throws CurveError when CURVE is unavailable.
CurveKeyPair generate_curve_keypair();

// Reads a key pair (public and secret key) from a zcert file. Throws CurveError naming the file
// and the key when the file is unreadable, a key is missing or not valid Z85, or the public key
// does not belong to the secret key.
CurveKeyPair load_curve_keypair(const std::filesystem::path& path);

// Reads only the public key of a zcert file (e.g. the server's, on a client).
std::string load_curve_public_key(const std::filesystem::path& path);

// Writes `keys` in zcert format; the file is created with mode 0600. Throws CurveError.
void save_curve_keypair(const std::filesystem::path& path, const CurveKeyPair& keys);

// Writes only the public key (for clients of a server), mode 0644. Throws CurveError.
void save_curve_public_key(const std::filesystem::path& path, const std::string& public_key);

// Throws CurveError naming `what` unless `key` is 40 characters of valid Z85.
void validate_curve_key(const std::string& key, const std::string& what);

}  // namespace spotlight::zmqio
