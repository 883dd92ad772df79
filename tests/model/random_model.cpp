// SPDX-License-Identifier: Apache-2.0
#include "random_model.hpp"

#include "dblock/migrator.hpp"
#include "dblock/open.hpp"

namespace dblock::testing {

RandomModel::RandomModel(const Backend& backend, std::uint64_t seed, const std::string& stem,
                         std::size_t pool_size)
    : backend_(backend), rng_(seed), tables_(unique_name(stem) + "_") {
  admin_ = backend_.connect();
  Migrator(*admin_, tables_).up();
  pool_ = open_pool(backend_.url(), {.max_size = pool_size});
}

RandomModel::~RandomModel() {
  pool_.reset();
  try {
    backend_.drop_tables_with_prefix(*admin_, tables_.prefix());
  } catch (...) {
    // The tables are uniquely named; a leftover harms nothing.
  }
}

}  // namespace dblock::testing
