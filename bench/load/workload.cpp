#include "bench/load/workload.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tally::load {

namespace {

bool parse_u64(std::string_view t, std::uint64_t& out) {
  if (t.empty() || t.size() > 20)
    return false;
  std::uint64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9')
      return false;
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10)
      return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

bool parse_unsigned(std::string_view t, unsigned& out, unsigned lo,
                    unsigned hi) {
  std::uint64_t v = 0;
  if (!parse_u64(t, v) || v < lo || v > hi)
    return false;
  out = static_cast<unsigned>(v);
  return true;
}

bool parse_double(std::string_view t, double& out) {
  if (t.empty() || t.size() > 40)
    return false;
  std::string s(t);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v))
    return false;
  out = v;
  return true;
}

bool parse_i64(std::string_view t, std::int64_t& out) {
  bool neg = !t.empty() && t[0] == '-';
  std::uint64_t v = 0;
  if (!parse_u64(neg ? t.substr(1) : t, v) || v > static_cast<std::uint64_t>(INT64_MAX))
    return false;
  out = neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  return true;
}

/// "a:b" into two unsigned values.
bool parse_pair(std::string_view t, unsigned& a, unsigned& b, unsigned hi) {
  auto colon = t.find(':');
  if (colon == std::string_view::npos)
    return false;
  return parse_unsigned(t.substr(0, colon), a, 0, hi)
         && parse_unsigned(t.substr(colon + 1), b, 0, hi);
}

std::string quoted(std::string_view v) { return "'" + std::string(v) + "'"; }

} // namespace

std::string parse_target(std::string_view text, target& out) {
  target t;
  t.text = std::string(text);
  std::string_view rest;
  if (text.rfind("antidote://", 0) == 0) {
    t.protocol = target::kind::antidote;
    t.port = 8087;
    rest = text.substr(11);
  } else if (text.rfind("antidotes://", 0) == 0) {
    t.protocol = target::kind::antidote;
    t.tls = true;
    t.port = 8087;
    rest = text.substr(12);
  } else if (text.rfind("redis://", 0) == 0) {
    t.protocol = target::kind::redis;
    t.port = 6379;
    rest = text.substr(8);
  } else {
    return "target " + quoted(text)
           + " is not antidote://HOST:PORT, antidotes://HOST:PORT or redis://HOST:PORT";
  }
  auto colon = rest.rfind(':');
  std::string_view host = colon == std::string_view::npos ? rest : rest.substr(0, colon);
  if (colon != std::string_view::npos) {
    unsigned p = 0;
    if (!parse_unsigned(rest.substr(colon + 1), p, 1, 65535))
      return "target " + quoted(text) + ": port must be 1-65535";
    t.port = static_cast<std::uint16_t>(p);
  }
  if (host == "localhost")
    host = "127.0.0.1";
  if (host != "127.0.0.1")
    return "target " + quoted(text)
           + ": only loopback targets (127.0.0.1, localhost) are allowed";
  t.host = std::string(host);
  out = t;
  return {};
}

