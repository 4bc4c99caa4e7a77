// The node-to-node message encoding (actors/wire.hpp) and the handoff files
// (actors/handoff.hpp): plain functions, tested directly.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <random>
#include <string>

#include <sys/resource.h>

#include "actors/handoff.hpp"
#include "journal/partition_manifest.hpp"
#include "actors/wire.hpp"

using namespace tally;

namespace {

struct temp_root {
  std::string path;
  temp_root() {
    std::random_device rd;
    path = (std::filesystem::temp_directory_path()
            / ("tally-handoff-" + std::to_string(rd())))
             .string();
    std::filesystem::create_directories(path + "/partitions");
  }
  ~temp_root() { std::filesystem::remove_all(path); }
};

std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(wire_tests)

// Every CRDT type in the messages: effects in updates and read items,
// values and encoded objects in read replies; counters' bytes unchanged.
BOOST_AUTO_TEST_CASE(messages_of_every_crdt_type_round_trip) {
  downstream_context ctx{token_source{5}, 100};
  auto set = *crdt_object::make(crdt_type::orset);
  auto add = *set.prepare(crdt_update{set_update{set_add{{"a", "b"}}}}, ctx);
  BOOST_REQUIRE(set.apply(add));
  auto reg = *crdt_object::make(crdt_type::lwwreg);
  auto put = *reg.prepare(crdt_update{register_update{register_assign{"v", std::nullopt}}}, ctx);

  part_prepare_req p;
  p.tx = tx_id{1, 2};
  p.updates = {tx_update{object_key{"b", "s"}, crdt_type::orset, add, std::nullopt},
               tx_update{object_key{"b", "r"}, crdt_type::lwwreg, put, std::nullopt},
               tx_update{object_key{"b", "c"}, crdt_type::counter, counter_effect{3}, op_id{1, 1}}};
  auto back = decode_wire<part_prepare_req>(encode_wire(p));
  BOOST_REQUIRE(back);
  BOOST_REQUIRE(back->updates.size() == 3u);
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST((back->updates[i].effect == p.updates[i].effect));

  part_read_req rq;
  rq.snapshot = vector_clock{{1, 9}};
  rq.items = {read_item{object_key{"b", "s"}, crdt_type::orset, {add}, true},
              read_item{object_key{"b", "c"}, crdt_type::counter, {counter_effect{1}}, false}};
  auto rq2 = decode_wire<part_read_req>(encode_wire(rq));
  BOOST_REQUIRE(rq2);
  BOOST_TEST(rq2->items[0].want_state);
  BOOST_TEST(!rq2->items[1].want_state);
  BOOST_TEST((rq2->items[0].own == rq.items[0].own));

  part_read_resp rs;
  rs.values = {set.value(), crdt_value{std::int64_t{-4}}, crdt_value{true}};
  rs.states = {set.encode(), "", ""};
  auto rs2 = decode_wire<part_read_resp>(encode_wire(rs));
  BOOST_REQUIRE(rs2);
  BOOST_TEST((rs2->values == rs.values));
  BOOST_TEST((rs2->states == rs.states));
  BOOST_TEST((crdt_object::decode(rs2->states[0]).value() == set));

  // Every truncation of a message with format-2 effects is refused.
  auto bytes = encode_wire(p);
  for (std::size_t n = 1; n < bytes.size(); ++n)
    BOOST_TEST(!decode_wire<part_prepare_req>(bytes.substr(0, n)));
}

BOOST_AUTO_TEST_CASE(partition_messages_round_trip) {
  part_prepare_req p;
  p.tx = tx_id{7, 9};
  p.snapshot_time = 123456;
  p.two_phase = true;
  p.updates.push_back(tx_update{object_key{"b", "k"}, crdt_type::fatcounter,
                                counter_effect{-5}, op_id{3, 4}});
  p.updates.push_back(tx_update{object_key{"b", "j"}, crdt_type::counter,
                                counter_effect{2}, std::nullopt});
  auto back = decode_wire<part_prepare_req>(encode_wire(p));
  BOOST_REQUIRE(back);
  BOOST_TEST(back->tx == p.tx);
  BOOST_TEST(back->snapshot_time == p.snapshot_time);
  BOOST_TEST(back->two_phase);
  BOOST_REQUIRE(back->updates.size() == 2u);
  BOOST_TEST(back->updates[0].key == p.updates[0].key);
  BOOST_TEST((back->updates[0].type == crdt_type::fatcounter));
  BOOST_TEST((back->updates[0].effect == p.updates[0].effect));
  BOOST_TEST((back->updates[0].op == p.updates[0].op));
  BOOST_TEST(!back->updates[1].op);

  part_read_req r;
  r.snapshot = vector_clock{{1, 99}};
  r.items.push_back(read_item{object_key{"b", "k"}, crdt_type::counter, {counter_effect{1}}});
  auto rb = decode_wire<part_read_req>(encode_wire(r));
  BOOST_REQUIRE(rb);
  BOOST_TEST((rb->snapshot == r.snapshot));
  BOOST_TEST(rb->items.size() == 1u);

  part_read_resp resp{make_error(errc::wrong_type, "no"), {}};
  auto respb = decode_wire<part_read_resp>(encode_wire(resp));
  BOOST_REQUIRE(respb);
  BOOST_REQUIRE(respb->err);
  BOOST_TEST((respb->err->code() == errc::wrong_type));
}

// Wire version 3 (issue 13): a prepare names its participants and
// coordinator, a find answer says "aborted", a stale answer carries each
// transaction's participants, and a coordinator is asked to decide.
// Version 4: a find answer says "fenced", a commit "from recovery"
// (docs/RELIABILITY.md, "The participant fence"). Version 5: a replication
// batch carries its number and is answered by r_acked (no request timer).
BOOST_AUTO_TEST_CASE(resolution_messages_round_trip) {
  BOOST_TEST(wire_version == 5);
  part_prepare_req p;
  p.tx = tx_id{7, 9};
  p.two_phase = true;
  p.participants = {1, 4, 9};
  p.coordinator = "tally@127.0.0.1:9100";
  auto pb = decode_wire<part_prepare_req>(encode_wire(p));
  BOOST_REQUIRE(pb);
  BOOST_TEST((pb->participants == p.participants));
  BOOST_TEST(pb->coordinator == p.coordinator);

  part_find_resp f{std::nullopt, 0, 17, true};
  auto fb = decode_wire<part_find_resp>(encode_wire(f));
  BOOST_REQUIRE(fb);
  BOOST_TEST(fb->aborted);
  BOOST_TEST(fb->folded_through == 17u);
  BOOST_TEST(!fb->fenced);
  part_find_resp fenced{std::nullopt, 0, 3, false, true};
  auto fenb = decode_wire<part_find_resp>(encode_wire(fenced));
  BOOST_REQUIRE(fenb);
  BOOST_TEST(fenb->fenced);
  auto rc = decode_wire<part_commit_req>(encode_wire(part_commit_req{tx_id{1, 2}, 42, true}));
  BOOST_REQUIRE(rc);
  BOOST_TEST(rc->from_recovery);

  part_stale_resp st;
  st.txs = {tx_id{1, 1}, tx_id{1, 2}};
  st.prepare_times = {5, 6};
  st.participants = {{0, 2}, {}};
  st.coordinators = {"tally@a:1", ""};
  auto sb = decode_wire<part_stale_resp>(encode_wire(st));
  BOOST_REQUIRE(sb);
  BOOST_REQUIRE(sb->participants.size() == 2u);
  BOOST_TEST((sb->participants[0] == std::vector<std::uint32_t>{0, 2}));
  BOOST_TEST(sb->coordinators[0] == "tally@a:1");

  auto rq = decode_wire<tx_decide_req>(encode_wire(tx_decide_req{tx_id{3, 4}, true}));
  BOOST_REQUIRE(rq);
  BOOST_TEST((rq->tx == tx_id{3, 4}));
  BOOST_TEST(rq->force);
  auto rs = decode_wire<tx_decide_resp>(encode_wire(tx_decide_resp{1, 99}));
  BOOST_REQUIRE(rs);
  BOOST_TEST(rs->state == 1);
  BOOST_TEST(rs->commit_time == 99u);
  // A state no coordinator answers is corrupt, not a guess.
  auto bad = encode_wire(tx_decide_resp{1, 99});
  bad[2] = 4; // after the version byte and the endianness byte
  BOOST_TEST(decode_wire<tx_decide_resp>(bad).err().code() == errc::corrupt);
  // A version-3 message is refused, naming both versions.
  auto old = encode_wire(part_commit_req{tx_id{1, 2}, 42});
  old[0] = 3;
  auto refused = decode_wire<part_commit_req>(old);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.err().message().find("version 3") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_bytes_are_corrupt_not_a_crash) {
  auto good = encode_wire(part_commit_req{tx_id{1, 2}, 42});
  auto other_version = good;
  other_version[0] = static_cast<char>(wire_version + 1);
  auto v = decode_wire<part_commit_req>(other_version);
  BOOST_REQUIRE(!v);
  BOOST_TEST((v.err().code() == errc::corrupt));
  BOOST_TEST(v.err().message().find("version") != std::string::npos);
  BOOST_TEST(!decode_wire<part_commit_req>(""));
  BOOST_TEST(!decode_wire<part_commit_req>(good.substr(0, good.size() - 1)));
  BOOST_TEST(!decode_wire<part_commit_req>(good + "x"));
  // Every truncation of a prepare with an unknown CRDT type byte fails cleanly.
  part_prepare_req p;
  p.updates.push_back(tx_update{object_key{"b", "k"}, crdt_type::counter,
                                counter_effect{1}, std::nullopt});
  auto bytes = encode_wire(p);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    BOOST_TEST(!decode_wire<part_prepare_req>(bytes.substr(0, n)));
}

// fuzz_wire's first finding: a length claimed far beyond the message was
// allocated (and zeroed) before the read failed, so a few bytes could make
// a node take gigabytes. The decoder refuses such a length before
// allocating: the claim of 1 GiB below must not raise the peak RSS.
BOOST_AUTO_TEST_CASE(a_length_beyond_the_message_is_refused_before_allocating) {
  const std::string marker = "length-marker-x";
  auto bytes = encode_wire(part_ack{error{errc::unavailable, marker}});
  std::string length_le(8, '\0');
  length_le[0] = static_cast<char>(marker.size());
  auto at = bytes.find(length_le + marker);
  BOOST_REQUIRE(at != std::string::npos);
  const std::uint64_t one_gib = std::uint64_t{1} << 30;
  for (int i = 0; i < 8; ++i)
    bytes[at + static_cast<std::size_t>(i)] = static_cast<char>((one_gib >> (8 * i)) & 0xff);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  auto m = decode_wire<part_ack>(bytes);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  BOOST_REQUIRE(!m);
  BOOST_TEST((m.err().code() == errc::corrupt));
  BOOST_TEST(m.err().message().find("exceeds") != std::string::npos, m.err().message());
  const long grown_kib = after.ru_maxrss - before.ru_maxrss;
  BOOST_TEST(grown_kib < 64 * 1024, "peak RSS grew by " << grown_kib << " KiB");
}

// fuzz_wire's second finding: a bool byte other than 0 or 1 (here the
// "nullopt" flag of part_ack's optional error) was copied into a bool,
// which is undefined behaviour; it is refused as corrupt.
BOOST_AUTO_TEST_CASE(a_bool_byte_other_than_0_or_1_is_corrupt) {
  auto bytes = encode_wire(part_ack{});
  BOOST_REQUIRE(bytes.size() == 3u); // version, endianness, nullopt flag
  BOOST_REQUIRE(decode_wire<part_ack>(bytes));
  bytes[2] = static_cast<char>(157);
  auto m = decode_wire<part_ack>(bytes);
  BOOST_REQUIRE(!m);
  BOOST_TEST((m.err().code() == errc::corrupt));
  BOOST_TEST(m.err().message().find("bool") != std::string::npos, m.err().message());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(handoff_files_tests)

BOOST_AUTO_TEST_CASE(a_received_partition_appears_whole_under_its_name) {
  temp_root root;
  auto in = incoming_partition::begin(root.path, 5);
  BOOST_REQUIRE(in);
  std::string big(handoff_chunk_size + 10, 'x');
  big[handoff_chunk_size] = 'y';
  BOOST_REQUIRE(in->write("data.mdb", 0, big.substr(0, handoff_chunk_size)));
  // Not visible before finish().
  BOOST_TEST(!std::filesystem::exists(partition_dir(root.path, 5)));
  BOOST_REQUIRE(in->write("data.mdb", handoff_chunk_size, big.substr(handoff_chunk_size)));
  auto done = in->finish();
  BOOST_REQUIRE(done);
  BOOST_TEST(*done);
  BOOST_TEST(slurp(partition_dir(root.path, 5) + "/data.mdb") == big);
  auto files = partition_files(partition_dir(root.path, 5));
  BOOST_REQUIRE(files);
  BOOST_TEST(files->size() == 1u);
  // Chunked reads give the same bytes back.
  auto c0 = read_chunk(partition_dir(root.path, 5), "data.mdb", 0);
  auto c1 = read_chunk(partition_dir(root.path, 5), "data.mdb", handoff_chunk_size);
  auto c2 = read_chunk(partition_dir(root.path, 5), "data.mdb", big.size());
  BOOST_REQUIRE(c0);
  BOOST_REQUIRE(c1);
  BOOST_REQUIRE(c2);
  BOOST_TEST(*c0 + *c1 == big);
  BOOST_TEST(c2->empty());
  auto present = present_partitions(root.path, 8);
  BOOST_REQUIRE(present);
  BOOST_TEST(*present == std::vector<std::uint32_t>{5});
  // Listed in the manifest once in place (partition_manifest.hpp), and
  // unlisted before its folder goes.
  auto listed = load_manifest(root.path);
  BOOST_REQUIRE(listed && listed->has_value());
  BOOST_TEST(listed->value() == std::set<std::uint32_t>{5});
  BOOST_REQUIRE(remove_partition_dir(root.path, 5));
  listed = load_manifest(root.path);
  BOOST_REQUIRE(listed && listed->has_value());
  BOOST_TEST(listed->value().empty());
}

BOOST_AUTO_TEST_CASE(the_manifest_round_trips_and_refuses_what_is_not_one) {
  temp_root root;
  std::filesystem::create_directories(root.path + "/partitions");
  auto none = load_manifest(root.path);
  BOOST_REQUIRE(none);
  BOOST_TEST(!none->has_value()); // a data dir from before the manifest
  BOOST_REQUIRE(save_manifest(root.path, {0, 7, 63}));
  BOOST_REQUIRE(manifest_add(root.path, 9));
  BOOST_REQUIRE(manifest_remove(root.path, 7));
  auto m = load_manifest(root.path);
  BOOST_REQUIRE(m && m->has_value());
  BOOST_TEST(m->value() == (std::set<std::uint32_t>{0, 9, 63}));
  BOOST_TEST(slurp(manifest_path(root.path))
             == "tally partition manifest 1\npartition 0\npartition 9\npartition 63\n");
  std::ofstream{manifest_path(root.path)} << "something else\n";
  auto bad = load_manifest(root.path);
  BOOST_REQUIRE(!bad);
  BOOST_TEST(bad.err().code() == errc::corrupt);
  std::ofstream{manifest_path(root.path)} << "";
  BOOST_TEST(!load_manifest(root.path));
}

BOOST_AUTO_TEST_CASE(an_existing_partition_is_never_overwritten) {
  temp_root root;
  std::filesystem::create_directories(partition_dir(root.path, 2));
  std::ofstream{partition_dir(root.path, 2) + "/data.mdb"} << "newer";
  auto in = incoming_partition::begin(root.path, 2);
  BOOST_REQUIRE(in);
  BOOST_REQUIRE(in->write("data.mdb", 0, "older"));
  auto done = in->finish();
  BOOST_REQUIRE(done);
  BOOST_TEST(!*done);
  BOOST_TEST(slurp(partition_dir(root.path, 2) + "/data.mdb") == "newer");
  BOOST_TEST(!std::filesystem::exists(partition_dir(root.path, 2) + ".incoming"));
}

BOOST_AUTO_TEST_CASE(bad_file_names_and_leftovers) {
  temp_root root;
  auto in = incoming_partition::begin(root.path, 1);
  BOOST_REQUIRE(in);
  BOOST_TEST(!in->write("../escape", 0, "x"));
  BOOST_TEST(!in->write("", 0, "x"));
  // An interrupted reception and an interrupted removal are leftovers.
  std::filesystem::create_directories(partition_dir(root.path, 3) + ".old");
  auto removed = remove_handoff_leftovers(root.path);
  BOOST_REQUIRE(removed);
  BOOST_TEST(*removed == 2u);
  BOOST_TEST(!std::filesystem::exists(partition_dir(root.path, 1) + ".incoming"));
  // A removed partition goes whole.
  std::filesystem::create_directories(partition_dir(root.path, 4));
  BOOST_REQUIRE(remove_partition_dir(root.path, 4));
  BOOST_TEST(!std::filesystem::exists(partition_dir(root.path, 4)));
  auto none = partition_files(partition_dir(root.path, 6));
  BOOST_TEST(!none);
}

BOOST_AUTO_TEST_SUITE_END()
