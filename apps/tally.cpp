// tally: the command-line client (docs/CLIENT.md, "The tally CLI").
//
//   tally [--host H] [--port P] [--timeout MS] [--retries N] <command> ...
//
// Exit codes: 0 success; 1 the node answered with an error; 2 bad usage or
// input; 3 the node could not be reached (refused, timed out, dropped).
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/client.hpp"
#include "journal/data_dir_report.hpp"
#include "protocol/descriptor.hpp"

namespace {

using namespace tally;

constexpr int exit_ok = 0;
constexpr int exit_failed = 1;
constexpr int exit_usage = 2;
constexpr int exit_unreachable = 3;

constexpr const char* main_usage =
  R"(usage: tally [--host H] [--port P] [--timeout MS] [--retries N]
             [--tls-ca FILE [--tls-cert FILE --tls-key FILE]] <command> [args]

Talks to a Tally node (tallyd) over the AntidoteDB client protocol.

commands:
  inc <bucket> <key> [delta]              add delta (default 1) to a counter
  read <bucket> <key> [<bucket> <key>...] read counters at one snapshot
  txn <op>...                             an interactive transaction; ops are
                                          'inc <bucket> <key> <delta>' and
                                          'read <bucket> <key>'
  set add|remove|reset|read <bucket> <key> [element...] [--type T]
                                          a set (T: orset, the default, or rwset)
  reg set|reset|read <bucket> <key> [value] [--type T]
                                          a register (T: lwwreg or mvreg)
  flag enable|disable|reset|read <bucket> <key> [--type T]
                                          a flag (T: flag_ew or flag_dw)
  bcounter inc|dec|read <bucket> <key> [amount]
                                          a bounded counter (never below 0)
  map update <bucket> <key> <entry> <op> [value...] [<entry> <op>...]
  map remove|reset|read <bucket> <key> [entry...] [--type T]
                                          a map's entries (T: rrmap, the
                                          default, or gmap); entry is
                                          TYPE:NAME, e.g. counter:apples inc 3
  status                                  is the node reachable, and how fast
  cluster status                          members and partition ownership
  cluster leave [NODE-ID]                 ask a member to leave the cluster
  cluster remove NODE-ID [--force]        remove a member that is down for good
  cluster local --nodes N [...]           run N local tallyd processes
  inspect [--deep] DATA-DIR               check a data dir offline (no node)

options:
  --host H        node address (default 127.0.0.1)
  --port P        node port (default 8087)
  --timeout MS    connect and per-request timeout (default 1000)
  --retries N     resends of a timed-out static request (default 2)
  --tls-ca FILE   connect over TLS (to tallyd's --client-tls-port), trusting
                  node certificates signed by this PEM CA
  --tls-cert FILE, --tls-key FILE
                  this client's PEM certificate and key, for a node that
                  requires client certificates (tallyd --client-tls-ca)
  --tls-server-name NAME
                  the name the node's certificate must carry (default:
                  --host; an IP address is matched against IP SANs)
  --admin-socket PATH
                  talk to the node's admin socket (tallyd --admin-socket,
                  default DATA-DIR/admin.sock) instead of --host/--port:
                  'cluster status', 'leave' and 'remove' need it
  -h, --help      this text; 'tally <command> --help' for a command
                  ('tally cluster <subcommand> --help' for cluster)

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

constexpr const char* set_usage =
  R"(usage: tally [options] set add|remove|reset|read <bucket> <key> [element...] [--type orset|rwset]

Adds or removes elements of the set <bucket>/<key> (add-wins orset by
default, remove-wins rwset with --type rwset) in one static transaction,
empties it (reset), or reads it: '<bucket>/<key> = {a, b}'.
example: tally set add shop tags red green; tally set read shop tags
)";

constexpr const char* reg_usage =
  R"(usage: tally [options] reg set|reset|read <bucket> <key> [value] [--type lwwreg|mvreg]

Assigns a value to the register <bucket>/<key> (last-writer-wins lwwreg by
default; a multi-value mvreg keeps concurrent values), resets it, or reads
it: '<bucket>/<key> = "value"' ('[v1, v2]' for an mvreg).
example: tally reg set shop motto "best prices"; tally reg read shop motto
)";

constexpr const char* flag_usage =
  R"(usage: tally [options] flag enable|disable|reset|read <bucket> <key> [--type flag_ew|flag_dw]

Enables, disables or resets the flag <bucket>/<key> (enable-wins flag_ew by
default, disable-wins flag_dw), or reads it: '<bucket>/<key> = true'.
example: tally flag enable shop open; tally flag read shop open
)";

constexpr const char* bcounter_usage =
  R"(usage: tally [options] bcounter inc|dec|read <bucket> <key> [amount]

Increments or decrements the bounded counter <bucket>/<key> by amount
(default 1) in one static transaction, or reads it: '<bucket>/<key> = 3'.
A bounded counter never goes below 0: a decrement beyond the rights the
node holds is refused (no permissions) and changes nothing. Each update
carries an op id, so a retry after a timeout counts it once.
example: tally bcounter inc shop stock 10; tally bcounter dec shop stock 3
)";

constexpr const char* map_usage =
  R"(usage: tally [options] map update <bucket> <key> <entry> <op> [value...] [<entry> <op> [value...]]...
       tally [options] map remove <bucket> <key> <entry>...
       tally [options] map reset|read <bucket> <key>
       (each takes --type rrmap|gmap; rrmap, remove-resets, is the default)

Updates entries of the map <bucket>/<key> in one static transaction, removes
entries or every entry (reset; rrmap only: a gmap only grows), or reads it,
one entry per line as '  TYPE:NAME = value'. An entry is TYPE:NAME, keyed
by both (counter:x and orset:x are two entries), with these ops:
  counter:NAME, fatcounter:NAME   inc [delta], dec [amount] (default 1)
  orset:NAME, rwset:NAME          add E..., remove E..., reset
  lwwreg:NAME, mvreg:NAME         set V, reset
  flag_ew:NAME, flag_dw:NAME      enable, disable, reset
