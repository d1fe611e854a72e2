#include "common/image/png.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>

#include <stb_image.h>
#include <stb_image_write.h>
#include <unistd.h>

#include "common/image/errors.hpp"

namespace spotlight::image {
namespace {

void append(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                             static_cast<std::size_t>(size));
}

}  // namespace

std::string encode_png(const RgbImage& image) {
  if (image.width <= 0 || image.height <= 0) {
    throw ImageError("png: cannot encode an empty " + std::to_string(image.width) + "x" +
                     std::to_string(image.height) + " image");
  }
  if (image.pixels.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    throw ImageError("png: " + std::to_string(image.pixels.size()) + " bytes for a " +
                     std::to_string(image.width) + "x" + std::to_string(image.height) +
                     " RGB image");
  }
  std::string out;
  if (stbi_write_png_to_func(append, &out, image.width, image.height, 3, image.pixels.data(),
                             image.width * 3) == 0) {
    throw ImageError("png: stb_image_write failed to encode a " + std::to_string(image.width) +
                     "x" + std::to_string(image.height) + " image");
  }
  return out;
}

RgbImage decode_png(std::string_view bytes, long long max_pixels) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw ImageError("png: " + std::to_string(bytes.size()) + " bytes is too large to decode");
  }
  int width = 0, height = 0, channels = 0;
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int length = static_cast<int>(bytes.size());
  if (stbi_info_from_memory(data, length, &width, &height, &channels) == 0) {
    throw ImageError(std::string("png: not a readable image: ") + stbi_failure_reason());
  }
  if (static_cast<long long>(width) * height > max_pixels) {
    throw ImageError("png: " + std::to_string(width) + "x" + std::to_string(height) +
                     " is above the limit of " + std::to_string(max_pixels) + " pixels");
  }
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(data, length, &width, &height, &channels, 3), stbi_image_free);
  if (!pixels) throw ImageError(std::string("png: cannot decode: ") + stbi_failure_reason());
  RgbImage out{width, height, {}};
  out.pixels.assign(pixels.get(), pixels.get() + static_cast<std::size_t>(width) * height * 3);
  return out;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  auto tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      const std::error_code why(errno ? errno : EIO, std::generic_category());
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw std::filesystem::filesystem_error("cannot write", tmp, why);
    }
  }
  std::filesystem::rename(tmp, path);
}

std::size_t write_png(const std::filesystem::path& path, const RgbImage& image) {
  const std::string bytes = encode_png(image);
  write_file_atomically(path, bytes);
  return bytes.size();
}

}  // namespace spotlight::image
