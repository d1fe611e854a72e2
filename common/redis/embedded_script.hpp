#pragma once
// A Lua script built into the program from .lua files of the repository (spotlight_embed_lua,
// cmake/EmbedLua.cmake). Run it as RedisClient::eval(Script(s), ...).

#include <span>
#include <string_view>

namespace spotlight::redis {

struct EmbeddedScript {
  std::string_view name;  // the script's file name without ".lua", e.g. "reclaim_from"
  std::string_view text;  // the contents of `files`, concatenated in order
  // The .lua files it is made of, relative to the repository root: the fragments it requires
  // first, in the order its "-- Requires:" line names them, the script's own file last.
  std::span<const std::string_view> files;
};

}  // namespace spotlight::redis
