// tally-storage-bench: the partition's journal, index and checkpoint store
// on a real LMDB environment in a temporary directory (docs/STORAGE.md). One
// fixed-format line per result: median, min and max over the runs
// (bench/bench_harness.hpp).
//
//   append     records/s per durability mode and batch size (1, 64, 1024),
//              without and with the write-ahead tail (".tail");
//              in mode batch the window is one append: append, then sync()
//   read       one key from checkpoint + journal, through the index
//              (checkpoint_store::load) and by scanning the log
//              (journal::scan_committed), as the log grows; their ratio
//              (seed 004, hypothesis 5)
//   recovery   journal::open of a log of N records without and with a
//              recent checkpoint, in a fresh process: wall time and peak RSS
//   size       journal bytes after N operations on 1k keys with periodic
//              checkpoints on and off
//   bigobject  one add-wins set of 1M elements and one remove-resets map of
//              100k register fields, built by transactions of 1,000 adds
//              (fields), checkpointed; then a read from the checkpoint, a
//              read from the cache, and one more add (field) timed step by
//              step as a node takes it (docs/DATATYPES.md, "Big objects"),
//              and the process's peak RSS
//   sync       what the disk gives: 4 KiB written to each of N files, made
//              durable by N threads each fdatasync'ing its own file, or by
//              one syncfs(2) of the filesystem for all N; file writes made
//              durable per second (docs/PERFORMANCE.md, "Replication")
//
// A record is one update or one commit; an operation is a one-update
// transaction, i.e. two records.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_harness.hpp"
#include "cache/object_cache.hpp"
#include "checkpoint/checkpoint_store.hpp"
#include "crdt/crdt_object.hpp"
#include "journal/journal.hpp"

using namespace tally;

namespace {

using steady = std::chrono::steady_clock;

struct options {
  std::uint64_t seed = 42;
  int runs = 3;
  bool quick = false;
  std::string only;   // empty: every workload
  std::string dir;    // empty: a fresh directory under $TMPDIR
  std::uint64_t keys = 1000;
  std::uint64_t elements = 1000000; // bigobject: set elements
  std::uint64_t fields = 100000;    // bigobject: map fields
};

void usage(const char* argv0) {
  std::printf(
    "usage: %s [--quick] [--seed N] [--runs N] [--workload W] [--dir PATH]\n"
    "\n"
    "Journal, index and checkpoint store on LMDB (docs/STORAGE.md).\n"
    "  --quick        small sizes, a few seconds in all (CI)\n"
    "  --seed N       seed of keys and deltas (default 42)\n"
    "  --runs N       timed runs per result; the median is reported (3)\n"
    "  --workload W   run only W: append, read, recovery, size, bigobject, sync\n"
    "  --elements N   bigobject: elements of the add-wins set (1000000)\n"
    "  --fields N     bigobject: register fields of the map (100000)\n"
    "  --dir PATH     parent directory of the temporary LMDB environments\n"
    "                 (default $TMPDIR or /tmp); everything is removed at exit\n",
    argv0);
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(argv[0]);
      std::exit(0);
    }
    if (arg == "--quick") {
      o.quick = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value (see --help)\n", arg.c_str());
      return false;
    }
    const char* v = argv[++i];
    if (bench::take_common_option(arg, v, o))
      continue;
    if (arg == "--dir")
      o.dir = v;
    else if (arg == "--elements")
      o.elements = std::max<std::uint64_t>(1000, std::strtoull(v, nullptr, 10));
    else if (arg == "--fields")
      o.fields = std::max<std::uint64_t>(1000, std::strtoull(v, nullptr, 10));
    else {
      std::fprintf(stderr, "unknown option %s (see --help)\n", arg.c_str());
      return false;
    }
  }
  return true;
}

[[noreturn]] void die(const std::string& what, const error& e) {
  std::fprintf(stderr, "tally-storage-bench: %s: %s\n", what.c_str(),
               e.to_string().c_str());
  std::exit(1);
}

template <class T>
T must(expected<T> r, const std::string& what) {
  if (!r)
    die(what, r.err());
  return std::move(r).value();
}

void must(status st, const std::string& what) {
  if (!st)
    die(what, st.err());
}

