// SPDX-License-Identifier: Apache-2.0
#include "sha256_shani.hpp"

#include "sha256_rounds.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define DBLOCK_SHANI 1
#endif

namespace dblock::detail {

#ifdef DBLOCK_SHANI

bool sha_extensions_available() noexcept {
  static const bool available = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
    const bool ssse3 = (c & bit_SSSE3) != 0, sse41 = (c & bit_SSE4_1) != 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    return ssse3 && sse41 && (b & bit_SHA) != 0;
  }();
  return available;
}

// The instructions keep the working variables as two vectors, ABEF and CDGH (a in the highest
// lane), and take the message words plus round constants four at a time: sha256rnds2 runs two
// rounds on the low two lanes. The message schedule W[16..63] is made four words at a time from
// the four vectors before it: sha256msg1 adds sigma0, the words seven back are added by hand,
// and sha256msg2 adds sigma1.
__attribute__((target("sha,ssse3,sse4.1"))) void compress_shani(
    std::array<std::uint32_t, 8>& state, const unsigned char* block) noexcept {
  // state[0..3] = a b c d, state[4..7] = e f g h, lane 0 first.
  const __m128i abcd = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state.data()));
  const __m128i efgh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state.data() + 4));
  const __m128i badc = _mm_shuffle_epi32(abcd, 0xb1);  // lanes b a d c
  const __m128i hgfe = _mm_shuffle_epi32(efgh, 0x1b);  // lanes h g f e
  __m128i abef = _mm_alignr_epi8(badc, hgfe, 8);       // lanes f e b a
  __m128i cdgh = _mm_blend_epi16(hgfe, badc, 0xf0);    // lanes h g d c
  const __m128i abef_in = abef, cdgh_in = cdgh;

  // Each 32-bit word of the block is big-endian.
  const __m128i swap = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
  __m128i w[4];  // the last four groups of message words, w[g % 4] for group g
  for (int g = 0; g < 16; ++g) {
    __m128i words;
    if (g < 4) {
      words =
          _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * g)), swap);
    } else {
      const __m128i& back4 = w[g % 4];  // group g - 4
      const __m128i& back3 = w[(g + 1) % 4];
      const __m128i& back2 = w[(g + 2) % 4];
      const __m128i& back1 = w[(g + 3) % 4];
      words = _mm_sha256msg1_epu32(back4, back3);
      words = _mm_add_epi32(words, _mm_alignr_epi8(back1, back2, 4));  // the words 7 back
      words = _mm_sha256msg2_epu32(words, back1);
    }
    w[g % 4] = words;
    __m128i k = _mm_add_epi32(
        words, _mm_load_si128(reinterpret_cast<const __m128i*>(kSha256Round.data() + 4 * g)));
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, k);
    k = _mm_shuffle_epi32(k, 0x0e);  // the upper two lanes down
    abef = _mm_sha256rnds2_epu32(abef, cdgh, k);
  }
  abef = _mm_add_epi32(abef, abef_in);
  cdgh = _mm_add_epi32(cdgh, cdgh_in);

  const __m128i feba = _mm_shuffle_epi32(abef, 0x1b);  // lanes a b e f
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xb1);  // lanes g h c d
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state.data()),
                   _mm_blend_epi16(feba, dchg, 0xf0));  // lanes a b c d
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state.data() + 4),
                   _mm_alignr_epi8(dchg, feba, 8));  // lanes e f g h
}

#else

bool sha_extensions_available() noexcept { return false; }

void compress_shani(std::array<std::uint32_t, 8>&, const unsigned char*) noexcept {}

#endif

}  // namespace dblock::detail
