#pragma once
// Signed seed tasks (issue #13.5): the planner signs every task it enqueues with HMAC-SHA256 under
// the run's task key; explorers refuse tasks that are unsigned or whose signature does not verify,
// so whoever can write the task stream but does not hold the key cannot make explorers run work.
//
//   run::sign(task, key);                           // planner, before enqueueing
//   switch (run::verify(task, key)) { ... }         // explorer, after decoding
//
// The signature covers every field of the task (the message as encoded with an empty signature,
// behind a domain tag). HMAC keys are symmetric: every holder of the key (planner, explorers) can
// sign; the Redis ACL keeps explorers from writing the task stream (deploy/redis/users.acl).
//
// Where the key comes from (task_key_source.hpp): $SPOTLIGHT_TASK_KEY in every process of the run,
// else a key the planner generates per run and keeps in Redis (readable by the run's roles only).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/wire/messages.hpp"

namespace spotlight::run {

inline constexpr const char* kTaskKeyEnvVar = "SPOTLIGHT_TASK_KEY";
inline constexpr std::size_t kMinTaskKeyBytes = 16;

// A task-signing key: the secret, and an id (the first 8 bytes of a SHA-256 of it, hex) that
// names the key in logs and dead letters without revealing it.
class TaskKey {
 public:
  // Throws std::invalid_argument when shorter than kMinTaskKeyBytes.
  explicit TaskKey(std::string secret);
  // 32 random bytes. Throws security::SecurityError without a source of randomness.
  static TaskKey generate();
  // $SPOTLIGHT_TASK_KEY (its bytes as they are); std::nullopt when unset or empty. Throws
  // config::ConfigError naming the variable (not its value) when it is too short: services stop
  // at start with the configuration's exit code.
  static std::optional<TaskKey> from_env();

  const std::string& secret() const { return secret_; }
  const std::string& id() const { return id_; }

 private:
  std::string secret_;
  std::string id_;
};

// Sets task.key_id and task.signature.
void sign(wire::SeedTask& task, const TaskKey& key);

enum class TaskAuth {
  kOk,
  kUnsigned,      // no signature
  kOtherKey,      // signed with another key (task.key_id names it)
  kBadSignature,  // names this key, but the signature does not match the fields
};
// "ok", "unsigned", "other_key", "bad_signature" (metric labels).
std::string_view to_string(TaskAuth auth);

TaskAuth verify(const wire::SeedTask& task, const TaskKey& key);

}  // namespace spotlight::run
