// An OpenSSL context for one side of Tally's client port, made from PEM
// files (docs/SECURITY.md, "The client port"):
//
//   auto srv = tls_context::server({"node.pem", "node-key.pem", "ca.pem"});
//   auto cli = tls_context::client({"ca.pem", "", "", "db.example.org"});
//
// Both sides: TLS 1.2 or later, OpenSSL's default (secure) cipher lists, no
// renegotiation, SSL_OP_IGNORE_UNEXPECTED_EOF (a frame cut short by a close
// is dropped by the frame decoder, so an EOF without close_notify is a close
// like on the plain port). The server presents its certificate and, when it
// has a client CA, requires and checks a client certificate signed by it;
// the client checks the server's certificate against its CA file and the
// server name (a host name, or an IP address matched against the
// certificate's IP SANs).
//
// Every SSL_CTX made here carries a mark (is_tally_context): tallyd's
// interposed SSL_new (actors/link_refusals.cpp) logs refusals of CAF's node
// links only, not of these. Thread-safe once made: the shards share one.
#pragma once

#include <memory>
#include <string>

#include "common/expected.hpp"

struct ssl_ctx_st; // OpenSSL's SSL_CTX, kept out of the header

namespace tally {

struct tls_server_files {
  std::string cert; // PEM certificate (chain) the node presents
  std::string key;  // its PEM private key
  /// PEM CA certificate(s): when set, every client must present a
  /// certificate signed by one of them (else the handshake fails).
  std::string client_ca;
};

struct tls_client_files {
  std::string ca; // PEM CA certificate(s) the node's certificate must chain to
  /// The client's own certificate and key (both or neither), for nodes that
  /// require client certificates.
  std::string cert;
  std::string key;
  /// The name the node's certificate must carry (DNS or IP SAN); empty:
  /// the host connected to.
  std::string server_name;
};

class tls_context {
public:
  /// errc::bad_config naming the file and OpenSSL's reason when a file is
  /// missing, unreadable, not PEM, or the key does not match the
  /// certificate.
  static expected<tls_context> server(const tls_server_files& files);
  static expected<tls_context> client(const tls_client_files& files);

  ssl_ctx_st* native() const noexcept { return ctx_.get(); }
  bool is_server() const noexcept { return server_; }
  bool requires_client_certificate() const noexcept { return verify_clients_; }
  /// The name the peer's certificate must carry (client side; may be empty).
  const std::string& server_name() const noexcept { return server_name_; }

private:
  std::shared_ptr<ssl_ctx_st> ctx_;
  bool server_ = false;
  bool verify_clients_ = false;
  std::string server_name_;
};

/// True for an SSL_CTX made by tls_context (see the header comment).
bool is_tally_context(const ssl_ctx_st* ctx) noexcept;

/// The reasons in this thread's OpenSSL error queue, "; "-joined, and the
/// queue cleared (empty when it was empty).
std::string take_openssl_errors();

} // namespace tally
