#include "actors/handoff.hpp"

#include "actors/copy_leftovers.hpp"
#include "journal/file_sync.hpp"
#include "journal/partition_manifest.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace tally {

namespace fs = std::filesystem;

namespace {

bool plain_name(const std::string& f) {
  return !f.empty() && f.size() < 256 && f.find('/') == std::string::npos
         && f != "." && f != "..";
}

} // namespace

std::string partition_dir(const std::string& root, std::uint32_t p) {
  return (fs::path{root} / "partitions" / std::to_string(p)).string();
}

expected<std::vector<std::string>> partition_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator i{dir, ec}, end; !ec && i != end; i.increment(ec)) {
    auto name = i->path().filename().string();
    if (i->is_regular_file() && name != "lock.mdb")
      out.push_back(name);
  }
  if (ec)
    return make_error(errc::io_error, "cannot list " + dir + ": " + ec.message());
  if (std::find(out.begin(), out.end(), "data.mdb") == out.end())
    return make_error(errc::not_found, dir + " holds no data.mdb");
  std::sort(out.begin(), out.end());
  return out;
}

expected<std::string> read_chunk(const std::string& dir, const std::string& file,
                                 std::uint64_t offset) {
  auto path = (fs::path{dir} / file).string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return io_failure("cannot open", path, errno);
  std::string buf(handoff_chunk_size, '\0');
  std::size_t got = 0;
  while (got < buf.size()) {
    auto n = ::pread(fd, buf.data() + got, buf.size() - got,
                     static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return io_failure("cannot read", path, err);
    }
    if (n == 0)
      break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  buf.resize(got);
  return buf;
}

std::string incoming_partition::dir() const {
  return partition_dir(root_, p_) + ".incoming";
}

expected<incoming_partition> incoming_partition::begin(const std::string& root,
                                                       std::uint32_t p) {
  incoming_partition in{root, p};
  std::error_code ec;
  fs::remove_all(in.dir(), ec);
  if (!ec)
    fs::create_directories(in.dir(), ec);
  if (ec)
    return make_error(errc::io_error, "cannot make " + in.dir() + ": " + ec.message());
  return in;
}

status incoming_partition::write(const std::string& file, std::uint64_t offset,
                                 const std::string& bytes) {
  if (!plain_name(file))
    return make_error(errc::invalid_argument, "bad handoff file name '" + file + "'");
  auto path = (fs::path{dir()} / file).string();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_failure("cannot open", path, errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    auto n = ::pwrite(fd, bytes.data() + done, bytes.size() - done,
                      static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return io_failure("cannot write", path, err);
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (std::find(files_.begin(), files_.end(), file) == files_.end())
    files_.push_back(file);
  return {};
}

expected<bool> incoming_partition::finish() {
  auto target = partition_dir(root_, p_);
  std::error_code ec;
  if (fs::exists(target, ec)) {
    fs::remove_all(dir(), ec);
    return false;
  }
  for (const auto& f : files_)
    if (auto st = sync_path((fs::path{dir()} / f).string(), false); !st)
      return st.err();
  if (auto st = sync_path(dir(), true); !st)
    return st.err();
  fs::rename(dir(), target, ec);
  if (ec)
    return make_error(errc::io_error, "cannot rename " + dir() + " to " + target
                                        + ": " + ec.message());
  if (auto st = sync_path((fs::path{root_} / "partitions").string(), true); !st)
    return st.err();
  // Listed only once whole and in place (partition_manifest.hpp).
  if (auto st = manifest_add(root_, p_); !st)
    return st.err();
  return true;
}

expected<std::size_t> remove_handoff_leftovers(const std::string& root) {
  std::size_t n = 0;
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (fs::directory_iterator i{fs::path{root} / "partitions", ec}, end;
       !ec && i != end; i.increment(ec)) {
    auto ext = i->path().extension().string();
    if (ext == ".incoming" || ext == ".old")
      doomed.push_back(i->path());
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return make_error(errc::io_error, "cannot list " + root + "/partitions: "
                                        + ec.message());
  for (const auto& d : doomed) {
    fs::remove_all(d, ec);
    if (ec)
      return make_error(errc::io_error, "cannot remove " + d.string() + ": "
                                          + ec.message());
    ++n;
  }
  return n;
}

status remove_partition_dir(const std::string& root, std::uint32_t p) {
  // Unlisted before anything is deleted (partition_manifest.hpp).
  if (auto st = manifest_remove(root, p); !st)
    return st;
  auto dir = partition_dir(root, p);
  auto old = dir + ".old";
  std::error_code ec;
  fs::remove_all(old, ec);
  fs::rename(dir, old, ec);
  if (ec)
    return make_error(errc::io_error, "cannot rename " + dir + ": " + ec.message());
  fs::remove_all(old, ec);
  if (ec)
    return make_error(errc::io_error, "cannot remove " + old + ": " + ec.message());
  return {};
}

expected<std::string> set_partition_aside(const std::string& root, std::uint32_t p,
                                          std::uint64_t now_us) {
  if (auto st = manifest_remove(root, p); !st)
    return st.err();
  const auto from = partition_dir(root, p);
  const fs::path to{stale_copy_path(root, p, "partitions", now_us)};
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!ec)
    fs::rename(from, to, ec);
  if (ec)
    return make_error(errc::io_error,
                      "cannot move " + from + " to " + to.string() + ": " + ec.message());
  if (auto st = sync_path(to.parent_path().string(), true); !st)
    return st.err();
  if (auto st = sync_path((fs::path{root} / "partitions").string(), true); !st)
    return st.err();
  return to.string();
}

status keep_partition_as_copy(const std::string& root, std::uint32_t p) {
  const fs::path copies = fs::path{root} / "replicas";
  const auto to = copies / std::to_string(p);
  std::error_code ec;
  if (fs::exists(to, ec))
    return make_error(errc::invalid_argument, to.string() + " exists");
  fs::create_directories(copies, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create " + copies.string() + ": " + ec.message());
  if (auto st = manifest_remove(root, p); !st)
    return st;
  const auto from = partition_dir(root, p);
  fs::rename(from, to, ec);
  if (ec)
    return make_error(errc::io_error,
                      "cannot rename " + from + " to " + to.string() + ": " + ec.message());
  if (auto st = sync_path(copies.string(), true); !st)
    return st;
  return sync_path((fs::path{root} / "partitions").string(), true);
}

} // namespace tally
