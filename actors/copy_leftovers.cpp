#include "actors/copy_leftovers.hpp"

#include <filesystem>
#include <string>
#include <system_error>

#include "journal/file_sync.hpp"

namespace tally {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// What a name in a copy folder is: a store's leftover of one kind, or none.
enum class leftover { none, scratch, replaced };

leftover kind_of(const std::string& name) {
  if (ends_with(name, ".copy-in") || name.find(".copy-for-") != std::string::npos
      || ends_with(name, ".dropped"))
    return leftover::scratch;
  if (ends_with(name, ".replaced"))
    return leftover::replaced;
  return leftover::none;
}

status tidy_folder(const fs::path& root, const std::string& folder, copy_leftovers_report& r) {
  const auto dir = root / folder;
  std::error_code ec;
  std::vector<fs::path> scratch, replaced;
  for (fs::directory_iterator i{dir, ec}, end; !ec && i != end; i.increment(ec)) {
    switch (kind_of(i->path().filename().string())) {
      case leftover::scratch: scratch.push_back(i->path()); break;
      case leftover::replaced: replaced.push_back(i->path()); break;
      case leftover::none: break;
    }
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return make_error(errc::io_error, "cannot list " + dir.string() + ": " + ec.message());
  auto remove = [&](const fs::path& p) -> status {
    fs::remove_all(p, ec);
    if (ec)
      return make_error(errc::io_error, "cannot remove " + p.string() + ": " + ec.message());
    r.removed.push_back(folder + "/" + p.filename().string());
    return {};
  };
  // The .replaced ones first: a swap cut between its renames still has its
  // received copy in .copy-in, deleted after the old store is back.
  for (const auto& old : replaced) {
    auto name = old.filename().string();
    const auto store = dir / name.substr(0, name.size() - std::string{".replaced"}.size());
    if (fs::exists(store, ec)) {
      if (auto s = remove(old); !s)
        return s;
      continue;
    }
    fs::rename(old, store, ec);
    if (ec)
      return make_error(errc::io_error, "cannot rename " + old.string() + " back to "
                                          + store.string() + ": " + ec.message());
    if (auto s = sync_path(dir.string(), true); !s)
      return s;
    r.restored.push_back(folder + "/" + store.filename().string());
  }
  for (const auto& p : scratch)
    if (auto s = remove(p); !s)
      return s;
  return {};
}

} // namespace

std::string stale_copy_path(const std::string& root, std::uint32_t p, const std::string& folder,
                            std::uint64_t now_us) {
  return (fs::path{root} / "stale"
          / (std::to_string(p) + "." + folder + "." + std::to_string(now_us)))
    .string();
}

expected<std::string> drop_copy_folder(const std::string& root, std::uint32_t p,
                                       bool keep_aside, std::uint64_t now_us) {
  const auto dir = fs::path{root} / "replicas";
  const auto store = dir / std::to_string(p);
  std::error_code ec;
  if (!fs::exists(store, ec))
    return make_error(errc::not_found, "no copy " + store.string());
  const auto to = keep_aside ? fs::path{stale_copy_path(root, p, "replicas", now_us)}
                             : dir / (std::to_string(p) + ".dropped");
  if (keep_aside)
    fs::create_directories(to.parent_path(), ec);
  else
    fs::remove_all(to, ec); // a leftover of an earlier drop of p
  if (!ec)
    fs::rename(store, to, ec);
  if (ec)
    return make_error(errc::io_error, "cannot move " + store.string() + " to " + to.string()
                                        + ": " + ec.message());
  if (auto s = sync_path(dir.string(), true); !s)
    return s.err();
  if (keep_aside)
    return to.string();
  fs::remove_all(to, ec);
  if (ec)
    return make_error(errc::io_error, "cannot remove " + to.string() + ": " + ec.message());
  return std::string{"deleted"};
}

expected<std::vector<std::string>> expire_stale_copies(const std::string& root,
                                                       std::uint64_t keep_us,
                                                       std::uint64_t now_us) {
  const auto dir = fs::path{root} / "stale";
  std::error_code ec;
  std::vector<fs::path> old;
  for (fs::directory_iterator i{dir, ec}, end; !ec && i != end; i.increment(ec)) {
    const auto name = i->path().filename().string();
    const auto dot = name.rfind('.');
    if (dot == std::string::npos || dot + 1 == name.size()
        || name.find_first_not_of("0123456789", dot + 1) != std::string::npos
        || name.size() - dot - 1 > 19)
      continue; // not a name tallyd gave
    const std::uint64_t at = std::stoull(name.substr(dot + 1));
    if (at < now_us && now_us - at > keep_us)
      old.push_back(i->path());
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return make_error(errc::io_error, "cannot list " + dir.string() + ": " + ec.message());
  std::vector<std::string> removed;
  for (const auto& p : old) {
    fs::remove_all(p, ec);
    if (ec)
      return make_error(errc::io_error, "cannot remove " + p.string() + ": " + ec.message());
    removed.push_back(p.filename().string());
  }
  return removed;
}

expected<copy_leftovers_report> tidy_copy_leftovers(const std::string& root) {
  copy_leftovers_report r;
  for (const char* folder : {"partitions", "replicas"})
    if (auto s = tidy_folder(fs::path{root}, folder, r); !s)
      return s.err();
  return r;
}

} // namespace tally
