// Helpers of the tests that drive partition_core directly: counter updates
// of bucket "b", a counter's value at a time, a one-step commit as the
// partition actor runs it.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "actors/partition_core.hpp"

namespace tally::test {

inline object_key key(const char* k) { return {"b", k}; }

inline tx_update inc(const char* k, std::int64_t d, std::optional<op_id> id = {}) {
  return tx_update{key(k), crdt_type::counter, counter_effect{d}, id};
}

inline std::int64_t value_at(partition_core& c, const char* k, std::uint64_t t) {
  auto v = c.read(key(k), crdt_type::counter, vector_clock{{local_dc, t}}, {});
  BOOST_REQUIRE_MESSAGE(v, (v ? "" : v.err().to_string()));
  return std::get<std::int64_t>(*v);
}

// A one-step commit, staged and flushed; returns the commit time.
inline std::uint64_t commit1(partition_core& c, tx_id tx, std::vector<tx_update> ups,
                             std::uint64_t snap = 0) {
  auto p = c.stage_prepare(tx, std::move(ups), snap, false);
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c.stage_commit(tx, p->prepare_time));
  BOOST_REQUIRE(c.flush());
  return p->prepare_time;
}

} // namespace tally::test
