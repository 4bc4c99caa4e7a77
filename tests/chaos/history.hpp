// The chaos suite's history and checkers (issue 13; DESIGN.md, "Testing, as
// the best systems do it"): what every session invoked and what came back,
// and the invariants a correct node keeps under faults, as plain C++ with no
// process or socket handling, so each checker is unit-tested against
// hand-made bad histories (checkers_test.cpp) before it judges a real run
// (chaos_test.cpp).
//
// Operations (counters only ever grow: every delta is positive):
//   inc   key += delta, with an op id; retried with the same id after a
//         lost reply;
//   pair  x += delta and y += delta in one transaction (two partitions);
//   read  a static read of several keys at one snapshot.
// Outcomes: ok (acknowledged), failed (the node said it was not applied:
// a refusal before anything was staged), unknown (no answer: the node died
// or the connection broke; it may or may not have been applied).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tally::chaos {

enum class outcome { ok, failed, unknown };
/// inc: one counter; pair: x += d and y += d in one static transaction;
/// pair_interactive: the same through start, update and commit; read: a
/// snapshot of every key. Checkers treat every kind but read as updates of
/// its keys by its delta.
enum class op_kind { inc, pair, pair_interactive, read };

struct op_record {
  int session = 0;        // a connection's life: a reconnect is a new one
  op_kind kind = op_kind::inc;
  std::vector<std::string> keys;     // inc: 1, pair: 2, read: any
  std::int64_t delta = 0;            // inc and pair
  std::vector<std::int64_t> values;  // read: one per key, when ok
  outcome result = outcome::unknown;
  std::uint64_t invoke_ns = 0;       // steady clock
  std::uint64_t complete_ns = 0;
};

using history = std::vector<op_record>;

/// One request as sent to a node (every retry of an operation is one),
/// for availability: an operation's outcome says whether it was finally
/// applied, its attempts say how often a node failed to serve it.
struct attempt_record {
  int node = 0;
  std::uint64_t invoke_ns = 0;
  std::uint64_t complete_ns = 0;
  bool ok = false; // answered with success (a failure: an error or no answer)
  std::string why;  // a failure: the error answered, or what the client saw
};

