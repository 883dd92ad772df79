// SPDX-License-Identifier: Apache-2.0
// A process-wide object that a forked child never shares with its parent: get() returns the
// calling process's own instance, made on its first use in that process. Internal.
//
// A child of fork() holds a copy of its parent's objects, made while the parent's other threads
// were running: a mutex one of them held stays locked in the child, a condition variable counts
// waiters that do not exist there, and their threads do not exist at all. So the child never
// touches, and never destroys, the instance its parent made (it is left as it was copied: no
// destructor of a process-wide object may run, join threads or wait, in a child); it makes its
// own. An instance is never destroyed by this class (owners that must stop threads at exit do so
// themselves, in the process that made them only). The parent's instance stays reachable
// from the child's, so a leak checker run at the child's exit does not report it.
//
//   detail::PerProcess<Registry> registries;  // a static
//   registries.get().add(...);                // this process's Registry
//
// Thread-safety: get() may be called from any thread; threads racing to make the first instance
// of a process end up with the same one.
#pragma once

#include <unistd.h>

#include <atomic>
#include <utility>

namespace dblock::detail {

template <class T>
class PerProcess {
 public:
  // This process's instance, made from `args` if it has none yet.
  template <class... Args>
  T& get(Args&&... args) {
    const pid_t pid = ::getpid();
    Slot* slot = slot_.load(std::memory_order_acquire);
    while (slot == nullptr || slot->pid != pid) {
      auto* made = new Slot(pid, std::forward<Args>(args)...);
      // A slot of another process (the parent's) is replaced and left alone, never freed; the
      // new one points to it, so it stays reachable and leak checkers do not report it.
      made->older = slot;
      if (slot_.compare_exchange_strong(slot, made, std::memory_order_acq_rel)) return made->value;
      delete made;  // another thread of this process made one first: `slot` is the current one
    }
    return slot->value;
  }

  // This process's instance, or nullptr if it has made none.
  T* find() noexcept {
    Slot* slot = slot_.load(std::memory_order_acquire);
    return slot != nullptr && slot->pid == ::getpid() ? &slot->value : nullptr;
  }

 private:
  struct Slot {
    template <class... Args>
    explicit Slot(pid_t p, Args&&... args) : pid(p), value(std::forward<Args>(args)...) {}
    pid_t pid;
    T value;
    Slot* older = nullptr;  // the slot of the process this one's was forked from
  };
  std::atomic<Slot*> slot_{nullptr};
};

}  // namespace dblock::detail
