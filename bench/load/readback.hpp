// The read-back check of a set or register workload (docs/BENCH.md,
// "Sets and registers"): what each key may hold after the run, given what
// it held before and what the run sent to it. Counters have the exact sum
// check instead (runner.cpp). Pure: no I/O.
//
// Sets are add-wins (orset) and updates carry no op id, so concurrent and
// resent operations leave room; what must hold whatever the order:
//   - an element present was there before or had an add sent;
//   - an element with an acknowledged add and no remove sent is present;
//   - an element there before with no remove sent is still present.
// Registers are last-writer-wins, each value assigned once in the run:
//   - a key with an acknowledged assign holds one of the values sent to it;
//   - a key with assigns sent but none acknowledged holds one of them or
//     its value before;
//   - a key with no assign sent holds its value before.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace tally::load {

/// What the run did to one set, one bit per element of the pool (<= 64).
struct set_marks {
  std::uint64_t add_sent = 0;
  std::uint64_t add_acked = 0;
  std::uint64_t remove_sent = 0;

  void merge(const set_marks& o) {
    add_sent |= o.add_sent;
    add_acked |= o.add_acked;
    remove_sent |= o.remove_sent;
  }
};

/// What the run did to one register: the value ids sent to it.
struct register_marks {
  std::unordered_set<std::uint64_t> sent;
  bool acked = false;

  void merge(const register_marks& o) {
    sent.insert(o.sent.begin(), o.sent.end());
    acked = acked || o.acked;
  }
};

/// Empty when `after` is a state the run can have left the set in, else
/// why not. `before` and `after` are element names (element_of).
std::string check_set(const std::vector<std::string>& before,
                      const std::vector<std::string>& after, const set_marks& m,
                      unsigned elements);

/// The same for a register's value (register_value_of ids).
std::string check_register(const std::string& before, const std::string& after,
                           const register_marks& m);

} // namespace tally::load
