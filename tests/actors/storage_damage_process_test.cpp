// Issue 18, "storage that fails loudly", through the real tallyd: a node
// whose data dir lost or damaged a partition's data refuses to start,
// naming the partition, instead of serving 0 for its keys (emptied or
// deleted file, deleted folder), dying of SIGBUS (truncated file) or of a
// bare LMDB assertion (zeroed page). Each case damages a copy of one data
// dir that held acknowledged increments in every partition.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "journal/codec.hpp"
#include "journal/partition_manifest.hpp"
#include "journal/lmdb_file_check.hpp"
#include "journal/storage_faults.hpp"
#include "journal/write_ahead_tail.hpp"
#include "ring/partition.hpp"
#include "tests/actors/node_process_support.hpp"
#include "tests/support/child_process.hpp"

using namespace tally;
using namespace tally::test;
namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t q = 4;

// A key of the "bucket" bucket on partition p of a q-partition ring.
std::string key_on(std::uint32_t p) {
  for (int i = 0;; ++i) {
    auto k = "k" + std::to_string(i);
    if (*partition_for("bucket", k, q) == p)
      return k;
  }
}

bound_object counter(const std::string& k) {
  return bound_object{object_key{"bucket", k}, crdt_type::counter};
}

// The value of each partition's key, read at one snapshot through `port`.
std::vector<std::int64_t> values_of_every_partition(std::uint16_t port) {
  wire_client c{port};
  static_read_objects_req rd;
  for (std::uint32_t p = 0; p < q; ++p)
    rd.objects.push_back(counter(key_on(p)));
  auto got = c.call(rd);
  BOOST_REQUIRE(got && std::holds_alternative<static_read_objects_resp>(*got));
  std::vector<std::int64_t> out;
  for (const auto& v : std::get<static_read_objects_resp>(*got).objects.values)
    out.push_back(std::get<std::int64_t>(v));
  return out;
}

// What a tallyd run on `dir` that stops by itself printed (killed after
// `limit` if it does not: it started serving).
struct run_result {
  int exit_code = -1; // -1: still running at the limit
  std::string output;
};

run_result run_on(const std::string& dir, const std::string& work) {
  fs::create_directories(work);
  child_process p{TALLYD_PATH,
                  {"--data-dir", dir, "--port", "0", "--partitions", std::to_string(q),
                   "--log-level", "warn"},
                  work};
  run_result r;
  BOOST_REQUIRE(p.started());
  r.exit_code = p.wait(std::chrono::milliseconds{5000});
  r.output = slurp(p.err) + slurp(p.out);
  return r;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A data dir whose four partitions each hold +5 on their key.
struct populated {
  temp_dir root;
  std::string dir() const { return root.path + "/data"; }
  populated() {
    server s{dir(), "full"};
    BOOST_REQUIRE(s.start({"--partitions", std::to_string(q)}));
    wire_client c{s.port};
    static_update_objects_req up;
    for (std::uint32_t p = 0; p < q; ++p)
      up.updates.push_back(update_op{counter(key_on(p)), counter_op{counter_update{5}, {}}});
    auto r = c.call(up);
    BOOST_REQUIRE(r && std::holds_alternative<commit_resp>(*r));
    BOOST_REQUIRE(std::get<commit_resp>(*r).success);
    BOOST_REQUIRE(s.stop(SIGTERM) == 0);
  }
  // A copy to damage.
  std::string copy(const std::string& name) const {
    auto to = root.path + "/" + name;
    fs::copy(dir(), to, fs::copy_options::recursive);
    return to;
  }
};

std::string data_file(const std::string& dir, std::uint32_t p) {
  return dir + "/partitions/" + std::to_string(p) + "/" + lmdb_data_file;
}

// Zeroes every page of partition p's data file but the two meta pages.
void zero_pages_after_the_meta_pages(const std::string& dir, std::uint32_t p) {
  auto head = check_lmdb_file(dir + "/partitions/" + std::to_string(p), true);
  BOOST_REQUIRE(head);
  int fd = ::open(data_file(dir, p).c_str(), O_WRONLY);
  BOOST_REQUIRE(fd >= 0);
  std::string zeros(head->needed_bytes() - 2ull * head->page_size, '\0');
  BOOST_REQUIRE(::pwrite(fd, zeros.data(), zeros.size(), 2 * head->page_size)
                == static_cast<ssize_t>(zeros.size()));
  ::close(fd);
}

} // namespace