set, reg and flag stand for orset, lwwreg and flag_ew. A set's elements run
to the next argument that names an entry (TYPE:NAME with a type above).
An update with a counter inside carries an op id, so a retry after a
timeout counts its increments once.
examples: tally map update shop cart counter:apples inc 3 set:tags add red
          tally map remove shop cart set:tags
          tally map read shop cart
)";

constexpr const char* status_usage =
  R"(usage: tally [options] status

Connects and reports whether the node is reachable and the round-trip time
of one static read. Richer status (ring, partitions, FBF windows) comes with
the node's admin API.
)";

constexpr const char* inspect_usage =
  R"(usage: tally inspect [--deep] DATA-DIR

Checks a tallyd data directory without a node, as tallyd checks it before
it starts (docs/NODE.md, "Damaged storage"): the partitions its manifest
lists, the folders there, and each data file's headers and size. With
--deep it also reads every entry of every database (LMDB read-only, one
child process per partition), which finds zeroed or garbled pages. Reads
only: safe on a damaged directory and next to a running node. Exit code 0
when nothing is damaged, 1 when something is (it is printed), 2 for bad
usage or a folder that is not a data dir.
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

// The same for a request sent with `c`: an error the node answered (an
// ErrorResp such as "snapshot too old", errc::unavailable too) is exit 1,
// not 3: the node was reached.
int report(const client& c, const error& err) {
  if (c.node_answered()) {
    std::cerr << "tally: " << err.message() << '\n';
    return exit_failed;
  }
  return report(err);
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

// `set`, `reg` and `flag`: one operation or a read of one object.
struct typed_args {
  std::string verb;
  bound_object object;
  std::vector<std::string> values;
};

typed_args parse_typed(const std::string& family, std::vector<std::string> args) {
  const char* usage = family == "set"        ? set_usage
                      : family == "reg"      ? reg_usage
                      : family == "bcounter" ? bcounter_usage
                                             : flag_usage;
  crdt_type type = family == "set"        ? crdt_type::orset
                   : family == "reg"      ? crdt_type::lwwreg
                   : family == "bcounter" ? crdt_type::bcounter
                                          : crdt_type::flag_ew;
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--type") {
      kept.push_back(args[i]);
      continue;
    }
    if (family == "bcounter")
      bad_usage("bcounter takes no --type", usage);
    if (i + 1 >= args.size())
      bad_usage(family + ": --type needs a type", usage);
    const auto& t = args[++i];
    bool ok = family == "set"   ? (t == "orset" || t == "rwset")
              : family == "reg" ? (t == "lwwreg" || t == "mvreg")
                                : (t == "flag_ew" || t == "flag_dw");
    if (!ok)
      bad_usage(family + ": --type '" + t + "' is not a " + family + " type", usage);
    for (auto candidate : {crdt_type::orset, crdt_type::rwset, crdt_type::lwwreg,
                           crdt_type::mvreg, crdt_type::flag_ew, crdt_type::flag_dw})
      if (to_string(candidate) == t)
        type = candidate;
  }
  if (kept.size() < 3)
    bad_usage(family + " takes a verb, <bucket> and <key>", usage);
  typed_args out{kept[0], bound_object{object_key{kept[1], kept[2]}, type},
                 {kept.begin() + 3, kept.end()}};
  const auto& v = out.verb;
  if (family == "bcounter") {
    // inc|dec [amount]: a positive 64-bit amount, 1 when left out.
    if (v != "read" && v != "inc" && v != "dec")
      bad_usage("bcounter: unknown verb '" + v + "'", usage);
    if (v == "read" && !out.values.empty())
      bad_usage("bcounter read takes no amount", usage);
    if (out.values.size() > 1)
      bad_usage("bcounter " + v + " takes one amount", usage);
    if (!out.values.empty()) {
      auto n = parse_int(out.values.front());
      if (!n || *n <= 0)
        bad_usage("bcounter " + v + ": amount '" + out.values.front()
                    + "' is not a positive 64-bit integer",
                  usage);
    }
    return out;
  }
  bool takes_values = (family == "set" && (v == "add" || v == "remove"))
                      || (family == "reg" && v == "set");
  bool known = v == "read" || v == "reset" || takes_values
               || (family == "flag" && (v == "enable" || v == "disable"));
  if (!known)
    bad_usage(family + ": unknown verb '" + v + "'", usage);
  if (takes_values && out.values.empty())
    bad_usage(family + " " + v + " needs " + (family == "set" ? "elements" : "a value"), usage);
  if (!takes_values && !out.values.empty())
    bad_usage(family + " " + v + " takes no values", usage);
  if (family == "reg" && out.values.size() > 1)
    bad_usage("reg set takes one value", usage);
  return out;
}

int run_typed(client& c, const typed_args& a) {
  const auto& key = a.object.key;
  if (a.verb == "read") {
    auto r = c.read_values({a.object});
    if (!r)
      return report(c, r.err());
    std::cout << name_of(key) << " = " << format_value(r->values.front(), a.object.type)
              << "\n(snapshot " << brief_clock(r->clock) << ")\n";
    return exit_ok;
  }
  if (a.object.type == crdt_type::bcounter) {
    const std::int64_t amount = a.values.empty() ? 1 : *parse_int(a.values.front());
    auto clock = c.update_ops({b_counter_op(key, a.verb == "inc" ? amount : -amount)});
    if (!clock)
      return report(c, clock.err());
    std::cout << name_of(key) << (a.verb == "inc" ? " += " : " -= ") << amount
              << "  (committed at " << brief_clock(*clock) << ")\n";
    return exit_ok;
  }
  update_op op = a.verb == "reset"    ? reset_op(key, a.object.type)
                 : a.verb == "add"    ? set_add_op(key, a.values, a.object.type)
                 : a.verb == "remove" ? set_remove_op(key, a.values, a.object.type)
                 : a.verb == "set"    ? register_assign_op(key, a.values.front(), a.object.type)
                                      : flag_op(key, a.verb == "enable", a.object.type);
  auto clock = c.update_ops({op});
  if (!clock)
    return report(c, clock.err());
  std::cout << name_of(key) << ": " << a.verb;
  for (const auto& v : a.values)
    std::cout << ' ' << v;
  std::cout << "  (committed at " << brief_clock(*clock) << ")\n";
  return exit_ok;
}