// A directory removed with everything in it.
class scratch_dir {
public:
  explicit scratch_dir(const std::string& parent) {
    auto base = parent.empty() ? std::filesystem::temp_directory_path()
                               : std::filesystem::path{parent};
    std::string tmpl = (base / "tally-storage-bench-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    path_ = tmpl;
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

// One-update transactions over `keys` keys with op ids; commit time and
// wall time (us) are the transaction's sequence number.
class workload {
public:
  workload(std::uint64_t seed, std::uint64_t keys) : gen_(seed), keys_(keys) {}

  // Appends `records` records (update, commit, update, ...) to `out`.
  void records(std::size_t records, std::vector<journal_record>& out) {
    for (std::size_t i = 0; i < records; ++i) {
      if (!pending_update_) {
        ++seq_;
        update_record u;
        u.tx = tx_id{1, seq_};
        u.key = key(std::uniform_int_distribution<std::uint64_t>{0, keys_ - 1}(gen_));
        u.type = crdt_type::counter;
        u.effect = counter_effect{
          std::uniform_int_distribution<std::int64_t>{-100, 100}(gen_)};
        u.op = op_id{1, seq_};
        out.push_back(std::move(u));
        pending_update_ = true;
      } else {
        commit_record c;
        c.tx = tx_id{1, seq_};
        c.commit_time = vector_clock{{1, seq_}};
        c.wall_time_us = seq_;
        out.push_back(std::move(c));
        pending_update_ = false;
      }
    }
  }

  static object_key key(std::uint64_t i) {
    return object_key{"bench", "key" + std::to_string(i)};
  }
  std::uint64_t seq() const noexcept { return seq_; }
  std::mt19937_64& gen() noexcept { return gen_; }

private:
  std::mt19937_64 gen_;
  std::uint64_t keys_;
  std::uint64_t seq_ = 0;
  bool pending_update_ = false;
};

journal_options journal_opts(const std::string& path, durability mode,
                             bool collect_effects = false) {
  journal_options o;
  o.path = path;
  o.partition_id = 1;
  o.mode = mode;
  o.collect_effects = collect_effects;
  o.map_size = std::uint64_t{8} << 30; // 8 GiB of address space: never full
  return o;
}

// Appends `records` records of `w` in batches of `batch`.
void fill(journal& j, workload& w, std::uint64_t records, std::size_t batch) {
  std::vector<journal_record> buf;
  for (std::uint64_t done = 0; done < records;) {
    auto n = static_cast<std::size_t>(std::min<std::uint64_t>(batch, records - done));
    buf.clear();
    w.records(n, buf);
    auto r = j.append(buf);
    if (!r)
      die("append", r.err());
    done += n;
  }
}

checkpoint_bounds everything(journal& j, std::uint64_t time) {
  checkpoint_bounds b;
  b.checkpoint_time = vector_clock{{1, time}};
  b.replicated_lsn = j.next_lsn() - 1;
  b.fbf_horizon_us = ~std::uint64_t{0};
  return b;
}

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

std::string count_name(std::uint64_t n) {
  if (n >= 1000000 && n % 1000000 == 0)
    return std::to_string(n / 1000000) + "M";
  if (n >= 1000 && n % 1000 == 0)
    return std::to_string(n / 1000) + "k";
  return std::to_string(n);
}

// ---- append ------------------------------------------------------------

void bench_append(const options& o) {
  struct config {
    durability mode;
    std::size_t batch;
    bool tail; // journal_options::write_ahead_tail
    std::uint64_t records;
    std::vector<double> rates;
  };
  std::vector<config> configs;
  for (auto mode : {durability::full, durability::batch, durability::none}) {
    for (std::size_t batch : {std::size_t{1}, std::size_t{64}, std::size_t{1024}}) {
     for (bool tail : {false, true}) {
      // Enough records for a stable rate, few enough that a sync per record
      // (0.25-3 ms on a shared disk) stays within seconds.
      std::uint64_t records = mode == durability::none ? 200000 : batch * 200;
      if (batch == 1 && mode != durability::none)
        records = 1000;
      if (o.quick)
        records = std::max<std::uint64_t>(batch * 8, records / 20);
      configs.push_back(config{mode, batch, tail, records, {}});
     }
    }
  }
  // Runs are interleaved across configurations, so a burst of someone
  // else's disk traffic hits one run of each rather than every run of one.
  for (int r = 0; r < o.runs; ++r) {
    for (auto& c : configs) {
      scratch_dir dir{o.dir};
      auto jo = journal_opts(dir.sub("p"), c.mode);
      jo.write_ahead_tail = c.tail;
      auto opened = must(journal::open(jo), "open");
      auto& j = *opened.log;
      workload w{o.seed + static_cast<std::uint64_t>(r), o.keys};
      std::vector<std::vector<journal_record>> batches;
      for (std::uint64_t done = 0; done < c.records; done += c.batch) {
        batches.emplace_back();
        w.records(c.batch, batches.back());
      }
      auto t0 = steady::now();
      for (const auto& b : batches) {
        auto res = j.append(b);
        if (!res)
          die("append", res.err());
        if (c.mode == durability::batch)
          must(j.sync(), "sync");
      }
      c.rates.push_back(static_cast<double>(batches.size() * c.batch)
                        / seconds_since(t0));
    }
  }
  for (const auto& c : configs)
    bench::print_line("append." + std::string{to_string(c.mode)} + ".batch"
                        + std::to_string(c.batch) + (c.tail ? ".tail" : ""),
                      bench::summarize(c.rates), o.runs, "rec/s");
}

// ---- sync ----------------------------------------------------------------

// One file of the sync probe: 4 KiB rewritten in place at one of 64 offsets
// (as LMDB rewrites its pages), opened for the probe's lifetime.
class probe_file {
public:
  explicit probe_file(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0)
      die("sync probe", io_error("open " + path));
  }
  ~probe_file() { ::close(fd_); }
  probe_file(const probe_file&) = delete;
  probe_file& operator=(const probe_file&) = delete;
  void write(std::uint64_t round) {
    char page[4096];
    std::memset(page, static_cast<int>(round & 0xff), sizeof page);
    if (::pwrite(fd_, page, sizeof page, static_cast<off_t>((round % 64) * sizeof page))
        != static_cast<ssize_t>(sizeof page))
      die("sync probe", io_error("pwrite"));
  }
  void fdatasync() {
    if (::fdatasync(fd_) != 0)
      die("sync probe", io_error("fdatasync"));
  }
  void syncfs() {
    if (::syncfs(fd_) != 0)
      die("sync probe", io_error("syncfs"));
  }

private:
  static error io_error(const std::string& what) {
    return make_error(errc::io_error, what + ": " + std::strerror(errno));
  }
  int fd_;
};

void bench_sync(const options& o) {
  const std::uint64_t rounds = o.quick ? 20 : 300;
  for (std::size_t files : {std::size_t{1}, std::size_t{4}, std::size_t{16}, std::size_t{64}}) {
    std::vector<double> parallel, grouped;
    for (int r = 0; r < o.runs; ++r) {
      scratch_dir dir{o.dir};
      std::vector<std::unique_ptr<probe_file>> f;
      for (std::size_t i = 0; i < files; ++i)
        f.push_back(std::make_unique<probe_file>(dir.sub("f" + std::to_string(i))));
      // N threads, each writing and fdatasync'ing its own file: what the
      // node's sync threads do (--sync-threads, one job per partition).
      auto t0 = steady::now();
      std::vector<std::thread> threads;
      for (auto& file : f)
        threads.emplace_back([&file, rounds] {
          for (std::uint64_t k = 0; k < rounds; ++k) {
            file->write(k);
            file->fdatasync();
          }
        });
      for (auto& t : threads)
        t.join();
      parallel.push_back(static_cast<double>(files * rounds) / seconds_since(t0));
      // One thread: a write to every file, then one syncfs for them all.
      t0 = steady::now();
      for (std::uint64_t k = 0; k < rounds; ++k) {
        for (auto& file : f)
          file->write(k);
        f.front()->syncfs();
      }
      grouped.push_back(static_cast<double>(files * rounds) / seconds_since(t0));
    }
    bench::print_line("sync.fdatasync_threads.files" + std::to_string(files),
                      bench::summarize(parallel), o.runs, "writes/s");
    bench::print_line("sync.syncfs.files" + std::to_string(files),
                      bench::summarize(grouped), o.runs, "writes/s");
  }
}

// ---- read ----------------------------------------------------------------

void bench_read(const options& o) {
  std::vector<std::uint64_t> sizes = o.quick ? std::vector<std::uint64_t>{10000, 50000}
                                             : std::vector<std::uint64_t>{10000, 100000, 1000000};
  scratch_dir dir{o.dir};
  auto opened = must(journal::open(journal_opts(dir.sub("p"), durability::none)),
                     "open");
  auto& j = *opened.log;
  checkpoint_store cs{j};
  workload w{o.seed, o.keys};
  // A checkpoint first, so every key has a base entry, then the log grows.
  fill(j, w, 2 * o.keys * 2, 1024);
  must(cs.checkpoint(everything(j, w.seq())), "checkpoint");
  std::mt19937_64 pick{o.seed ^ 0x5eedULL};
  std::uniform_int_distribution<std::uint64_t> any_key{0, o.keys - 1};
  for (auto size : sizes) {
    auto have = j.next_lsn() - j.truncation_lsn();
    if (size > have)
      fill(j, w, size - have, 1024);
    const int indexed_reads = 200;
    const int scanned_reads = o.quick ? 2 : 3;
    std::vector<double> indexed_us, scanned_us, ratio;
    for (int r = 0; r < o.runs; ++r) {
      auto t0 = steady::now();
      std::size_t effects = 0;
      for (int i = 0; i < indexed_reads; ++i) {
        auto image = must(cs.load(workload::key(any_key(pick))), "load");
        effects += image.effects.size();
      }
      bench::do_not_optimize(effects);
      double idx = seconds_since(t0) * 1e6 / indexed_reads;
      t0 = steady::now();
      for (int i = 0; i < scanned_reads; ++i) {
        auto k = workload::key(any_key(pick));
        auto base = must(cs.get(k), "get");
        auto effs = must(j.scan_committed(k), "scan");
        effects += effs.size() + (base ? 1 : 0);
      }
      bench::do_not_optimize(effects);
      double scan = seconds_since(t0) * 1e6 / scanned_reads;
      indexed_us.push_back(idx);
      scanned_us.push_back(scan);
      ratio.push_back(scan / idx);
    }
    auto n = count_name(size);
    bench::print_line("read.indexed." + n, bench::summarize(indexed_us), o.runs,
                      "us/read");
    bench::print_line("read.scan." + n, bench::summarize(scanned_us), o.runs,
                      "us/read");
    bench::print_line("read.scan_over_indexed." + n, bench::summarize(ratio),
                      o.runs, "x");
  }
}

// ---- recovery --------------------------------------------------------------

// This process's peak resident set (VmHWM), in KiB. Read inside the child:
// getrusage()/wait4() would also count the parent's resident set, which
// the child inherits at fork() and Linux folds into ru_maxrss at exec().
// It includes the pages of data.mdb that LMDB's read-only map touched.
std::uint64_t peak_rss_kib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f)
    return 0;
  char line[256];
  std::uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmHWM:", 6) == 0)
      kib = std::strtoull(line + 6, nullptr, 10);
  std::fclose(f);
  return kib;
}

