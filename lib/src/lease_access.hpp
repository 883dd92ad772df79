// SPDX-License-Identifier: Apache-2.0
// What dblock's own code reads of a Lease handle (a friend of Lease): its core, for the calls
// that take a Lease but need the kind's own operation (fence()). Internal.
//
//   detail::LeaseCore* core = detail::LeaseAccess::core(lease);  // nullptr: an empty handle
//
// Thread-safety: as reading the Lease.
#pragma once

#include "dblock/lock.hpp"
#include "lease_core.hpp"

namespace dblock::detail {

class LeaseAccess {
 public:
  // The lease's core; nullptr for an empty handle.
  static LeaseCore* core(const Lease& lease) noexcept { return lease.core_.get(); }
};

}  // namespace dblock::detail
