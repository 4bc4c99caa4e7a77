// Enable-wins and disable-wins flags: how concurrent operations resolve.
#include <boost/test/unit_test.hpp>

#include "crdt/flag_dw.hpp"
#include "crdt/flag_ew.hpp"

using namespace tally;

namespace {

template <class Flag>
Flag after(Flag f, flag_update u, std::uint64_t origin) {
  downstream_context ctx{token_source{origin}, 1};
  auto e = f.prepare(u, ctx);
  BOOST_REQUIRE(e.has_value());
  BOOST_REQUIRE(f.apply(*e).has_value());
  return f;
}

/// Two replicas at `base` run `a` and `b` concurrently, then exchange.
template <class Flag>
std::pair<Flag, Flag> concurrently(const Flag& base, flag_update a,
                                   flag_update b) {
  downstream_context ca{token_source{100}, 1}, cb{token_source{200}, 1};
  auto ea = base.prepare(a, ca);
  auto eb = base.prepare(b, cb);
  BOOST_REQUIRE(ea.has_value());
  BOOST_REQUIRE(eb.has_value());
  Flag x = base, y = base;
  BOOST_REQUIRE(x.apply(*ea).has_value());
  BOOST_REQUIRE(x.apply(*eb).has_value());
  BOOST_REQUIRE(y.apply(*eb).has_value());
  BOOST_REQUIRE(y.apply(*ea).has_value());
  return {x, y};
}

} // namespace

BOOST_AUTO_TEST_SUITE(flags)

BOOST_AUTO_TEST_CASE(new_flags_read_false) {
  BOOST_TEST(!flag_ew{}.value());
  BOOST_TEST(!flag_dw{}.value());
}

BOOST_AUTO_TEST_CASE(sequential_operations_take_effect_in_order) {
  auto ew = after(flag_ew{}, flag_update::enable, 1);
  BOOST_TEST(ew.value());
  BOOST_TEST(!after(ew, flag_update::disable, 2).value());
  BOOST_TEST(!after(ew, flag_update::reset, 3).value());
  BOOST_TEST(after(after(ew, flag_update::disable, 2), flag_update::enable, 4)
               .value());

  auto dw = after(flag_dw{}, flag_update::enable, 1);
  BOOST_TEST(dw.value());
  auto dw_off = after(dw, flag_update::disable, 2);
  BOOST_TEST(!dw_off.value());
  BOOST_TEST(after(dw_off, flag_update::enable, 3).value());
  BOOST_TEST(after(dw_off, flag_update::reset, 4).is_bottom());
}

BOOST_AUTO_TEST_CASE(enable_wins_over_a_concurrent_disable) {
  for (const auto& base : {flag_ew{}, after(flag_ew{}, flag_update::enable, 1)}) {
    auto [x, y] = concurrently(base, flag_update::enable, flag_update::disable);
    BOOST_TEST(x.value());
    BOOST_TEST((x == y));
    auto [r, s] = concurrently(base, flag_update::reset, flag_update::enable);
    BOOST_TEST(r.value());
    BOOST_TEST((r == s));
  }
}

BOOST_AUTO_TEST_CASE(disable_wins_over_a_concurrent_enable) {
  for (const auto& base : {flag_dw{}, after(flag_dw{}, flag_update::enable, 1)}) {
    auto [x, y] = concurrently(base, flag_update::enable, flag_update::disable);
    BOOST_TEST(!x.value());
    BOOST_TEST((x == y));
    // An enable that saw the disable turns the flag back on.
    BOOST_TEST(after(x, flag_update::enable, 9).value());
  }
}

BOOST_AUTO_TEST_CASE(concurrent_disables_of_ew_leave_it_off) {
  auto base = after(flag_ew{}, flag_update::enable, 1);
  auto [x, y] = concurrently(base, flag_update::disable, flag_update::reset);
  BOOST_TEST(!x.value());
  BOOST_TEST(x.is_bottom());
  BOOST_TEST((x == y));
}

BOOST_AUTO_TEST_SUITE_END()