std::string parse_targets(std::string_view text, std::vector<target>& out) {
  std::vector<std::string_view> entries;
  for (std::size_t from = 0;;) {
    const auto comma = text.find(',', from);
    entries.push_back(text.substr(from, comma == std::string_view::npos
                                          ? std::string_view::npos
                                          : comma - from));
    if (comma == std::string_view::npos)
      break;
    from = comma + 1;
  }
  if (entries.size() == 1) {
    target t;
    if (auto e = parse_target(text, t); !e.empty())
      return e;
    out.assign(1, t);
    return {};
  }
  const std::string list = "target list " + quoted(text);
  std::vector<target> nodes;
  std::string scheme;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string where = list + ", entry " + std::to_string(i + 1) + " of "
                              + std::to_string(entries.size());
    std::string_view entry = entries[i];
    if (entry.empty())
      return where + " is empty (HOST:PORT between the commas)";
    const bool has_scheme = entry.find("://") != std::string_view::npos;
    std::string url = has_scheme || i == 0 ? std::string(entry)
                                           : scheme + std::string(entry);
    target t;
    if (auto e = parse_target(url, t); !e.empty())
      return where + ": " + e;
    if (t.protocol != target::kind::antidote)
      return where + ": several targets must be nodes of one Tally cluster "
                     "(antidote:// or antidotes://); redis:// takes a single target";
    if (i == 0)
      scheme = t.tls ? "antidotes://" : "antidote://";
    t.text = (t.tls ? "antidotes://" : "antidote://") + t.host + ":" + std::to_string(t.port);
    for (const auto& n : nodes)
      if (n.port == t.port)
        return where + ": " + t.host + ":" + std::to_string(t.port)
               + " is listed twice";
    nodes.push_back(std::move(t));
  }
  out = std::move(nodes);
  return {};
}

std::string targets_text(const std::vector<target>& nodes) {
  std::string s;
  for (const auto& t : nodes)
    s += (s.empty() ? "" : ",") + t.text;
  return s;
}

const char* to_string(data_kind k) noexcept {
  switch (k) {
  case data_kind::counter:
    return "counter";
  case data_kind::set:
    return "set";
  case data_kind::reg:
    return "register";
  }
  return "?";
}

const char* workload_help() {
  return "workload options:\n"
         "  --duration S        measured seconds (default 10 unless --ops)\n"
         "  --ops N             measured operations in total, instead of "
         "--duration\n"
         "  --connections C     connections, one thread each (default 1)\n"
         "  --outstanding K     pipelined requests per connection (default 1;\n"
         "                      interactive transactions are not pipelined)\n"
         "  --rate OPS          fixed load: OPS operations per second in total,\n"
         "                      spread evenly over the connections; latency is\n"
         "                      measured from each operation's scheduled start,\n"
         "                      so a server that falls behind shows it (default:\n"
         "                      as fast as the server answers)\n"
         "  --keys N            objects (default 1000)\n"
         "  --type T            what they are: counter (updates add --inc),\n"
         "                      set (an orset; each update adds or removes,\n"
         "                      even odds, one element of a pool of\n"
         "                      --elements) or register (an lwwreg; each\n"
         "                      update assigns a value unique to the run);\n"
         "                      reads read the object (default counter;\n"
         "                      redis:// targets: counter only)\n"
         "  --elements N        a set's element pool, 1-64 (default 16)\n"
         "  --dist D            uniform | zipf:<s> | pareto:<a> | sequential\n"
         "  --ratio R:W         reads to updates (default 80:20)\n"
         "  --mode M            static-single | static-multi:<r>:<w> |\n"
         "                      interactive:<r>:<w> (default static-single)\n"
         "  --inc N             increment of each counter update (default 1)\n"
         "  --warmup S          unmeasured seconds first (default 0)\n"
         "  --bucket NAME       bucket (key prefix for redis; default bench)\n"
         "  --buckets N         spread the keys over N buckets (default 1)\n"
         "  --seed S            seed of the key and mix draws (default 1)\n"
         "  --retry-rate p      send this fraction of updates twice, same op "
         "id\n"
         "  --op-ids on|off     Tally's op ids on counter updates (default on);\n"
         "                      --no-op-ids = --op-ids off (for AntidoteDB)\n"
         "  --no-verify         skip the final read-back of every key\n"
         "  --timeout-ms MS     reply deadline (default 5000)\n"
         "  --tls-ca FILE       CA of the node's certificate, for antidotes://\n"
         "                      targets (tallyd --client-tls-port)\n"
         "  --tls-cert FILE, --tls-key FILE\n"
         "                      a client certificate (tallyd --client-tls-ca)\n"
         "  --csv FILE          per-second time series\n"
         "  --svg FILE          throughput and latency plot\n"
         "  --no-progress       no live progress line on stderr\n";
}

