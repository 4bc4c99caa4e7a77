// libFuzzer target: the journal's meta "checkpoint" value (checkpoint_state,
// docs/FORMAT.md), read back from LMDB at open. decode_checkpoint_state()
// has internal linkage in journal/journal.cpp, so this file compiles that
// .cpp into itself (the archive's copy of journal.o is then not linked).
// Whatever decodes re-encodes to bytes that decode to the same re-encoding.
#include "journal/journal.cpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto s = tally::decode_checkpoint_state(in)) {
    auto bytes = tally::encode_checkpoint_state(s.value());
    auto again = tally::decode_checkpoint_state(bytes);
    if (!again || tally::encode_checkpoint_state(again.value()) != bytes) std::abort();
    if (again.value().sequence != s.value().sequence || !(again.value().time == s.value().time))
      std::abort();
  }
  return 0;
}