// `map`: entries of a gmap or rrmap, named TYPE:NAME.
struct map_args {
  std::string verb;
  bound_object object;
  std::vector<update_op> updates; // each names its entry (bucket unused)
  std::vector<map_key> removes;
  std::string summary; // the operations as typed, for the reply
};

/// The entry type TYPE:NAME names, for types a map entry can be from the
/// command line; nullopt for anything else.
std::optional<crdt_type> entry_type(std::string_view name) {
  if (name == "set")
    return crdt_type::orset;
  if (name == "reg")
    return crdt_type::lwwreg;
  if (name == "flag")
    return crdt_type::flag_ew;
  for (auto t : {crdt_type::counter, crdt_type::fatcounter, crdt_type::orset, crdt_type::rwset,
                 crdt_type::lwwreg, crdt_type::mvreg, crdt_type::flag_ew, crdt_type::flag_dw})
    if (to_string(t) == name)
      return t;
  return std::nullopt;
}

/// TYPE:NAME as a map key; nullopt unless TYPE is an entry type.
std::optional<map_key> parse_entry(const std::string& arg) {
  auto colon = arg.find(':');
  if (colon == std::string::npos)
    return std::nullopt;
  auto type = entry_type(std::string_view{arg}.substr(0, colon));
  if (!type)
    return std::nullopt;
  return map_key{arg.substr(colon + 1), *type};
}

/// One nested operation `verb values` on the entry `entry`.
update_op entry_op(const map_key& entry, const std::string& verb,
                   const std::vector<std::string>& values) {
  const std::string where = "map: " + std::string{to_string(entry.type)} + ":" + entry.key;
  object_key key{"", entry.key};
  auto no_values = [&] {
    if (!values.empty())
      bad_usage(where + " " + verb + " takes no values", map_usage);
  };
  switch (entry.type) {
    case crdt_type::counter:
    case crdt_type::fatcounter: {
      if (verb != "inc" && verb != "dec")
        bad_usage(where + ": unknown op '" + verb + "' (a counter takes inc or dec)", map_usage);
      if (values.size() > 1)
        bad_usage(where + " " + verb + " takes one amount", map_usage);
      std::int64_t amount = 1;
      if (!values.empty()) {
        auto d = parse_int(values.front());
        if (!d || (verb == "dec" && *d == INT64_MIN))
          bad_usage(where + ": amount '" + values.front() + "' is not a 64-bit integer",
                    map_usage);
        amount = *d;
      }
      return update_op{bound_object{key, entry.type},
                       counter_op{counter_update{verb == "dec" ? -amount : amount}, std::nullopt}};
    }
    case crdt_type::orset:
    case crdt_type::rwset:
      if (verb == "reset") {
        no_values();
        return reset_op(key, entry.type);
      }
      if (verb != "add" && verb != "remove")
        bad_usage(where + ": unknown op '" + verb + "' (a set takes add, remove or reset)",
                  map_usage);
      if (values.empty())
        bad_usage(where + " " + verb + " needs elements", map_usage);
      return verb == "add" ? set_add_op(key, values, entry.type)
                           : set_remove_op(key, values, entry.type);
    case crdt_type::lwwreg:
    case crdt_type::mvreg:
      if (verb == "reset") {
        no_values();
        return reset_op(key, entry.type);
      }
      if (verb != "set")
        bad_usage(where + ": unknown op '" + verb + "' (a register takes set or reset)",
                  map_usage);
      if (values.size() != 1)
        bad_usage(where + " set takes one value", map_usage);
      return register_assign_op(key, values.front(), entry.type);
    default: // flags
      no_values();
      if (verb == "reset")
        return reset_op(key, entry.type);
      if (verb != "enable" && verb != "disable")
        bad_usage(where + ": unknown op '" + verb + "' (a flag takes enable, disable or reset)",
                  map_usage);
      return flag_op(key, verb == "enable", entry.type);
  }
}

map_args parse_map(std::vector<std::string> args) {
  crdt_type type = crdt_type::rrmap;
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--type") {
      kept.push_back(args[i]);
      continue;
    }
    if (i + 1 >= args.size())
      bad_usage("map: --type needs a type", map_usage);
    const auto& t = args[++i];
    if (t != "rrmap" && t != "gmap")
      bad_usage("map: --type '" + t + "' is not a map type (rrmap or gmap)", map_usage);
    type = t == "gmap" ? crdt_type::gmap : crdt_type::rrmap;
  }
  if (kept.size() < 3)
    bad_usage("map takes a verb, <bucket> and <key>", map_usage);
  map_args out{kept[0], bound_object{object_key{kept[1], kept[2]}, type}, {}, {}, {}};
  const std::vector<std::string> rest(kept.begin() + 3, kept.end());
  const auto& v = out.verb;
  if (v == "read" || v == "reset") {
    if (!rest.empty())
      bad_usage("map " + v + " takes no entries", map_usage);
    if (v == "reset" && type == crdt_type::gmap)
      bad_usage("map reset: a gmap only grows (use an rrmap)", map_usage);
    return out;
  }
  if (v == "remove") {
    if (type == crdt_type::gmap)
      bad_usage("map remove: a gmap only grows (use an rrmap)", map_usage);
    if (rest.empty())
      bad_usage("map remove needs entries (TYPE:NAME)", map_usage);
    for (const auto& a : rest) {
      auto e = parse_entry(a);
      if (!e)
        bad_usage("map remove: '" + a + "' is not an entry (TYPE:NAME)", map_usage);
      out.removes.push_back(*e);
      out.summary += (out.summary.empty() ? "remove " : " ") + a;
    }
    return out;
  }
  if (v != "update")
    bad_usage("map: unknown verb '" + v + "' (update, remove, reset or read)", map_usage);
  if (rest.empty())
    bad_usage("map update needs <entry> <op> [value...]", map_usage);
  for (std::size_t i = 0; i < rest.size();) {
    auto e = parse_entry(rest[i]);
    if (!e)
      bad_usage("map update: '" + rest[i] + "' is not an entry (TYPE:NAME, e.g. counter:apples)",
                map_usage);
    if (i + 1 >= rest.size())
      bad_usage("map update: " + rest[i] + " needs an op", map_usage);
    const std::string verb = rest[i + 1];
    std::size_t j = i + 2;
    while (j < rest.size() && !parse_entry(rest[j]))
      ++j;
    std::vector<std::string> values(rest.begin() + static_cast<long>(i + 2),
                                    rest.begin() + static_cast<long>(j));
    out.updates.push_back(entry_op(*e, verb, values));
    if (!out.summary.empty())
      out.summary += ", ";
    for (std::size_t k = i; k < j; ++k)
      out.summary += (k == i ? "" : " ") + rest[k];
    i = j;
  }
  return out;
}

