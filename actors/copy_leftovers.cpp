#include "actors/copy_leftovers.hpp"

#include <filesystem>
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
  if (ends_with(name, ".copy-in") || name.find(".copy-for-") != std::string::npos)
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

expected<copy_leftovers_report> tidy_copy_leftovers(const std::string& root) {
  copy_leftovers_report r;
  for (const char* folder : {"partitions", "replicas"})
    if (auto s = tidy_folder(fs::path{root}, folder, r); !s)
      return s.err();
  return r;
}

} // namespace tally
