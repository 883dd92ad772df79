// SPDX-License-Identifier: Apache-2.0
// The libpq connection URI for a postgresql:// URL (see libpq_uri.hpp).
#include "libpq_uri.hpp"

#include <vector>

#include "url_encoding.hpp"

namespace dblock::detail {

std::string libpq_uri(const DatabaseUrl& url, bool credentials) {
  std::string out = "postgresql://";
  out += url_host(url.host, url.port);
  for (const HostPort& more : url.more_hosts) {
    out += ',';
    out += url_host(more.host, more.port);
  }
  out += '/';
  out += percent_encode(url.database);
  char sep = '?';
  const auto add = [&](std::string_view keyword, std::string_view value) {
    out += sep;
    out += percent_encode(keyword);
    out += '=';
    out += percent_encode(value);
    sep = '&';
  };
  for (const auto& [keyword, value] : url.params) add(keyword, value);
  if (credentials) {
    if (!url.user.empty() && !url.param("user")) add("user", url.user);
    if (!url.password.empty()) add("password", url.password);
  }
  if (!url.param("connect_timeout")) add("connect_timeout", "10");
  if (!url.param("fallback_application_name")) add("fallback_application_name", "dblock");
  return out;
}

namespace {

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}.
std::vector<std::string_view> split_list(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t begin = 0;;) {
    const std::size_t comma = text.find(',', begin);
    out.push_back(text.substr(begin, comma - begin));
    if (comma == std::string_view::npos) return out;
    begin = comma + 1;
  }
}

}  // namespace

std::string postgresql_location(std::string_view hosts, std::string_view ports,
                                std::string_view dbname) {
  const std::vector<std::string_view> host_list = split_list(hosts);
  const std::vector<std::string_view> port_list = split_list(ports);
  std::string out = "PostgreSQL ";
  for (std::size_t i = 0; i < host_list.size(); ++i) {
    if (i > 0) out += ',';
    const std::string_view host = host_list[i];
    if (host.empty()) {
      out += "(default socket)";
    } else if (host.find(':') != std::string_view::npos) {  // IPv6
      out.append("[").append(host).append("]");
    } else {
      out += host;
    }
    const std::string_view port = port_list.size() == 1  ? port_list[0]
                                  : i < port_list.size() ? port_list[i]
                                                         : std::string_view();
    out += ':';
    out += port.empty() ? std::string_view("5432") : port;
  }
  out += '/';
  out += dbname;
  return out;
}

std::string postgresql_location(const DatabaseUrl& url) {
  std::string hosts = url.host;
  std::string ports = url.port == 0 ? "" : std::to_string(url.port);
  for (const HostPort& more : url.more_hosts) {
    hosts += ',' + more.host;
    ports += ',' + (more.port == 0 ? std::string() : std::to_string(more.port));
  }
  return postgresql_location(url.param("host").value_or(hosts), url.param("port").value_or(ports),
                             url.param("dbname").value_or(url.database));
}

}  // namespace dblock::detail
