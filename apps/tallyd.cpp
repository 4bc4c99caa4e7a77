// tallyd: one Tally node (docs/NODE.md). Serves AntidoteDB's client protocol
// on --bind:--port (and inside TLS on --client-tls-port; docs/SECURITY.md,
// "The client port") from the partitions under --data-dir until SIGTERM or
// SIGINT, then flushes and exits 0. Exit codes: 0 clean shutdown, 1 start
// failure (unusable data dir, port in use, recovery error, a partition's
// data missing or damaged), 2 bad flag, 3 damaged storage found while
// running (an LMDB assertion on a damaged page, or SIGBUS on a data file cut
// short; journal/storage_faults.hpp).
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "common/log.hpp"
#include "actors/node.hpp"
#include "journal/storage_faults.hpp"

namespace {

using namespace tally;

constexpr const char* usage = R"(usage: tallyd [options]
  --data-dir DIR          where partitions are stored (default ./data)
  --port N                client port (default 8087; 0 picks a free one)
  --bind ADDR             client address (default 127.0.0.1)
  --client-tls-port N     also serve clients over TLS on --bind:N (0 picks a
                          free one), beside the plain port; needs:
  --client-tls-cert FILE, --client-tls-key FILE
                          the PEM certificate (chain) this node presents to
                          clients and its private key
  --client-tls-ca FILE    require client certificates signed by this PEM CA
                          on the TLS port (default: any TLS client)
  --no-plain-port         serve clients on the TLS port only (--port is
                          then not listened on; docs/SECURITY.md, "The
                          client port")
  --cluster-secret-file FILE
                          the cluster's shared secret (at least 32 bytes,
                          mode 0600; openssl rand -hex 32 > FILE): node
                          links run in TLS with certificates made from it,
                          and a node without it cannot join or connect.
                          Default: DATA-DIR/cluster/secret, made at the
                          first start of a node that does not --join
                          (docs/SECURITY.md, "Node links")
  --tls-cert FILE, --tls-key FILE, --tls-ca FILE
                          instead of the secret: this node's PEM
                          certificate and key, and the cluster CA that
                          signed every member's certificate (all three)
  --insecure-cluster-links
                          plain, unauthenticated node links (CAF's BASP:
                          any process reaching the cluster port can join
                          or crash the node); warns at start
  --refused-link-log-ms MS
                          a node link refused for want of the secret or a
                          certificate is logged with the peer's address,
                          at most once per address every MS (default
                          10000; the others are counted in the next line)
  --admin-socket PATH     Unix socket (mode 0600) where admin commands
                          (cluster status, leave, remove) are accepted;
                          they are refused on the client port (default
                          DATA-DIR/admin.sock; none: nowhere)
  --cluster-port N        node-to-node port (default: the one this data dir
                          used before, else client port + 1000 if free,
                          else any free port)
  --cluster-bind ADDR     address of the cluster port (default: --bind);
                          0.0.0.0 needs --advertise
  --advertise HOST:PORT   where other nodes reach this node's cluster port
                          (default: cluster bind address and cluster
                          port); it is the node's id, fixed at the first
                          start: give the same at every start. The port
                          listened on is --cluster-port if given, else PORT
  --join HOST:PORT        join a running cluster through any member's
                          cluster port (first start of an empty data dir)
  --partitions Q          ring size, a power of two (default 64); every
                          member of a cluster has the same
  --n-val N               copies of each partition (1-16, default 1) for a
                          cluster this node founds; nodes that join take
                          the cluster's. N > 1: each write is acknowledged
                          once a majority of the copies have it, and a dead
                          node's partitions fail over (docs/REPLICATION.md)
  --peer-timeout-ms MS    a peer that sends no heartbeat (every 250 ms) for
                          this long is down: its partitions fail over
                          (default 1000; at least 500)
  --stale-keep-hours H    n_val > 1: how long a copy set aside in
                          DATA-DIR/stale/ (stale, or a retired copy not
                          proven to be held by the primary) is kept for
                          the operator before it is deleted (default 168;
                          0 = for ever)
  --durability MODE       full | batch | periodic[:MS] | none (default
                          batch). full: a sync per commit; batch: a commit
                          is acknowledged after the group sync covering it;
                          periodic: acknowledged at once, journals synced
                          every MS (default 1000; Redis's appendfsync
                          everysec); none: never synced
  --max-frame-size BYTES  largest client frame, code byte and body (default
                          268435456; AntidoteDB clients send big batches)
  --max-transactions N    open interactive transactions (default 10000)
  --max-connections N     client connections (default 1024)
  --max-in-flight N       unanswered requests per connection before the
                          node stops reading it (default 1024)
  --max-pending-output BYTES
                          reply bytes a client has not read before the
                          node stops reading it (default 4194304)
  --max-shard-in-flight N requests one shard thread has taken and not yet
                          answered, all its connections together, before
                          it stops reading (default 65536)
  --io-threads N          shard threads: client I/O and, by default, the
                          partitions, dealt out among them (default: half
                          the cores, at least 1)
  --journal-tail on|off   journals append through a write-ahead tail file
                          and move records into LMDB in bulk (default on;
                          docs/STORAGE.md, "The write-ahead tail"); off: an
                          LMDB transaction per group commit
  --journal-tail-records N
                          records a partition's tail holds in memory before
                          they move into LMDB in one transaction: memory
                          against LMDB commits (default 256)
  --sync-threads N        threads that sync the journals of partitions on
                          shard threads (durability batch, periodic;
                          default 16)
  --max-request-memory BYTES
                          bytes of client requests the node holds at once,
                          all connections together: each frame is charged
                          its size from its length field until its reply
                          is produced; a frame that would go over gets an
                          error and its connection is closed (default
                          536870912; 0 = no budget; at least
                          --max-frame-size + 4). Old name:
                          --max-partial-request-bytes
  --idle-timeout-ms MS    close a connection idle this long (default
                          300000; 0 = never)
  --evict-idle-after-ms MS
                          at --max-connections, a connection idle this long
                          without an open transaction is closed to admit a
                          new one (default 2000; 0 = refuse new ones)
  --request-read-timeout-ms MS
                          close a connection stalled inside a request this
                          long (default 10000; 0 = never)
  --max-tx-updates N      updates one interactive transaction may buffer
                          (default 100000)
  --max-parked-reads N    reads one partition holds waiting for their
                          snapshot; one more gets an error (default 10000)
  --max-tx-per-connection N
                          interactive transactions one connection may hold
                          open (default 128); a closed connection's open
                          transactions are aborted
  --max-clock-skew-ms MS  refuse a client clock further ahead of this node's
                          clock (default 5000; 0 = no check)
  --map-size BYTES        each partition's LMDB map size (default 1073741824);
                          a full map fails writes with "storage full",
                          reads go on
  --tx-timeout-ms MS      idle interactive transactions abort (default 30000)
  --request-timeout-ms MS how long a coordinator waits for a partition, local
                          or remote, before the client gets a timeout error
                          (default 10000)
  --checkpoint-interval-ms MS
                          checkpoint and truncate each partition's journal
                          this often (default 10000; 0 = never)
  --snapshot-retention-ms MS
                          history kept below the safe time: older snapshots
                          get "snapshot too old" (default 60000)
  --fbf-refresh-ms MS     FBF refresh period t (default 2000)
  --fbf-past-filters N    FBF past filters N (default 2)
  --fbf-retry-timeout-ms MS
                          longest client retry R; (N+1)*t >= R is required
                          (default 5000)
  --fbf-memory-mb MB      memory for FBFs on this node (default 512; 0 = no
                          bound): each partition keeps the filters of at
                          most MB / (partitions x largest filter) buckets;
                          ids of buckets evicted lately are checked exactly
  --fbf-target-fpp P      FBF adaptive resizing target false-positive
                          probability, in [0, 1); 0 = not adaptive
                          (default 0.001)
  --partition-threads T   shards (default, but detached with --durability
                          full: on the --io-threads threads, a
                          request served on the thread that read it) |
                          detached (a thread each) | scheduler (CAF's two
                          threads); docs/NODE.md, "Threading and disk I/O"
  --scheduler-policy P    stealing (default) | sharing
  --log-level LEVEL       debug | info | warn | error (default info)
  --config FILE           key=value lines with the option names above
                          (no leading dashes); flags override the file
  --help                  this text
)";