int run_map(client& c, const map_args& a) {
  const auto& key = a.object.key;
  if (a.verb == "read") {
    auto r = c.read_values({a.object});
    if (!r)
      return report(c, r.err());
    const auto& entries = std::get<map_value>(r->values.front()).entries;
    std::cout << name_of(key) << " (" << to_string(a.object.type) << ")"
              << (entries.empty() ? ": empty\n" : ":\n");
    for (const auto& e : entries)
      std::cout << "  " << to_string(e.key.type) << ':' << e.key.key << " = "
                << format_value(e.value, e.key.type) << '\n';
    std::cout << "(snapshot " << brief_clock(r->clock) << ")\n";
    return exit_ok;
  }
  update_op op = a.verb == "reset" ? reset_op(key, a.object.type)
                                   : map_op(key, a.updates, a.removes, a.object.type);
  auto clock = c.update_ops({op});
  if (!clock)
    return report(c, clock.err());
  std::cout << name_of(key) << ": " << (a.verb == "reset" ? "reset" : a.summary)
            << "  (committed at " << brief_clock(*clock) << ")\n";
  return exit_ok;
}

int run_inc(client& c, const inc_args& a) {
  auto clock = c.update({counter_inc{a.key, a.delta, crdt_type::counter, {}}});
  if (!clock)
    return report(c, clock.err());
  std::cout << name_of(a.key) << " += " << a.delta << "  (committed at "
            << brief_clock(*clock) << ")\n";
  return exit_ok;
}

int run_read(client& c, const std::vector<bound_object>& objects) {
  auto r = c.read(objects);
  if (!r)
    return report(c, r.err());
  for (std::size_t i = 0; i < objects.size() && i < r->values.size(); ++i)
    std::cout << name_of(objects[i].key) << " = " << r->values[i] << '\n';
  std::cout << "(snapshot " << brief_clock(r->clock) << ")\n";
  return exit_ok;
}

int run_txn(client& c, const std::vector<txn_op>& ops) {
  auto tx = c.start();
  if (!tx)
    return report(tx.err());
  // The increments after the last read leave with the commit, in one round
  // trip (transaction::commit_with).
  std::size_t tail = ops.size();
  while (tail > 0 && ops[tail - 1].is_inc)
    --tail;
  for (std::size_t i = 0; i < tail; ++i) {
    const auto& op = ops[i];
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
  std::vector<counter_inc> last;
  for (std::size_t i = tail; i < ops.size(); ++i)
    last.push_back(counter_inc{ops[i].key, ops[i].delta, crdt_type::counter, {}});
  auto clock = last.empty() ? tx->commit() : tx->commit_with(last);
  if (!clock)
    return report(clock.err());
  for (std::size_t i = tail; i < ops.size(); ++i)
    std::cout << name_of(ops[i].key) << " += " << ops[i].delta << '\n';
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

// ---- cluster ---------------------------------------------------------------

constexpr const char* cluster_usage =
  R"(usage: tally [options] cluster <subcommand> [args]

Cluster administration through Tally's admin request (an extension of the
AntidoteDB protocol, docs/PROTOCOL.md), and a local cluster to try out.

subcommands:
  status                  the node's view of the cluster: members and
                          partition ownership
  leave [NODE-ID]         ask a member to leave (default: the node at
                          --host/--port)
  remove NODE-ID [--force]
                          remove a member that is down for good; its
                          copies are re-created on the others
  local --nodes N [...]   run N tallyd processes on 127.0.0.1 until Ctrl-C

'tally cluster <subcommand> --help' for each.
)";

int run_inspect(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (is_help(a)) {
      std::cout << inspect_usage;
      return exit_ok;
    }
  bool deep = !args.empty() && args[0] == "--deep";
  if (args.size() != (deep ? 2u : 1u))
    bad_usage("inspect takes [--deep] and one data dir", inspect_usage);
  auto r = inspect_data_dir(args.back(), deep);
  if (!r) {
    std::cerr << "tally: " << r.err().message() << '\n';
    return exit_usage;
  }
  std::cout << to_text(*r);
  return r->damaged() ? exit_failed : exit_ok;
}

constexpr const char* cluster_status_usage =
  R"(usage: tally --admin-socket PATH [options] cluster status

Sends the admin command "status" to the node whose admin socket is PATH
(tallyd's DATA-DIR/admin.sock by default; admin commands are refused on the
client port) and prints
the text it answers: the cluster's members and which node owns which
partitions, as the node formats them.
exit codes: 0 ok, 1 the node answered with an error (e.g. a node without
            cluster support), 3 the node could not be reached
)";

constexpr const char* cluster_leave_usage =
  R"(usage: tally --admin-socket PATH [options] cluster leave [NODE-ID]

Sends the admin command "leave" to the node whose admin socket is PATH
(tallyd's DATA-DIR/admin.sock by default; admin commands are refused on the
client port) and prints the node's answer. NODE-ID names the member to leave, as 'cluster status' lists
it: tally@<address>:<cluster-port> (e.g. tally@127.0.0.1:9088). Without it,
the node the CLI is connected to is the one asked to leave.
example: tally --admin-socket data/admin.sock cluster leave tally@127.0.0.1:9089
exit codes: 0 ok, 1 the node answered with an error (e.g. an unknown
            member), 3 the node could not be reached
)";

constexpr const char* cluster_remove_usage =
  R"(usage: tally --admin-socket PATH [options] cluster remove NODE-ID [--force]

