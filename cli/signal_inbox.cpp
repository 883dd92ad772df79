#include "signal_inbox.hpp"

#include <cstring>
#include <string>

#include "dblock/error.hpp"

namespace dblock::cli {

void throw_system_error(const char* what, int err) {
  throw Error(ErrorCode::kOther, std::string(what) + " failed: " + std::strerror(err));
}

}  // namespace dblock::cli
