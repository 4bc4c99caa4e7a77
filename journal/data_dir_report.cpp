#include "journal/data_dir_report.hpp"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lmdb.h>

#include "journal/partition_manifest.hpp"
#include "journal/write_ahead_tail.hpp"

namespace tally {

namespace fs = std::filesystem;

namespace {

// In the child: an LMDB assertion is reported, not an abort.
void child_assert(MDB_env*, const char* msg) {
  std::string line = std::string{"LMDB assertion: "} + (msg ? msg : "") + "\n";
  [[maybe_unused]] auto n = ::write(STDOUT_FILENO, line.data(), line.size());
  ::_exit(3);
}

// The child's walk; the entry count or LMDB's error on stdout.
[[noreturn]] void walk_in_child(const std::string& dir) {
  auto fail = [](const char* what, int rc) {
    std::string line = std::string{what} + ": " + mdb_strerror(rc) + "\n";
    [[maybe_unused]] auto n = ::write(STDOUT_FILENO, line.data(), line.size());
    ::_exit(1);
  };
  MDB_env* env = nullptr;
  int rc = 0;
  auto open_env = [&](unsigned flags) {
    rc = mdb_env_create(&env);
    if (rc == MDB_SUCCESS)
      rc = mdb_env_set_assert(env, &child_assert);
    if (rc == MDB_SUCCESS)
      rc = mdb_env_set_maxdbs(env, 64);
    if (rc == MDB_SUCCESS)
      rc = mdb_env_open(env, dir.c_str(), flags, 0644);
    if (rc != MDB_SUCCESS && env) {
      mdb_env_close(env); // LMDB: a failed open's handle is discarded
      env = nullptr;
    }
  };
  // With LMDB's lock file a running node's writes do not disturb the
  // walk; without one (a folder received by handoff that never ran) no one
  // writes.
  open_env(MDB_RDONLY);
  if (rc == ENOENT)
    open_env(MDB_RDONLY | MDB_NOLOCK);
  if (rc != MDB_SUCCESS)
    fail("open", rc);
  MDB_txn* txn = nullptr;
  if ((rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn)) != MDB_SUCCESS)
    fail("begin", rc);
  std::uint64_t entries = 0;
  auto walk = [&](MDB_dbi dbi, const char* name) {
    MDB_cursor* cur = nullptr;
    if ((rc = mdb_cursor_open(txn, dbi, &cur)) != MDB_SUCCESS)
      fail(name, rc);
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
      ++entries;
      volatile unsigned char sink = 0; // touch overflow pages too
      if (v.mv_size > 0)
        sink = static_cast<const unsigned char*>(v.mv_data)[v.mv_size - 1];
      (void)sink;
    }
    if (rc != MDB_NOTFOUND)
      fail(name, rc);
    mdb_cursor_close(cur);
  };
  MDB_dbi main_db;
  if ((rc = mdb_dbi_open(txn, nullptr, 0, &main_db)) != MDB_SUCCESS)
    fail("main database", rc);
  // The main database's keys name the named databases.
  std::vector<std::string> names;
  {
    MDB_cursor* cur = nullptr;
    if ((rc = mdb_cursor_open(txn, main_db, &cur)) != MDB_SUCCESS)
      fail("main database", rc);
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
      names.emplace_back(static_cast<const char*>(k.mv_data), k.mv_size);
    if (rc != MDB_NOTFOUND)
      fail("main database", rc);
    mdb_cursor_close(cur);
  }
  for (const auto& name : names) {
    MDB_dbi dbi;
    if ((rc = mdb_dbi_open(txn, name.c_str(), 0, &dbi)) != MDB_SUCCESS)
      fail(name.c_str(), rc);
    walk(dbi, name.c_str());
  }
  std::string line = "entries " + std::to_string(entries) + "\n";
  [[maybe_unused]] auto n = ::write(STDOUT_FILENO, line.data(), line.size());
  ::_exit(0);
}

} // namespace

