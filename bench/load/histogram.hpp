// A log-linear latency histogram (HDR-style): 32 sub-buckets per power of
// two, so a recorded value is reported within 1/32 (~3%) of itself; values
// below 32 are exact. Nanoseconds in, nanoseconds out. Not thread-safe: one
// per thread, merged at the end.
#pragma once

#include <cstdint>
#include <vector>

namespace tally::load {

class histogram {
public:
  static constexpr unsigned sub_bits = 5;
  static constexpr unsigned sub_count = 1u << sub_bits;
  static constexpr unsigned bucket_count = (64 - sub_bits + 1) * sub_count;

  histogram() : counts_(bucket_count, 0) {}

  void record(std::uint64_t value);
  void merge(const histogram& other);
  void clear();

  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t max() const noexcept { return max_; }
  std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
  double mean() const noexcept {
    return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0;
  }

  /// The smallest value v such that at least q (0..1) of the recorded values
  /// are <= v, up to the bucket width (the bucket's midpoint, capped at
  /// max()); q = 1 is max() exactly. 0 when empty.
  std::uint64_t percentile(double q) const;

  static unsigned index_of(std::uint64_t value) noexcept;
  static std::uint64_t lowest_of(unsigned index) noexcept;

private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t sum_ = 0;
};

} // namespace tally::load
