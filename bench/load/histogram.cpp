#include "bench/load/histogram.hpp"

#include <algorithm>
#include <cmath>

namespace tally::load {

unsigned histogram::index_of(std::uint64_t v) noexcept {
  if (v < sub_count)
    return static_cast<unsigned>(v);
  const unsigned msb = 63u - static_cast<unsigned>(__builtin_clzll(v));
  const unsigned shift = msb - sub_bits;
  return (shift + 1) * sub_count
         + static_cast<unsigned>((v >> shift) - sub_count);
}

std::uint64_t histogram::lowest_of(unsigned index) noexcept {
  if (index < sub_count)
    return index;
  const unsigned shift = index / sub_count - 1;
  const std::uint64_t sub = index % sub_count + sub_count;
  return sub << shift;
}

void histogram::record(std::uint64_t v) {
  ++counts_[index_of(v)];
  ++count_;
  sum_ += v;
  max_ = std::max(max_, v);
  min_ = std::min(min_, v);
}

void histogram::merge(const histogram& o) {
  for (unsigned i = 0; i < bucket_count; ++i)
    counts_[i] += o.counts_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  max_ = std::max(max_, o.max_);
  min_ = std::min(min_, o.min_);
}

void histogram::clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = sum_ = max_ = 0;
  min_ = UINT64_MAX;
}

std::uint64_t histogram::percentile(double q) const {
  if (count_ == 0)
    return 0;
  q = std::min(1.0, std::max(0.0, q));
  std::uint64_t rank = static_cast<std::uint64_t>(
    std::ceil(q * static_cast<double>(count_)));
  rank = std::max<std::uint64_t>(rank, 1);
  if (rank >= count_)
    return max_; // the largest value is known exactly
  std::uint64_t seen = 0;
  for (unsigned i = 0; i < bucket_count; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const std::uint64_t lo = lowest_of(i);
      const std::uint64_t hi =
        i + 1 < bucket_count ? lowest_of(i + 1) - 1 : UINT64_MAX;
      const std::uint64_t mid = lo + (hi - lo) / 2;
      return std::clamp(mid, std::max(lo, min_), max_);
    }
  }
  return max_;
}

} // namespace tally::load
