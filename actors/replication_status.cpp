#include "actors/replication_status.hpp"

#include <cstdlib>
#include <optional>
#include <sstream>

#include <caf/all.hpp>

#include "actors/atoms.hpp"

namespace tally {

std::string format_replication_table(const std::vector<route>& table,
                                     const std::vector<std::optional<copy_status>>& answers) {
  std::ostringstream os;
  os << "partition | primary | term | journal end | other copies: lag in records\n";
  for (std::size_t p = 0; p < table.size(); ++p) {
    const auto& r = table[p];
    os << p << " | ";
    if (!r.handle) {
      os << "none | - | - | " << (r.why.empty() ? "unavailable" : r.why) << "\n";
      continue;
    }
    os << r.node << " | ";
    const auto& a = p < answers.size() ? answers[p] : std::nullopt;
    if (!a) {
      os << "? | ? | no answer from the primary\n";
      continue;
    }
    if (a->role != "primary") {
      os << "- | " << a->end << " | this copy is " << a->role << " (taking over)\n";
      continue;
    }
    os << a->term << " | " << a->end << " | ";
    for (std::size_t i = 0; i < a->peers.size(); ++i) {
      if (i != 0)
        os << ", ";
      os << a->peers[i] << " ";
      const auto& st = i < a->states.size() ? a->states[i] : std::string{"?"};
      if (st == "ok" && i < a->ends.size())
        os << "lag " << (a->end > a->ends[i] ? a->end - a->ends[i] : 0);
      else
        os << st;
    }
    if (a->peers.empty())
      os << "-";
    os << "\n";
  }
  return os.str();
}

void gather_replication_status(caf::event_based_actor* self,
                               std::shared_ptr<const std::vector<route>> table,
                               std::chrono::milliseconds timeout,
                               std::function<void(std::string)> done) {
  struct gathering {
    std::shared_ptr<const std::vector<route>> table;
    std::vector<std::optional<copy_status>> answers;
    std::size_t left = 0;
    std::function<void(std::string)> done;
  };
  auto g = std::make_shared<gathering>();
  g->table = std::move(table);
  g->answers.resize(g->table->size());
  g->done = std::move(done);
  for (const auto& r : *g->table)
    g->left += r.handle ? 1 : 0;
  auto finish = [g] {
    if (--g->left == 0)
      g->done(format_replication_table(*g->table, g->answers));
  };
  if (g->left == 0) {
    g->done(format_replication_table(*g->table, g->answers));
    return;
  }
  for (std::size_t p = 0; p < g->table->size(); ++p) {
    const auto& r = (*g->table)[p];
    if (!r.handle)
      continue;
    self->request(r.handle, timeout, r_status_atom::value)
      .then(
        // The ends as decimal text: CAF 0.17 carries std::vector<std::string>
        // between nodes, not std::vector<std::uint64_t>.
        [g, p, finish](std::string& role, std::uint64_t end, std::uint64_t term,
                       std::vector<std::string>& peers, std::vector<std::string>& ends,
                       std::vector<std::string>& states) {
          copy_status s{std::move(role), end, term, std::move(peers), {}, std::move(states)};
          for (const auto& e : ends)
            s.ends.push_back(std::strtoull(e.c_str(), nullptr, 10));
          g->answers[p] = std::move(s);
          finish();
        },
        [finish](caf::error&) { finish(); });
  }
}

} // namespace tally
