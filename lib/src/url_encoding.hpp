// Encoding for database URLs and the connection strings built from them (url.cpp). Internal.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace dblock::detail {

// `text` with every byte outside A-Z a-z 0-9 - . _ ~ written as %XX (RFC 3986).
std::string percent_encode(std::string_view text);

// One server as a URL's authority names it: "host:port", "[IPv6]:port", a percent-encoded
// socket directory; no ":port" for port 0.
std::string url_host(std::string_view host, int port);

}  // namespace dblock::detail
