#include "fbf/bloom_filter.hpp"

#include <algorithm>
#include <string>

#include "fbf/fpp_model.hpp"

namespace tally {

namespace {

// Bits per storage word: the array is kept as uint64 words so that a bit
// test is one load, one shift and one mask.
constexpr std::uint64_t word_bits = 64;

} // namespace

bloom_filter::bloom_filter(std::uint64_t m, unsigned k)
    : words_((m + word_bits - 1) / word_bits, 0), m_(m), k_(k) {}

expected<bloom_filter> bloom_filter::make(std::uint64_t m, unsigned k) {
  if (m == 0 || m > bloom_max_bits)
    return make_error(errc::invalid_argument,
                      "A Bloom filter needs between 1 and 2^36 bits, got m = "
                          + std::to_string(m) + "; pass a size in that range.");
  if (k == 0 || k > bloom_max_hashes)
    return make_error(errc::invalid_argument,
                      "A Bloom filter needs between 1 and "
                          + std::to_string(bloom_max_hashes)
                          + " hash functions, got k = " + std::to_string(k)
                          + "; pass a count in that range.");
  return bloom_filter{m, k};
}

bloom_filter bloom_filter::empty_like() const { return bloom_filter{m_, k_}; }

void bloom_filter::insert(std::string_view element) noexcept {
  insert(hash_bytes(element));
}

bool bloom_filter::contains(std::string_view element) const noexcept {
  return contains(hash_bytes(element));
}

void bloom_filter::clear() noexcept {
  // Only insert sets bits, and every insert counts an element: a filter with
  // no elements has no bits to clear. Refreshes of idle FBFs rely on this to
  // stay O(1) per filter.
  if (elements_ == 0)
    return;
  std::fill(words_.begin(), words_.end(), std::uint64_t{0});
  elements_ = 0;
}

std::uint64_t bloom_filter::bits_set() const noexcept {
  std::uint64_t n = 0;
  for (std::uint64_t w : words_)
    n += static_cast<std::uint64_t>(__builtin_popcountll(w));
  return n;
}

double bloom_filter::false_positive_probability() const noexcept {
  return bloom_false_positive_probability(m_, k_, elements_);
}

} // namespace tally
