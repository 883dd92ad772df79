// SPDX-License-Identifier: Apache-2.0
// What the random-step model tests of the session lock, the semaphore and lock sets stand on,
// and the one loop that steps them. A model derives from RandomModel, which holds dblock's tables
// migrated under a fresh prefix on one pair, a connection of the model's own for reading the
// server's truth, a pool for the locks under test, the seeded generator the steps are drawn from,
// and the tally of what was drawn. run_random_model() steps a model until its budget is spent or
// a check fails, with the seed in every failure's trace (DBLOCK_MODEL_SEED replays it), and
// prints the tally.
//
//   class SessionModel : public RandomModel {
//    public:
//     SessionModel(const Backend& backend, std::uint64_t seed)
//         : RandomModel(backend, seed, "sm", 32) {}
//     void step();  // draws one step, runs it, checks the server; counts it in `counts`
//   };
//   run_random_model<SessionModel>("session model", GetParam(), model_budget_from_env() / 3,
//                                  [](SessionModel& m) { EXPECT_GT(m.counts["kill"], 0); });
//
// Thread-safety: a model and its run belong to the test's thread.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "backends.hpp"
#include "dblock/connection.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/table_names.hpp"
#include "model_env.hpp"

namespace dblock::testing {

class RandomModel {
 public:
  RandomModel(const RandomModel&) = delete;
  RandomModel& operator=(const RandomModel&) = delete;

  int steps = 0;                      // steps checked so far
  std::map<std::string, int> counts;  // steps and outcomes by kind, for the summary

 protected:
  // Tables named `stem`, a random name and "_"; a pool of `pool_size` connections.
  RandomModel(const Backend& backend, std::uint64_t seed, const std::string& stem,
              std::size_t pool_size);
  // Runs after the derived model's leases and locks are gone (its members end first): closes the
  // pool and drops the tables, as far as the server lets it.
  ~RandomModel();

  // A number from 0 to n - 1.
  std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  // The key of an entry of `handles` (not empty), drawn at random.
  template <class Map>
  typename Map::key_type any_of(const Map& handles) {
    auto it = handles.begin();
    std::advance(it, static_cast<long>(pick(handles.size())));
    return it->first;
  }

  const Backend& backend_;
  std::mt19937_64 rng_;
  TableNames tables_;
  std::unique_ptr<Connection> admin_;  // the model's own, outside every lock
  std::unique_ptr<Pool> pool_;         // for the locks under test
};

// Steps a Model(backend, seed, args...) until `budget` is spent or a check fails, under a trace
// naming the seed (DBLOCK_MODEL_SEED, or a fresh one); prints "[ `name` ] <pair>: N steps:
// kind=n ..."; then calls enough(model), which checks that the run checked enough.
template <class Model, class Enough, class... Args>
void run_random_model(const std::string& name, const Backend& backend,
                      std::chrono::steady_clock::duration budget, Enough enough, Args&&... args) {
  const std::uint64_t seed = model_seed_from_env();
  SCOPED_TRACE("DBLOCK_MODEL_SEED=" + std::to_string(seed));
  Model model(backend, seed, std::forward<Args>(args)...);
  const auto end = std::chrono::steady_clock::now() + budget;
  while (std::chrono::steady_clock::now() < end && !::testing::Test::HasFailure()) model.step();
  std::string summary;
  for (const auto& [what, n] : model.counts) summary += " " + what + "=" + std::to_string(n);
  std::printf("[ %s ] %s: %d steps:%s\n", name.c_str(), backend.name.c_str(), model.steps,
              summary.c_str());
  enough(model);
}

}  // namespace dblock::testing