// The child side: open (recover) the store at `path` and print the time.
int recover_child(const std::string& path) {
  auto t0 = steady::now();
  auto opened = journal::open(journal_opts(path, durability::full, true));
  if (!opened) {
    std::fprintf(stderr, "recovery failed: %s\n", opened.err().to_string().c_str());
    return 1;
  }
  double ms = seconds_since(t0) * 1e3;
  std::size_t effects = 0;
  for (const auto& [k, v] : opened->recovery.effects)
    effects += v.size();
  std::printf("%.3f %llu %zu %llu\n", ms,
              static_cast<unsigned long long>(opened->recovery.records), effects,
              static_cast<unsigned long long>(peak_rss_kib()));
  return 0;
}

struct child_result {
  double ms = 0;
  double max_rss_kib = 0;
  std::uint64_t records = 0;
};

// Runs this binary again as "--recover-child PATH" so the measured RSS is
// recovery's own, not this process's.
child_result run_recovery_child(const std::string& path) {
  int fds[2];
  if (::pipe(fds) != 0) {
    std::perror("pipe");
    std::exit(1);
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    const char* args[] = {"tally-storage-bench", "--recover-child", path.c_str(),
                          nullptr};
    ::execv("/proc/self/exe", const_cast<char* const*>(args));
    std::perror("execv");
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    std::fprintf(stderr, "recovery child failed\n");
    std::exit(1);
  }
  child_result r;
  unsigned long long records = 0;
  unsigned long long rss = 0;
  std::size_t effects = 0;
  std::sscanf(out.c_str(), "%lf %llu %zu %llu", &r.ms, &records, &effects, &rss);
  r.records = records;
  r.max_rss_kib = static_cast<double>(rss);
  return r;
}

