// SPDX-License-Identifier: Apache-2.0
// The model tests' environment: DBLOCK_MODEL_SEED replays a seed, DBLOCK_MODEL_SECONDS sets the
// time per pair (default 30).
//
// Thread-safety: reads the environment only.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

namespace dblock::testing {

// DBLOCK_MODEL_SEED, or a fresh random seed.
inline std::uint64_t model_seed_from_env() {
  const char* text = std::getenv("DBLOCK_MODEL_SEED");
  if (text != nullptr && *text != '\0') return std::stoull(text);
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

// DBLOCK_MODEL_SECONDS, or 30 s.
inline std::chrono::seconds model_budget_from_env() {
  const char* text = std::getenv("DBLOCK_MODEL_SECONDS");
  return std::chrono::seconds(text != nullptr && *text != '\0' ? std::stoll(text) : 30);
}

}  // namespace dblock::testing
