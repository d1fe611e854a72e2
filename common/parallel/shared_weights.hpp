#pragma once
// Weights handed between processes of one node through POSIX shared memory, so that a rank that
// joins a group copies them from a peer instead of fetching them from the weight store.
//
// A segment "/<name>" holds [u64 size][u64 xxh64 of the bytes][bytes]. publish replaces any
// segment of that name; read verifies the checksum. Segments outlive their writer until removed.

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spotlight::parallel {

// A segment could not be written, or what was read is not what was written.
class SharedWeightsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `name`: [A-Za-z0-9._-]+ (no slash). Returns after the segment is complete.
void publish_shared_weights(const std::string& name, std::string_view bytes);
// nullopt if no segment `name` exists; SharedWeightsError if it is truncated or corrupt.
std::optional<std::string> read_shared_weights(const std::string& name);
// Removes the segment; absent is fine.
void remove_shared_weights(const std::string& name);

}  // namespace spotlight::parallel
