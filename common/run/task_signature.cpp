#include "common/run/task_signature.hpp"

#include <cstdlib>
#include <stdexcept>

#include "common/config/error.hpp"
#include "common/security/hmac.hpp"

namespace spotlight::run {
namespace {

constexpr std::string_view kDomain = "spotlight seed_task signature v1\n";

std::string mac(wire::SeedTask task, const TaskKey& key) {
  task.signature.clear();
  task.key_id = key.id();
  return security::hmac_sha256(key.secret(), std::string(kDomain) + task.encode());
}

}  // namespace

TaskKey::TaskKey(std::string secret) : secret_(std::move(secret)) {
  if (secret_.size() < kMinTaskKeyBytes) {
    throw std::invalid_argument("task key: at least " + std::to_string(kMinTaskKeyBytes) +
                                " bytes needed, got " + std::to_string(secret_.size()));
  }
  id_ = security::to_hex(security::sha256("spotlight task key id\n" + secret_).substr(0, 8));
}

TaskKey TaskKey::generate() {
  return TaskKey(security::to_hex(security::random_bytes(32)));
}

std::optional<TaskKey> TaskKey::from_env() {
  const char* value = std::getenv(kTaskKeyEnvVar);
  if (value == nullptr || *value == '\0') return std::nullopt;
  std::string secret(value);
  if (secret.size() < kMinTaskKeyBytes) {
    throw config::ConfigError(kTaskKeyEnvVar, std::string(kTaskKeyEnvVar) + " must hold at least " +
                                                  std::to_string(kMinTaskKeyBytes) +
                                                  " bytes (e.g. `openssl rand -hex 32`), got " +
                                                  std::to_string(secret.size()));
  }
  return TaskKey(std::move(secret));
}

void sign(wire::SeedTask& task, const TaskKey& key) {
  task.signature = mac(task, key);
  task.key_id = key.id();
}

std::string_view to_string(TaskAuth auth) {
  switch (auth) {
    case TaskAuth::kOk:
      return "ok";
    case TaskAuth::kUnsigned:
      return "unsigned";
    case TaskAuth::kOtherKey:
      return "other_key";
    case TaskAuth::kBadSignature:
      return "bad_signature";
  }
  return "unknown";
}

TaskAuth verify(const wire::SeedTask& task, const TaskKey& key) {
  if (task.signature.empty()) return TaskAuth::kUnsigned;
  if (task.key_id != key.id()) return TaskAuth::kOtherKey;
  return security::equal_constant_time(task.signature, mac(task, key)) ? TaskAuth::kOk
                                                                       : TaskAuth::kBadSignature;
}

}  // namespace spotlight::run
