// SPDX-License-Identifier: Apache-2.0
/// @file
/// PostgreSQL through libpqxx (target dblock::libpqxx).
///
/// wrap_pqxx() adapts a connection the service already owns; connect_pqxx() opens one from a URL.
/// Either way the result is a dblock::Connection for the strategies and the migrator.
///
/// @code
///   pqxx::connection native("postgresql://app@db/app");  // the service's own
///   std::unique_ptr<dblock::Connection> conn = dblock::wrap_pqxx(native);
///   auto source = dblock::borrow(*conn);
///   dblock::UniqueKeyLock locks(*source);
/// @endcode
///
/// Builds against libpqxx 6.4, 7.x and 8.x (docs/platforms.md).
///
/// LISTEN goes through Connection::listen(), which registers the channel with libpqxx: a LISTEN
/// sent with execute() takes effect on the server, but libpqxx drops its notifications.
///
/// Thread-safety: as for dblock::Connection (one thread at a time). A wrapped pqxx connection
/// must not be used by the service while dblock runs a statement on it, and it must outlive the
/// returned object. dblock sends plain statements on it; if the service holds an open pqxx
/// transaction object on it, dblock's calls fail instead of joining that transaction.
#pragma once

#include <memory>
#include <pqxx/connection>
#include <pqxx/version>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/url.hpp"

namespace dblock {

/// The libpqxx connection wrap_pqxx() takes: pqxx::connection_base with libpqxx 6 (so any of its
/// connection classes), pqxx::connection from libpqxx 7 on (7.0 made them one class; 8.0 dropped
/// the old name).
#if PQXX_VERSION_MAJOR < 7
using PqxxConnectionBase = pqxx::connection_base;
#else
using PqxxConnectionBase = pqxx::connection;
#endif

DBLOCK_EXPORT std::unique_ptr<Connection> wrap_pqxx(PqxxConnectionBase& conn);

/// Opens a connection from a postgresql:// URL. Throws Error(kConnectFailed, kAccessDenied,
/// kInvalidArgument) with a redacted, one-line message.
DBLOCK_EXPORT std::unique_ptr<Connection> connect_pqxx(const DatabaseUrl& url);

}  // namespace dblock
