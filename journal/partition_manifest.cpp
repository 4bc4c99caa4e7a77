#include "journal/partition_manifest.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

namespace tally {

namespace fs = std::filesystem;

namespace {

constexpr const char* manifest_header = "tally partition manifest 1";

std::mutex& manifest_mutex() {
  static std::mutex mu;
  return mu;
}

status io_failure(const std::string& what, const std::string& path, int err) {
  return make_error(errc::io_error, what + " " + path + ": " + std::strerror(err));
}

status sync_file(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
  if (fd < 0)
    return io_failure("cannot open", path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0)
    return io_failure("cannot sync", path, err);
  return {};
}

} // namespace

expected<std::vector<std::uint32_t>> present_partitions(const std::string& root,
                                                         std::uint32_t q) {
  std::vector<std::uint32_t> out;
  std::error_code ec;
  for (fs::directory_iterator i{fs::path{root} / "partitions", ec}, end;
       !ec && i != end; i.increment(ec)) {
    auto name = i->path().filename().string();
    if (!i->is_directory() || name.empty() || name.size() > 6
        || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    auto p = static_cast<std::uint32_t>(std::stoul(name));
    if (p < q && std::to_string(p) == name)
      out.push_back(p);
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return make_error(errc::io_error, "cannot list " + root + "/partitions: "
                                        + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

std::string manifest_path(const std::string& root) {
  return (fs::path{root} / "partitions" / "MANIFEST").string();
}

expected<std::optional<std::set<std::uint32_t>>> load_manifest(const std::string& root) {
  const auto path = manifest_path(root);
  std::ifstream in{path};
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec) && !ec)
      return std::optional<std::set<std::uint32_t>>{};
    return make_error(errc::io_error, "cannot read " + path);
  }
  std::set<std::uint32_t> parts;
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (n == 1) {
      if (line != manifest_header)
        return make_error(errc::corrupt, path + ": line 1 is not \"" + manifest_header + "\"");
      continue;
    }
    const std::string prefix = "partition ";
    auto digits = line.substr(std::min(line.size(), prefix.size()));
    if (line.compare(0, prefix.size(), prefix) != 0 || digits.empty() || digits.size() > 6
        || digits.find_first_not_of("0123456789") != std::string::npos)
      return make_error(errc::corrupt,
                        path + ": line " + std::to_string(n) + " is not \"partition N\"");
    parts.insert(static_cast<std::uint32_t>(std::stoul(digits)));
  }
  if (n == 0)
    return make_error(errc::corrupt, path + ": empty");
  return std::optional<std::set<std::uint32_t>>{std::move(parts)};
}

status save_manifest(const std::string& root, const std::set<std::uint32_t>& parts) {
  const auto path = manifest_path(root);
  const auto tmp = path + ".tmp";
  {
    std::ofstream out{tmp, std::ios::trunc};
    out << manifest_header << '\n';
    for (auto p : parts)
      out << "partition " << p << '\n';
    out.flush();
    if (!out)
      return make_error(errc::io_error, "cannot write " + tmp);
  }
  if (auto st = sync_file(tmp, false); !st)
    return st;
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return io_failure("cannot rename to", path, errno);
  return sync_file((fs::path{root} / "partitions").string(), true);
}

namespace {

template <class Change>
status change_manifest(const std::string& root, Change change) {
  std::lock_guard<std::mutex> g{manifest_mutex()};
  auto m = load_manifest(root);
  if (!m)
    return m.err();
  auto parts = m->value_or(std::set<std::uint32_t>{});
  change(parts);
  return save_manifest(root, parts);
}

} // namespace

status manifest_add(const std::string& root, std::uint32_t p) {
  return change_manifest(root, [p](std::set<std::uint32_t>& s) { s.insert(p); });
}

status manifest_remove(const std::string& root, std::uint32_t p) {
  return change_manifest(root, [p](std::set<std::uint32_t>& s) { s.erase(p); });
}

} // namespace tally
