#include "common/metrics/detail/http_request.hpp"

namespace spotlight::metrics::detail {

HttpRequestHead parse_request_head(std::string_view buffer, std::size_t max_bytes) {
  HttpRequestHead out;
  const std::string_view window = buffer.substr(0, max_bytes);
  const std::size_t end = window.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    out.status =
        buffer.size() >= max_bytes ? HttpHeadStatus::kTooLarge : HttpHeadStatus::kIncomplete;
    return out;
  }
  out.status = HttpHeadStatus::kBadRequest;
  const std::string_view line = window.substr(0, window.find("\r\n"));
  const std::size_t first_space = line.find(' ');
  if (first_space == std::string_view::npos || first_space == 0) return out;
  const std::string_view method = line.substr(0, first_space);
  for (const char c : method) {
    if (c < 'A' || c > 'Z') return out;
  }
  const std::size_t second_space = line.find(' ', first_space + 1);
  if (second_space == std::string_view::npos) return out;
  const std::string_view target = line.substr(first_space + 1, second_space - first_space - 1);
  if (target.empty() || target.front() != '/') return out;
  for (const char c : target) {
    if (c <= ' ' || c > '~') return out;
  }
  const std::string_view version = line.substr(second_space + 1);
  if (version.size() != 8 || !version.starts_with("HTTP/") || version[5] < '0' ||
      version[5] > '9' || version[6] != '.' || version[7] < '0' || version[7] > '9') {
    return out;
  }
  out.status = HttpHeadStatus::kOk;
  out.method = method;
  out.target = target;
  return out;
}

}  // namespace spotlight::metrics::detail