Sends the admin command "remove" to the node whose admin socket is PATH
(tallyd's DATA-DIR/admin.sock by default) and prints the node's answer.
NODE-ID is a member that is down for good, as 'cluster status' lists it
(tally@<address>:<cluster-port>). Its partitions move to the other members;
with n_val > 1 every copy it held is re-created on another live node from
the surviving copies, so n_val copies are restored and nothing acknowledged
is lost. A partition whose only copy it held (always, with n_val 1) would
lose its data: then remove is refused and names those partitions, unless
--force is given: they are re-created empty (their data is lost, logged and
shown by 'cluster status'). A node that is up is refused (use 'cluster
leave'), and so is the node PATH belongs to (ask another member).
docs/CLUSTER.md, "Removing a dead node".
example: tally --admin-socket data/admin.sock cluster remove tally@127.0.0.1:9089
exit codes: 0 ok, 1 the node refused (the node is up, not a member, or
            holds the only copy of partitions: the answer names them),
            2 bad usage, 3 the node could not be reached
)";

constexpr const char* cluster_local_usage =
  R"(usage: tally cluster local --nodes N [--data-dir DIR] [--base-port P]
                           [--partitions Q] [--n-val N] [--durability MODE]
                           [--ready-timeout S] [--insecure-cluster-links]

Starts a cluster of N tallyd processes on 127.0.0.1 to try Tally out, and
runs until Ctrl-C. Node i (0-based) is started as
  tallyd --data-dir DIR/node<i> --port P+i --cluster-port P+1000+i
and every node but node 0 also gets --join 127.0.0.1:<P+1000> (node 0's
cluster port) and --cluster-secret-file DIR/node0/cluster/secret: node 0
makes the cluster's secret at its first start, and node links are TLS
authenticated by it (docs/SECURITY.md, "Node links"). Its node id is
tally@127.0.0.1:<P+1000+i>.

  --nodes N           how many nodes (1-64)
  --data-dir DIR      parent of the nodes' data dirs (default ./data-cluster);
                      data already there is reused (recovered)
  --base-port P       node 0's client port (default 8087); P+1000+N-1 must
                      stay below 65536
  --partitions Q      ring size, passed to every node (default: tallyd's)
  --n-val N           copies of each partition (1-16; default 1), passed to
                      node 0, which founds the cluster (docs/REPLICATION.md)
  --durability MODE   full | batch | none, passed to every node (default:
                      tallyd's)
  --ready-timeout S   seconds each node may take to get ready (default 30)
  --insecure-cluster-links
                      plain, unauthenticated node links instead (every
                      node warns; anything reaching a cluster port can
                      join or crash it)

tallyd is the one next to this tally binary, else the first on PATH. Nodes
start one at a time: each must log "tallyd ready on port" before the next
one starts. Every line a node writes (its log goes to stderr) is copied to
this command's stderr, prefixed with "[node<i>] ". When all are ready, a
summary (client ports, data dirs, how to stop) goes to stdout; then
  tally --port P cluster status
asks any node (P..P+N-1) for the cluster's state.

Failures: if a node exits or is not ready in time during start-up, the
nodes already started are stopped and tally exits 1. A node that exits
later is reported and the others keep running (so failures can be tried
out, e.g. with kill); tally exits 1 once none is left.

Stopping: Ctrl-C (SIGINT) or SIGTERM sends SIGTERM to every node and waits
up to 10 s for them to flush and exit, then kills (SIGKILL) the rest; a
second Ctrl-C kills at once. tally then exits 0. The global options
(--host, --port, ...) do not apply to 'local'.
exit codes: 0 stopped by SIGINT/SIGTERM, 1 a node failed, 2 bad usage or
            no tallyd found
)";

void print_text(const std::string& text) {
  std::cout << text;
  if (!text.empty() && text.back() != '\n')
    std::cout << '\n';
}

int run_cluster_admin(client& c, const std::string& command,
                      const std::vector<std::string>& args) {
  auto text = c.admin(command, args);
  if (!text)
    return report(text.err());
  if (text->empty())
    std::cout << "the node accepted '" << command << "'\n";
  else
    print_text(*text);
  return exit_ok;
}

struct local_options {
  int nodes = 0;
  std::string data_dir = "./data-cluster";
  int base_port = 8087;
  std::optional<std::string> partitions;
  std::optional<std::string> n_val;
  std::optional<std::string> durability;
  int ready_timeout_s = 30;
  bool insecure_links = false;
};

local_options parse_local(const std::vector<std::string>& args) {
  local_options o;
  bool have_nodes = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    auto eq = a.find('=');
    auto flag = a.substr(0, eq);
    auto value = [&]() -> std::string {
      if (eq != std::string::npos)
        return a.substr(eq + 1);
      if (i + 1 >= args.size())
        bad_usage("cluster local: " + flag + " needs a value",
                  cluster_local_usage);
      return args[++i];
    };
    auto number = [&](const std::string& text, std::int64_t lo,
                      std::int64_t hi, const char* what) {
      auto n = parse_int(text);
      if (!n || *n < lo || *n > hi)
        bad_usage("cluster local: " + flag + " '" + text + "' is not "
                    + what + " (" + std::to_string(lo) + "-"
                    + std::to_string(hi) + ")",
                  cluster_local_usage);
      return static_cast<int>(*n);
    };
    if (a == "--insecure-cluster-links") {
      o.insecure_links = true;
    } else if (flag == "--nodes") {
      o.nodes = number(value(), 1, 64, "a node count");
      have_nodes = true;
    } else if (flag == "--data-dir") {
      o.data_dir = value();
      if (o.data_dir.empty())
        bad_usage("cluster local: --data-dir must not be empty",
                  cluster_local_usage);
    } else if (flag == "--base-port") {
      o.base_port = number(value(), 1, 65535, "a port");
    } else if (flag == "--partitions") {
      auto text = value();
      auto q = number(text, 1, 1 << 16, "a ring size");
      if ((q & (q - 1)) != 0)
        bad_usage("cluster local: --partitions " + text
                    + " is not a power of two",
                  cluster_local_usage);
      o.partitions = std::to_string(q);
    } else if (flag == "--n-val") {
      o.n_val = std::to_string(number(value(), 1, 16, "a copy count"));
    } else if (flag == "--durability") {
      auto mode = value();
      if (mode != "full" && mode != "batch" && mode != "none")
        bad_usage("cluster local: --durability is full, batch or none, got '"
                    + mode + "'",
                  cluster_local_usage);
      o.durability = mode;
    } else if (flag == "--ready-timeout") {
      o.ready_timeout_s = number(value(), 1, 3600, "a time in seconds");
    } else {
      bad_usage("cluster local: unknown option '" + a + "'",
                cluster_local_usage);
    }
  }
  if (!have_nodes)
    bad_usage("cluster local needs --nodes N", cluster_local_usage);
  if (o.base_port + 1000 + o.nodes - 1 > 65535)
    bad_usage("cluster local: --base-port " + std::to_string(o.base_port)
                + " leaves no room for " + std::to_string(o.nodes)
                + " cluster ports (P+1000+N-1 must be at most 65535)",
              cluster_local_usage);
  return o;
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)
         && ::access(path.c_str(), X_OK) == 0;
}

