// SPDX-License-Identifier: Apache-2.0
// A stop source requested as soon as any of the tokens it follows is, or by request_stop(): one
// token for work under several stops (a lease set's leases; a term's lease and its campaign).
// Internal.
//
// A followed token reads as stopped before its relay has run: std::stop_source::request_stop sets
// the flag, then runs the callbacks on the requesting thread (the renewer's watchdog, say), and a
// second request returns at once without waiting for them. So token() also looks at the followed
// tokens: whoever asks for the token after a followed stop sees it, whichever thread relays it.
//
//   AnyStop stop({lease.stop_token(), shutdown});
//   while (!stop.token().stop_requested()) work();
//
// Thread-safety: the tokens it follows may be stopped, and token() and request_stop() called, from
// any thread. Destroying it deregisters the relays (waiting for one that is running).
#pragma once

#include <memory>
#include <stop_token>
#include <vector>

namespace dblock::detail {

class AnyStop {
 public:
  explicit AnyStop(const std::vector<std::stop_token>& tokens) : followed_(tokens) {
    relays_.reserve(tokens.size());
    for (const std::stop_token& t : tokens) {
      relays_.push_back(std::make_unique<std::stop_callback<Relay>>(t, Relay{source_}));
    }
  }
  AnyStop(const AnyStop&) = delete;
  AnyStop& operator=(const AnyStop&) = delete;

  std::stop_token token() const noexcept {
    for (const std::stop_token& t : followed_) {
      if (t.stop_requested()) {
        source_.request_stop();  // its relay may still be on its way on another thread
        break;
      }
    }
    return source_.get_token();
  }
  void request_stop() noexcept { source_.request_stop(); }

 private:
  struct Relay {
    std::stop_source target;
    void operator()() noexcept { target.request_stop(); }
  };
  mutable std::stop_source source_;  // token() may request it on a followed stop
  const std::vector<std::stop_token> followed_;
  std::vector<std::unique_ptr<std::stop_callback<Relay>>> relays_;
};

}  // namespace dblock::detail
