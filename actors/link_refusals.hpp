// Logging of node links that fail TLS authentication (issue 18; docs/
// SECURITY.md, "Refused node links").
//
// CAF 0.17's OpenSSL module drops a failed handshake without a word and
// offers no hook on its SSL objects (caf::openssl::session makes its own
// SSL_CTX per connection). So this file interposes OpenSSL's SSL_new and
// SSL_free in the tallyd executable: SSL_new calls the real one (dlsym
// RTLD_NEXT) and sets an info callback on the new SSL object that records
// the peer's address and the fatal TLS alert sent or received; SSL_free logs
// a connection whose handshake never completed, then calls the real one.
// The client port's TLS sessions (tls/, made from contexts that
// is_tally_context marks) are left alone: the client server logs its own
// refusals. If the interposition were
// ever lost (a static libssl, a linker change), nothing breaks but the log:
// tests/cluster/cluster_secret_test.cpp asserts the log line.
#pragma once

#include <chrono>
#include <string>

namespace tally {

/// Starts logging refused node links (off until called; tallyd calls it
/// when its links use TLS). One warn line per peer address and `window`:
/// "refused node link from ADDR: REASON", plus how many more attempts from
/// there were refused since its last line. Thread-safe.
void log_refused_node_links(std::chrono::milliseconds window = std::chrono::seconds{10});

} // namespace tally