std::string parse_workload(const std::vector<std::string_view>& args,
                           workload& w,
                           std::vector<std::string_view>& positional) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::string_view value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0) {
      auto eq = arg.find('=');
      if (eq != std::string_view::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    } else {
      positional.push_back(arg);
      continue;
    }
    // Flags without a value.
    if (arg == "--no-op-ids" || arg == "--no-verify" || arg == "--no-progress") {
      if (has_inline)
        return arg == "--no-op-ids" ? "--no-op-ids takes no value"
                                    : std::string(arg) + " takes no value";
      if (arg == "--no-op-ids") {
        w.op_ids = false;
        w.op_ids_given = true;
      } else if (arg == "--no-verify") {
        w.verify = false;
      } else {
        w.progress = false;
      }
      continue;
    }
    static const char* const valued[] = {
      "--duration", "--ops",  "--connections", "--outstanding", "--keys",
      "--dist",     "--ratio", "--mode",       "--inc",         "--warmup",
      "--bucket",   "--buckets", "--seed",     "--retry-rate",  "--op-ids",
      "--csv",      "--svg",  "--timeout-ms", "--rate",      "--type",
      "--elements", "--tls-ca", "--tls-cert",  "--tls-key"};
    bool known = false;
    for (const char* v : valued)
      known = known || arg == v;
    if (!known)
      return "unknown option " + quoted(arg);
    if (!has_inline) {
      if (i + 1 == args.size())
        return std::string(arg) + " needs a value";
      value = args[++i];
    }
    const std::string a(arg);
    if (arg == "--duration") {
      double d = 0;
      if (!parse_double(value, d) || d <= 0 || d > 86400)
        return "--duration takes seconds in (0, 86400], got " + quoted(value);
      w.duration_s = d;
    } else if (arg == "--ops") {
      std::uint64_t n = 0;
      if (!parse_u64(value, n) || n == 0)
        return "--ops takes a positive integer, got " + quoted(value);
      w.ops = n;
    } else if (arg == "--connections") {
      if (!parse_unsigned(value, w.connections, 1, 4096))
        return "--connections takes 1-4096, got " + quoted(value);
    } else if (arg == "--rate") {
      if (!parse_double(value, w.rate) || !(w.rate > 0) || w.rate > 1e8)
        return "--rate takes operations per second in (0, 1e8], got " + quoted(value);
    } else if (arg == "--outstanding") {
      if (!parse_unsigned(value, w.outstanding, 1, 4096))
        return "--outstanding takes 1-4096, got " + quoted(value);
    } else if (arg == "--keys") {
      if (!parse_u64(value, w.keys) || w.keys == 0 || w.keys > (1ull << 32))
        return "--keys takes 1-4294967296, got " + quoted(value);
    } else if (arg == "--dist") {
      if (value == "uniform") {
        w.dist = dist_kind::uniform;
      } else if (value == "sequential") {
        w.dist = dist_kind::sequential;
      } else if (value.rfind("zipf:", 0) == 0) {
        w.dist = dist_kind::zipf;
        if (!parse_double(value.substr(5), w.dist_param) || w.dist_param <= 0
            || w.dist_param > 10)
          return "--dist zipf:<s> needs 0 < s <= 10, got " + quoted(value);
      } else if (value.rfind("pareto:", 0) == 0) {
        w.dist = dist_kind::pareto;
        if (!parse_double(value.substr(7), w.dist_param) || w.dist_param <= 0
            || w.dist_param > 100)
          return "--dist pareto:<a> needs 0 < a <= 100, got " + quoted(value);
      } else {
        return "--dist takes uniform, zipf:<s>, pareto:<a> or sequential, got "
               + quoted(value);
      }
    } else if (arg == "--ratio") {
      if (!parse_pair(value, w.read_weight, w.write_weight, 1000000)
          || w.read_weight + w.write_weight == 0)
        return "--ratio takes R:W (e.g. 80:20), got " + quoted(value);
    } else if (arg == "--mode") {
      if (value == "static-single") {
        w.mode = mode_kind::static_single;
        w.mode_reads = w.mode_writes = 1;
      } else {
        std::string_view rest;
        if (value.rfind("static-multi:", 0) == 0) {
          w.mode = mode_kind::static_multi;
          rest = value.substr(13);
        } else if (value.rfind("interactive:", 0) == 0) {
          w.mode = mode_kind::interactive;
          rest = value.substr(12);
        } else {
          return "--mode takes static-single, static-multi:<r>:<w> or "
                 "interactive:<r>:<w>, got " + quoted(value);
        }
        if (!parse_pair(rest, w.mode_reads, w.mode_writes, 1000)
            || w.mode_reads + w.mode_writes == 0
            || (w.mode == mode_kind::static_multi
                && (w.mode_reads == 0 || w.mode_writes == 0)))
          return "--mode " + quoted(value)
                 + ": <r>:<w> are key counts (0-1000, static-multi: both >= 1)";
      }
    } else if (arg == "--type") {
      if (value == "counter")
        w.type = data_kind::counter;
      else if (value == "set")
        w.type = data_kind::set;
      else if (value == "register")
        w.type = data_kind::reg;
      else
        return "--type takes counter, set or register, got " + quoted(value);
    } else if (arg == "--elements") {
      if (!parse_unsigned(value, w.elements, 1, 64))
        return "--elements takes 1-64, got " + quoted(value);
    } else if (arg == "--inc") {
      if (!parse_i64(value, w.inc) || w.inc == 0)
        return "--inc takes a non-zero 64-bit integer, got " + quoted(value);
    } else if (arg == "--warmup") {
      if (!parse_double(value, w.warmup_s) || w.warmup_s < 0 || w.warmup_s > 3600)
        return "--warmup takes seconds in [0, 3600], got " + quoted(value);
    } else if (arg == "--bucket") {
      if (value.empty())
        return "--bucket takes a non-empty name";
      w.bucket = std::string(value);
    } else if (arg == "--buckets") {
      if (!parse_unsigned(value, w.buckets, 1, 1000000))
        return "--buckets takes 1-1000000, got " + quoted(value);
    } else if (arg == "--seed") {
      if (!parse_u64(value, w.seed))
        return "--seed takes an unsigned 64-bit integer, got " + quoted(value);
    } else if (arg == "--retry-rate") {
      if (!parse_double(value, w.retry_rate) || w.retry_rate < 0
          || w.retry_rate > 1)
        return "--retry-rate takes a fraction in [0, 1], got " + quoted(value);
    } else if (arg == "--op-ids") {
      if (value != "on" && value != "off")
        return "--op-ids takes on or off, got " + quoted(value);
      w.op_ids = value == "on";
      w.op_ids_given = true;
    } else if (arg == "--csv") {
      w.csv_path = std::string(value);
    } else if (arg == "--svg") {
      w.svg_path = std::string(value);
    } else if (arg == "--timeout-ms") {
      if (!parse_unsigned(value, w.timeout_ms, 1, 600000))
        return "--timeout-ms takes 1-600000, got " + quoted(value);
    } else if (arg == "--tls-ca" || arg == "--tls-cert" || arg == "--tls-key") {
      if (value.empty())
        return a + " needs a file";
      (arg == "--tls-ca" ? w.tls_ca : arg == "--tls-cert" ? w.tls_cert : w.tls_key) =
        std::string(value);
    }
  }
  if (w.ops && w.duration_s)
    return "give --duration or --ops, not both";
  if (w.keys < w.buckets)
    return "--buckets cannot exceed --keys";
  const std::uint64_t per_op =
    std::max(w.mode_reads, w.mode_writes);
  if (w.mode != mode_kind::static_single && per_op > w.keys)
    return "--mode asks for more keys per transaction than --keys";
  return {};
}