void bench_recovery(const options& o) {
  const std::uint64_t records = o.quick ? 100000 : 1000000;
  const std::uint64_t recent = o.quick ? 2000 : 10000;
  scratch_dir dir{o.dir};
  auto path = dir.sub("p");
  workload w{o.seed, o.keys};
  {
    auto opened = must(journal::open(journal_opts(path, durability::none)), "open");
    fill(*opened.log, w, records, 1024);
  }
  auto measure = [&](const std::string& name) {
    std::vector<double> ms, rss;
    std::uint64_t verified = 0;
    for (int r = 0; r < o.runs; ++r) {
      auto c = run_recovery_child(path);
      ms.push_back(c.ms);
      rss.push_back(c.max_rss_kib);
      verified = c.records;
    }
    bench::print_line(name + ".time", bench::summarize(ms), o.runs, "ms");
    bench::print_line(name + ".peak_rss", bench::summarize(rss), o.runs, "KiB");
    std::printf("%-40s %10llu records verified\n", (name + ".log").c_str(),
                static_cast<unsigned long long>(verified));
  };
  auto n = count_name(records);
  measure("recovery.no_checkpoint." + n);
  {
    // A checkpoint of everything, then a little more traffic: the log holds
    // only what came after the checkpoint.
    auto opened = must(journal::open(journal_opts(path, durability::none)), "open");
    checkpoint_store cs{*opened.log};
    auto t0 = steady::now();
    auto rep = must(cs.checkpoint(everything(*opened.log, w.seq())), "checkpoint");
    std::printf("%-40s %10.1f ms  (one run: %llu records folded into %llu keys)\n",
                ("checkpoint.of." + n).c_str(), seconds_since(t0) * 1e3,
                static_cast<unsigned long long>(rep.records_dropped),
                static_cast<unsigned long long>(rep.keys_written));
    fill(*opened.log, w, recent, 1024);
  }
  measure("recovery.recent_checkpoint." + n);
}

