// SPDX-License-Identifier: Apache-2.0
#include "sha256.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sha256_shani.hpp"

namespace dblock::detail {
namespace {

TEST(Sha256, MatchesPublishedVectors) {
  // Through the processor's SHA extensions where it has them, and through the portable code.
  for (auto* hash : {&sha256_hex, &sha256_hex_portable}) {
    EXPECT_EQ(hash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(hash(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
}

TEST(Sha256, TheProcessorsExtensionsAgreeWithThePortableCode) {
  // Random bytes of every length from 0 to 300 (one to six blocks), hashed both ways.
  std::printf("[ sha256   ] SHA extensions %s\n",
              sha_extensions_available() ? "in use" : "not available: the portable code only");
  std::mt19937_64 rng(17);
  for (std::size_t n = 0; n <= 300; ++n) {
    std::string input(n, '\0');
    for (char& c : input) c = static_cast<char>(rng());
    ASSERT_EQ(sha256_hex(input), sha256_hex_portable(input)) << n << " bytes";
  }
}

TEST(Sha256, BlockBoundaries) {
  // A tail of up to 55 bytes takes its padding and length in its own block; 56 to 63 need a
  // second block; whole blocks take a block of padding alone. Digests from coreutils' sha256sum.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string(55, 'x'), "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
      {std::string(56, 'x'), "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
      {std::string(63, 'x'), "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
      {std::string(64, 'a'), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {std::string(119, 'x'), "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
      {std::string(120, 'x'), "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"},
      {std::string(128, 'x'), "24da1b81d0b16df6428eee73c69fcb2a93c76bc6df706f0c6670fe6bfe800464"},
  };
  for (const auto& [input, digest] : cases) {
    EXPECT_EQ(sha256_hex(input), digest) << input.size() << " bytes";
    EXPECT_EQ(sha256_hex_portable(input), digest) << input.size() << " bytes, portable";
  }
}

// Hashes interleaved across threads, and a long one after short ones, give the published digests.
TEST(Sha256, ThreadsHashAtOnce) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        if (sha256_hex("abc") !=
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") {
          ++wrong;
        }
        if (sha256_hex("") != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") {
          ++wrong;
        }
      }
      if (sha256_hex(std::string(64, 'a')) !=
          "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb") {
        ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace dblock::detail