/// tallyd next to this binary (/proc/self/exe), else the first on PATH.
std::optional<std::string> find_tallyd(std::string& looked_in) {
  char self[4096];
  auto n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string dir{self, static_cast<std::size_t>(n)};
    dir = dir.substr(0, dir.rfind('/') + 1);
    looked_in = dir;
    if (is_executable_file(dir + "tallyd"))
      return dir + "tallyd";
  }
  const char* path = std::getenv("PATH");
  std::string entries = path ? path : "";
  std::size_t begin = 0;
  while (begin <= entries.size()) {
    auto end = entries.find(':', begin);
    if (end == std::string::npos)
      end = entries.size();
    auto dir = entries.substr(begin, end - begin);
    if (dir.empty())
      dir = ".";
    if (is_executable_file(dir + "/tallyd"))
      return dir + "/tallyd";
    begin = end + 1;
  }
  return std::nullopt;
}

/// One tallyd child of 'cluster local'.
struct local_node {
  int index = 0;
  int port = 0;
  int cluster_port = 0;
  std::string data_dir;
  pid_t pid = -1;
  int out_fd = -1;     // read end of the pipe on its stdout and stderr
  std::string partial; // output after the last newline
  bool ready = false;
  bool exited = false;
  bool reported = false; // its exit was reported
  int status = 0;        // waitpid status, once exited
};

std::string describe_exit(int status) {
  if (WIFEXITED(status))
    return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = ::strsignal(WTERMSIG(status));
    return "was killed by signal " + std::to_string(WTERMSIG(status))
           + (name ? std::string{" ("} + name + ")" : std::string{});
  }
  return "stopped (status " + std::to_string(status) + ")";
}

void write_stderr(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    auto n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    done += static_cast<std::size_t>(n);
  }
}

class local_cluster {
public:
  local_cluster(local_options opts, std::string tallyd)
      : opts_(std::move(opts)), tallyd_(std::move(tallyd)) {}
  local_cluster(const local_cluster&) = delete;
  local_cluster& operator=(const local_cluster&) = delete;
  ~local_cluster() {
    if (sig_fd_ >= 0)
      ::close(sig_fd_);
  }

  int run() {
    // SIGINT, SIGTERM and SIGCHLD arrive through a signalfd, so the one
    // poll() loop below sees signals, node output and node exits alike.
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGCHLD);
    if (::sigprocmask(SIG_BLOCK, &mask, &old_mask_) != 0
        || (sig_fd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
      std::cerr << "tally: cannot watch signals: " << std::strerror(errno)
                << '\n';
      return exit_failed;
    }
    std::signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < opts_.nodes; ++i) {
      if (auto rc = start_node(i); rc != exit_ok)
        return rc;
      if (stop_requested_)
        return stop_all();
    }
    print_summary();
    for (;;) {
      pump(-1);
      if (stop_requested_)
        return stop_all();
      report_exits();
      bool any_alive = false;
      for (const auto& n : nodes_)
        any_alive = any_alive || !n.exited;
      if (!any_alive) {
        std::cerr << "tally: every node has exited; stopping\n";
        return exit_failed;
      }
    }
  }