// ---- size ------------------------------------------------------------------

void bench_size(const options& o) {
  const std::uint64_t ops = o.quick ? 50000 : 1000000;
  // One checkpoint every 10k operations; the FBF window keeps the last 10k
  // operations' records (wall time = sequence number in us).
  const std::uint64_t every = 10000;
  for (bool checkpointing : {false, true}) {
    std::vector<double> journal_bytes, file_bytes, records, rate;
    for (int r = 0; r < o.runs; ++r) {
      scratch_dir dir{o.dir};
      auto opened = must(journal::open(journal_opts(dir.sub("p"), durability::none)),
                         "open");
      auto& j = *opened.log;
      checkpoint_store cs{j};
      workload w{o.seed + static_cast<std::uint64_t>(r), o.keys};
      auto t0 = steady::now();
      for (std::uint64_t done = 0; done < ops; done += every) {
        fill(j, w, 2 * std::min(every, ops - done), 1024);
        if (checkpointing) {
          auto b = everything(j, w.seq());
          b.fbf_horizon_us = w.seq() > every ? w.seq() - every + 1 : 0;
          must(cs.checkpoint(b), "checkpoint");
        }
      }
      rate.push_back(static_cast<double>(ops) / seconds_since(t0));
      auto st = must(j.stats(), "stats");
      journal_bytes.push_back(static_cast<double>(st.journal.bytes() + st.index.bytes()));
      file_bytes.push_back(static_cast<double>(st.env.used_bytes));
      records.push_back(static_cast<double>(st.journal.entries));
    }
    std::string name = std::string{"size."} + (checkpointing ? "checkpoint_on." : "checkpoint_off.")
                       + count_name(ops) + "ops";
    bench::print_line(name + ".journal_and_index", bench::summarize(journal_bytes),
                      o.runs, "bytes");
    bench::print_line(name + ".journal_records", bench::summarize(records), o.runs,
                      "records");
    bench::print_line(name + ".file", bench::summarize(file_bytes), o.runs, "bytes");
    bench::print_line(name + ".throughput", bench::summarize(rate), o.runs, "ops/s");
  }
}

