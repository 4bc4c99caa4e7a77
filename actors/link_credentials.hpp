// TLS credentials for node links made from a shared cluster secret
// (tallyd --cluster-secret-file; docs/SECURITY.md, "Node links"). Plain
// C++ and OpenSSL's C API, no CAF.
//
// Every member derives the same cluster CA from the secret: an Ed25519 key
// whose 32-byte seed is HMAC-SHA256(secret, "tally cluster CA v1"), and a
// self-signed CA certificate with fixed contents (Ed25519 signatures are
// deterministic, so every member writes the same bytes). A node makes
// itself an Ed25519 key at its first start (kept in its data dir) and a
// certificate for it signed by that CA; a restart with the same secret
// writes nothing.
// CAF's OpenSSL module then runs node links inside TLS with mutual
// certificate checks, exactly as with --tls-cert/--tls-key/--tls-ca: a peer
// proves that it knows the secret by presenting a certificate only the CA
// key could sign, and the secret itself never goes on the wire.
#pragma once

#include <string>

#include "common/expected.hpp"

namespace tally {

/// Fewest bytes a cluster secret may have: 32 bytes (256 bits) of
/// randomness, or a longer passphrase; `openssl rand -hex 32` gives 64.
constexpr std::size_t min_cluster_secret_bytes = 32;

/// The secret in `path` (trailing whitespace and newlines dropped).
/// errc::bad_config, naming the file and what to do, when it is missing,
/// not a regular file, readable or writable by group or others (mode
/// 0600 or stricter is required, as ssh does for keys), or shorter than
/// min_cluster_secret_bytes.
expected<std::string> read_cluster_secret(const std::string& path);

/// Creates `path` (it must not exist) with mode 0600 holding 32 random
/// bytes from the kernel as 64 hex digits and a newline, synced.
/// errc::io_error naming the file on failure.
status create_cluster_secret(const std::string& path);

/// The files CAF's OpenSSL module reads (actor_system_config's
/// openssl_certificate, openssl_key, openssl_cafile).
struct link_credential_files {
  std::string cert;
  std::string key;
  std::string ca;
};

/// Writes the cluster CA certificate, the node key (the one already in
/// `dir`, else a new one; mode 0600) and its certificate signed by the CA
/// into `dir` (created with mode 0700 if missing). Files that already hold
/// these bytes are not written. errc::io_error on failure, with OpenSSL's
/// reason.
expected<link_credential_files> write_link_credentials(const std::string& secret,
                                                       const std::string& dir);

/// The first 16 hex digits of SHA-256 over the CA's public key: names the
/// cluster in logs and in the CA's subject, never reveals the secret.
std::string cluster_fingerprint(const std::string& secret);

} // namespace tally