private:
  int start_node(int i) {
    local_node n;
    n.index = i;
    n.port = opts_.base_port + i;
    n.cluster_port = opts_.base_port + 1000 + i;
    n.data_dir = opts_.data_dir + "/node" + std::to_string(i);
    std::error_code ec;
    std::filesystem::create_directories(n.data_dir, ec);
    if (ec) {
      std::cerr << "tally: cannot create " << n.data_dir << ": "
                << ec.message() << '\n';
      stop_all();
      return exit_failed;
    }
    std::vector<std::string> args{tallyd_,       "--data-dir",
                                  n.data_dir,    "--port",
                                  std::to_string(n.port), "--cluster-port",
                                  std::to_string(n.cluster_port)};
    if (i > 0) {
      args.push_back("--join");
      args.push_back("127.0.0.1:" + std::to_string(opts_.base_port + 1000));
    }
    if (opts_.insecure_links) {
      args.push_back("--insecure-cluster-links");
    } else if (i > 0) {
      // Node 0 made the cluster's secret (tallyd's default); the others
      // prove they know it.
      args.push_back("--cluster-secret-file");
      args.push_back(opts_.data_dir + "/node0/cluster/secret");
    }
    if (opts_.partitions) {
      args.push_back("--partitions");
      args.push_back(*opts_.partitions);
    }
    if (opts_.n_val && i == 0) {
      args.push_back("--n-val");
      args.push_back(*opts_.n_val);
    }
    if (opts_.durability) {
      args.push_back("--durability");
      args.push_back(*opts_.durability);
    }
    std::string command;
    for (const auto& a : args)
      command += (command.empty() ? "" : " ") + a;
    std::cerr << "tally: starting node" << i << ": " << command << '\n';

    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      std::cerr << "tally: pipe: " << std::strerror(errno) << '\n';
      stop_all();
      return exit_failed;
    }
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
      std::cerr << "tally: fork: " << std::strerror(errno) << '\n';
      ::close(fds[0]);
      ::close(fds[1]);
      stop_all();
      return exit_failed;
    }
    if (pid == 0) {
      // Its own process group: a Ctrl-C in the terminal reaches only this
      // tally, which stops the nodes in order. If this tally dies without
      // stopping them, the kernel sends them SIGTERM.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent)
        ::_exit(1);
      ::dup2(fds[1], STDOUT_FILENO);
      ::dup2(fds[1], STDERR_FILENO);
      ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
      ::execv(argv[0], argv.data());
      auto msg = std::string{"cannot run "} + argv[0] + ": "
                 + std::strerror(errno) + "\n";
      auto rc = ::write(STDERR_FILENO, msg.data(), msg.size());
      (void)rc;
      ::_exit(127);
    }
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    n.pid = pid;
    n.out_fd = fds[0];
    nodes_.push_back(std::move(n));

    auto deadline = std::chrono::steady_clock::now()
                    + std::chrono::seconds{opts_.ready_timeout_s};
    for (;;) {
      auto& me = nodes_.back();
      if (me.ready)
        return exit_ok;
      if (stop_requested_)
        return exit_ok; // run() stops them
      for (auto& other : nodes_)
        if (other.exited) {
          drain(other);
          std::cerr << "tally: node" << other.index << " (pid " << other.pid
                    << ") " << describe_exit(other.status)
                    << (other.index == i ? " before it was ready"
                                         : " while node" + std::to_string(i)
                                             + " was starting")
                    << " (its output is above); stopping the cluster\n";
          other.reported = true;
          stop_all();
          return exit_failed;
        }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
      if (left <= 0) {
        std::cerr << "tally: node" << i << " (pid " << me.pid
                  << ") did not log 'tallyd ready on port' within "
                  << opts_.ready_timeout_s
                  << " s (--ready-timeout); stopping the cluster\n";
        stop_all();
        return exit_failed;
      }
      pump(static_cast<int>(std::min<long long>(left, 1000)));
    }
  }

  void print_summary() {
    std::ostringstream out;
    out << "local Tally cluster: " << nodes_.size()
        << (nodes_.size() == 1 ? " node" : " nodes")
        << " on 127.0.0.1, data in " << opts_.data_dir << "\n";
    for (const auto& n : nodes_)
      out << "  node" << n.index << "  client port " << n.port
          << "  node id tally@127.0.0.1:" << n.cluster_port << "  data "
          << n.data_dir << "  pid " << n.pid << '\n';
    out << "try:  tally --port " << opts_.base_port
        << " inc shop visits 5\n"
           "      tally --port "
        << opts_.base_port << " cluster status\n"
        << "stop: Ctrl-C here, or kill -TERM " << ::getpid()
        << " (stops every node)\n";
    std::cout << out.str() << std::flush;
  }

  /// Waits up to `timeout_ms` (-1: no limit) for a signal or node output,
  /// and handles what came.
  void pump(int timeout_ms) {
    std::vector<pollfd> fds;
    fds.push_back({sig_fd_, POLLIN, 0});
    std::vector<local_node*> owners;
    for (auto& n : nodes_)
      if (n.out_fd >= 0) {
        fds.push_back({n.out_fd, POLLIN, 0});
        owners.push_back(&n);
      }
    auto rc = ::poll(fds.data(), fds.size(), timeout_ms);
    if (rc < 0 && errno != EINTR) {
      std::cerr << "tally: poll: " << std::strerror(errno) << '\n';
      stop_requested_ = true;
      return;
    }
    for (std::size_t k = 1; k < fds.size(); ++k)
      if (fds[k].revents != 0)
        read_output(*owners[k - 1]);
    if (fds[0].revents != 0) {
      signalfd_siginfo info{};
      while (::read(sig_fd_, &info, sizeof(info))
             == static_cast<ssize_t>(sizeof(info))) {
        if (info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM) {
          if (stop_requested_)
            kill_now_ = true;
          stop_requested_ = true;
        }
      }
    }
    reap();
  }

  void reap() {
    for (auto& n : nodes_) {
      if (n.exited)
        continue;
      int status = 0;
      if (::waitpid(n.pid, &status, WNOHANG) == n.pid) {
        n.exited = true;
        n.status = status;
      }
    }
  }

  /// Copies whatever the node wrote to our stderr, line by line.
  void read_output(local_node& n) {
    char buf[4096];
    for (;;) {
      auto got = ::read(n.out_fd, buf, sizeof(buf));
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0) // EAGAIN: nothing more for now
        return;
      if (got == 0) { // the node closed its output (it exited)
        if (!n.partial.empty())
          forward_line(n, n.partial);
        n.partial.clear();
        ::close(n.out_fd);
        n.out_fd = -1;
        return;
      }
      n.partial.append(buf, static_cast<std::size_t>(got));
      std::size_t start = 0;
      for (auto nl = n.partial.find('\n'); nl != std::string::npos;
           nl = n.partial.find('\n', start)) {
        forward_line(n, n.partial.substr(start, nl - start));
        start = nl + 1;
      }
      n.partial.erase(0, start);
    }
  }

  void forward_line(local_node& n, const std::string& line) {
    write_stderr("[node" + std::to_string(n.index) + "] " + line + "\n");
    if (line.find("tallyd ready on port") != std::string::npos)
      n.ready = true;
  }

  /// The rest of an exited node's output (its last words).
  void drain(local_node& n) {
    while (n.out_fd >= 0) {
      pollfd p{n.out_fd, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) // a grandchild may hold the pipe open
        break;
      read_output(n);
    }
  }

  void report_exits() {
    for (auto& n : nodes_)
      if (n.exited && !n.reported) {
        drain(n);
        n.reported = true;
        int alive = 0;
        for (const auto& m : nodes_)
          alive += m.exited ? 0 : 1;
        std::cerr << "tally: node" << n.index << " (pid " << n.pid
                  << ", client port " << n.port << ") "
                  << describe_exit(n.status) << "; " << alive
                  << (alive == 1 ? " node keeps" : " nodes keep")
                  << " running\n";
      }
  }

  /// SIGTERM to every live node, up to 10 s for them to exit, then SIGKILL.
  int stop_all() {
    int alive = 0;
    for (auto& n : nodes_)
      if (!n.exited) {
        ::kill(n.pid, SIGTERM);
        ++alive;
      }
    if (alive > 0)
      std::cerr << "tally: stopping " << alive
                << (alive == 1 ? " node" : " nodes")
                << " (SIGTERM; Ctrl-C again to kill at once)\n";
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    for (;;) {
      bool all_gone = true;
      for (const auto& n : nodes_)
        all_gone = all_gone && n.exited;
      if (all_gone)
        break;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
      if (left <= 0 || kill_now_) {
        for (auto& n : nodes_)
          if (!n.exited) {
            std::cerr << "tally: node" << n.index << " (pid " << n.pid
                      << ") did not stop" << (kill_now_ ? "" : " within 10 s")
                      << "; killing it\n";
            ::kill(n.pid, SIGKILL);
            ::waitpid(n.pid, &n.status, 0);
            n.exited = true;
          }
        break;
      }
      pump(static_cast<int>(std::min<long long>(left, 200)));
    }
    for (auto& n : nodes_) {
      drain(n);
      if (n.out_fd >= 0) {
        ::close(n.out_fd);
        n.out_fd = -1;
      }
    }
    if (alive > 0)
      std::cerr << "tally: the cluster is stopped\n";
    return exit_ok;
  }

  local_options opts_;
  std::string tallyd_;
  std::vector<local_node> nodes_;
  int sig_fd_ = -1;
  sigset_t old_mask_{};
  bool stop_requested_ = false;
  bool kill_now_ = false;
};

