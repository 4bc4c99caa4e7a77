// tally: the command-line client (docs/CLIENT.md, "The tally CLI").
//
//   tally [--host H] [--port P] [--timeout MS] [--retries N] <command> ...
//
// Exit codes: 0 success; 1 the node answered with an error; 2 bad usage or
// input; 3 the node could not be reached (refused, timed out, dropped).
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.hpp"
#include "protocol/descriptor.hpp"

namespace {

using namespace tally;

constexpr int exit_ok = 0;
constexpr int exit_failed = 1;
constexpr int exit_usage = 2;
constexpr int exit_unreachable = 3;

constexpr const char* main_usage =
  R"(usage: tally [--host H] [--port P] [--timeout MS] [--retries N] <command> [args]

Talks to a Tally node (tallyd) over the AntidoteDB client protocol.

commands:
  inc <bucket> <key> [delta]              add delta (default 1) to a counter
  read <bucket> <key> [<bucket> <key>...] read counters at one snapshot
  txn <op>...                             an interactive transaction; ops are
                                          'inc <bucket> <key> <delta>' and
                                          'read <bucket> <key>'
  status                                  is the node reachable, and how fast

options:
  --host H        node address (default 127.0.0.1)
  --port P        node port (default 8087)
  --timeout MS    connect and per-request timeout (default 1000)
  --retries N     resends of a timed-out static request (default 2)
  -h, --help      this text; 'tally <command> --help' for a command

exit codes: 0 ok, 1 the node answered with an error, 2 bad usage,
            3 the node could not be reached
)";

constexpr const char* inc_usage =
  R"(usage: tally [options] inc <bucket> <key> [delta]

Adds delta (an integer, default 1, may be negative) to the counter
<bucket>/<key> in one static transaction and prints the commit clock.
The update carries an op id, so a retry after a timeout is applied once.
example: tally inc shop visits 5
)";

constexpr const char* read_usage =
  R"(usage: tally [options] read <bucket> <key> [<bucket> <key>...]

Reads one or more counters at one consistent snapshot and prints
'<bucket>/<key> = <value>' for each, then the snapshot clock.
example: tally read shop visits shop orders
)";

constexpr const char* txn_usage =
  R"(usage: tally [options] txn <op> [<op>...]
  op := inc <bucket> <key> <delta> | read <bucket> <key>

Runs the ops in order in one interactive transaction and commits it. Reads
see the snapshot plus the transaction's own earlier increments.
example: tally txn inc b k1 5 inc b k2 -1 read b k1 read b k2
)";

constexpr const char* status_usage =
  R"(usage: tally [options] status

Connects and reports whether the node is reachable and the round-trip time
of one static read. Richer status (ring, partitions, FBF windows) comes with
the node's admin API.
)";

[[noreturn]] void bad_usage(const std::string& message, const char* usage) {
  std::cerr << "tally: " << message << "\n\n" << usage;
  std::exit(exit_usage);
}

bool is_help(std::string_view arg) { return arg == "--help" || arg == "-h"; }

