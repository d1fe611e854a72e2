#pragma once
// Files that a crash, a power loss or a full disk leaves whole or not at all.
//
//   write_file(path, bytes) ==
//     fd = open(path + ".tmp", O_WRONLY | O_CREAT | O_TRUNC); write all bytes; fsync(fd); close(fd)
//     rename(path + ".tmp", path); fsync(directory of path)
//
// Returns after the content and its name are durable. On any failure it throws WriteError
// (operation, path, errno), removes the temporary file (best effort) and leaves `path` as it was.
// The other functions are the same steps for callers that build a directory of files and publish
// it with one rename. Uses the POSIX calls directly (not iostreams), so every error is seen.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spotlight::durable {

class WriteError : public std::runtime_error {
 public:
  // e.g. "fsync /runs/a/checkpoints/iter-3.tmp/model.safetensors: No space left on device"
  WriteError(std::string operation, std::filesystem::path path, int error_number);
  const std::string& operation() const { return operation_; }  // "open", "write", "fsync", ...
  const std::filesystem::path& path() const { return path_; }
  int error_number() const { return errno_; }  // errno of the failed call
  // ENOSPC or EDQUOT: freeing space may help.
  bool out_of_space() const;

 private:
  std::string operation_;
  std::filesystem::path path_;
  int errno_;
};

// Atomic replacement of `path` (see the top of this file).
void write_file(const std::filesystem::path& path, std::string_view bytes);
// Creates or truncates `path`, writes `bytes` and fsyncs the file (not its directory): for files
// of a directory that is published afterwards by rename() + sync_directory().
void write_new_file(const std::filesystem::path& path, std::string_view bytes);
// Appends `bytes` to `path` (created if missing) and fsyncs it: a line of a log that must be on
// disk before what follows it (metrics before the checkpoint of their iteration).
void append_file(const std::filesystem::path& path, std::string_view bytes);
// fsync of a directory: makes the creation, renaming or removal of its entries durable.
void sync_directory(const std::filesystem::path& directory);
// rename(from, to), then fsync of the directory of `to` (and of `from`'s when it differs).
void rename(const std::filesystem::path& from, const std::filesystem::path& to);
// mkdir -p; each directory created is made durable in its parent.
void create_directories(const std::filesystem::path& directory);
// Throws WriteError unless a file can be created in `directory` (created if missing): for
// checking at start that a configured directory is usable.
void check_writable_directory(const std::filesystem::path& directory);

}  // namespace spotlight::durable