int run_cluster_local(const local_options& opts) {
  std::string looked_in;
  auto tallyd = find_tallyd(looked_in);
  if (!tallyd) {
    std::cerr << "tally: cluster local: cannot find tallyd: it is neither "
                 "next to this tally ("
              << (looked_in.empty() ? "unknown directory" : looked_in)
              << ") nor on PATH; build it (cmake --build build --target "
                 "tallyd) or add its directory to PATH\n";
    return exit_usage;
  }
  local_cluster cluster{opts, *tallyd};
  return cluster.run();
}

/// 'tally cluster ...': returns the exit code.
int run_cluster(const client_options& opts,
                const std::vector<std::string>& rest) {
  if (rest.empty())
    bad_usage("cluster needs a subcommand (status, leave, remove or local)",
              cluster_usage);
  const auto& sub = rest.front();
  std::vector<std::string> args(rest.begin() + 1, rest.end());
  if (is_help(sub) || sub == "help") {
    std::cout << cluster_usage;
    return exit_ok;
  }
  const char* usage = sub == "status"  ? cluster_status_usage
                      : sub == "leave" ? cluster_leave_usage
                      : sub == "remove" ? cluster_remove_usage
                      : sub == "local" ? cluster_local_usage
                                       : nullptr;
  if (usage == nullptr)
    bad_usage("cluster: unknown subcommand '" + sub
                + "' (expected status, leave, remove or local)",
              cluster_usage);
  for (const auto& a : args)
    if (is_help(a)) {
      std::cout << usage;
      return exit_ok;
    }
  if (sub == "local")
    return run_cluster_local(parse_local(args));
  if (sub == "status" && !args.empty())
    bad_usage("cluster status takes no arguments", cluster_status_usage);
  if (sub == "leave") {
    if (args.size() > 1)
      bad_usage("cluster leave takes at most one NODE-ID",
                cluster_leave_usage);
    if (!args.empty() && args.front().rfind("-", 0) == 0)
      bad_usage("cluster leave: unknown option '" + args.front() + "'",
                cluster_leave_usage);
    if (auto st = check_admin_req(admin_req{"leave", args}); !st)
      bad_usage("cluster leave: NODE-ID: " + st.err().message(),
                cluster_leave_usage);
  }
  if (sub == "remove") {
    // NODE-ID and --force in any order; sent as {NODE-ID[, "--force"]}.
    bool force = false;
    std::vector<std::string> ids;
    for (const auto& a : args) {
      if (a == "--force")
        force = true;
      else if (a.rfind("-", 0) == 0)
        bad_usage("cluster remove: unknown option '" + a + "'", cluster_remove_usage);
      else
        ids.push_back(a);
    }
    if (ids.size() != 1)
      bad_usage("cluster remove takes exactly one NODE-ID", cluster_remove_usage);
    args = ids;
    if (force)
      args.push_back("--force");
    if (auto st = check_admin_req(admin_req{"remove", args}); !st)
      bad_usage("cluster remove: NODE-ID: " + st.err().message(), cluster_remove_usage);
  }
  auto c = client::connect(opts);
  if (!c)
    return report(c.err());
  return run_cluster_admin(*c, sub, args);
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
    } else if (flag_is("--admin-socket")) {
      opts.admin_socket = value_of("--admin-socket");
      if (opts.admin_socket.empty())
        bad_usage("--admin-socket must not be empty", main_usage);
    } else if (flag_is("--tls-ca") || flag_is("--tls-cert") || flag_is("--tls-key")
               || flag_is("--tls-server-name")) {
      auto flag = args[i].substr(0, args[i].find('='));
      auto value = value_of(flag);
      if (value.empty())
        bad_usage(flag + " must not be empty", main_usage);
      (flag == "--tls-ca"     ? opts.tls_ca
       : flag == "--tls-cert" ? opts.tls_cert
       : flag == "--tls-key"  ? opts.tls_key
                              : opts.tls_server_name) = value;
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
                      : command == "set"    ? set_usage
                      : command == "reg"    ? reg_usage
                      : command == "flag"   ? flag_usage
                      : command == "map"    ? map_usage
                      : command == "bcounter" ? bcounter_usage
                                            : nullptr;
  if (command == "help") {
    std::cout << main_usage;
    return exit_ok;
  }
  if (command == "cluster")
    return run_cluster(opts, rest);
  if (command == "inspect")
    return run_inspect(rest);
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
  std::optional<typed_args> typed;
  std::optional<map_args> map;
  if (command == "set" || command == "reg" || command == "flag" || command == "bcounter")
    typed = parse_typed(command, rest);
  else if (command == "map")
    map = parse_map(rest);
  else if (command == "inc")
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
  if (typed)
    return run_typed(*c, *typed);
  if (map)
    return run_map(*c, *map);
  if (command == "read")
    return run_read(*c, objects);
  if (command == "txn")
    return run_txn(*c, ops);
  return run_status(*c, opts);
}
