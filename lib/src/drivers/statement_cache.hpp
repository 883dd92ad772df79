// SPDX-License-Identifier: Apache-2.0
// A small least-recently-used cache of server-side prepared statements, keyed by SQL text, so a
// statement dblock runs again and again is prepared (parsed and planned) once per connection:
// MYSQL_STMT handles for libmysqlclient, statement names for libpq. The cache owns its entries
// and hands each to `Close` when it evicts, erases or clears it; clear it before closing the
// connection they belong to.
//
//   StatementCache<MYSQL_STMT*, CloseStmt> cache(64);
//   if (MYSQL_STMT** stmt = cache.find(sql)) run(*stmt); else cache.insert(sql, prepare(sql));
//
// Thread-safety: none; it belongs to one connection, used by one thread at a time.
#pragma once

#include <cstddef>
#include <iterator>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace dblock::detail {

// `Close`: a callable taking a Handle&, called once for each entry that leaves the cache.
template <class Handle, class Close>
class StatementCache {
 public:
  StatementCache(std::size_t capacity, Close close)
      : capacity_(capacity == 0 ? 1 : capacity), close_(std::move(close)) {}
  ~StatementCache() { clear(); }
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;

  // The entry for `sql`, marked most recently used; nullptr when absent.
  Handle* find(std::string_view sql) {
    auto it = index_.find(sql);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return &it->second->second;
  }

  // Adds an entry for `sql` (not already present), closing the least recently used one when the
  // cache is full. Takes ownership of `handle`.
  void insert(std::string sql, Handle handle) {
    while (lru_.size() >= capacity_) erase_entry(std::prev(lru_.end()));
    lru_.emplace_front(std::move(sql), std::move(handle));
    index_.emplace(std::string_view(lru_.front().first), lru_.begin());
  }

  // Closes and forgets the entry for `sql`, if any.
  void erase(std::string_view sql) noexcept {
    auto it = index_.find(sql);
    if (it != index_.end()) erase_entry(it->second);
  }

  // Closes every entry.
  void clear() noexcept {
    while (!lru_.empty()) erase_entry(lru_.begin());
  }

  std::size_t size() const noexcept { return lru_.size(); }

 private:
  using Entry = std::pair<std::string, Handle>;

  void erase_entry(typename std::list<Entry>::iterator it) noexcept {
    index_.erase(std::string_view(it->first));
    close_(it->second);  // a failure (the connection gone, say) still forgets the entry
    lru_.erase(it);
  }

  std::size_t capacity_;
  Close close_;
  std::list<Entry> lru_;  // most recently used first
  // Keys view the strings held in lru_ (list nodes never move).
  std::unordered_map<std::string_view, typename std::list<Entry>::iterator> index_;
};

}  // namespace dblock::detail