BOOST_AUTO_TEST_SUITE(storage_damage_at_start)

BOOST_AUTO_TEST_CASE(the_manifest_lists_every_partition_the_node_holds) {
  populated base;
  auto m = load_manifest(base.dir());
  BOOST_REQUIRE(m);
  BOOST_REQUIRE(m->has_value());
  BOOST_TEST(m->value() == (std::set<std::uint32_t>{0, 1, 2, 3}));
  // The undamaged data dir starts and serves what it held (the control).
  server s{base.dir(), "full"};
  BOOST_REQUIRE(s.start({"--partitions", std::to_string(q)}));
  for (auto v : values_of_every_partition(s.port))
    BOOST_TEST(v == 5);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

BOOST_AUTO_TEST_CASE(an_emptied_data_file_is_a_refusal_naming_the_partition) {
  populated base;
  auto dir = base.copy("emptied");
  fs::resize_file(data_file(dir, 2), 0);
  auto r = run_on(dir, base.root.path + "/run");
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(has(r.output, "partition 2"), r.output);
  BOOST_TEST(has(r.output, "empty (0 bytes)"), r.output);
  // Nothing was re-created over it.
  BOOST_TEST(fs::file_size(data_file(dir, 2)) == 0u);
}

BOOST_AUTO_TEST_CASE(a_deleted_data_file_is_a_refusal_naming_the_partition) {
  populated base;
  auto dir = base.copy("deleted-file");
  fs::remove(data_file(dir, 1));
  auto r = run_on(dir, base.root.path + "/run");
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(has(r.output, "partition 1"), r.output);
  BOOST_TEST(has(r.output, "missing (deleted?)"), r.output);
  BOOST_TEST(!fs::exists(data_file(dir, 1)));
}

BOOST_AUTO_TEST_CASE(a_deleted_folder_is_a_refusal_until_the_loss_is_accepted) {
  populated base;
  auto dir = base.copy("deleted-folder");
  fs::remove_all(dir + "/partitions/3");
  auto r = run_on(dir, base.root.path + "/run");
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(has(r.output, "partition 3: listed in"), r.output);
  BOOST_TEST(has(r.output, "is missing (deleted?)"), r.output);
  // The operator accepts the loss as the message says: the line goes.
  BOOST_REQUIRE(save_manifest(dir, {0, 1, 2}));
  server s{dir, "full"};
  BOOST_REQUIRE(s.start({"--partitions", std::to_string(q)}));
  auto v = values_of_every_partition(s.port);
  BOOST_REQUIRE(v.size() == q);
  BOOST_TEST(v[0] == 5);
  BOOST_TEST(v[3] == 0); // lost, knowingly
  BOOST_TEST(s.stop(SIGTERM) == 0);
  auto m = load_manifest(dir);
  BOOST_REQUIRE(m && m->has_value());
  BOOST_TEST(m->value().count(3) == 1u); // re-created, listed again
}

BOOST_AUTO_TEST_CASE(a_truncated_data_file_is_a_refusal_not_a_bus_error) {
  populated base;
  auto dir = base.copy("truncated");
  auto file = data_file(dir, 0);
  fs::resize_file(file, fs::file_size(file) / 2);
  auto r = run_on(dir, base.root.path + "/run");
  BOOST_TEST(r.exit_code == 1, r.output); // was killed by SIGBUS
  BOOST_TEST(has(r.output, "partition 0"), r.output);
  BOOST_TEST(has(r.output, "truncated"), r.output);
}

BOOST_AUTO_TEST_CASE(zeroed_pages_stop_the_start_with_the_partition_named) {
  populated base;
  auto dir = base.copy("zeroed");
  // Every page after the two meta pages: the trees recovery walks are gone.
  zero_pages_after_the_meta_pages(dir, 1);
  auto r = run_on(dir, base.root.path + "/run");
  // LMDB reports it (exit 1, "cannot start") or asserts (exit 3): either
  // way with the partition's folder named, never a bare SIGABRT.
  BOOST_TEST((r.exit_code == 1 || r.exit_code == storage_damaged_exit_code), r.output);
  BOOST_TEST(has(r.output, "partitions/1"), r.output);
  BOOST_TEST((has(r.output, "corrupt") || has(r.output, "storage damaged")), r.output);
}

// `tally inspect DATA-DIR` finds, offline, what tallyd refuses; --deep
// also reads every page, which finds zeroed pages the headers do not show.
BOOST_AUTO_TEST_CASE(tally_inspect_names_the_damage_offline) {
  populated base;
  auto inspect = [&](std::vector<std::string> args) {
    auto work = base.root.path + "/cli";
    fs::create_directories(work);
    args.insert(args.begin(), "inspect");
    child_process p{TALLY_CLI_PATH, args, work};
    BOOST_REQUIRE(p.started());
    run_result r;
    r.exit_code = p.wait(std::chrono::milliseconds{20000});
    r.output = slurp(p.out) + slurp(p.err);
    return r;
  };
  auto whole = inspect({"--deep", base.dir()});
  BOOST_TEST(whole.exit_code == 0, whole.output);
  BOOST_TEST(has(whole.output, "partition 3: ok"), whole.output);
  BOOST_TEST(has(whole.output, "entries read"), whole.output);
  auto emptied = base.copy("emptied");
  fs::resize_file(data_file(emptied, 2), 0);
  auto r = inspect({emptied});
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(has(r.output, "partition 2: DAMAGED"), r.output);
  BOOST_TEST(has(r.output, "partition 1: ok"), r.output);
  auto zeroed = base.copy("zeroed");
  zero_pages_after_the_meta_pages(zeroed, 1);
  auto shallow = inspect({zeroed}); // the headers are whole
  BOOST_TEST(shallow.exit_code == 0, shallow.output);
  auto deep = inspect({"--deep", zeroed});
  BOOST_TEST(deep.exit_code == 1, deep.output);
  BOOST_TEST(has(deep.output, "partition 1: DAMAGED"), deep.output);
  BOOST_TEST(has(deep.output, "damaged page"), deep.output);
  auto not_a_dir = inspect({base.root.path + "/nothing"});
  BOOST_TEST(not_a_dir.exit_code == 2, not_a_dir.output);
  // What a write-ahead tail holds, and a torn end, are shown, not damage.
  auto tailed = base.copy("tailed");
  {
    std::string bytes;
    for (lsn at = 100; at <= 102; ++at) {
      update_record u;
      u.tx = tx_id{9, at};
      u.key = object_key{"bucket", "k"};
      u.type = crdt_type::counter;
      u.effect = counter_effect{1};
      append_tail_entry(bytes, at, encode_record(journal_record{u}));
    }
    bytes += "torn";
    std::ofstream out{tailed + "/partitions/2/tail.log", std::ios::binary | std::ios::trunc};
    out << bytes;
  }
  auto t = inspect({tailed});
  BOOST_TEST(t.exit_code == 0, t.output);
  BOOST_TEST(has(t.output, "write-ahead tail: 3 records, LSN 100-102"), t.output);
  BOOST_TEST(has(t.output, "cut short"), t.output);
}

BOOST_AUTO_TEST_CASE(a_damaged_manifest_is_a_refusal_naming_its_line) {
  populated base;
  auto dir = base.copy("bad-manifest");
  {
    std::ofstream out{manifest_path(dir), std::ios::app};
    out << "partition two\n";
  }
  auto r = run_on(dir, base.root.path + "/run");
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(has(r.output, "MANIFEST: line 6 is not \"partition N\""), r.output);
}

BOOST_AUTO_TEST_SUITE_END()