// ---- bigobject -------------------------------------------------------------

// One big object of `type` under `key` in a journal with a checkpoint store
// and a cache, as a partition holds it (actors/partition_core.cpp), without
// the actors.
class big_object {
public:
  big_object(const std::string& path, object_key key, crdt_type type)
      : opened_(must(journal::open(journal_opts(path, durability::none)), "open")),
        store_(*opened_.log), key_(std::move(key)), type_(type) {}

  // One committed transaction of one update with `effect`.
  void commit(const crdt_effect& effect) {
    ++seq_;
    update_record u;
    u.tx = tx_id{1, seq_};
    u.key = key_;
    u.type = type_;
    u.effect = effect;
    commit_record c;
    c.tx = u.tx;
    c.commit_time = now();
    c.wall_time_us = seq_;
    std::vector<journal_record> recs{u, c};
    auto pos = must(opened_.log->append(recs), "append");
    (void)pos;
    if (cache_) {
      committed_effect ce;
      ce.tx = u.tx;
      ce.commit_time = now();
      ce.effect = effect;
      ce.type = type_;
      must(cache_->on_commit(key_, type_, std::move(ce)), "on_commit");
    }
  }
  // Checkpoints everything: the object becomes one checkpoint entry.
  void checkpoint() { must(store_.checkpoint(everything(*opened_.log, seq_)), "checkpoint"); }

  // A fresh, empty cache (the next read is a miss: checkpoint + journal).
  void drop_cache() { cache_ = must(object_cache::make(), "cache"); }
  // The read value, as a client read gets it (object_cache::read_or_load).
  crdt_value read() {
    checkpoint_source src{store_};
    return must(cache_->read_or_load(key_, type_, now(), {}, src), "read");
  }
  // What a node does before each non-counter update (read before write,
  // docs/DATATYPES.md): the partition takes a copy of the object
  // (object_or_load) and its bytes (actors/partition_actor.cpp, serve()
  // with want_state); the coordinator decodes the bytes. `value_ms`, when
  // given, gets the time of the object's read value, which serve() also
  // built until it was dropped (measured apart, not part of the result).
  crdt_object read_for_update(double* value_ms = nullptr) {
    checkpoint_source src{store_};
    auto obj = must(cache_->object_or_load(key_, type_, now(), {}, src), "object_or_load");
    if (value_ms) {
      auto t0 = steady::now();
      auto value = obj.value();
      bench::do_not_optimize(value);
      *value_ms = seconds_since(t0) * 1e3;
    }
    auto bytes = obj.encode();
    return must(crdt_object::decode(bytes), "decode");
  }
  vector_clock now() const { return vector_clock{{1, seq_}}; }

private:
  opened_journal opened_;
  checkpoint_store store_;
  object_key key_;
  crdt_type type_;
  std::uint64_t seq_ = 0;
  std::optional<object_cache> cache_;
};

struct big_result {
  std::vector<double> build_s, checkpoint_ms, cold_ms, cold_cpu_ms, cached_ms, rfu_ms,
    prepare_ms, commit_ms, add_ms, add_cpu_ms, small_add_ms, small_add_cpu_ms, value_ms;
};

// CPU time of this process in ms: on a shared machine a step's wall time
// also counts the time other processes had the core.
double cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

