#pragma once
// PNG files of RGB8 images, through Debian's stb (stb_image_write to encode, stb_image to decode).
// Lossless: decode_png(encode_png(x)) == x.

#include <filesystem>
#include <string>
#include <string_view>

#include "common/image/rgb_image.hpp"

namespace spotlight::image {

// The PNG bytes of `image`. Throws ImageError for an empty image or one whose pixels do not match
// its size.
std::string encode_png(const RgbImage& image);

// Decodes PNG bytes (or another format stb reads) to RGB8: grey is expanded, alpha dropped. Throws
// ImageError naming stb's reason for anything that is not a PNG it can read, or a PNG above
// max_pixels pixels.
RgbImage decode_png(std::string_view bytes, long long max_pixels = 1LL << 26);

// Writes `bytes` to `path` atomically (a temporary file beside it, then a rename), so a reader
// never sees a partial file. Creates the parent folder. Throws std::filesystem::filesystem_error
// when the file cannot be written.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// write_file_atomically(path, encode_png(image)); returns the bytes written. Throws ImageError or
// std::filesystem::filesystem_error.
std::size_t write_png(const std::filesystem::path& path, const RgbImage& image);

}  // namespace spotlight::image