std::string describe(const workload& w) {
  std::string m = w.mode == mode_kind::static_single ? "static-single"
                  : w.mode == mode_kind::static_multi
                    ? "static-multi:" + std::to_string(w.mode_reads) + ":"
                        + std::to_string(w.mode_writes)
                    : "interactive:" + std::to_string(w.mode_reads) + ":"
                        + std::to_string(w.mode_writes);
  std::string d = w.dist == dist_kind::uniform      ? "uniform"
                  : w.dist == dist_kind::sequential ? "sequential"
                  : w.dist == dist_kind::zipf
                    ? "zipf:" + std::to_string(w.dist_param)
                    : "pareto:" + std::to_string(w.dist_param);
  std::string s = m;
  if (w.type != data_kind::counter)
    s = std::string(to_string(w.type)) + " " + s;
  if (w.mode != mode_kind::interactive)
    s += " " + std::to_string(w.read_weight) + ":" + std::to_string(w.write_weight);
  s += ", " + std::to_string(w.keys) + " keys " + d;
  if (w.type == data_kind::set)
    s += " (" + std::to_string(w.elements) + " elements)";
  s += ", " + std::to_string(w.connections) + " conns x "
       + std::to_string(w.outstanding) + " outstanding";
  if (w.rate > 0)
    s += ", rate " + std::to_string(static_cast<long long>(w.rate)) + " ops/s";
  if (w.retry_rate > 0)
    s += ", retry-rate " + std::to_string(w.retry_rate);
  if (w.type == data_kind::counter) // sets and registers carry none
    s += w.op_ids ? ", op ids on" : ", op ids off";
  return s;
}

