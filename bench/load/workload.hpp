// Workload description of tally-bench's load generator (docs/BENCH.md): the
// options of `tally-bench run` and `compare`, their parser, the key
// distributions and the read/write mixer. Pure: no I/O, no threads.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tally::load {

enum class dist_kind { uniform, zipf, pareto, sequential };
/// What the keys hold (--type): counters (updates increment), add-wins sets
/// (updates add or remove one element of a pool), LWW registers (updates
/// assign a value unique to the run).
enum class data_kind { counter, set, reg };
enum class mode_kind { static_single, static_multi, interactive };

struct target {
  enum class kind { antidote, redis } protocol = kind::antidote;
  std::string host = "127.0.0.1";
  std::uint16_t port = 8087;
  bool tls = false; // antidotes://: the node's TLS port (--tls-ca)
  std::string text; // as given, for reports
};

/// "antidote://127.0.0.1:8087", "antidotes://127.0.0.1:8443" (TLS, to
/// tallyd's --client-tls-port; needs --tls-ca) or "redis://127.0.0.1:6379".
/// Only loopback
/// hosts (127.0.0.1, localhost) are accepted. Empty on success, else why not.
std::string parse_target(std::string_view text, target& out);

/// One target, or several nodes of one cluster as a comma-separated list:
/// "antidote://127.0.0.1:8087,127.0.0.1:8088,127.0.0.1:8089". Entries after
/// the first may leave out the scheme (they take the first's); a list needs
/// antidote://, every entry loopback, no node twice. With one entry, `out`
/// holds exactly what parse_target gives; with several, each entry's `text`
/// is its full URL. Empty on success, else why not (naming the entry).
std::string parse_targets(std::string_view text, std::vector<target>& out);

/// The targets as one string for reports: the entry's text for one target,
/// the URLs joined with ',' for several.
std::string targets_text(const std::vector<target>& nodes);

struct workload {
  std::optional<double> duration_s;  // --duration S (default 10 when no --ops)
  std::optional<std::uint64_t> ops;  // --ops N: total measured operations
  unsigned connections = 1;          // --connections C
  unsigned outstanding = 1;          // --outstanding K per connection
  double rate = 0;                   // --rate OPS in total (0: as fast as possible)
  std::uint64_t keys = 1000;         // --keys N
  dist_kind dist = dist_kind::uniform;
  double dist_param = 0;             // zipf s or pareto a
  unsigned read_weight = 80;         // --ratio R:W
  unsigned write_weight = 20;
  mode_kind mode = mode_kind::static_single;
  unsigned mode_reads = 1;           // static-multi / interactive r
  unsigned mode_writes = 1;          // static-multi / interactive w
  data_kind type = data_kind::counter; // --type counter|set|register
  unsigned elements = 16;            // --elements N: a set's element pool (1-64)
  std::int64_t inc = 1;              // --inc N
  double warmup_s = 0;               // --warmup S
  std::string bucket = "bench";      // --bucket NAME
  unsigned buckets = 1;              // --buckets N: keys spread over N buckets
  std::uint64_t seed = 1;            // --seed S
  double retry_rate = 0;             // --retry-rate p
  bool op_ids = true;                // --op-ids on|off (--no-op-ids = off)
  bool op_ids_given = false;
  bool verify = true;                // --no-verify skips the final read-back
  std::string csv_path;              // --csv FILE
  std::string svg_path;              // --svg FILE
  bool progress = true;              // --no-progress
  unsigned timeout_ms = 5000;        // --timeout-ms: per-reply deadline
  std::string tls_ca;                // --tls-ca FILE: for antidotes:// targets
  std::string tls_cert;              // --tls-cert FILE, --tls-key FILE: a
  std::string tls_key;               //   client certificate, if the node asks
};

/// Parses workload options from `args`. Positional arguments (those not
/// starting with "--") are appended to `positional`. Empty on success, else
/// the message for the user (e.g. "--ratio takes R:W, got '80'").
std::string parse_workload(const std::vector<std::string_view>& args,
                           workload& w,
                           std::vector<std::string_view>& positional);

/// "counter", "set", "register".
const char* to_string(data_kind k) noexcept;

/// The option list, for help texts.
const char* workload_help();

/// Human summary ("static-single 80:20, 1000 keys uniform, 32 conns x 1").
std::string describe(const workload& w);

/// Draws key indexes in [0, keys) following the workload's distribution.
/// Zipf: P(rank k) proportional to 1/k^s, key index = rank - 1 (key 0 is the
/// hottest). Pareto: x = (1-u)^(-1/a) on [1, inf), key = floor(x) - 1,
/// redrawn when >= keys. Sequential: start, start+1, ... modulo keys.
class key_chooser {
public:
  key_chooser(dist_kind kind, double param, std::uint64_t keys,
              std::uint64_t seed, std::uint64_t start = 0);
  std::uint64_t next();

private:
  dist_kind kind_;
  double param_;
  std::uint64_t keys_;
  std::uint64_t pos_;
  std::mt19937_64 rng_;
  std::vector<double> cdf_; // zipf
};

/// Deterministic interleave of R reads and W writes: in every window of R+W
/// consecutive draws exactly R are reads (Bresenham), spread evenly.
class ratio_mixer {
public:
  ratio_mixer(unsigned reads, unsigned writes, std::uint64_t phase = 0);
  bool next_is_read();

private:
  std::uint64_t reads_, total_, n_;
};

} // namespace tally::load
