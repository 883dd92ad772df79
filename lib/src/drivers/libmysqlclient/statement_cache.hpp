// SPDX-License-Identifier: Apache-2.0
// A small least-recently-used cache of server-side prepared statements (MYSQL_STMT*), keyed by
// SQL text, so a statement dblock runs again and again costs one round trip per execution.
// The cache owns its statements and closes them (mysql_stmt_close) when it evicts, erases or is
// destroyed; destroy it before closing the connection they belong to.
//
// Thread-safety: none; it belongs to one connection, used by one thread at a time.
#pragma once

#include <mysql.h>

#include <cstddef>
#include <iterator>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace dblock::mysql_driver {

class StatementCache {
 public:
  explicit StatementCache(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}
  ~StatementCache() { clear(); }
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;

  // The statement prepared for `sql`, marked most recently used; nullptr when absent.
  MYSQL_STMT* find(std::string_view sql) {
    auto it = index_.find(sql);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }

  // Adds a statement for `sql` (not already present), closing the least recently used one when
  // the cache is full. Takes ownership of `stmt`.
  void insert(std::string sql, MYSQL_STMT* stmt) {
    while (lru_.size() >= capacity_) erase_entry(std::prev(lru_.end()));
    lru_.emplace_front(std::move(sql), stmt);
    index_.emplace(std::string_view(lru_.front().first), lru_.begin());
  }

  // Closes and forgets the statement for `sql`, if any.
  void erase(std::string_view sql) noexcept {
    auto it = index_.find(sql);
    if (it != index_.end()) erase_entry(it->second);
  }

  // Closes every statement.
  void clear() noexcept {
    while (!lru_.empty()) erase_entry(lru_.begin());
  }

  std::size_t size() const noexcept { return lru_.size(); }

 private:
  using Entry = std::pair<std::string, MYSQL_STMT*>;

  void erase_entry(std::list<Entry>::iterator it) noexcept {
    index_.erase(std::string_view(it->first));
    mysql_stmt_close(it->second);  // failure (e.g. connection gone) still frees the handle
    lru_.erase(it);
  }

  std::size_t capacity_;
  std::list<Entry> lru_;  // most recently used first
  // Keys view the strings held in lru_ (list nodes never move).
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;
};

}  // namespace dblock::mysql_driver