std::optional<std::int64_t> parse_int(std::string_view text) {
  if (!text.empty() && text.front() == '+')
    text.remove_prefix(1);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(),
                                   value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

/// A short form of clock bytes: the vector clock when they are Tally's,
/// else the first bytes in hex.
std::string brief_clock(const std::string& bytes) {
  if (auto clock = decode_clock(bytes)) {
    std::ostringstream out;
    out << *clock;
    return out.str();
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < 8; ++i) {
    auto b = static_cast<unsigned char>(bytes[i]);
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return bytes.size() > 8 ? out + "..." : out;
}

int report(const error& err) {
  std::cerr << "tally: " << err.message() << '\n';
  return err.code() == errc::unavailable || err.code() == errc::timeout
           ? exit_unreachable
           : exit_failed;
}

std::string name_of(const object_key& key) {
  return key.bucket + '/' + key.key;
}

struct inc_args {
  object_key key;
  std::int64_t delta = 1;
};

inc_args parse_inc(const std::vector<std::string>& args) {
  if (args.size() < 2 || args.size() > 3)
    bad_usage("inc takes <bucket> <key> [delta]", inc_usage);
  inc_args out{{args[0], args[1]}, 1};
  if (args.size() == 3) {
    auto d = parse_int(args[2]);
    if (!d)
      bad_usage("inc: delta '" + args[2] + "' is not a 64-bit integer",
                inc_usage);
    out.delta = *d;
  }
  return out;
}

std::vector<bound_object> parse_read(const std::vector<std::string>& args) {
  if (args.empty() || args.size() % 2 != 0)
    bad_usage("read takes <bucket> <key> pairs", read_usage);
  std::vector<bound_object> objects;
  for (std::size_t i = 0; i < args.size(); i += 2)
    objects.push_back({object_key{args[i], args[i + 1]}, crdt_type::counter});
  return objects;
}

struct txn_op {
  bool is_inc = false;
  object_key key;
  std::int64_t delta = 0;
};

std::vector<txn_op> parse_txn(const std::vector<std::string>& args) {
  if (args.empty())
    bad_usage("txn needs at least one op", txn_usage);
  std::vector<txn_op> ops;
  for (std::size_t i = 0; i < args.size();) {
    const auto& verb = args[i];
    if (verb == "inc") {
      if (i + 3 >= args.size())
        bad_usage("txn: 'inc' needs <bucket> <key> <delta>", txn_usage);
      auto d = parse_int(args[i + 3]);
      if (!d)
        bad_usage("txn: delta '" + args[i + 3] + "' is not a 64-bit integer",
                  txn_usage);
      ops.push_back({true, {args[i + 1], args[i + 2]}, *d});
      i += 4;
    } else if (verb == "read") {
      if (i + 2 >= args.size())
        bad_usage("txn: 'read' needs <bucket> <key>", txn_usage);
      ops.push_back({false, {args[i + 1], args[i + 2]}, 0});
      i += 3;
    } else {
      bad_usage("txn: unknown op '" + verb + "' (expected inc or read)",
                txn_usage);
    }
  }
  return ops;
}

int run_inc(client& c, const inc_args& a) {
  auto clock = c.update({counter_inc{a.key, a.delta, crdt_type::counter, {}}});
  if (!clock)
    return report(clock.err());
  std::cout << name_of(a.key) << " += " << a.delta << "  (committed at "
            << brief_clock(*clock) << ")\n";
  return exit_ok;
}

int run_read(client& c, const std::vector<bound_object>& objects) {
  auto r = c.read(objects);
  if (!r)
    return report(r.err());
  for (std::size_t i = 0; i < objects.size() && i < r->values.size(); ++i)
    std::cout << name_of(objects[i].key) << " = " << r->values[i] << '\n';
  std::cout << "(snapshot " << brief_clock(r->clock) << ")\n";
  return exit_ok;
}

int run_txn(client& c, const std::vector<txn_op>& ops) {
  auto tx = c.start();
  if (!tx)
    return report(tx.err());
  for (const auto& op : ops) {
    if (op.is_inc) {
      auto st = tx->update({counter_inc{op.key, op.delta, crdt_type::counter,
                                        {}}});
      if (!st)
        return report(st.err());
      std::cout << name_of(op.key) << " += " << op.delta << '\n';
    } else {
      auto v = tx->read({{op.key, crdt_type::counter}});
      if (!v)
        return report(v.err());
      std::cout << name_of(op.key) << " = " << v->front() << '\n';
    }
  }
  auto clock = tx->commit();
  if (!clock)
    return report(clock.err());
  std::cout << "committed at " << brief_clock(*clock) << '\n';
  return exit_ok;
}

int run_status(client& c, const client_options& opts) {
  c.set_session_causality(false);
  auto begin = std::chrono::steady_clock::now();
  auto r = c.read({{object_key{"tally", "status"}, crdt_type::counter}});
  auto took = std::chrono::steady_clock::now() - begin;
  if (!r)
    return report(r.err());
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(took).count();
  char rtt[32];
  std::snprintf(rtt, sizeof(rtt), "%.3f", static_cast<double>(us) / 1000.0);
  std::cout << "node " << opts.host << ':' << opts.port
            << " is reachable; static read round trip " << rtt << " ms\n"
            << "(richer status - ring, partitions, FBF windows - comes with "
               "the node's admin API)\n";
  return exit_ok;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  client_options opts;
  std::size_t i = 0;
  auto value_of = [&](const std::string& flag) -> std::string {
    auto eq = args[i].find('=');
    if (eq != std::string::npos)
      return args[i].substr(eq + 1);
    if (i + 1 >= args.size())
      bad_usage(flag + " needs a value", main_usage);
    return args[++i];
  };
  auto flag_is = [&](const std::string& flag) {
    return args[i] == flag || args[i].rfind(flag + "=", 0) == 0;
  };
  for (; i < args.size() && args[i].rfind("-", 0) == 0; ++i) {
    if (is_help(args[i])) {
      std::cout << main_usage;
      return exit_ok;
    } else if (flag_is("--host")) {
      opts.host = value_of("--host");
      if (opts.host.empty())
        bad_usage("--host must not be empty", main_usage);
    } else if (flag_is("--port")) {
      auto text = value_of("--port");
      auto p = parse_int(text);
      if (!p || *p < 1 || *p > 65535)
        bad_usage("--port '" + text + "' is not a port (1-65535)", main_usage);
      opts.port = static_cast<std::uint16_t>(*p);
    } else if (flag_is("--timeout")) {
      auto text = value_of("--timeout");
      auto t = parse_int(text);
      if (!t || *t < 1 || *t > 3'600'000)
        bad_usage("--timeout '" + text
                    + "' is not a time in milliseconds (1-3600000)",
                  main_usage);
      opts.timeout = std::chrono::milliseconds{*t};
    } else if (flag_is("--retries")) {
      auto text = value_of("--retries");
      auto n = parse_int(text);
      if (!n || *n < 0 || *n > 100)
        bad_usage("--retries '" + text + "' is not a count (0-100)",
                  main_usage);
      opts.retries = static_cast<unsigned>(*n);
    } else {
      bad_usage("unknown option '" + args[i] + "'", main_usage);
    }
  }
  if (i >= args.size())
    bad_usage("missing command", main_usage);
  std::string command = args[i++];
  std::vector<std::string> rest(args.begin() + static_cast<long>(i),
                                args.end());
  const char* usage = command == "inc"      ? inc_usage
                      : command == "read"   ? read_usage
                      : command == "txn"    ? txn_usage
                      : command == "status" ? status_usage
                                            : nullptr;
  if (command == "help") {
    std::cout << main_usage;
    return exit_ok;
  }
  if (usage == nullptr)
    bad_usage("unknown command '" + command + "'", main_usage);
  for (const auto& a : rest)
    if (is_help(a)) {
      std::cout << usage;
      return exit_ok;
    }
  // Parse all input before touching the network, so bad input is reported
  // as such even when the node is down.
  std::optional<inc_args> inc;
  std::vector<bound_object> objects;
  std::vector<txn_op> ops;
  if (command == "inc")
    inc = parse_inc(rest);
  else if (command == "read")
    objects = parse_read(rest);
  else if (command == "txn")
    ops = parse_txn(rest);
  else if (!rest.empty())
    bad_usage("status takes no arguments", status_usage);

  auto c = client::connect(opts);
  if (!c)
    return report(c.err());
  if (inc)
    return run_inc(*c, *inc);
  if (command == "read")
    return run_read(*c, objects);
  if (command == "txn")
    return run_txn(*c, ops);
  return run_status(*c, opts);
}
