// SPDX-License-Identifier: Apache-2.0
// What differs between the libpqxx versions the driver supports (6.4, 7.x and 8.x), in one place:
// closing a connection, its port, a statement with parameters, subscribing to a channel and
// watching the server's notices. Everything else the driver calls is common to all three. The
// version tests read <pqxx/version>; what each branch is for:
//  - close(): libpqxx 7.0 renamed disconnect() to close().
//  - port_of(): 8.0 deprecates port() (text) for port_number() (a number, if any).
//  - exec_with_params(): parameters known at run time went through make_dynamic_params() up to
//    7.5; 7.6 added pqxx::params (make_dynamic_params is deprecated in 7.10 and gone in 8.0), and
//    7.10 moved parameterised statements from exec_params() to exec(query, params).
//  - ChannelSubscriptions: 7.10 replaced notification_receiver (deprecated there) with
//    connection::listen(channel, handler).
//  - NoticeWatch: pqxx::errorhandler, on every version. 7.10 deprecates it in favour of
//    connection::set_notice_handler(), but a connection holds one notice handler, which
//    set_notice_handler() replaces, while errorhandlers form a chain that runs before it. On a
//    connection the service hands in, only an errorhandler lets dblock watch notices and leave
//    the service's own handler in place; so this is the one deprecated call kept, on purpose.
// Internal to the libpqxx driver.
//
// Thread-safety: as for the connection each call is given (one thread at a time).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <pqxx/errorhandler>
#include <pqxx/nontransaction>
#include <pqxx/notification>
#include <pqxx/result>
#include <pqxx/version>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/libpqxx.hpp"

#if PQXX_VERSION_MAJOR > 7 || (PQXX_VERSION_MAJOR == 7 && PQXX_VERSION_MINOR >= 10)
#define DBLOCK_PQXX_LISTEN_API 1  // connection::listen() and exec(query, params)
#endif
#if PQXX_VERSION_MAJOR > 7 || (PQXX_VERSION_MAJOR == 7 && PQXX_VERSION_MINOR >= 6)
#include <pqxx/params>
#else
#include <pqxx/prepared_statement>
#endif

namespace dblock::pqxx_driver {

// Closes the connection; never throws.
inline void close(pqxx::connection& conn) noexcept {
  try {
#if PQXX_VERSION_MAJOR < 7
    conn.disconnect();
#else
    conn.close();
#endif
  } catch (...) {
    // Closing a broken connection may report the break again; it is closed either way.
  }
}

// The port the connection uses, as text; "" when libpq reports none (a Unix socket's default).
inline std::string port_of(PqxxConnectionBase& conn) {
#if PQXX_VERSION_MAJOR >= 8
  const std::optional<int> port = conn.port_number();
  return port ? std::to_string(*port) : std::string();
#else
  const char* port = conn.port();
  return port == nullptr ? std::string() : std::string(port);
#endif
}

// Runs `sql` in `tx` as one PQexecParams with text parameters (std::nullopt: NULL).
inline pqxx::result exec_with_params(pqxx::nontransaction& tx, const std::string& sql,
                                     std::vector<std::optional<std::string>>& texts) {
#if PQXX_VERSION_MAJOR > 7 || (PQXX_VERSION_MAJOR == 7 && PQXX_VERSION_MINOR >= 6)
  pqxx::params params;
  for (std::optional<std::string>& text : texts) {
    if (text) {
      params.append(std::move(*text));
    } else {
      params.append();
    }
  }
#ifdef DBLOCK_PQXX_LISTEN_API
  return tx.exec(sql, params);
#else
  return tx.exec_params(sql, params);
#endif
#else
  return tx.exec_params(sql, pqxx::prepare::make_dynamic_params(texts));
#endif
}

// Watches the server's notices (warnings sent along with a result) on one connection, after any
// newer errorhandler and before the connection's notice handler; every notice goes on to both.
// Registered from construction to destruction. See the file comment for why an errorhandler.
class NoticeWatch : public pqxx::errorhandler {
 public:
  NoticeWatch(const NoticeWatch&) = delete;
  NoticeWatch& operator=(const NoticeWatch&) = delete;

 protected:
#ifdef DBLOCK_PQXX_LISTEN_API
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
  explicit NoticeWatch(PqxxConnectionBase& conn) : pqxx::errorhandler(conn) {}
#ifdef DBLOCK_PQXX_LISTEN_API
#pragma GCC diagnostic pop
#endif
  ~NoticeWatch() override = default;
};

// The channels dblock listens on through one connection, each delivering its notifications to a
// queue the driver drains. libpqxx hands a notification only to a subscriber of its channel, and
// only from connection::get_notifs(); it drops the others.
class ChannelSubscriptions {
 public:
  using Queue = std::vector<Notification>;

  ChannelSubscriptions(PqxxConnectionBase& conn, std::shared_ptr<Queue> queue)
      : conn_(conn), queue_(std::move(queue)) {}
  ChannelSubscriptions(const ChannelSubscriptions&) = delete;
  ChannelSubscriptions& operator=(const ChannelSubscriptions&) = delete;
  ~ChannelSubscriptions() { clear(); }

  bool contains(const std::string& channel) const { return channels_.contains(channel); }

  // Subscribes to `channel`; libpqxx sends LISTEN for it. Throws what libpqxx throws.
  void add(const std::string& channel) {
#ifdef DBLOCK_PQXX_LISTEN_API
    // The handler may outlive this object inside a wrapped connection (when UNLISTEN fails at
    // clear()), so it holds the queue weakly.
    std::weak_ptr<Queue> queue = queue_;
    conn_.listen(channel, [queue](pqxx::notification n) {
      if (auto q = queue.lock())
        q->push_back(Notification{std::string(n.channel), std::string(n.payload)});
    });
    channels_.insert(channel);
#else
    channels_.emplace(channel, std::make_unique<Receiver>(conn_, channel, queue_));
#endif
  }

  // Ends every subscription. On an open connection libpqxx sends UNLISTEN for each, so a
  // connection the service keeps hears no more of dblock's channels; close an owned connection
  // first to skip that. Never throws.
  void clear() noexcept {
#ifdef DBLOCK_PQXX_LISTEN_API
    for (const std::string& channel : channels_) {
      if (!conn_.is_open()) break;
      try {
        conn_.listen(channel);  // an empty handler: UNLISTEN
      } catch (...) {
        // Broken meanwhile, or a transaction of the service's is open on it: the handler stays
        // registered, and finds the queue gone.
      }
    }
#endif
    channels_.clear();  // before 7.10, each receiver's destructor sends its UNLISTEN
  }

 private:
#ifdef DBLOCK_PQXX_LISTEN_API
  std::set<std::string> channels_;
#else
  class Receiver final : public pqxx::notification_receiver {
   public:
    Receiver(PqxxConnectionBase& conn, const std::string& channel, std::shared_ptr<Queue> queue)
        : pqxx::notification_receiver(conn, channel), queue_(std::move(queue)) {}
    void operator()(const std::string& payload, int /*backend_pid*/) override {
      queue_->push_back(Notification{channel(), payload});
    }

   private:
    std::shared_ptr<Queue> queue_;
  };
  std::map<std::string, std::unique_ptr<Receiver>> channels_;
#endif
  PqxxConnectionBase& conn_;
  std::shared_ptr<Queue> queue_;
};

}  // namespace dblock::pqxx_driver
