#pragma once
// PRIVATE to common/metrics (and its tests and fuzz targets): the request-head parser of the
// /metrics HTTP server, a pure function of the bytes received so far. No sockets here.

#include <cstddef>
#include <string_view>

namespace spotlight::metrics::detail {

enum class HttpHeadStatus {
  kIncomplete,  // no "\r\n\r\n" yet, and fewer than max_bytes received: read more
  kOk,          // a well-formed request line; method and target are set
  kTooLarge,    // the head does not end within max_bytes
  kBadRequest,  // the request line is not "METHOD SP TARGET SP HTTP/d.d"
};

struct HttpRequestHead {
  HttpHeadStatus status = HttpHeadStatus::kIncomplete;
  std::string_view method;  // [A-Z]+, points into the buffer
  std::string_view target;  // printable ASCII without spaces, starts with '/'
};

// Total: any buffer gives a result. Looks only at the first max_bytes bytes (the head, including
// its terminating blank line, must fit in them); header fields after the request line are not
// interpreted.
HttpRequestHead parse_request_head(std::string_view buffer, std::size_t max_bytes);

}  // namespace spotlight::metrics::detail