expected<std::uint64_t> walk_every_page(const std::string& dir) {
  int out[2];
  if (::pipe(out) != 0)
    return make_error(errc::io_error, "pipe failed");
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return make_error(errc::io_error, "fork failed");
  }
  if (pid == 0) {
    ::close(out[0]);
    ::dup2(out[1], STDOUT_FILENO);
    walk_in_child(dir);
  }
  ::close(out[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;)
    said.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  while (!said.empty() && said.back() == '\n')
    said.pop_back();
  const std::string file = (fs::path{dir} / lmdb_data_file).string();
  if (WIFSIGNALED(status))
    return make_error(errc::corrupt, file + ": reading every page ended with signal "
                                       + std::to_string(WTERMSIG(status)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return make_error(errc::corrupt, file + ": damaged page: " + said);
  return static_cast<std::uint64_t>(std::stoull(said.substr(said.find(' ') + 1)));
}

bool data_dir_report::damaged() const {
  if (manifest_problem)
    return true;
  for (const auto& p : partitions)
    if (p.problem)
      return true;
  return false;
}

expected<data_dir_report> inspect_data_dir(const std::string& root, bool deep) {
  data_dir_report r;
  r.root = root;
  std::error_code ec;
  if (!fs::is_directory(fs::path{root} / "partitions", ec))
    return make_error(errc::not_found, root + " is not a tallyd data dir (no partitions folder)");
  // A running tallyd holds an exclusive flock on LOCK.
  auto lock = (fs::path{root} / "LOCK").string();
  int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    r.in_use = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
    ::close(fd);
  }
  std::map<std::uint32_t, partition_report> parts;
  auto listed = load_manifest(root);
  if (!listed) {
    r.manifest_problem = listed.err();
  } else if (*listed) {
    r.has_manifest = true;
    for (auto p : **listed) {
      parts[p].partition = p;
      parts[p].listed = true;
    }
  }
  auto present = present_partitions(root, 1u << 20);
  if (!present)
    return present.err();
  for (auto p : *present) {
    parts[p].partition = p;
    parts[p].present = true;
  }
  for (fs::directory_iterator i{fs::path{root} / "partitions", ec}, end; !ec && i != end;
       i.increment(ec)) {
    auto ext = i->path().extension().string();
    if (ext == ".incoming" || ext == ".old")
      r.leftovers.push_back(i->path().filename().string());
  }
  for (auto& [p, pr] : parts) {
    auto dir = (fs::path{root} / "partitions" / std::to_string(p)).string();
    if (pr.listed && !pr.present) {
      pr.problem = make_error(errc::corrupt, "listed in the manifest, but its folder " + dir
                                               + " is missing (deleted?)");
      continue;
    }
    // Listed: must exist. Unlisted (a data dir from before the manifest, or
    // a folder received just before a crash): what tallyd would accept.
    auto checked = check_lmdb_file(dir, pr.listed || !r.has_manifest);
    if (!checked) {
      pr.problem = checked.err();
      continue;
    }
    pr.file = *checked;
    if (std::ifstream tail{dir + "/tail.log", std::ios::binary}; tail) {
      std::string bytes{std::istreambuf_iterator<char>{tail}, std::istreambuf_iterator<char>{}};
      auto parsed = parse_tail(bytes);
      pr.tail_entries = parsed.records.size();
      if (!parsed.records.empty()) {
        pr.tail_first = parsed.records.front().first;
        pr.tail_last = parsed.records.back().first;
      }
      pr.tail_stop_reason = std::move(parsed.stop_reason);
    }
    if (deep && pr.file.exists) {
      auto walked = walk_every_page(dir);
      if (!walked)
        pr.problem = walked.err();
      else
        pr.entries_read = *walked;
    }
  }
  for (auto& [p, pr] : parts)
    r.partitions.push_back(pr);
  return r;
}

std::string to_text(const data_dir_report& r) {
  std::ostringstream out;
  out << "data dir " << r.root << (r.in_use ? " (in use by a running tallyd)" : "") << '\n';
  if (r.manifest_problem)
    out << "manifest: DAMAGED: " << r.manifest_problem->to_string() << '\n';
  else if (!r.has_manifest)
    out << "manifest: none yet (written at the next start)\n";
  else
    out << "manifest: " << manifest_path(r.root) << '\n';
  for (const auto& p : r.partitions) {
    out << "partition " << p.partition << ": ";
    if (p.problem) {
      out << "DAMAGED: " << p.problem->message();
    } else if (!p.file.exists) {
      out << "no data yet";
    } else {
      out << "ok, " << p.file.file_bytes << " bytes, " << p.file.last_page + 1 << " pages of "
          << p.file.page_size << " in use, transaction " << p.file.txn_id;
      if (p.entries_read > 0)
        out << ", " << p.entries_read << " entries read";
    }
    if (p.tail_entries > 0)
      out << "; write-ahead tail: " << p.tail_entries << " records, LSN " << p.tail_first
          << "-" << p.tail_last << " (a restart takes in those past the journal's end)";
    if (!p.tail_stop_reason.empty())
      out << "; the tail file's rest is not records (a torn last write, never "
             "acknowledged, or an emptied file's old bytes): "
          << p.tail_stop_reason;
    if (!p.listed && r.has_manifest)
      out << " (not listed: listed at the next start)";
    out << '\n';
  }
  for (const auto& l : r.leftovers)
    out << "leftover " << l << " (an interrupted handoff; removed at the next start)\n";
  out << (r.damaged() ? "DAMAGED: see docs/NODE.md, \"Damaged storage\"\n"
                      : "ok: nothing damaged found\n");
  return out.str();
}

} // namespace tally