// --scheduler-policy: CAF's scheduler, "stealing" with
// moderate-poll-attempts=0 (default: measured faster here, docs/NODE.md) or
// "sharing" (CAF-NOTES.md).
std::string scheduler_policy = "stealing";

struct bad_flag {
  std::string what;
};

std::uint64_t parse_uint(const std::string& key, const std::string& v,
                         std::uint64_t max) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos
      || v.size() > 19)
    throw bad_flag{"--" + key + " needs a non-negative integer, got '" + v + "'"};
  auto n = std::stoull(v);
  if (n > max)
    throw bad_flag{"--" + key + " is at most " + std::to_string(max) + ", got "
                   + v};
  return n;
}

// parse_uint for settings where 0 means nothing sensible (a limit of zero
// requests, threads, ...).
std::uint64_t parse_positive(const std::string& key, const std::string& v,
                             std::uint64_t max) {
  auto n = parse_uint(key, v, max);
  if (n == 0)
    throw bad_flag{"--" + key + " must be positive"};
  return n;
}

void apply(node_config& cfg, const std::string& key, const std::string& v) {
  if (key == "data-dir") {
    if (v.empty())
      throw bad_flag{"--data-dir needs a directory"};
    cfg.data_dir = v;
  } else if (key == "port") {
    cfg.port = static_cast<std::uint16_t>(parse_uint(key, v, 65535));
  } else if (key == "cluster-port") {
    cfg.cluster_port = static_cast<std::uint16_t>(parse_uint(key, v, 65535));
  } else if (key == "join") {
    if (v.find(':') == std::string::npos)
      throw bad_flag{"--join needs HOST:PORT (a member's cluster port), got '" + v + "'"};
    cfg.join = v;
  } else if (key == "bind") {
    if (v.empty())
      throw bad_flag{"--bind needs an address"};
    cfg.bind = v;
  } else if (key == "cluster-bind") {
    if (v.empty())
      throw bad_flag{"--cluster-bind needs an address"};
    cfg.cluster_bind = v;
  } else if (key == "advertise") {
    if (v.find('@') != std::string::npos || v.find_first_of(" \t") != std::string::npos)
      throw bad_flag{"--advertise needs HOST:PORT, got '" + v + "'"};
    cfg.advertise = v;
  } else if (key == "cluster-secret-file") {
    if (v.empty())
      throw bad_flag{"--cluster-secret-file needs a file"};
    cfg.links.secret_file = v;
  } else if (key == "insecure-cluster-links") {
    if (v != "true")
      throw bad_flag{"--insecure-cluster-links takes no value"};
    cfg.links.insecure = true;
  } else if (key == "refused-link-log-ms") {
    cfg.links.refusal_log_window = std::chrono::milliseconds(parse_uint(key, v, 86400000));
  } else if (key == "tls-cert") {
    cfg.links.cert = v;
  } else if (key == "tls-key") {
    cfg.links.key = v;
  } else if (key == "tls-ca") {
    cfg.links.ca = v;
  } else if (key == "client-tls-port") {
    cfg.client_tls_port = static_cast<std::uint16_t>(parse_uint(key, v, 65535));
  } else if (key == "client-tls-cert") {
    if (v.empty())
      throw bad_flag{"--client-tls-cert needs a file"};
    cfg.client_tls.cert = v;
  } else if (key == "client-tls-key") {
    if (v.empty())
      throw bad_flag{"--client-tls-key needs a file"};
    cfg.client_tls.key = v;
  } else if (key == "client-tls-ca") {
    if (v.empty())
      throw bad_flag{"--client-tls-ca needs a file"};
    cfg.client_tls.client_ca = v;
  } else if (key == "no-plain-port") {
    if (v != "true")
      throw bad_flag{"--no-plain-port takes no value"};
    cfg.plain_client_port = false;
  } else if (key == "admin-socket") {
    cfg.admin_socket = v == "none" ? std::string{} : v;
  } else if (key == "partitions") {
    cfg.partitions = static_cast<std::uint32_t>(parse_uint(key, v, 1u << 16));
  } else if (key == "stale-keep-hours") {
    cfg.stale_keep = std::chrono::hours(parse_uint(key, v, 24 * 365 * 100));
  } else if (key == "peer-timeout-ms") {
    cfg.peer_timeout = std::chrono::milliseconds(parse_uint(key, v, 3600000));
    if (cfg.peer_timeout.count() < 500)
      throw bad_flag{"--peer-timeout-ms is at least 500 (heartbeats go every 250 ms)"};
  } else if (key == "n-val") {
    cfg.n_val = static_cast<std::uint32_t>(parse_positive(key, v, 16));
  } else if (key == "durability") {
    if (v == "full")
      cfg.mode = durability::full;
    else if (v == "batch")
      cfg.mode = durability::batch;
    else if (v == "none")
      cfg.mode = durability::none;
    else if (v.rfind("periodic", 0) == 0
             && (v.size() == 8 || v[8] == ':')) {
      cfg.mode = durability::periodic;
      if (v.size() > 8) {
        cfg.periodic_sync = std::chrono::milliseconds(parse_uint(key, v.substr(9), 3600000));
        if (cfg.periodic_sync.count() == 0)
          throw bad_flag{"--durability periodic:MS needs MS > 0"};
      }
    } else
      throw bad_flag{"--durability is full, batch, periodic[:MS] or none, got '" + v + "'"};
  } else if (key == "max-frame-size") {
    cfg.limits.max_frame_size =
      static_cast<std::uint32_t>(parse_positive(key, v, 0xffffffffu));
  } else if (key == "max-transactions") {
    cfg.limits.max_open_transactions = parse_uint(key, v, 1u << 30);
  } else if (key == "max-connections") {
    cfg.limits.max_connections = parse_uint(key, v, 1u << 20);
  } else if (key == "max-in-flight") {
    cfg.limits.max_in_flight = parse_positive(key, v, 1u << 20);
  } else if (key == "max-pending-output") {
    cfg.limits.max_pending_output = parse_positive(key, v, 1ull << 32);
  } else if (key == "max-request-memory" || key == "max-partial-request-bytes") {
    cfg.limits.max_request_memory = parse_uint(key, v, 1ull << 40);
  } else if (key == "idle-timeout-ms") {
    cfg.limits.idle_timeout = std::chrono::milliseconds(parse_uint(key, v, 86400000));
  } else if (key == "evict-idle-after-ms") {
    cfg.limits.evict_idle_after = std::chrono::milliseconds(parse_uint(key, v, 86400000));
  } else if (key == "request-read-timeout-ms") {
    cfg.limits.request_read_timeout = std::chrono::milliseconds(parse_uint(key, v, 86400000));
  } else if (key == "max-parked-reads") {
    cfg.limits.max_parked_reads = parse_positive(key, v, 1u << 30);
  } else if (key == "max-tx-per-connection") {
    cfg.limits.max_tx_per_session = parse_positive(key, v, 1u << 30);
  } else if (key == "max-tx-updates") {
    cfg.limits.max_tx_updates = parse_positive(key, v, 1u << 30);
  } else if (key == "max-shard-in-flight") {
    cfg.limits.max_shard_in_flight = parse_positive(key, v, 1u << 24);
  } else if (key == "io-threads") {
    cfg.io_threads = parse_positive(key, v, 64);
  } else if (key == "journal-tail") {
    if (v == "on")
      cfg.journal_tail = true;
    else if (v == "off")
      cfg.journal_tail = false;
    else
      throw bad_flag{"--journal-tail takes on or off, not '" + v + "'"};
  } else if (key == "journal-tail-records") {
    cfg.journal_tail_records = parse_positive(key, v, 1u << 20);
  } else if (key == "sync-threads") {
    cfg.sync_threads = parse_positive(key, v, 64);
  } else if (key == "max-clock-skew-ms") {
    cfg.limits.requests.max_clock_skew_us =
      parse_uint(key, v, 86400000) * 1000;
  } else if (key == "map-size") {
    cfg.map_size = parse_uint(key, v, std::uint64_t{1} << 44);
    if (cfg.map_size < (std::uint64_t{1} << 20))
      throw bad_flag{"--map-size is at least 1048576"};
  } else if (key == "tx-timeout-ms") {
    cfg.limits.tx_idle_timeout =
      std::chrono::milliseconds(parse_positive(key, v, 86400000));
  } else if (key == "request-timeout-ms") {
    cfg.limits.request_timeout =
      std::chrono::milliseconds(parse_uint(key, v, 3600000));
    if (cfg.limits.request_timeout.count() < 100)
      throw bad_flag{"--request-timeout-ms is at least 100"};
  } else if (key == "checkpoint-interval-ms") {
    cfg.checkpoint_interval =
      std::chrono::milliseconds(parse_uint(key, v, 86400000));
  } else if (key == "snapshot-retention-ms") {
    cfg.snapshot_retention =
      std::chrono::milliseconds(parse_uint(key, v, 86400000));
  } else if (key == "fbf-refresh-ms") {
    cfg.fbf_refresh = std::chrono::milliseconds(parse_uint(key, v, 86400000));
  } else if (key == "fbf-past-filters") {
    cfg.fbf_past_filters = parse_uint(key, v, 1024);
  } else if (key == "fbf-retry-timeout-ms") {
    cfg.fbf_retry_timeout =
      std::chrono::milliseconds(parse_uint(key, v, 86400000));
  } else if (key == "fbf-memory-mb") {
    cfg.fbf_memory_bytes = parse_uint(key, v, 1u << 24) << 20;
  } else if (key == "fbf-target-fpp") {
    double p = -1.0;
    std::size_t used = 0;
    try {
      p = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || !(p >= 0.0 && p < 1.0))
      throw bad_flag{"--fbf-target-fpp needs a number in [0, 1), got '" + v
                     + "'"};
    cfg.fbf_target_fpp = p;
  } else if (key == "partition-threads") {
    if (v == "shards")
      cfg.partition_threads = partition_threading::shards;
    else if (v == "detached")
      cfg.partition_threads = partition_threading::detached;
    else if (v == "scheduler")
      cfg.partition_threads = partition_threading::scheduler;
    else
      throw bad_flag{"--partition-threads is shards, detached or scheduler"};
  } else if (key == "scheduler-policy") {
    if (v != "sharing" && v != "stealing")
      throw bad_flag{"--scheduler-policy is sharing or stealing"};
    scheduler_policy = v;
  } else if (key == "log-level") {
    if (v == "debug")
      set_log_level(log_level::debug);
    else if (v == "info")
      set_log_level(log_level::info);
    else if (v == "warn")
      set_log_level(log_level::warn);
    else if (v == "error")
      set_log_level(log_level::error);
    else
      throw bad_flag{"--log-level is debug, info, warn or error"};
  } else {
    throw bad_flag{"unknown option --" + key};
  }
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos)
    return {};
  auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