template <class MakeUpdate>
void bench_one_big_object(const options& o, const std::string& name, crdt_type type,
                          std::uint64_t size, MakeUpdate make_update) {
  const std::uint64_t per_tx = 1000;
  big_result r;
  std::uint64_t origin = o.seed;
  for (int run = 0; run < o.runs; ++run) {
    scratch_dir dir{o.dir};
    big_object big{dir.sub("p"), object_key{"bench", name}, type};
    // Build: every transaction adds `per_tx` new elements (fields), prepared
    // against the bottom object (they are new: nothing is seen).
    auto bottom = must(crdt_object::make(type), "make");
    auto t0 = steady::now();
    for (std::uint64_t first = 0; first < size; first += per_tx) {
      downstream_context ctx{token_source{++origin}, first + 1};
      auto eff = must(bottom.prepare(make_update(first, per_tx), ctx), "prepare");
      big.commit(eff);
    }
    r.build_s.push_back(seconds_since(t0));
    t0 = steady::now();
    big.checkpoint();
    r.checkpoint_ms.push_back(seconds_since(t0) * 1e3);
    // Reads from the checkpoint: the cache is empty each time.
    for (int i = 0; i < 3; ++i) {
      big.drop_cache();
      t0 = steady::now();
      auto c0 = cpu_ms();
      auto v = big.read();
      r.cold_cpu_ms.push_back(cpu_ms() - c0);
      r.cold_ms.push_back(seconds_since(t0) * 1e3);
      bench::do_not_optimize(v);
    }
    // Reads from the cache (the latest version: no replay).
    const int reads = 3;
    t0 = steady::now();
    for (int i = 0; i < reads; ++i) {
      auto hit = big.read();
      bench::do_not_optimize(hit);
    }
    r.cached_ms.push_back(seconds_since(t0) * 1e3 / reads);
    // One more add (field) at a time, as a node takes it.
    const int adds = 3;
    for (int i = 0; i < adds; ++i) {
      double value_ms = 0;
      (void)big.read_for_update(&value_ms); // the value's cost, apart
      r.value_ms.push_back(value_ms);
      auto a0 = steady::now();
      auto c0 = cpu_ms();
      auto obj = big.read_for_update();
      auto a1 = steady::now();
      downstream_context ctx{token_source{++origin}, 1};
      auto eff = must(obj.prepare(make_update(size + static_cast<std::uint64_t>(run * adds + i), 1), ctx),
                      "prepare");
      auto a2 = steady::now();
      big.commit(eff);
      auto a3 = steady::now();
      r.add_cpu_ms.push_back(cpu_ms() - c0);
      auto ms = [](steady::time_point a, steady::time_point b) {
        return std::chrono::duration<double>(b - a).count() * 1e3;
      };
      r.rfu_ms.push_back(ms(a0, a1));
      r.prepare_ms.push_back(ms(a1, a2));
      r.commit_ms.push_back(ms(a2, a3));
      r.add_ms.push_back(ms(a0, a3));
    }
  }
  // The same add on an object of one transaction's size, for the ratio.
  {
    scratch_dir dir{o.dir};
    big_object small{dir.sub("p"), object_key{"bench", name}, type};
    auto bottom = must(crdt_object::make(type), "make");
    downstream_context ctx{token_source{++origin}, 1};
    small.commit(must(bottom.prepare(make_update(0, per_tx), ctx), "prepare"));
    small.checkpoint();
    small.drop_cache();
    (void)small.read();
    for (int i = 0; i < 3 * o.runs; ++i) {
      auto a0 = steady::now();
      auto c0 = cpu_ms();
      auto obj = small.read_for_update();
      downstream_context c2{token_source{++origin}, 1};
      small.commit(must(obj.prepare(make_update(per_tx + static_cast<std::uint64_t>(i), 1), c2),
                        "prepare"));
      r.small_add_ms.push_back(std::chrono::duration<double>(steady::now() - a0).count() * 1e3);
      r.small_add_cpu_ms.push_back(cpu_ms() - c0);
    }
  }
  auto n = name + "." + count_name(size);
  auto adds = static_cast<int>(r.add_ms.size());
  bench::print_line("bigobject." + n + ".build", bench::summarize(r.build_s), o.runs, "s");
  bench::print_line("bigobject." + n + ".checkpoint", bench::summarize(r.checkpoint_ms), o.runs, "ms");
  bench::print_line("bigobject." + n + ".read.from_checkpoint", bench::summarize(r.cold_ms),
                    static_cast<int>(r.cold_ms.size()), "ms");
  bench::print_line("bigobject." + n + ".read.from_checkpoint.cpu", bench::summarize(r.cold_cpu_ms),
                    static_cast<int>(r.cold_cpu_ms.size()), "ms");
  bench::print_line("bigobject." + n + ".read.cached", bench::summarize(r.cached_ms), o.runs, "ms");
  bench::print_line("bigobject." + n + ".add.read_for_update", bench::summarize(r.rfu_ms), adds, "ms");
  bench::print_line("bigobject." + n + ".add.value_no_longer_built", bench::summarize(r.value_ms),
                    adds, "ms");
  bench::print_line("bigobject." + n + ".add.prepare", bench::summarize(r.prepare_ms), adds, "ms");
  bench::print_line("bigobject." + n + ".add.commit", bench::summarize(r.commit_ms), adds, "ms");
  bench::print_line("bigobject." + n + ".add.total", bench::summarize(r.add_ms), adds, "ms");
  bench::print_line("bigobject." + n + ".add.total.cpu", bench::summarize(r.add_cpu_ms), adds, "ms");
  bench::print_line("bigobject." + name + ".1k.add.total", bench::summarize(r.small_add_ms),
                    static_cast<int>(r.small_add_ms.size()), "ms");
  bench::print_line("bigobject." + name + ".1k.add.total.cpu", bench::summarize(r.small_add_cpu_ms),
                    static_cast<int>(r.small_add_cpu_ms.size()), "ms");
}