key_chooser::key_chooser(dist_kind kind, double param, std::uint64_t keys,
                         std::uint64_t seed, std::uint64_t start)
  : kind_(kind), param_(param), keys_(keys), pos_(start % keys), rng_(seed) {
  if (kind_ == dist_kind::zipf) {
    cdf_.resize(keys_);
    double sum = 0;
    for (std::uint64_t k = 0; k < keys_; ++k) {
      sum += 1.0 / std::pow(static_cast<double>(k + 1), param_);
      cdf_[k] = sum;
    }
    for (auto& c : cdf_)
      c /= sum;
  }
}

std::uint64_t key_chooser::next() {
  switch (kind_) {
  case dist_kind::uniform:
    return std::uniform_int_distribution<std::uint64_t>{0, keys_ - 1}(rng_);
  case dist_kind::sequential: {
    std::uint64_t k = pos_;
    pos_ = (pos_ + 1) % keys_;
    return k;
  }
  case dist_kind::zipf: {
    double u = std::uniform_real_distribution<double>{0.0, 1.0}(rng_);
    auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
    if (it == cdf_.end())
      --it;
    return static_cast<std::uint64_t>(it - cdf_.begin());
  }
  case dist_kind::pareto:
    for (int tries = 0; tries < 64; ++tries) {
      double u = std::uniform_real_distribution<double>{0.0, 1.0}(rng_);
      double x = std::pow(1.0 - u, -1.0 / param_);
      if (x >= 1.0 && x < static_cast<double>(keys_) + 1.0)
        return static_cast<std::uint64_t>(x) - 1;
    }
    return keys_ - 1;
  }
  return 0;
}

ratio_mixer::ratio_mixer(unsigned reads, unsigned writes, std::uint64_t phase)
  : reads_(reads), total_(static_cast<std::uint64_t>(reads) + writes),
    n_(total_ ? phase % total_ : 0) {}

bool ratio_mixer::next_is_read() {
  // The n-th draw is a read iff floor((n+1) R / T) > floor(n R / T).
  const std::uint64_t n = n_;
  n_ = (n_ + 1) % total_;
  return (n + 1) * reads_ / total_ > n * reads_ / total_;
}

} // namespace tally::load
