#include "replication/dependency_check.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "clock/bloom_probability.hpp"

namespace tally {

const char* to_string(dependency_verdict v) noexcept {
  switch (v) {
    case dependency_verdict::apply: return "apply";
    case dependency_verdict::gap: return "gap";
    case dependency_verdict::diverged: return "diverged";
  }
  return "?";
}

dependency_counts& dependency_counts::operator+=(const dependency_counts& o) noexcept {
  checks += o.checks;
  unchecked += o.unchecked;
  negatives += o.negatives;
  saved += o.saved;
  negatives_diverged += o.negatives_diverged;
  contradicted += o.contradicted;
  confirmed += o.confirmed;
  false_positives += o.false_positives;
  fp_commit_missing += o.fp_commit_missing;
  missing += o.missing;
  eq2_expected_fp += o.eq2_expected_fp;
  eq3_expected_fp += o.eq3_expected_fp;
  eq7_expected_fp += o.eq7_expected_fp;
  m = std::max(m, o.m);
  k = std::max(k, o.k);
  return *this;
}

namespace {

std::string fixed(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

} // namespace

std::string describe(const dependency_counts& c) {
  std::ostringstream os;
  os << "checks " << c.checks << " | unchecked " << c.unchecked << " | negatives "
     << c.negatives << " (saved " << c.saved << ", diverged " << c.negatives_diverged
     << ", contradicted " << c.contradicted << ") | confirmed " << c.confirmed
     << " | false positives " << c.false_positives << " (y missing " << c.fp_commit_missing
     << ") | expected false positives: Eq. 2 " << fixed(c.eq2_expected_fp) << ", Eq. 3 "
     << fixed(c.eq3_expected_fp) << ", Eq. 7 " << fixed(c.eq7_expected_fp) << " of "
     << c.missing << " missing | m " << c.m << ", k " << c.k;
  return os.str();
}

std::optional<dependency_counts> parse_dependency_counts(std::string_view text) {
  // The line starts at "checks <digit>" (a status line has other "checks").
  std::size_t at = 0;
  for (;; ++at) {
    at = text.find("checks ", at);
    if (at == std::string_view::npos)
      return std::nullopt;
    const auto d = at + 7;
    if (d < text.size() && std::isdigit(static_cast<unsigned char>(text[d])))
      break;
  }
  const auto stop = text.find('\n', at);
  const std::string line{text.substr(at, stop == std::string_view::npos ? stop : stop - at)};
  dependency_counts c;
  int got = 0;
  // The number after `name`, searched from `from` on (moved past it).
  std::size_t from = 0;
  auto num = [&](const char* name, std::uint64_t& v) {
    const auto p = line.find(name, from);
    unsigned long long x = 0;
    if (p != std::string::npos
        && std::sscanf(line.c_str() + p + std::strlen(name), "%llu", &x) == 1) {
      v = x;
      from = p + std::strlen(name);
      ++got;
    }
  };
  auto real = [&](const char* name, double& v) {
    const auto p = line.find(name, from);
    if (p != std::string::npos && std::sscanf(line.c_str() + p + std::strlen(name), "%lf", &v) == 1) {
      from = p + std::strlen(name);
      ++got;
    }
  };
  num("checks ", c.checks);
  num("| unchecked ", c.unchecked);
  num("| negatives ", c.negatives);
  num("(saved ", c.saved);
  num(", diverged ", c.negatives_diverged);
  num(", contradicted ", c.contradicted);
  num("| confirmed ", c.confirmed);
  num("| false positives ", c.false_positives);
  num("(y missing ", c.fp_commit_missing);
  real("Eq. 2 ", c.eq2_expected_fp);
  real("Eq. 3 ", c.eq3_expected_fp);
  real("Eq. 7 ", c.eq7_expected_fp);
  num(" of ", c.missing);
  std::uint64_t m = 0, k = 0;
  num("| m ", m);
  num(", k ", k);
  c.m = static_cast<std::uint32_t>(m);
  c.k = static_cast<std::uint32_t>(k);
  if (got != 15)
    return std::nullopt;
  return c;
}

void dependency_tally::add(const dependency_counts& c) {
  std::lock_guard<std::mutex> g{mu_};
  total_ += c;
}

dependency_counts dependency_tally::total() const {
  std::lock_guard<std::mutex> g{mu_};
  return total_;
}

void dependency_check::count(const dependency_counts& delta) {
  counts_ += delta;
  if (sink_)
    sink_->add(delta);
}

dependency_verdict dependency_check::check(const bloom_clock& mine, lsn end,
                                           const replication_batch& b,
                                           const exact_checks& exact) {
  auto exactly = [&] {
    if (b.first > end)
      return dependency_verdict::gap;
    if (exact.prefix_matches && !exact.prefix_matches())
      return dependency_verdict::diverged;
    return dependency_verdict::apply;
  };
  dependency_counts d;
  if (!b.deps || !mine.compatible(b.deps->clock)) {
    d.unchecked = 1;
    count(d);
    return exactly();
  }
  const auto& y = *b.deps;
  d.checks = 1;
  d.m = mine.m();
  d.k = mine.k();
  // Equation 7's pr_p(k, m, B_y, B_z) for this pair, as the paper would
  // predict it from the two timestamps alone (Poisson form).
  auto eq7 = [&] {
    const auto p = pr_positive(y.clock, mine);
    return p && std::isfinite(*p) ? *p : 0.0;
  };
  // Proposition 1: y -> z is declared when B_z >= B_y (z: this copy).
  const bool positive = *mine.dominates(y.clock); // compatible: no error
  if (!positive) {
    const double pr_p = eq7();
    d.eq3_expected_fp = (1 - pr_p) * pr_p; // Equation 3
    // Section 4, case 2: no false negatives, so y is not applied here.
    d.negatives = 1;
    d.missing = 1;
    d.eq7_expected_fp = pr_p;
    if (b.first > end) {
      d.saved = 1; // refused on the Bloom clock alone
      count(d);
      return dependency_verdict::gap;
    }
    // This journal has records where the primary's y and its predecessors
    // are: other ones. The prefix check audits the clock; either way the
    // copy has diverged.
    d.negatives_diverged = 1;
    if (!exact.prefix_matches || exact.prefix_matches())
      d.contradicted = 1;
    count(d);
    return dependency_verdict::diverged;
  }
  const auto verdict = exactly();
  if (verdict == dependency_verdict::apply) {
    d.confirmed = 1;
    if (++confirmed_seen_ % predict_one_in_ == 0) {
      const double pr_p = eq7();
      d.eq2_expected_fp = predict_one_in_ * (1 - pr_p);         // Equation 2, pr_delta = 1
      d.eq3_expected_fp = predict_one_in_ * (1 - pr_p) * pr_p;  // Equation 3
    }
  } else {
    const double pr_p = eq7();
    d.eq2_expected_fp = 1 - pr_p;
    d.eq3_expected_fp = (1 - pr_p) * pr_p;
    d.false_positives = 1;
    const bool y_missing =
      y.commit_at != 0
      && (y.commit_at >= end || (exact.holds_commit && !exact.holds_commit(y.commit_at, y.commit_tx)));
    if (y_missing) {
      d.fp_commit_missing = 1;
      d.missing = 1;
      d.eq7_expected_fp = pr_p;
    }
  }
  count(d);
  return verdict;
}

} // namespace tally
