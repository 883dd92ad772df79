#include <dblock/log.hpp>
#include <iostream>
#include <string_view>

// What the library notices without throwing (failed renewals and the time left, lost leases,
// kept releases, a notification session lost), on the service's own log: here standard error.
void log_dblock_to_stderr() {
  dblock::set_log_handler([](dblock::LogLevel level, std::string_view message) {
    std::clog << "dblock " << dblock::to_string(level) << ": " << message << '\n';
  });
}
