// tally-bench: Tally's benchmark and paper-reproduction binary.
//
//   tally-bench experiment <name>|all [--out DIR] [--seed S] [--quick]
//                                     [--adapt tally|paper] [--tallyd PATH]
//   tally-bench run --target URL [workload options]
//   tally-bench compare URL_A URL_B [--rounds N] [workload options]
//
// main() is a subcommand dispatcher: each subcommand is one entry of
// `subcommands` below with its own argument parsing and help. `run` and
// `compare` are the load generator (bench/load/, docs/BENCH.md).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_harness.hpp"
#include "bench/experiments/experiments.hpp"
#include "bench/load/runner.hpp"

namespace {

namespace ex = tally::experiments;

// Exit codes: 0 success, 1 the command failed, 2 bad usage.
constexpr int exit_ok = 0;
constexpr int exit_failed = 1;
constexpr int exit_usage = 2;

using args = std::vector<std::string_view>;

struct subcommand {
  std::string_view name;
  std::string_view summary;
  int (*run)(const args&);
  void (*help)(std::FILE*);
};

void experiment_help(std::FILE* out) {
  std::fprintf(out,
               "usage: tally-bench experiment <name>|all [--out DIR] [--seed S] "
               "[--quick] [--no-progress]\n"
               "       [--adapt tally|paper] [--tallyd PATH]\n"
               "\n"
               "Reproduces a figure or table of the FBF paper (fbf-*) or the "
               "Bloom clock paper\n"
               "(bloom-*) with Tally's fbf/ and clock/ structures. Writes "
               "<name>*.csv and\n"
               "<name>*.svg into DIR and prints a table; deterministic for a "
               "given seed\n"
               "(simulated time, no wall clock), except fbf-latency and "
               "fbf-failover, which\n"
               "start a local cluster of real tallyd nodes on 127.0.0.1 and "
               "measure it.\n"
               "See docs/EXPERIMENTS.md.\n"
               "\n"
               "options:\n"
               "  --out DIR      output folder (default "
               "bench-results/experiments)\n"
               "  --seed S       master seed, an unsigned integer (default 1)\n"
               "  --quick        small parameters: a smoke run of seconds\n"
               "  --no-progress  no progress lines on stderr\n"
               "  --adapt V      fbf-adaptive's Algorithm 3: tally (default; "
               "the paper's with\n"
               "                 Tally's five deviations, docs/FBF.md) or paper "
               "(exactly as\n"
               "                 printed); paper writes fbf-adaptive-paper*\n"
               "  --tallyd PATH  the tallyd binary fbf-latency and fbf-failover "
               "start (default:\n"
               "                 the tallyd next to tally-bench)\n"
               "\n"
               "experiments:\n");
  for (const auto& e : ex::registry())
    std::fprintf(out, "  %-16.*s %.*s\n", static_cast<int>(e.name.size()),
                 e.name.data(), static_cast<int>(e.summary.size()),
                 e.summary.data());
  std::fprintf(out, "  %-16s every experiment above, in this order\n", "all");
}

bool parse_seed(std::string_view text, std::uint64_t& seed) {
  if (text.empty() || text.size() > 20)
    return false;
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    const std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10)
      return false;
    v = v * 10 + digit;
  }
  seed = v;
  return true;
}

int usage_error(const std::string& message, void (*help)(std::FILE*)) {
  std::fprintf(stderr, "tally-bench: %s\n\n", message.c_str());
  help(stderr);
  return exit_usage;
}

int run_experiment(const args& a) {
  ex::options opts;
  std::string_view name;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string_view arg = a[i];
    if (arg == "--help" || arg == "-h") {
      experiment_help(stdout);
      return exit_ok;
    }
    if (arg == "--quick") {
      opts.quick = true;
    } else if (arg == "--no-progress") {
      opts.progress = false;
    } else if (arg == "--out" || arg == "--seed" || arg == "--adapt"
               || arg == "--tallyd") {
      if (i + 1 == a.size())
        return usage_error(std::string(arg) + " needs a value", experiment_help);
      const std::string_view value = a[++i];
      if (arg == "--out") {
        opts.out_dir = std::string(value);
      } else if (arg == "--tallyd") {
        opts.tallyd = std::string(value);
      } else if (arg == "--adapt") {
        if (value == "tally")
          opts.adapt = ex::adapt_version::tally;
        else if (value == "paper")
          opts.adapt = ex::adapt_version::paper;
        else
          return usage_error("--adapt takes tally or paper, got '"
                                 + std::string(value) + "'",
                             experiment_help);
      } else if (!parse_seed(value, opts.seed)) {
        return usage_error("--seed takes an unsigned 64-bit integer, got '"
                               + std::string(value) + "'",
                           experiment_help);
      }
    } else if (!arg.empty() && arg[0] == '-') {
      return usage_error("unknown option '" + std::string(arg) + "'",
                         experiment_help);
    } else if (name.empty()) {
      name = arg;
    } else {
      return usage_error("one experiment name at a time (got '"
                             + std::string(name) + "' and '" + std::string(arg)
                             + "'); use 'all' for every one",
                         experiment_help);
    }
  }
  if (name.empty())
    return usage_error("which experiment?", experiment_help);
  tally::bench::warn_if_unoptimized();
  tally::status st;
  if (name == "all") {
    st = ex::run_all(opts);
  } else if (const ex::experiment* e = ex::find_experiment(name)) {
    st = e->run(opts);
  } else {
    return usage_error("no experiment named '" + std::string(name) + "'",
                       experiment_help);
  }
  if (!st) {
    std::fprintf(stderr, "tally-bench: experiment failed: %s\n",
                 st.err().to_string().c_str());
    return exit_failed;
  }
  std::printf("\nResults in %s/\n", opts.out_dir.c_str());
  return exit_ok;
}

