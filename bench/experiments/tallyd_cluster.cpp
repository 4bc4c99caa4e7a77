#include "bench/experiments/tallyd_cluster.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "client/client.hpp"
#include "ring/partition.hpp"

extern char** environ;

namespace tally::experiments {

namespace {

using steady = std::chrono::steady_clock;

bool port_is_free(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A free port below the kernel's ephemeral range (32768 up by default), so
// that no outgoing connection's source port takes it between this choice and
// tallyd's listen (the same rule as tests/support/tallyd_process.hpp).
std::uint16_t free_port(std::mt19937& pick, const std::vector<std::uint16_t>& taken) {
  for (;;) {
    const auto port =
        static_cast<std::uint16_t>(std::uniform_int_distribution<int>{20000, 32000}(pick));
    bool used = false;
    for (auto t : taken)
      used = used || t == port;
    if (!used && port_is_free(port))
      return port;
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A member row "id | status | up | owns | serves" or a primary row "id | n"
// of `cluster status`, split at " | ".
std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> f;
  for (std::size_t at = 0;;) {
    const auto bar = line.find(" | ", at);
    f.push_back(line.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
    if (bar == std::string::npos)
      return f;
    at = bar + 3;
  }
}

// One node's `cluster status` says the ring has settled: `members` rows, each
// up and serving what it owns, no handoff, every copy set led and n_val
// current copies of every partition (docs/CLUSTER.md and docs/REPLICATION.md
// describe the text). A copy opened empty after a join is not current until
// it has caught up: killing the node with the only current copy before then
// leaves that partition unserved until the node is back.
bool settled(const std::string& text, std::size_t members) {
  std::istringstream in{text};
  std::size_t rows = 0, led = 0;
  bool replicated = false, all_copies = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("handoff in progress", 0) == 0 || line.rfind("no reachable copy", 0) == 0)
      return false;
    if (line.rfind("replication:", 0) == 0)
      replicated = true;
    if (line.rfind("copies: every partition has", 0) == 0)
      all_copies = true;
    if (line.rfind("tally@", 0) != 0)
      continue;
    const auto f = fields_of(line);
    if (f.size() == 5) {
      ++rows;
      if (f[2] != "up" || f[3] != f[4])
        return false;
    } else if (f.size() == 2) {
      led += std::strtoul(f[1].c_str(), nullptr, 10);
    }
  }
  return rows == members && (!replicated || (led > 0 && all_copies));
}

} // namespace

std::string tallyd_next_to_this_binary() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return {};
  const auto candidate = self.parent_path() / "tallyd";
  return ::access(candidate.c_str(), X_OK) == 0 ? candidate.string() : std::string{};
}

std::vector<object_key> one_key_per_partition(const std::string& bucket,
                                              const std::string& prefix,
                                              std::uint32_t partitions) {
  std::vector<object_key> out(partitions);
  std::vector<bool> found(partitions, false);
  std::uint32_t left = partitions;
  for (std::uint64_t i = 0; left > 0; ++i) {
    std::string key = prefix + std::to_string(i);
    auto p = partition_for(bucket, key, partitions);
    if (p && !found[*p]) {
      found[*p] = true;
      out[*p] = object_key{bucket, std::move(key)};
      --left;
    }
  }
  return out;
}

expected<tallyd_cluster> tallyd_cluster::start(const cluster_spec& spec) {
  if (spec.tallyd.empty() || ::access(spec.tallyd.c_str(), X_OK) != 0)
    return make_error(errc::not_found,
                      "no tallyd binary at '" + spec.tallyd
                          + "': build the tallyd target, or name it with --tallyd PATH.");
  if (spec.nodes < 1)
    return make_error(errc::invalid_argument, "a cluster needs at least one node.");
  tallyd_cluster c;
  c.spec_ = spec;
  std::error_code ec;
  std::filesystem::remove_all(spec.root, ec);
  std::filesystem::create_directories(spec.root, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create '" + spec.root + "': " + ec.message());
  c.owns_root_ = true;
  std::mt19937 pick{std::random_device{}()};
  std::vector<std::uint16_t> taken;
  for (std::uint32_t i = 0; i < spec.nodes; ++i) {
    node n;
    n.dir = spec.root + "/node" + std::to_string(i);
    n.log = spec.root + "/node" + std::to_string(i) + ".log";
    n.port = free_port(pick, taken);
    taken.push_back(n.port);
    n.cluster_port = free_port(pick, taken);
    taken.push_back(n.cluster_port);
    c.nodes_.push_back(std::move(n));
  }
  const auto deadline = steady::now() + spec.start_limit;
  for (std::size_t i = 0; i < c.nodes_.size(); ++i) {
    // A joiner that gives up at once (its join timed out on a loaded
    // machine: "cannot join through ...") is started afresh, 3 times at most.
    for (int attempt = 1;; ++attempt) {
      if (auto st = c.spawn(i); !st)
        return st.err();
      auto st = c.wait_accepting(i, deadline);
      if (st)
        break;
      if (i == 0 || attempt == 3 || c.nodes_[i].pid > 0 || steady::now() > deadline)
        return st.err();
      std::filesystem::remove_all(c.nodes_[i].dir, ec);
    }
  }
  if (auto st = c.wait_settled(deadline); !st)
    return st.err();
  if (auto st = c.wait_writable(deadline); !st)
    return st.err();
  return expected<tallyd_cluster>{std::move(c)};
}

tallyd_cluster::tallyd_cluster(tallyd_cluster&& other) noexcept
    : spec_(std::move(other.spec_)), nodes_(std::move(other.nodes_)),
      owns_root_(other.owns_root_) {
  other.nodes_.clear();
  other.owns_root_ = false;
}

tallyd_cluster::~tallyd_cluster() {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    kill(i);
  if (owns_root_) {
    std::error_code ec;
    std::filesystem::remove_all(spec_.root, ec);
  }
}

void tallyd_cluster::kill(std::size_t i) {
  node& n = nodes_.at(i);
  if (n.pid <= 0)
    return;
  ::kill(n.pid, SIGKILL);
  ::waitpid(n.pid, nullptr, 0);
  n.pid = -1;
}

std::string tallyd_cluster::log_tail(std::size_t i, std::size_t bytes) const {
  const std::string text = slurp(nodes_.at(i).log);
  return text.size() <= bytes ? text : text.substr(text.size() - bytes);
}

status tallyd_cluster::restart(std::size_t i, std::chrono::milliseconds limit) {
  if (nodes_.at(i).pid > 0)
    return make_error(errc::invalid_argument, "node " + std::to_string(i) + " is running");
  if (auto st = spawn(i, false); !st)
    return st;
  return wait_accepting(i, steady::now() + limit);
}

status tallyd_cluster::settle(std::chrono::milliseconds limit) {
  return wait_settled(steady::now() + limit);
}

std::string tallyd_cluster::status_text(std::size_t i) const {
  client_options o;
  o.admin_socket = nodes_.at(i).dir + "/admin.sock";
  auto c = client::connect(o);
  auto text = c ? c->admin("status", {}) : expected<std::string>{c.err()};
  return text ? *text : text.err().to_string();
}

status tallyd_cluster::spawn(std::size_t i, bool first) {
  node& n = nodes_[i];
  std::vector<std::string> args{spec_.tallyd,
                                "--data-dir", n.dir,
                                "--port", std::to_string(n.port),
                                "--partitions", std::to_string(spec_.partitions),
                                "--n-val", std::to_string(spec_.n_val),
                                "--durability", spec_.durability,
                                "--log-level", "warn"};
  // A data dir keeps its node id and cluster port: a restart names neither.
  if (first) {
    args.push_back("--cluster-port");
    args.push_back(std::to_string(n.cluster_port));
  }
  if (i > 0 && first) {
    args.push_back("--join");
    args.push_back("127.0.0.1:" + std::to_string(nodes_[0].cluster_port));
  }
  if (spec_.insecure_links) {
    args.push_back("--insecure-cluster-links");
  } else if (i > 0) { // node 0 made the secret at its start (docs/SECURITY.md)
    args.push_back("--cluster-secret-file");
    args.push_back(nodes_[0].dir + "/cluster/secret");
  }
  args.insert(args.end(), spec_.extra.begin(), spec_.extra.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, n.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, n.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int rc = posix_spawn(&n.pid, spec_.tallyd.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    n.pid = -1;
    return make_error(errc::unavailable, "cannot start '" + spec_.tallyd + "' (posix_spawn error "
                                             + std::to_string(rc) + ").");
  }
  return {};
}

status tallyd_cluster::wait_accepting(std::size_t i, steady::time_point deadline) {
  node& n = nodes_[i];
  for (;;) {
    if (connection::open("127.0.0.1", n.port, std::chrono::milliseconds{200}))
      return {};
    int wstatus = 0;
    if (::waitpid(n.pid, &wstatus, WNOHANG) == n.pid) {
      n.pid = -1;
      return make_error(errc::unavailable, "node " + std::to_string(i)
                                               + " exited during start-up; its log ends:\n"
                                               + log_tail(i));
    }
    if (steady::now() > deadline)
      return make_error(errc::unavailable, "node " + std::to_string(i)
                                               + " does not accept connections; its log ends:\n"
                                               + log_tail(i));
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
}

status tallyd_cluster::wait_settled(steady::time_point deadline) {
  std::string last;
  for (;;) {
    bool all = true;
    for (std::size_t i = 0; i < nodes_.size() && all; ++i) {
      client_options o;
      o.admin_socket = nodes_[i].dir + "/admin.sock";
      auto c = client::connect(o);
      auto text = c ? c->admin("status", {}) : expected<std::string>{c.err()};
      last = text ? *text : text.err().to_string();
      all = text && settled(*text, nodes_.size());
    }
    if (all)
      return {};
    if (steady::now() > deadline)
      return make_error(errc::unavailable,
                        "the cluster did not settle in time; last status:\n" + last);
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
}

status tallyd_cluster::wait_writable(steady::time_point deadline) {
  std::vector<counter_inc> probe;
  for (auto& k : one_key_per_partition("tallyd-cluster-probe", "k", spec_.partitions))
    probe.push_back(counter_inc{std::move(k), 1});
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    std::string why;
    for (;;) {
      client_options o;
      o.port = nodes_[i].port;
      auto c = client::connect(o);
      auto r = c ? c->update(probe) : expected<std::string>{c.err()};
      if (r)
        break;
      why = r.err().to_string();
      if (steady::now() > deadline)
        return make_error(errc::unavailable, "no write to every partition through node "
                                                 + std::to_string(i) + ": " + why);
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
  }
  return {};
}

} // namespace tally::experiments
