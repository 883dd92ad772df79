// SPDX-License-Identifier: Apache-2.0
// Quickstart: open the database named by DBLOCK_URL, bring dblock's schema up to date, and show
// what is there. Run it through scripts/quickstart.sh, which starts a throwaway PostgreSQL.
#include <cstdio>

#include "dblock/error.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/url.hpp"

int main() {
  try {
    dblock::DatabaseUrl url = dblock::DatabaseUrl::resolve(std::nullopt);  // from DBLOCK_URL
    std::printf("connecting to %s\n", url.redacted().c_str());
    auto pool = dblock::open_pool(url, {.max_size = 2});

    auto conn = pool->acquire();
    std::printf("connected: %s\n", conn->describe().c_str());

    // Safe to call at every start-up, from every instance at once.
    dblock::Migrator migrator(*conn);
    auto applied = migrator.up();
    std::printf("migrations applied now: %zu\n", applied.size());
    migrator.verify();
    for (const auto& s : migrator.status()) {
      std::printf("  %s  %s  %s\n", s.id().c_str(), std::string(to_string(s.status)).c_str(),
                  s.applied_at.c_str());
    }

    auto rows = conn->execute("SELECT COUNT(*) AS n FROM dblock_locks");
    std::printf("rows in dblock_locks: %lld\n", static_cast<long long>(rows.int64_at(0, "n")));
    return 0;
  } catch (const dblock::Error& e) {
    std::fprintf(stderr, "quickstart: %s\n", e.what());
    return 1;
  }
}