namespace ld = tally::load;

void run_help(std::FILE* out) {
  std::fprintf(out,
               "usage: tally-bench run --target URL[,HOST:PORT...] [workload "
               "options]\n"
               "\n"
               "Generates load against one node, or the nodes of one cluster, "
               "and prints\n"
               "throughput and latency per operation type, errors, and the "
               "exactly-once\n"
               "check (every key read back; for --type set or register, the "
               "read-back\n"
               "check of docs/BENCH.md).\n"
               "See docs/BENCH.md.\n"
               "\n"
               "  --target URL        antidote://127.0.0.1:8087 (tallyd or "
               "AntidoteDB),\n"
               "                      antidotes://127.0.0.1:8443 (TLS: tallyd\n"
               "                      --client-tls-port; needs --tls-ca) or\n"
               "                      redis://127.0.0.1:6379; loopback only\n"
               "  --target URL,HOST:PORT,...\n"
               "                      several nodes of one Tally cluster\n"
               "                      (antidote://127.0.0.1:8087,127.0.0.1:8088"
               ",127.0.0.1:8089):\n"
               "                      connection i uses node i mod n; the "
               "exactly-once\n"
               "                      read-back goes through the first node\n"
               "%s",
               ld::workload_help());
}

void compare_help(std::FILE* out) {
  std::fprintf(out,
               "usage: tally-bench compare URL_A URL_B [--rounds N] [workload "
               "options]\n"
               "\n"
               "Runs the same workload against A and B alternately (A B A B "
               "...), then\n"
               "prints each figure's median per target and the ratio A/B. A or "
               "B may be a\n"
               "cluster's node list (URL,HOST:PORT,..., as run --target). "
               "--csv and --svg\n"
               "name files per run (FILE becomes FILE.<A|B><round>.csv).\n"
               "\n"
               "  --rounds N          rounds (default 3)\n"
               "%s",
               ld::workload_help());
}

/// Writes the CSV and SVG of one run; false when a file could not be written.
bool write_outputs(const ld::workload& w, const ld::result& r,
                   const std::string& suffix) {
  bool ok = true;
  auto path = [&](const std::string& p, const char* ext) {
    if (suffix.empty())
      return p;
    auto dot = p.rfind('.');
    return (dot == std::string::npos ? p : p.substr(0, dot)) + "." + suffix + ext;
  };
  if (!w.csv_path.empty())
    if (auto e = ld::write_csv(path(w.csv_path, ".csv"), r); !e.empty()) {
      std::fprintf(stderr, "tally-bench: %s\n", e.c_str());
      ok = false;
    }
  if (!w.svg_path.empty())
    if (auto e = ld::write_svg(path(w.svg_path, ".svg"), r); !e.empty()) {
      std::fprintf(stderr, "tally-bench: %s\n", e.c_str());
      ok = false;
    }
  return ok;
}

/// Applies the per-target default of --op-ids: on for antidote:// (tallyd),
/// meaningless for redis://.
ld::workload for_target(ld::workload w, const ld::target& t) {
  if (t.protocol == ld::target::kind::redis)
    w.op_ids = false;
  return w;
}

int run_load(const args& a) {
  for (auto arg : a)
    if (arg == "--help" || arg == "-h") {
      run_help(stdout);
      return exit_ok;
    }
  ld::workload w;
  std::vector<std::string_view> positional;
  std::vector<std::string_view> rest;
  std::string_view target_text;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == "--target") {
      if (i + 1 == a.size())
        return usage_error("--target needs a value", run_help);
      target_text = a[++i];
    } else if (a[i].rfind("--target=", 0) == 0) {
      target_text = a[i].substr(9);
    } else {
      rest.push_back(a[i]);
    }
  }
  if (auto e = ld::parse_workload(rest, w, positional); !e.empty())
    return usage_error(e, run_help);
  if (!positional.empty())
    return usage_error("unexpected argument '" + std::string(positional[0])
                         + "'",
                       run_help);
  if (target_text.empty())
    return usage_error("which target? (--target antidote://127.0.0.1:8087)",
                       run_help);
  std::vector<ld::target> nodes;
  if (auto e = ld::parse_targets(target_text, nodes); !e.empty())
    return usage_error(e, run_help);
  if (nodes.front().protocol == ld::target::kind::redis && w.type != ld::data_kind::counter)
    return usage_error("redis:// targets run --type counter only", run_help);
  tally::bench::warn_if_unoptimized();
  if (w.connections < nodes.size())
    std::fprintf(stderr,
                 "tally-bench: warning: %u connection(s) use only the first %u "
                 "of the %zu targets\n",
                 w.connections, w.connections, nodes.size());
  const ld::workload wt = for_target(w, nodes.front());
  ld::result r = ld::run(nodes, wt);
  ld::print_table(stdout, r);
  bool ok = write_outputs(wt, r, "");
  if (r.failed) {
    std::fprintf(stderr, "tally-bench: run failed: %s\n", r.failure.c_str());
    return exit_failed;
  }
  return ok ? exit_ok : exit_failed;
}

