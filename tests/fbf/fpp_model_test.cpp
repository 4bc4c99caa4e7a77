#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "fbf/fpp_model.hpp"

using namespace tally;

namespace {

double p(std::uint64_t l) { return bloom_false_positive_probability(6250, 5, l); }

} // namespace

BOOST_AUTO_TEST_SUITE(fbf)

BOOST_AUTO_TEST_CASE(equation_1_is_zero_for_an_empty_filter_and_grows_with_load) {
  BOOST_TEST(p(0) == 0.0);
  double last = 0.0;
  for (std::uint64_t l : {1, 10, 100, 300, 600, 3000}) {
    BOOST_TEST(p(l) > last);
    last = p(l);
  }
  BOOST_TEST(last < 1.0);
}

BOOST_AUTO_TEST_CASE(equation_1_approximates_the_corrected_exact_form) {
  // The exact form is (1 - (1 - 1/m)^{k l})^k (the paper prints (1/l)^{mk},
  // a typo); the exponential form is within 0.1% of it at the paper's sizes.
  for (std::uint64_t l : {50, 300, 1000}) {
    const double exact =
        std::pow(1.0 - std::pow(1.0 - 1.0 / 6250.0, 5.0 * static_cast<double>(l)),
                 5.0);
    BOOST_TEST_CONTEXT("l = " << l) {
      BOOST_TEST(p(l) == exact, boost::test_tools::tolerance(1e-3));
    }
  }
}

