#include "actors/node.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/client_endpoint.hpp"
#include "actors/coordinator.hpp"
#include "actors/log.hpp"
#include "actors/partition_actor.hpp"
#include "actors/partition_core.hpp"
#include "ring/partition.hpp"

namespace tally {

namespace {

// Transactions left prepared by a crash: committed if any partition holds
// their commit record (at that time), aborted otherwise. A client was only
// acknowledged after every commit record was durable, so this never drops
// an acknowledged commit, and it makes a half-committed one whole.
status resolve_undecided(std::vector<std::unique_ptr<partition_core>>& cores) {
  for (auto& core : cores) {
    auto pending = core->undecided(); // copy: stage_* change the core
    for (const auto& u : pending) {
      std::optional<std::uint64_t> commit;
      for (auto& other : cores) {
        if (other.get() == core.get())
          continue;
        auto found = other->find_commit(u.tx);
        if (!found)
          return found.err();
        if (*found) {
          commit = *found;
          break;
        }
      }
      if (commit) {
        log(log_level::info, "partition ", core->index(), ": recovered ",
            u.tx, " committed at ", *commit);
        if (auto st = core->stage_commit(u.tx, *commit); !st)
          return st.err();
      } else {
        log(log_level::info, "partition ", core->index(), ": recovered ",
            u.tx, " prepared but never committed: aborted");
        if (auto st = core->stage_abort(u.tx); !st)
          return st.err();
      }
    }
  }
  for (auto& core : cores)
    if (auto st = core->flush(); !st)
      return st.err();
  return {};
}

fbf_config fbf_of(const node_config& cfg) {
  return tallyd_fbf_config(cfg.fbf_refresh, cfg.fbf_past_filters,
                           cfg.fbf_retry_timeout, cfg.fbf_target_fpp);
}

// FBF tick: never longer than the refresh period, nor (adaptive) than the
// shortest refresh period adaptation may choose and the adaptation
// interval, so refreshes and adaptations run on time without traffic.
std::chrono::milliseconds fbf_tick_of(const fbf_config& f) {
  auto t = f.refresh_period;
  if (f.adaptive)
    t = std::min({t, f.min_refresh_period, f.adapt_interval});
  return std::chrono::duration_cast<std::chrono::milliseconds>(t);
}

} // namespace

status check_config(const node_config& cfg) {
  if (auto f = forgetful_bloom_filter::make(fbf_of(cfg)); !f)
    return make_error(errc::bad_config,
                      "bad FBF settings (--fbf-refresh-ms, --fbf-past-filters, "
                      "--fbf-retry-timeout-ms, --fbf-target-fpp): "
                        + f.err().message());
  if (cfg.snapshot_retention.count() <= 0)
    return make_error(errc::bad_config,
                      "--snapshot-retention-ms must be positive: a checkpoint "
                      "at the safe time would refuse snapshots taken a moment "
                      "before it");
  return {};
}

expected<std::unique_ptr<node>> node::start(caf::actor_system& sys,
                                            const node_config& cfg) {
  if (auto ok = check_partition_count(cfg.partitions); !ok)
    return ok.err();
  if (auto ok = check_config(cfg); !ok)
    return ok.err();
  const auto oldest_tx = cfg.limits.tx_idle_timeout + cfg.limits.request_timeout;
  if (cfg.checkpoint_interval.count() > 0 && cfg.snapshot_retention < oldest_tx)
    log(log_level::warn, "--snapshot-retention-ms ",
        cfg.snapshot_retention.count(), " is below the interactive idle "
        "timeout plus the request timeout (", oldest_tx.count(),
        " ms): a slow interactive transaction may get \"snapshot too old\"");
  std::unique_ptr<node> self{new node};
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path root{cfg.data_dir};
  fs::create_directories(root / "partitions", ec);
  if (ec)
    return make_error(errc::io_error, "unusable data dir " + cfg.data_dir
                                        + ": " + ec.message());
  auto lock_path = (root / "LOCK").string();
  self->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (self->lock_fd_ < 0)
    return make_error(errc::io_error, "unusable data dir " + cfg.data_dir
                                        + ": cannot create " + lock_path + ": "
                                        + std::strerror(errno));
  if (::flock(self->lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return make_error(errc::unavailable,
                      "data dir " + cfg.data_dir
                        + " is in use by another tallyd (" + lock_path
                        + " is locked)");
  // Open and recover every partition before serving anything.
  std::vector<std::unique_ptr<partition_core>> cores;
  std::uint64_t max_clock = 0;
  for (std::uint32_t i = 0; i < cfg.partitions; ++i) {
    partition_options po;
    po.index = i;
    po.path = (root / "partitions" / std::to_string(i)).string();
    po.mode = cfg.mode;
    po.fbf = fbf_of(cfg); // docs/NODE.md, "Exactly-once"
    po.snapshot_retention_us = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
        cfg.snapshot_retention)
        .count());
    auto core = partition_core::open(po);
    if (!core)
      return make_error(core.err().code(), "partition " + std::to_string(i)
                                             + " (" + po.path + "): "
                                             + core.err().message());
    max_clock = std::max(max_clock, (*core)->clock());
    cores.push_back(std::move(*core));
  }
  if (auto st = resolve_undecided(cores); !st)
    return st.err();
  auto ctx = std::make_shared<node_context>();
  ctx->q = cfg.partitions;
  // The owner name carries the configured port; with --port 0 the node
  // name stays "...:0" (one node: only the incarnation must differ).
  ctx->owner = "tally@" + cfg.bind + ":" + std::to_string(cfg.port);
  ctx->incarnation = std::max(wall_clock_us(), max_clock + 1);
  ctx->limits = cfg.limits;
  ctx->board = std::make_shared<safe_board>(cores.size());
  partition_timers timers;
  timers.fbf_tick = fbf_tick_of(fbf_of(cfg));
  timers.checkpoint_interval = cfg.checkpoint_interval;
  for (std::size_t i = 0; i < cores.size(); ++i)
    ctx->partitions.push_back(spawn_partition(sys, std::move(cores[i]),
                                              cfg.detached_partitions,
                                              board_slot(ctx->board, i),
                                              timers));
  ctx->tx_manager = spawn_tx_manager(sys, ctx);
  self->actors_ = ctx->partitions;
  self->actors_.push_back(ctx->tx_manager);
  auto ep = start_client_endpoint(sys, ctx, cfg.bind, cfg.port);
  if (!ep) {
    self->stop();
    return ep.err();
  }
  self->actors_.push_back(ep->first);
  self->port_ = ep->second;
  log(log_level::info, "node ", ctx->owner, " serving ", cfg.partitions,
      " partitions from ", cfg.data_dir, " (durability ", cfg.mode,
      ") on ", cfg.bind, ":", self->port_);
  log(log_level::debug, "checkpoints every ", cfg.checkpoint_interval.count(),
      " ms, snapshot retention ", cfg.snapshot_retention.count(),
      " ms; FBF tick ", timers.fbf_tick.count(), " ms, adaptive ",
      cfg.fbf_target_fpp > 0.0 ? "on" : "off");
  return self;
}

void node::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  // The endpoint first (no new requests), then coordinators via the
  // manager, then the partitions, which flush what is staged.
  for (auto i = actors_.rbegin(); i != actors_.rend(); ++i)
    caf::anon_send_exit(*i, caf::exit_reason::user_shutdown);
  actors_.clear();
}

node::~node() {
  stop();
  if (lock_fd_ >= 0)
    ::close(lock_fd_);
}

} // namespace tally