int run_compare(const args& a) {
  for (auto arg : a)
    if (arg == "--help" || arg == "-h") {
      compare_help(stdout);
      return exit_ok;
    }
  unsigned rounds = 3;
  std::vector<std::string_view> rest;
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::string_view v;
    if (a[i] == "--rounds") {
      if (i + 1 == a.size())
        return usage_error("--rounds needs a value", compare_help);
      v = a[++i];
    } else if (a[i].rfind("--rounds=", 0) == 0) {
      v = a[i].substr(9);
    } else {
      rest.push_back(a[i]);
      continue;
    }
    std::uint64_t n = 0;
    if (!parse_seed(v, n) || n == 0 || n > 100)
      return usage_error("--rounds takes 1-100, got '" + std::string(v) + "'",
                         compare_help);
    rounds = static_cast<unsigned>(n);
  }
  ld::workload w;
  std::vector<std::string_view> positional;
  if (auto e = ld::parse_workload(rest, w, positional); !e.empty())
    return usage_error(e, compare_help);
  if (positional.size() != 2)
    return usage_error("compare takes two targets, A and B", compare_help);
  std::vector<ld::target> na, nb;
  if (auto e = ld::parse_targets(positional[0], na); !e.empty())
    return usage_error(e, compare_help);
  if (auto e = ld::parse_targets(positional[1], nb); !e.empty())
    return usage_error(e, compare_help);
  ld::target ta = na.front(), tb = nb.front(); // named in the summary
  ta.text = ld::targets_text(na);
  tb.text = ld::targets_text(nb);
  tally::bench::warn_if_unoptimized();
  std::vector<ld::result> ra, rb;
  bool ok = true;
  for (unsigned round = 1; round <= rounds; ++round) {
    for (int side = 0; side < 2; ++side) {
      const ld::target& t = side ? tb : ta;
      std::printf("\n== round %u/%u, %s: %s\n", round, rounds,
                  side ? "B" : "A", t.text.c_str());
      std::fflush(stdout);
      const ld::workload wt = for_target(w, t);
      ld::result r = ld::run(side ? nb : na, wt);
      ld::print_table(stdout, r);
      ok = write_outputs(wt, r,
                         std::string(side ? "B" : "A") + std::to_string(round))
           && ok;
      if (r.failed) {
        std::fprintf(stderr, "tally-bench: run against %s failed: %s\n",
                     t.text.c_str(), r.failure.c_str());
        return exit_failed;
      }
      (side ? rb : ra).push_back(std::move(r));
    }
  }
  ld::print_comparison(stdout, ta, tb, ra, rb);
  return ok ? exit_ok : exit_failed;
}

const std::vector<subcommand>& subcommands() {
  static const std::vector<subcommand> all = {
      {"experiment", "reproduce the FBF and Bloom clock papers' figures and tables",
       run_experiment, experiment_help},
      {"run", "generate load against one node (Tally, AntidoteDB or Redis) or a cluster",
       run_load, run_help},
      {"compare", "the same load against two nodes, alternately; medians and ratios",
       run_compare, compare_help},
  };
  return all;
}

void main_help(std::FILE* out) {
  std::fprintf(out,
               "usage: tally-bench <command> [args]\n"
               "       tally-bench <command> --help\n"
               "\n"
               "commands:\n");
  for (const auto& c : subcommands())
    std::fprintf(out, "  %-12.*s %.*s\n", static_cast<int>(c.name.size()),
                 c.name.data(), static_cast<int>(c.summary.size()),
                 c.summary.data());
}

} // namespace

int main(int argc, char** argv) {
  args a(argv + 1, argv + argc);
  if (a.empty())
    return usage_error("which command?", main_help);
  if (a[0] == "--help" || a[0] == "-h" || a[0] == "help") {
    main_help(stdout);
    return exit_ok;
  }
  for (const auto& c : subcommands())
    if (c.name == a[0])
      return c.run(args(a.begin() + 1, a.end()));
  return usage_error("unknown command '" + std::string(a[0]) + "'", main_help);
}