std::string element_name(std::uint64_t i) {
  return "element-" + std::to_string(i);
}

void bench_bigobject(const options& o) {
  std::uint64_t elements = o.quick ? 20000 : o.elements;
  std::uint64_t fields = o.quick ? 5000 : o.fields;
  bench_one_big_object(o, "orset", crdt_type::orset, elements,
                       [](std::uint64_t first, std::uint64_t n) {
                         set_add add;
                         for (std::uint64_t i = first; i < first + n; ++i)
                           add.elements.push_back(element_name(i));
                         return crdt_update{set_update{std::move(add)}};
                       });
  bench_one_big_object(o, "rrmap", crdt_type::rrmap, fields,
                       [](std::uint64_t first, std::uint64_t n) {
                         map_update m;
                         for (std::uint64_t i = first; i < first + n; ++i)
                           m.updates.push_back(keyed_update{
                             map_key{"field-" + std::to_string(i), crdt_type::lwwreg},
                             any_update{register_update{register_assign{
                               "value-" + std::to_string(i), i + 1}}}});
                         return crdt_update{std::move(m)};
                       });
  std::printf("%-40s %10.1f MiB  (this process, both objects)\n", "bigobject.peak_rss",
              static_cast<double>(peak_rss_kib()) / 1024.0);
}

} // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--recover-child") == 0)
    return recover_child(argv[2]);
  options o;
  if (!parse(argc, argv, o))
    return 2;
  bench::warn_if_unoptimized();
  std::printf("# tally-storage-bench seed=%llu runs=%d keys=%llu%s build=%s\n",
              static_cast<unsigned long long>(o.seed), o.runs,
              static_cast<unsigned long long>(o.keys), o.quick ? " quick" : "",
              TALLY_BUILD_TYPE);
  bool any = false;
  auto want = [&](const char* w) {
    bool yes = o.only.empty() || o.only == w;
    any = any || yes;
    return yes;
  };
  if (want("append"))
    bench_append(o);
  if (want("read"))
    bench_read(o);
  if (want("recovery"))
    bench_recovery(o);
  if (want("size"))
    bench_size(o);
  if (want("bigobject"))
    bench_bigobject(o);
  if (want("sync"))
    bench_sync(o);
  if (!any) {
    std::fprintf(stderr, "unknown workload %s (see --help)\n", o.only.c_str());
    return 2;
  }
  return 0;
}