BOOST_AUTO_TEST_CASE(equation_3_for_a_basic_fbf_is_equation_2) {
  const double pf = p(100), pp = p(200), p1 = p(250);
  const double eq2 = 1.0 - (1.0 - pf) * (1.0 - pp * p1) * (1.0 - p1);
  auto eq3 = fbf_false_positive_probability(6250, 5, std::vector<std::uint64_t>{100, 200, 250});
  BOOST_TEST_REQUIRE(eq3.has_value());
  BOOST_TEST(*eq3 == eq2, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(equation_3_has_one_factor_per_algorithm_2_check) {
  // N = 3: future alone; (present, B1), (B1, B2), (B2, B3); B3 alone.
  const std::vector<std::uint64_t> l{400, 800, 700, 600, 500};
  const double expect = 1.0 - (1.0 - p(l[0])) * (1.0 - p(l[1]) * p(l[2]))
                                  * (1.0 - p(l[2]) * p(l[3]))
                                  * (1.0 - p(l[3]) * p(l[4])) * (1.0 - p(l[4]));
  auto eq3 = fbf_false_positive_probability(6250, 5, l);
  BOOST_TEST_REQUIRE(eq3.has_value());
  BOOST_TEST(*eq3 == expect, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(generalized_model_without_born_past_filters_is_equation_3) {
  const std::vector<std::uint64_t> l{400, 800, 700, 600};
  std::vector<filter_load> loads;
  for (std::uint64_t x : l)
    loads.push_back({x, false});
  auto eq3 = fbf_false_positive_probability(6250, 5, l);
  auto gen = fbf_false_positive_probability(6250, 5, loads);
  BOOST_TEST_REQUIRE(eq3.has_value());
  BOOST_TEST_REQUIRE(gen.has_value());
  BOOST_TEST(*gen == *eq3);
}

BOOST_AUTO_TEST_CASE(generalized_model_skips_born_past_filters_and_checks_their_newer_neighbour_alone) {
  // After a scale-up of a basic FBF: future, present, B1, born, born, born.
  // B1 keeps its lone check; the born-past filters add no factor.
  const std::vector<filter_load> loads{
      {400, false}, {800, false}, {700, false}, {0, true}, {0, true}, {0, true}};
  const double expect =
      1.0 - (1.0 - p(400)) * (1.0 - p(800) * p(700)) * (1.0 - p(700));
  auto gen = fbf_false_positive_probability(6250, 5, loads);
  BOOST_TEST_REQUIRE(gen.has_value());
  BOOST_TEST(*gen == expect, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(model_refuses_fewer_than_three_filters) {
  auto r = fbf_false_positive_probability(6250, 5, std::vector<std::uint64_t>{1, 2});
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(model_refuses_zero_bits_or_hashes) {
  const std::vector<std::uint64_t> l{1, 2, 3};
  auto no_bits = fbf_false_positive_probability(0, 5, l);
  auto no_hashes = fbf_false_positive_probability(6250, 0, l);
  BOOST_TEST_REQUIRE(!no_bits.has_value());
  BOOST_TEST(no_bits.err().code() == errc::invalid_argument);
  BOOST_TEST_REQUIRE(!no_hashes.has_value());
  BOOST_TEST(no_hashes.err().code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(model_refuses_a_born_past_future_or_present_filter) {
  const std::vector<filter_load> loads{{1, false}, {0, true}, {3, false}};
  auto r = fbf_false_positive_probability(6250, 5, loads);
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(shared_period_model_without_shared_ids_has_equation_3_pair_terms) {
  // E_i = 0 for every pair: the two filters share nothing, s = (1 - q(A))
  // (1 - q(B)) and s^k = p(A) p(B), Equation 3's pair term. The last pair
  // (B2, B3) is left out: B3 is checked alone, which every hit of the pair
  // already hits.
  const std::vector<std::uint64_t> l{400, 800, 700, 600, 500};
  std::vector<filter_periods> v;
  for (std::uint64_t x : l)
    v.push_back({x, 0, false});
  v[0].own = l[0]; // the future's own count is its count; it is in no pair
  const double expect = 1.0 - (1.0 - p(l[0])) * (1.0 - p(l[1]) * p(l[2]))
                                  * (1.0 - p(l[2]) * p(l[3])) * (1.0 - p(l[4]));
  auto shared = fbf_shared_period_fpp(6250, 5, v);
  BOOST_TEST_REQUIRE(shared.has_value());
  BOOST_TEST(*shared == expect, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(shared_period_model_pair_term_follows_the_shared_period) {
  // N = 3 at steady state, E = 300 per period: future {300}, present
  // {E_1 + E_0}, B1 {E_2 + E_1}, B2, B3 likewise. Checks: future alone,
  // (present, B1), (B1, B2), B3 alone; (B2, B3) is implied by B3 alone.
  const double m = 6250, k = 5;
  auto q = [&](double n) { return std::exp(-k * n / m); };
  auto pair = [&](double shared, double a, double b) {
    return std::pow((1 - q(shared)) + q(shared) * (1 - q(a)) * (1 - q(b)), k);
  };
  const std::vector<filter_periods> v{{300, 300, false},
                                      {600, 300, false},
                                      {600, 300, false},
                                      {600, 300, false},
                                      {600, 300, false}};
  const double expect = 1.0 - (1.0 - p(300)) * (1.0 - pair(300, 300, 300))
                                  * (1.0 - pair(300, 300, 300)) * (1.0 - p(600));
  auto shared = fbf_shared_period_fpp(6250, 5, v);
  BOOST_TEST_REQUIRE(shared.has_value());
  BOOST_TEST(*shared == expect, boost::test_tools::tolerance(1e-12));
  // Each pair fails about like one filter of a period, far above Eq. 3's
  // p(600)^2.
  BOOST_TEST(pair(300, 300, 300) > p(300));
  BOOST_TEST(pair(300, 300, 300) > 10 * p(600) * p(600));
}

BOOST_AUTO_TEST_CASE(shared_period_model_skips_born_past_filters_like_equation_3) {
  // future alone, (present, B1) sharing E = 100, B1 alone (its older
  // neighbour is born-past); (B1, B2) would be implied by B2 alone.
  const std::vector<filter_periods> v{{100, 100, false}, {300, 100, false},
                                      {500, 200, false}, {400, 300, false},
                                      {0, 0, true}};
  const double m = 6250, k = 5;
  auto q = [&](double n) { return std::exp(-k * n / m); };
  const double s = (1 - q(100)) + q(100) * (1 - q(200)) * (1 - q(400));
  const double expect =
      1.0 - (1.0 - p(100)) * (1.0 - std::pow(s, k)) * (1.0 - p(400));
  auto shared = fbf_shared_period_fpp(6250, 5, v);
  BOOST_TEST_REQUIRE(shared.has_value());
  BOOST_TEST(*shared == expect, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(shared_period_model_refuses_what_equation_3_refuses) {
  const std::vector<filter_periods> two{{1, 1, false}, {1, 0, false}};
  BOOST_TEST(!fbf_shared_period_fpp(6250, 5, two).has_value());
  const std::vector<filter_periods> three{{1, 1, false}, {1, 0, false}, {0, 0, false}};
  BOOST_TEST(!fbf_shared_period_fpp(0, 5, three).has_value());
  BOOST_TEST(!fbf_shared_period_fpp(6250, 0, three).has_value());
  const std::vector<filter_periods> bad{{1, 1, false}, {0, 0, true}, {0, 0, false}};
  BOOST_TEST(!fbf_shared_period_fpp(6250, 5, bad).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