void apply_file(node_config& cfg, const std::string& path) {
  std::ifstream in{path};
  if (!in)
    throw bad_flag{"cannot read config file " + path};
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = trim(line);
    if (line.empty() || line[0] == '#')
      continue;
    auto eq = line.find('=');
    if (eq == std::string::npos)
      throw bad_flag{path + ":" + std::to_string(n) + ": expected key=value"};
    try {
      apply(cfg, trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
    } catch (bad_flag& b) {
      throw bad_flag{path + ":" + std::to_string(n) + ": " + b.what};
    }
  }
}

// Returns nullopt after --help.
std::optional<node_config> parse(int argc, char** argv) {
  std::vector<std::pair<std::string, std::string>> flags;
  std::optional<std::string> file;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h")
      return std::nullopt;
    if (a.rfind("--", 0) != 0)
      throw bad_flag{"unexpected argument '" + a + "'"};
    a = a.substr(2);
    std::string v;
    if (a == "insecure-cluster-links" || a == "no-plain-port") { // flags without a value
      flags.emplace_back(a, "true");
      continue;
    }
    if (auto eq = a.find('='); eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else {
      if (i + 1 >= argc)
        throw bad_flag{"--" + a + " needs a value"};
      v = argv[++i];
    }
    if (a == "config")
      file = v;
    else
      flags.emplace_back(a, v);
  }
  node_config cfg;
  if (file)
    apply_file(cfg, *file);
  for (auto& [k, v] : flags)
    apply(cfg, k, v);
  // Settings that are fine one by one but not together (the FBF window
  // (N+1)*t below the retry timeout, ...).
  if (auto ok = check_config(cfg); !ok)
    throw bad_flag{ok.err().message()};
  return cfg;
}

} // namespace

