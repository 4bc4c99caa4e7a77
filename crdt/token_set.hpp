// An ordered set of unique tokens and its encoding: a count, then the tokens
// in strictly increasing order. Decoding refuses unordered or repeated
// tokens, so every set has exactly one encoding and equal sets equal bytes.
#pragma once

#include <set>

#include "crdt/unique_token.hpp"

namespace tally {

using token_set = std::set<unique_token>;

inline void write_tokens(byte_writer& out, const token_set& tokens) {
  out.varint(tokens.size());
  for (const auto& t : tokens)
    write_token(out, t);
}

inline token_set read_tokens(byte_reader& in) {
  token_set out;
  const auto n = in.count(min_token_bytes);
  for (std::size_t i = 0; i < n && in.ok(); ++i) {
    auto t = read_token(in);
    if (!out.empty() && !(*out.rbegin() < t)) {
      in.fail("tokens out of order or repeated");
      break;
    }
    out.insert(out.end(), t);
  }
  return out;
}

/// Removes every token of `seen` from `tokens`.
inline void erase_tokens(token_set& tokens, const token_set& seen) {
  for (const auto& t : seen)
    tokens.erase(t);
}

} // namespace tally