/// A fault the nemesis injected, from its start to the moment it was
/// undone (a killed node restarted and accepting clients, a paused one
/// continued, a cut one healed).
struct fault_record {
  std::string kind;       // "kill", "pause", "partition", ...
  std::vector<int> nodes; // the nodes it hit
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

struct violation {
  std::string checker;
  std::string detail;
  const op_record* op = nullptr; // the read that showed it, if one did (in the history checked)
};

/// Counter bounds and exactly-once: for every key, the sum of acknowledged
/// deltas <= the final value <= the sum of acknowledged and unknown deltas.
/// A retry carries its original's op id and is recorded once, so a retry
/// applied twice shows as a final value above the bound.
inline std::vector<violation>
check_counter_bounds(const history& h, const std::map<std::string, std::int64_t>& final_values) {
  std::map<std::string, std::int64_t> low, high;
  for (const auto& op : h) {
    if (op.kind == op_kind::read || op.result == outcome::failed)
      continue;
    for (const auto& k : op.keys) {
      high[k] += op.delta;
      if (op.result == outcome::ok)
        low[k] += op.delta;
    }
  }
  std::vector<violation> out;
  for (const auto& [k, v] : final_values) {
    auto lo = low[k], hi = high[k];
    if (v < lo || v > hi) {
      std::ostringstream os;
      os << "key " << k << ": final value " << v << " outside [acknowledged " << lo
         << ", attempted " << hi << "]";
      out.push_back({"counter-bounds", os.str()});
    }
  }
  return out;
}

/// Pair atomicity: the two keys of a pair only ever change together, so
/// every snapshot read of both shows them equal. `pairs` lists (x, y).
inline std::vector<violation>
check_pair_atomicity(const history& h,
                     const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<violation> out;
  for (const auto& op : h) {
    if (op.kind != op_kind::read || op.result != outcome::ok)
      continue;
    std::map<std::string, std::int64_t> seen;
    for (std::size_t i = 0; i < op.keys.size() && i < op.values.size(); ++i)
      seen[op.keys[i]] = op.values[i];
    for (const auto& [x, y] : pairs) {
      auto a = seen.find(x), b = seen.find(y);
      if (a != seen.end() && b != seen.end() && a->second != b->second) {
        std::ostringstream os;
        os << "session " << op.session << " read " << x << " = " << a->second << " but "
           << y << " = " << b->second << " in one snapshot";
        out.push_back({"pair-atomicity", os.str(), &op});
      }
    }
  }
  return out;
}

/// Session guarantees, per session (in invocation order):
///   monotonic reads: a key never reads lower than the same session read
///   before (counters only grow);
///   read your writes: a read invoked after the session's acknowledged
///   updates of a key sees at least their sum.
inline std::vector<violation> check_sessions(const history& h) {
  std::map<int, std::vector<const op_record*>> by_session;
  for (const auto& op : h)
    by_session[op.session].push_back(&op);
  std::vector<violation> out;
  for (auto& [s, ops] : by_session) {
    std::map<std::string, std::int64_t> last_read, own_acked;
    for (const auto* op : ops) {
      if (op->kind != op_kind::read) {
        if (op->result == outcome::ok)
          for (const auto& k : op->keys)
            own_acked[k] += op->delta;
        continue;
      }
      if (op->result != outcome::ok)
        continue;
      for (std::size_t i = 0; i < op->keys.size() && i < op->values.size(); ++i) {
        const auto& k = op->keys[i];
        auto v = op->values[i];
        if (auto l = last_read.find(k); l != last_read.end() && v < l->second) {
          std::ostringstream os;
          os << "session " << s << " read " << k << " = " << v << " after reading "
             << l->second;
          out.push_back({"monotonic-reads", os.str(), op});
        }
        if (auto a = own_acked.find(k); a != own_acked.end() && v < a->second) {
          std::ostringstream os;
          os << "session " << s << " read " << k << " = " << v
             << " after its own acknowledged updates summing to " << a->second;
          out.push_back({"read-your-writes", os.str(), op});
        }
        last_read[k] = std::max(last_read[k], v);
      }
    }
  }
  return out;
}

/// Convergence: once every fault is healed and the nodes have caught up,
/// every node reads every key at the same value. `by_node` maps a node to
/// the values it read (its final snapshot).
inline std::vector<violation>
check_convergence(const std::map<int, std::map<std::string, std::int64_t>>& by_node) {
  std::vector<violation> out;
  if (by_node.empty())
    return out;
  const auto& [first_node, first] = *by_node.begin();
  for (const auto& [n, values] : by_node)
    for (const auto& [k, v] : values) {
      auto it = first.find(k);
      if (it == first.end() || it->second != v) {
        std::ostringstream os;
        os << "key " << k << ": node " << n << " reads " << v << ", node " << first_node
           << " reads " << (it == first.end() ? std::string("nothing") : std::to_string(it->second));
        out.push_back({"convergence", os.str()});
      }
    }
  return out;
}

/// Availability under faults (issue 14: "after the first 2 s of a
/// single-node fault, fewer than 1% of requests fail"). Every attempt is
/// classed by its invocation time:
///   outside    no fault under way, none ended in the last `recovery_ns`;
///   recovery   no fault under way, one ended less than `recovery_ns` ago
///              (a restarted node catching up, links coming back);
///   early      the first `grace_ns` of a single-node fault, to another node;
///   during     the rest of a single-node fault, to another node (the bar);
///   faulted    to the faulted node itself, while its fault lasts (it is
///              dead, paused or cut off: expected to fail);
///   multi      two faults at once, or one hitting several nodes.
struct availability_counts {
  std::size_t total = 0, failed = 0;
  double failed_share() const { return total == 0 ? 0.0 : double(failed) / double(total); }
};
struct availability {
  availability_counts outside, recovery, early, during, faulted, multi;
};

inline availability measure_availability(const std::vector<attempt_record>& attempts,
                                         const std::vector<fault_record>& faults,
                                         std::uint64_t grace_ns, std::uint64_t recovery_ns) {
  availability a;
  for (const auto& at : attempts) {
    const fault_record* active = nullptr;
    int n_active = 0;
    bool recovering = false;
    for (const auto& f : faults) {
      if (f.start_ns <= at.invoke_ns && at.invoke_ns < f.end_ns) {
        active = &f;
        ++n_active;
      }
      recovering = recovering || (f.end_ns <= at.invoke_ns && at.invoke_ns < f.end_ns + recovery_ns);
    }
    availability_counts* into = recovering ? &a.recovery : &a.outside;
    if (n_active > 1 || (active && active->nodes.size() != 1))
      into = &a.multi;
    else if (active && active->nodes[0] == at.node)
      into = &a.faulted;
    else if (active && at.invoke_ns < active->start_ns + grace_ns)
      into = &a.early;
    else if (active)
      into = &a.during;
    ++into->total;
    into->failed += !at.ok;
  }
  return a;
}

} // namespace tally::chaos