int main(int argc, char** argv) {
  std::optional<node_config> cfg;
  try {
    cfg = parse(argc, argv);
  } catch (bad_flag& b) {
    std::cerr << "tallyd: " << b.what << "\n" << usage;
    return 2;
  }
  if (!cfg) {
    std::cout << usage;
    return 0;
  }
  // A data file cut short under the node: a clear message, not a bare
  // SIGBUS (journal/storage_faults.hpp).
  install_storage_fault_handlers();
  // A file size limit (ulimit -f) then fails the write with EFBIG, which
  // the partitions treat like a full disk, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  // Block SIGTERM/SIGINT before CAF starts its threads, so they inherit the
  // mask and only sigwait() below ever sees the signals.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  int rc = 0;
  {
    caf::actor_system_config sys_cfg;
    // CAF-NOTES.md, "Scheduler": 2 workers, no middleman worker pool, and
    // work stealing without the 50 us idle polling (measured against
    // 'sharing' in docs/NODE.md).
    sys_cfg.set("scheduler.max-threads", 2);
    if (scheduler_policy == "sharing") {
      sys_cfg.set("scheduler.policy", caf::atom("sharing"));
    } else {
      sys_cfg.set("scheduler.policy", caf::atom("stealing"));
      sys_cfg.set("work-stealing.moderate-poll-attempts", 0);
    }
    sys_cfg.set("middleman.workers", 0);
    // Failure detection between nodes (CAF-NOTES.md, "Multi-node"): without
    // heartbeats a paused peer is never noticed. A peer silent for
    // --peer-timeout-ms (1 s; 2 s until stop 29) is down: its copies fail
    // over, and with n_val 1 its partitions answer "unavailable" until it
    // is back.
    sys_cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds{250}});
    sys_cfg.set("middleman.connection-timeout", caf::timespan{cfg->peer_timeout});
    sys_cfg.load<caf::io::middleman>();
    if (auto st = configure_node_links(sys_cfg, cfg->links, cfg->data_dir, !cfg->join.empty());
        !st) {
      log(log_level::error, "tallyd: ", st.err().message());
      return st.err().code() == errc::bad_config ? 2 : 1;
    }
    caf::actor_system sys{sys_cfg};
    // A node that has left the cluster stops as on SIGTERM (process-directed,
    // so the sigwait below takes it).
    cfg->request_shutdown = [] { ::kill(::getpid(), SIGTERM); };
    auto n = node::start(sys, *cfg);
    if (!n) {
      log(log_level::error, "tallyd: cannot start: ", n.err().to_string());
      rc = 1;
    } else {
      // The test harness and scripts wait for this line.
      // With --no-plain-port, "port" is the TLS port.
      auto tls = (*n)->tls_port();
      log(log_level::info, "tallyd ready on port ", (*n)->port() != 0 ? (*n)->port() : tls,
          " (node ", (*n)->id(), ", cluster port ", (*n)->cluster_port(),
          tls != 0 ? ", TLS client port " + std::to_string(tls) : std::string{}, ")");
      int sig = 0;
      sigwait(&stop_signals, &sig);
      log(log_level::info, "signal ", sig, ": flushing and shutting down");
      (*n)->stop();
      // Every partition flushes and closes its journal before it
      // terminates; once all have, nothing acknowledged depends on the rest
      // of the teardown. CAF 0.17's actor_system destructor sometimes
      // waits forever in a cluster (a terminated detached actor whose last
      // reference the middleman never drops; docs/NODE.md, "Shutdown"), so
      // tallyd exits here instead of running it.
      bool stopped = (*n)->await_stopped(sys, std::chrono::seconds{30});
      if (!stopped)
        log(log_level::error, "some actors did not stop within 30 s; exiting anyway");
      else
        log(log_level::info, "tallyd stopped cleanly");
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(stopped ? 0 : 1);
    }
  } // ~actor_system waits for every actor (start failures only)
  if (rc == 0)
    log(log_level::info, "tallyd stopped cleanly");
  return rc;
}
