#include <cstdio>
#include <dblock/doctor.hpp>
#include <string>

// The checks of `dblock doctor`, for a service's start-up log. Returns the failures.
int log_deployment_checks(dblock::Connection& conn) {
  int failures = 0;
  for (const dblock::Finding& f : dblock::check_deployment(conn, dblock::TableNames())) {
    std::fprintf(stderr, "dblock %s %s: %s %s\n", std::string(to_string(f.status)).c_str(),
                 f.check.c_str(), f.message.c_str(), f.advice.c_str());
    if (f.status == dblock::Finding::Status::kFailure) ++failures;
  }
  return failures;
}
