// Unit tests of tally-bench's load generator (bench/load/): key
// distributions, the ratio mixer, the latency histogram, option parsing.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "bench/load/driver.hpp"
#include "bench/load/histogram.hpp"
#include "bench/load/readback.hpp"
#include "bench/load/runner.hpp"
#include "bench/load/workload.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally::load;

namespace {

std::string parse(std::vector<std::string_view> args, workload& w) {
  std::vector<std::string_view> pos;
  return parse_workload(args, w, pos);
}

std::string parse_error(std::vector<std::string_view> args) {
  workload w;
  return parse(std::move(args), w);
}

} // namespace

BOOST_AUTO_TEST_SUITE(distributions)

BOOST_AUTO_TEST_CASE(sequential_walks_the_keys_from_its_start) {
  key_chooser k(dist_kind::sequential, 0, 5, 1, 3);
  std::vector<std::uint64_t> got;
  for (int i = 0; i < 7; ++i)
    got.push_back(k.next());
  BOOST_TEST(got == (std::vector<std::uint64_t>{3, 4, 0, 1, 2, 3, 4}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_same_seed_draws_the_same_keys) {
  tally::test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    const auto seed = rng.uniform(0, UINT64_MAX - 1);
    for (auto d : {dist_kind::uniform, dist_kind::zipf, dist_kind::pareto}) {
      key_chooser a(d, 1.0, 1000, seed), b(d, 1.0, 1000, seed);
      for (int i = 0; i < 1000; ++i) {
        auto x = a.next();
        BOOST_TEST(x == b.next());
        BOOST_TEST(x < 1000u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(uniform_covers_the_keys_evenly) {
  tally::test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    key_chooser k(dist_kind::uniform, 0, 10, rng.uniform(0, 1u << 30));
    std::vector<int> n(10, 0);
    for (int i = 0; i < 100000; ++i)
      ++n[k.next()];
    for (int c : n)
      BOOST_TEST(std::abs(c - 10000) < 600); // > 6 sigma
  }
}

BOOST_AUTO_TEST_CASE(zipf_is_skewed_as_its_exponent_says) {
  tally::test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    // s = 1 over 1000 keys: P(key 0) = 1 / H(1000) = 0.1336,
    // P(key 1) = half of it; the hottest 10 keys hold H(10)/H(1000) = 39.1%.
    key_chooser k(dist_kind::zipf, 1.0, 1000, rng.uniform(0, 1u << 30));
    std::vector<int> n(1000, 0);
    const int draws = 200000;
    for (int i = 0; i < draws; ++i)
      ++n[k.next()];
    const double p0 = static_cast<double>(n[0]) / draws;
    const double p1 = static_cast<double>(n[1]) / draws;
    int top10 = 0;
    for (int i = 0; i < 10; ++i)
      top10 += n[i];
    BOOST_TEST(std::fabs(p0 - 0.1336) < 0.005);
    BOOST_TEST(std::fabs(p1 - 0.0668) < 0.004);
    BOOST_TEST(std::fabs(static_cast<double>(top10) / draws - 0.3913) < 0.01);
    // A larger exponent is more skewed.
    key_chooser steep(dist_kind::zipf, 2.0, 1000, rng.uniform(0, 1u << 30));
    int zero = 0;
    for (int i = 0; i < draws; ++i)
      zero += steep.next() == 0;
    BOOST_TEST(static_cast<double>(zero) / draws > 0.58); // 1/zeta(2) = 0.608
  }
}

BOOST_AUTO_TEST_CASE(pareto_favours_low_keys_and_stays_in_range) {
  tally::test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    // a = 1: P(key 0) = P(1 <= x < 2) = 1 - 1/2, truncated to 100 keys.
    key_chooser k(dist_kind::pareto, 1.0, 100, rng.uniform(0, 1u << 30));
    int zero = 0;
    const int draws = 100000;
    for (int i = 0; i < draws; ++i) {
      auto x = k.next();
      BOOST_REQUIRE(x < 100u);
      zero += x == 0;
    }
    // Redraws above 100 keys raise it to 0.5 / 0.99.
    BOOST_TEST(std::fabs(static_cast<double>(zero) / draws - 0.505) < 0.01);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(mixer)

BOOST_AUTO_TEST_CASE(every_window_holds_exactly_the_ratio) {
  for (auto [r, w] : {std::pair<unsigned, unsigned>{80, 20}, {1, 1}, {0, 5},
                      {5, 0}, {2, 3}, {99, 1}}) {
    for (std::uint64_t phase : {0u, 7u, 123u}) {
      ratio_mixer m(r, w, phase);
      for (int window = 0; window < 5; ++window) {
        unsigned reads = 0;
        for (unsigned i = 0; i < r + w; ++i)
          reads += m.next_is_read();
        BOOST_TEST(reads == r);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(reads_and_writes_are_interleaved_not_bunched) {
  ratio_mixer m(1, 1);
  std::string s;
  for (int i = 0; i < 6; ++i)
    s += m.next_is_read() ? 'r' : 'w';
  BOOST_TEST((s == "wrwrwr" || s == "rwrwrw"));
  ratio_mixer m4(80, 20);
  int longest = 0, run = 0;
  for (int i = 0; i < 1000; ++i) {
    run = m4.next_is_read() ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  BOOST_TEST(longest == 4);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(latency_histogram)

BOOST_AUTO_TEST_CASE(small_values_are_exact) {
  histogram h;
  for (std::uint64_t v = 1; v <= 10; ++v)
    h.record(v);
  BOOST_TEST(h.percentile(0.5) == 5u);
  BOOST_TEST(h.percentile(0.9) == 9u);
  BOOST_TEST(h.percentile(1.0) == 10u);
  BOOST_TEST(h.max() == 10u);
  BOOST_TEST(h.min() == 1u);
  BOOST_TEST(histogram{}.percentile(0.5) == 0u);
}

BOOST_AUTO_TEST_CASE(bucket_bounds_round_trip) {
  for (unsigned i = 0; i + 1 < histogram::bucket_count; ++i) {
    BOOST_REQUIRE(histogram::index_of(histogram::lowest_of(i)) == i);
    BOOST_REQUIRE(histogram::index_of(histogram::lowest_of(i + 1) - 1) == i);
  }
  BOOST_TEST(histogram::index_of(UINT64_MAX) == histogram::bucket_count - 1);
}

BOOST_AUTO_TEST_CASE(percentiles_are_within_the_bucket_precision) {
  tally::test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    histogram h, a, b;
    std::vector<std::uint64_t> xs;
    for (int i = 0; i < 100000; ++i) {
      // Log-uniform over 1 µs .. 1 s, in ns.
      auto v = static_cast<std::uint64_t>(std::exp(rng.unit() * std::log(1e6)) * 1e3);
      xs.push_back(v);
      h.record(v);
      (i % 2 ? a : b).record(v);
    }
    a.merge(b);
    std::sort(xs.begin(), xs.end());
    for (double q : {0.5, 0.9, 0.99, 0.999}) {
      const double exact = static_cast<double>(
        xs[static_cast<std::size_t>(std::ceil(q * xs.size())) - 1]);
      BOOST_TEST(std::fabs(static_cast<double>(h.percentile(q)) - exact) / exact
                 < 1.0 / 32);
      BOOST_TEST(a.percentile(q) == h.percentile(q));
    }
    BOOST_TEST(h.percentile(1.0) == xs.back());
    BOOST_TEST(h.count() == 100000u);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(options)

BOOST_AUTO_TEST_CASE(a_full_command_line_parses) {
  workload w;
  std::vector<std::string_view> pos;
  BOOST_TEST(parse_workload({"--duration", "5", "--connections=32",
                             "--outstanding", "4", "--keys", "1000", "--dist",
                             "zipf:0.99", "--ratio", "90:10", "--mode",
                             "interactive:2:2", "--inc", "-3", "--warmup", "1",
                             "--bucket", "b", "--buckets", "8", "--seed", "7",
                             "--retry-rate", "0.2", "--no-op-ids", "--rate", "500",
                             "A", "B"},
                            w, pos)
             == "");
  BOOST_TEST(*w.duration_s == 5.0);
  BOOST_TEST(w.connections == 32u);
  BOOST_TEST(w.outstanding == 4u);
  BOOST_TEST((w.dist == dist_kind::zipf && w.dist_param == 0.99));
  BOOST_TEST((w.read_weight == 90u && w.write_weight == 10u));
  BOOST_TEST((w.mode == mode_kind::interactive && w.mode_reads == 2u
              && w.mode_writes == 2u));
  BOOST_TEST(w.inc == -3);
  BOOST_TEST(w.buckets == 8u);
  BOOST_TEST(w.seed == 7u);
  BOOST_TEST(w.retry_rate == 0.2);
  BOOST_TEST(w.rate == 500.0);
  BOOST_TEST(!w.op_ids);
  BOOST_TEST(pos.size() == 2u);
}

BOOST_AUTO_TEST_CASE(bad_options_are_named) {
  BOOST_TEST(parse_error({"--ratio", "80"}) == "--ratio takes R:W (e.g. 80:20), got '80'");
  BOOST_TEST(parse_error({"--ratio", "0:0"}).rfind("--ratio", 0) == 0u);
  BOOST_TEST(parse_error({"--dist", "zipf"}).rfind("--dist takes", 0) == 0u);
  BOOST_TEST(parse_error({"--dist", "zipf:-1"}).rfind("--dist zipf", 0) == 0u);
  BOOST_TEST(parse_error({"--mode", "static-multi:0:2"}).rfind("--mode", 0) == 0u);
  BOOST_TEST(parse_error({"--mode", "batch"}).rfind("--mode takes", 0) == 0u);
  BOOST_TEST(parse_error({"--connections", "0"}) == "--connections takes 1-4096, got '0'");
  BOOST_TEST(parse_error({"--retry-rate", "1.5"}).rfind("--retry-rate", 0) == 0u);
  BOOST_TEST(parse_error({"--op-ids", "maybe"}) == "--op-ids takes on or off, got 'maybe'");
  BOOST_TEST(parse_error({"--duration"}) == "--duration needs a value");
  BOOST_TEST(parse_error({"--duration", "1", "--ops", "5"}) == "give --duration or --ops, not both");
  BOOST_TEST(parse_error({"--frobnicate"}) == "unknown option '--frobnicate'");
  BOOST_TEST(parse_error({"--rate", "0"}).rfind("--rate takes", 0) == 0u);
  BOOST_TEST(parse_error({"--keys", "4", "--buckets", "8"}) == "--buckets cannot exceed --keys");
  BOOST_TEST(parse_error({"--inc", "0"}).rfind("--inc", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(the_data_type_and_element_pool_parse) {
  workload w;
  BOOST_TEST((w.type == data_kind::counter));
  BOOST_TEST(parse({"--type", "set", "--elements", "64"}, w) == "");
  BOOST_TEST((w.type == data_kind::set && w.elements == 64u));
  BOOST_TEST(describe(w).rfind("set static-single", 0) == 0u);
  BOOST_TEST(describe(w).find("(64 elements)") != std::string::npos);
  BOOST_TEST(describe(w).find("op ids") == std::string::npos);
  BOOST_TEST(parse({"--type=register"}, w) == "");
  BOOST_TEST((w.type == data_kind::reg));
  BOOST_TEST(parse_error({"--type", "map"}) == "--type takes counter, set or register, got 'map'");
  BOOST_TEST(parse_error({"--elements", "65"}) == "--elements takes 1-64, got '65'");
  BOOST_TEST(parse_error({"--elements", "0"}) == "--elements takes 1-64, got '0'");
  BOOST_TEST(std::string(workload_help()).find("--type T") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(targets_are_loopback_urls) {
  target t;
  BOOST_TEST(parse_target("antidote://127.0.0.1:8087", t) == "");
  BOOST_TEST((t.protocol == target::kind::antidote && t.port == 8087));
  BOOST_TEST(parse_target("redis://localhost", t) == "");
  BOOST_TEST((t.protocol == target::kind::redis && t.port == 6379
              && t.host == "127.0.0.1"));
  BOOST_TEST(parse_target("redis://10.0.0.1:6379", t).find("loopback")
             != std::string::npos);
  BOOST_TEST(parse_target("http://127.0.0.1:80", t).find("is not") != std::string::npos);
  BOOST_TEST(parse_target("antidote://127.0.0.1:99999", t).find("port") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(antidotes_targets_are_tls_and_take_their_ca_from_tls_ca) {
  target t;
  BOOST_TEST(parse_target("antidotes://127.0.0.1:8443", t) == "");
  BOOST_TEST((t.protocol == target::kind::antidote && t.tls && t.port == 8443));
  BOOST_TEST(parse_target("antidote://127.0.0.1:8087", t) == "");
  BOOST_TEST(!t.tls);
  std::vector<target> ts;
  BOOST_TEST(parse_targets("antidotes://127.0.0.1:1,127.0.0.1:2", ts) == "");
  BOOST_REQUIRE(ts.size() == 2u);
  BOOST_TEST((ts[0].tls && ts[1].tls)); // later entries take the first's scheme
  BOOST_TEST(ts[1].text == "antidotes://127.0.0.1:2");
  workload w;
  std::vector<std::string_view> positional;
  BOOST_TEST(parse_workload({"--tls-ca", "ca.pem", "--tls-cert=c.pem", "--tls-key", "k.pem"}, w,
                            positional)
             == "");
  BOOST_TEST(w.tls_ca == "ca.pem");
  BOOST_TEST(w.tls_cert == "c.pem");
  BOOST_TEST(w.tls_key == "k.pem");
  BOOST_TEST(parse_workload({"--tls-ca="}, w, positional) == "--tls-ca needs a file");
}

BOOST_AUTO_TEST_CASE(one_target_parses_as_before) {
  std::vector<target> ts;
  BOOST_TEST(parse_targets("antidote://localhost:8087", ts) == "");
  BOOST_REQUIRE(ts.size() == 1u);
  BOOST_TEST(ts[0].host == "127.0.0.1");
  BOOST_TEST(ts[0].port == 8087);
  BOOST_TEST(ts[0].text == "antidote://localhost:8087"); // as given
  BOOST_TEST(targets_text(ts) == "antidote://localhost:8087");
  BOOST_TEST(parse_targets("redis://127.0.0.1:6379", ts) == "");
  BOOST_TEST((ts.size() == 1u && ts[0].protocol == target::kind::redis));
  BOOST_TEST(parse_targets("redis://10.0.0.1:6379", ts).find("loopback")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_target_list_names_the_nodes_of_a_cluster) {
  std::vector<target> ts;
  BOOST_TEST(parse_targets("antidote://127.0.0.1:8087,127.0.0.1:8088,"
                           "localhost:8089",
                           ts)
             == "");
  BOOST_REQUIRE(ts.size() == 3u);
  for (const auto& t : ts) {
    BOOST_TEST((t.protocol == target::kind::antidote));
    BOOST_TEST(t.host == "127.0.0.1");
  }
  BOOST_TEST(ts[0].port == 8087);
  BOOST_TEST(ts[1].port == 8088);
  BOOST_TEST(ts[2].port == 8089);
  BOOST_TEST(ts[2].text == "antidote://127.0.0.1:8089");
  BOOST_TEST(targets_text(ts)
             == "antidote://127.0.0.1:8087,antidote://127.0.0.1:8088,"
                "antidote://127.0.0.1:8089");
  // Later entries may repeat the scheme.
  BOOST_TEST(parse_targets("antidote://127.0.0.1:1,antidote://127.0.0.1:2", ts) == "");
  BOOST_TEST(ts.size() == 2u);
}

BOOST_AUTO_TEST_CASE(bad_list_entries_are_named) {
  std::vector<target> ts{target{}};
  auto has = [](const std::string& msg, const char* part) {
    bool ok = msg.find(part) != std::string::npos;
    if (!ok)
      BOOST_TEST_MESSAGE("message: " << msg);
    return ok;
  };
  std::string e = parse_targets("antidote://127.0.0.1:8087,,127.0.0.1:8089", ts);
  BOOST_TEST(has(e, "entry 2 of 3 is empty"));
  e = parse_targets("antidote://127.0.0.1:8087,", ts);
  BOOST_TEST(has(e, "entry 2 of 2 is empty"));
  e = parse_targets(",antidote://127.0.0.1:8087", ts);
  BOOST_TEST(has(e, "entry 1 of 2 is empty"));
  e = parse_targets("antidote://127.0.0.1:8087,10.0.0.2:8088", ts);
  BOOST_TEST(has(e, "entry 2 of 2"));
  BOOST_TEST(has(e, "loopback"));
  e = parse_targets("antidote://127.0.0.1:8087,127.0.0.1:99999", ts);
  BOOST_TEST(has(e, "entry 2 of 2"));
  BOOST_TEST(has(e, "port must be 1-65535"));
  e = parse_targets("antidote://127.0.0.1:8087,127.0.0.1:x", ts);
  BOOST_TEST(has(e, "port must be 1-65535"));
  e = parse_targets("127.0.0.1:8087,127.0.0.1:8088", ts); // no scheme at all
  BOOST_TEST(has(e, "entry 1 of 2"));
  BOOST_TEST(has(e, "is not antidote://HOST:PORT"));
  e = parse_targets("antidote://127.0.0.1:8087,http://127.0.0.1:8088", ts);
  BOOST_TEST(has(e, "entry 2 of 2"));
  BOOST_TEST(has(e, "is not antidote://HOST:PORT"));
  e = parse_targets("redis://127.0.0.1:6379,127.0.0.1:6380", ts);
  BOOST_TEST(has(e, "redis:// takes a single target"));
  e = parse_targets("antidote://127.0.0.1:8087,redis://127.0.0.1:6379", ts);
  BOOST_TEST(has(e, "redis:// takes a single target"));
  e = parse_targets("antidote://127.0.0.1:8087,localhost:8088,127.0.0.1:8087", ts);
  BOOST_TEST(has(e, "entry 3 of 3"));
  BOOST_TEST(has(e, "listed twice"));
  // A refused list leaves `out` alone.
  BOOST_TEST(ts.size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

// The read-back check of set and register workloads (bench/load/readback.hpp).
BOOST_AUTO_TEST_SUITE(readback)

using strings = std::vector<std::string>;

BOOST_AUTO_TEST_CASE(a_set_holds_what_was_added_and_not_removed) {
  set_marks m;
  m.add_sent = m.add_acked = 0b0011; // e0, e1 added
  m.remove_sent = 0b0010;            // e1 removed too
  BOOST_TEST(check_set({}, {"e0"}, m, 4) == "");
  BOOST_TEST(check_set({}, {"e0", "e1"}, m, 4) == ""); // add-wins, or the remove first
  BOOST_TEST(check_set({"e3"}, {"e0", "e3"}, m, 4) == "");
  BOOST_TEST(check_set({}, {}, m, 4).find("'e0' was added") != std::string::npos);
  BOOST_TEST(check_set({}, {"e0", "e2"}, m, 4).find("'e2' is present") != std::string::npos);
  BOOST_TEST(check_set({"e3"}, {"e0"}, m, 4).find("'e3' was there before") != std::string::npos);
  BOOST_TEST(check_set({}, {"e0", "x"}, m, 4) != "");
  // An add sent but not acknowledged may or may not have applied.
  m.add_acked = 0;
  BOOST_TEST(check_set({}, {}, m, 4) == "");
  BOOST_TEST(check_set({}, {"e0"}, m, 4) == "");
}

BOOST_AUTO_TEST_CASE(a_register_holds_a_value_assigned_to_it) {
  register_marks m;
  BOOST_TEST(check_register("old", "old", m) == "");
  BOOST_TEST(check_register("old", "v1", m) != "");
  m.sent = {1, 2};
  BOOST_TEST(check_register("old", "old", m) == ""); // none acknowledged
  BOOST_TEST(check_register("old", register_value_of(2), m) == "");
  m.acked = true;
  BOOST_TEST(check_register("old", "old", m).find("not one of the 2 values") != std::string::npos);
  BOOST_TEST(check_register("", register_value_of(3), m) != "");
  BOOST_TEST(check_register("", register_value_of(1), m) == "");
}

BOOST_AUTO_TEST_SUITE_END()
