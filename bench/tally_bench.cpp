// tally-bench: Tally's benchmark and paper-reproduction binary.
//
//   tally-bench experiment <name>|all [--out DIR] [--seed S] [--quick]
//
// main() is a subcommand dispatcher: each subcommand is one entry of
// `subcommands` below with its own argument parsing and help. The
// load-generation subcommands come with a later issue.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_harness.hpp"
#include "bench/experiments/experiments.hpp"

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
               "\n"
               "Reproduces a figure or table of the FBF paper (fbf-*) or the "
               "Bloom clock paper\n"
               "(bloom-*) with Tally's fbf/ and clock/ structures. Writes "
               "<name>*.csv and\n"
               "<name>*.svg into DIR and prints a table; deterministic for a "
               "given seed\n"
               "(simulated time, no wall clock). See docs/EXPERIMENTS.md.\n"
               "\n"
               "options:\n"
               "  --out DIR      output folder (default "
               "bench-results/experiments)\n"
               "  --seed S       master seed, an unsigned integer (default 1)\n"
               "  --quick        small parameters: a smoke run of seconds\n"
               "  --no-progress  no progress lines on stderr\n"
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
    } else if (arg == "--out" || arg == "--seed") {
      if (i + 1 == a.size())
        return usage_error(std::string(arg) + " needs a value", experiment_help);
      const std::string_view value = a[++i];
      if (arg == "--out") {
        opts.out_dir = std::string(value);
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

const std::vector<subcommand>& subcommands() {
  static const std::vector<subcommand> all = {
      {"experiment", "reproduce the FBF and Bloom clock papers' figures and tables",
       run_experiment, experiment_help},
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
