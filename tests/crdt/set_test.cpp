// Add-wins, remove-wins and grow-only sets: how concurrent operations resolve.
#include <boost/test/unit_test.hpp>

#include "crdt/aw_set.hpp"
#include "crdt/g_set.hpp"
#include "crdt/rw_set.hpp"

using namespace tally;

namespace {

using strings = std::vector<std::string>;

set_update add_of(strings e) { return set_add{std::move(e)}; }
set_update remove_of(strings e) { return set_remove{std::move(e)}; }

template <class Set>
Set after(Set s, const set_update& u, std::uint64_t origin) {
  downstream_context ctx{token_source{origin}, 1};
  auto e = s.prepare(u, ctx);
  BOOST_REQUIRE(e.has_value());
  BOOST_REQUIRE(s.apply(*e).has_value());
  return s;
}

/// Two replicas at `base` run `a` and `b` concurrently, then exchange; both
/// orders must agree.
template <class Set>
Set concurrently(const Set& base, const set_update& a, const set_update& b) {
  downstream_context ca{token_source{100}, 1}, cb{token_source{200}, 1};
  auto ea = base.prepare(a, ca);
  auto eb = base.prepare(b, cb);
  BOOST_REQUIRE(ea.has_value());
  BOOST_REQUIRE(eb.has_value());
  Set x = base, y = base;
  BOOST_REQUIRE(x.apply(*ea).has_value());
  BOOST_REQUIRE(x.apply(*eb).has_value());
  BOOST_REQUIRE(y.apply(*eb).has_value());
  BOOST_REQUIRE(y.apply(*ea).has_value());
  BOOST_TEST((x == y));
  return x;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sets)

BOOST_AUTO_TEST_CASE(sets_read_sorted_distinct_elements) {
  BOOST_TEST((after(aw_set{}, add_of({"b", "a", "b"}), 1).value() == strings{"a", "b"}));
  BOOST_TEST((after(rw_set{}, add_of({"b", "a", "b"}), 1).value() == strings{"a", "b"}));
  BOOST_TEST((after(g_set{}, add_of({"b", "a", "b"}), 1).value() == strings{"a", "b"}));
}

BOOST_AUTO_TEST_CASE(aw_sequential_remove_removes) {
  auto s = after(after(aw_set{}, add_of({"x", "y"}), 1), remove_of({"x"}), 2);
  BOOST_TEST((s.value() == strings{"y"}));
  BOOST_TEST(after(s, set_reset{}, 3).is_bottom());
}

BOOST_AUTO_TEST_CASE(aw_add_wins_over_a_concurrent_remove) {
  auto base = after(aw_set{}, add_of({"x"}), 1);
  BOOST_TEST((concurrently(base, add_of({"x"}), remove_of({"x"})).value() == strings{"x"}));
  BOOST_TEST((concurrently(base, set_reset{}, add_of({"x"})).value() == strings{"x"}));
  // A remove concurrent with nothing on x still removes x.
  BOOST_TEST(concurrently(base, remove_of({"x"}), add_of({"y"})).value() == strings{"y"});
}

BOOST_AUTO_TEST_CASE(rw_remove_wins_over_a_concurrent_add) {
  for (const auto& base : {rw_set{}, after(rw_set{}, add_of({"x"}), 1)}) {
    auto s = concurrently(base, add_of({"x"}), remove_of({"x"}));
    BOOST_TEST(s.value().empty());
    // An add that saw the remove brings x back.
    BOOST_TEST((after(s, add_of({"x"}), 9).value() == strings{"x"}));
  }
}

BOOST_AUTO_TEST_CASE(rw_reset_clears_everything_it_saw) {
  auto s = after(after(rw_set{}, add_of({"x", "y"}), 1), remove_of({"y"}), 2);
  BOOST_TEST((s.value() == strings{"x"}));
  auto r = after(s, set_reset{}, 3);
  BOOST_TEST(r.value().empty());
  BOOST_TEST(r.is_bottom());
}

BOOST_AUTO_TEST_CASE(gset_takes_adds_only) {
  g_set s = after(g_set{}, add_of({"a"}), 1);
  downstream_context ctx{token_source{1}, 1};
  for (const set_update& u : std::vector<set_update>{remove_of({"a"}), set_reset{}}) {
    auto e = s.prepare(u, ctx);
    BOOST_REQUIRE(!e.has_value());
    BOOST_TEST((e.err().code() == errc::wrong_type));
  }
  BOOST_TEST((concurrently(s, add_of({"b"}), add_of({"c", "a"})).value()
              == strings{"a", "b", "c"}));
}

BOOST_AUTO_TEST_SUITE_END()
