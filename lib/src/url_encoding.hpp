// SPDX-License-Identifier: Apache-2.0
// Encoding for database URLs and the connection strings built from them (url.cpp). Internal.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

// Called across dblock's own libraries (drivers, cleaner): exported from a shared build like
// the public API, but internal (this header is not installed; see docs/install.md).
#pragma GCC visibility push(default)

namespace dblock::detail {

// `text` with every byte outside A-Z a-z 0-9 - . _ ~ written as %XX (RFC 3986).
std::string percent_encode(std::string_view text);

// One server as a URL's authority names it: "host:port", "[IPv6]:port", a percent-encoded
// socket directory; no ":port" for port 0.
std::string url_host(std::string_view host, int port);

}  // namespace dblock::detail

#pragma GCC visibility pop
