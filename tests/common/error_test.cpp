// Error codes as numbers (common/error.hpp): what a decoder may trust.
#include <boost/test/unit_test.hpp>

#include "common/error.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(error_tests)

BOOST_AUTO_TEST_CASE(only_named_codes_other_than_ok_are_known) {
  BOOST_TEST(!is_known_errc(0)); // ok is never an error's code
  BOOST_TEST(is_known_errc(static_cast<std::uint32_t>(errc::invalid_argument)));
  BOOST_TEST(is_known_errc(static_cast<std::uint32_t>(errc::timeout)));
  BOOST_TEST(is_known_errc(static_cast<std::uint32_t>(errc::gave_way)));
  BOOST_TEST(is_known_errc(static_cast<std::uint32_t>(errc::no_permissions)));
  BOOST_TEST(!is_known_errc(static_cast<std::uint32_t>(errc::no_permissions) + 1));
  BOOST_TEST(!is_known_errc(0x100 + static_cast<std::uint32_t>(errc::timeout)));
  BOOST_TEST(!is_known_errc(0xffffffffu));
}

BOOST_AUTO_TEST_SUITE_END()
