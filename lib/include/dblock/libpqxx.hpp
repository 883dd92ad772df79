// PostgreSQL through libpqxx (target dblock::libpqxx).
//
// wrap_pqxx() adapts a connection the service already owns; connect_pqxx() opens one from a URL.
// Either way the result is a dblock::Connection for the strategies and the migrator.
//
// LISTEN goes through Connection::listen(), which registers the channel with libpqxx: a LISTEN
// sent with execute() takes effect on the server, but libpqxx drops its notifications.
//
// Thread-safety: as for dblock::Connection (one thread at a time). A wrapped pqxx connection
// must not be used by the service while dblock runs a statement on it, and it must outlive the
// returned object. dblock sends plain statements on it; if the service holds an open pqxx
// transaction object on it, dblock's calls fail instead of joining that transaction.
#pragma once

#include <memory>
#include <pqxx/connection>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/url.hpp"

namespace dblock {

DBLOCK_EXPORT std::unique_ptr<Connection> wrap_pqxx(pqxx::connection_base& conn);

// Opens a connection from a postgresql:// URL. Throws Error(kConnectFailed, kAccessDenied,
// kInvalidArgument) with a redacted, one-line message.
DBLOCK_EXPORT std::unique_ptr<Connection> connect_pqxx(const DatabaseUrl& url);

}  // namespace dblock
