// SPDX-License-Identifier: Apache-2.0
#include "dblock/version.hpp"

namespace dblock {

std::string_view library_version() noexcept { return DBLOCK_VERSION_STRING; }

}  // namespace dblock
