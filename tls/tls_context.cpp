#include "tls/tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace tally {

namespace {

// The ex_data slot that marks Tally's own contexts (is_tally_context).
int mark_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// The address of this object is the mark.
char tally_mark = 0;

error file_error(const std::string& what, const std::string& file) {
  auto why = take_openssl_errors();
  return make_error(errc::bad_config, "cannot use " + what + " " + file + ": "
                                        + (why.empty() ? "unreadable or not PEM" : why));
}

// The settings both sides share.
expected<std::shared_ptr<SSL_CTX>> new_context(const SSL_METHOD* method) {
  ERR_clear_error();
  std::shared_ptr<SSL_CTX> ctx{SSL_CTX_new(method), SSL_CTX_free};
  if (!ctx)
    return make_error(errc::io_error, "cannot make a TLS context: " + take_openssl_errors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
  // The writer may hand a longer (or moved) buffer when it retries a write
  // that wanted to wait: the shard's output buffer only grows at its end.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE
                                | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Read ahead: one recv() takes every record the socket holds (up to
  // OpenSSL's buffer) instead of two per record (header, then body); a
  // pipelined client sends one small record per request. What is read
  // ahead stays inside OpenSSL: readers check tls_stream::has_buffered_input.
  SSL_CTX_set_read_ahead(ctx.get(), 1);
  SSL_CTX_set_ex_data(ctx.get(), mark_index(), &tally_mark);
  return ctx;
}

status use_certificate(SSL_CTX* ctx, const std::string& cert, const std::string& key) {
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1)
    return file_error("the certificate", cert);
  auto mismatch = [&] {
    return make_error(errc::bad_config,
                      "the private key " + key + " does not belong to the certificate " + cert);
  };
  // OpenSSL checks the key against the certificate while loading it.
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      take_openssl_errors();
      return mismatch();
    }
    return file_error("the private key", key);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    take_openssl_errors();
    return mismatch();
  }
  return {};
}

} // namespace

std::string take_openssl_errors() {
  std::string out;
  while (auto e = ERR_get_error()) {
    const char* why = ERR_reason_error_string(e);
    if (!out.empty())
      out += "; ";
    out += why != nullptr ? why : "error " + std::to_string(ERR_GET_REASON(e));
  }
  return out;
}

bool is_tally_context(const ssl_ctx_st* ctx) noexcept {
  return ctx != nullptr
         && SSL_CTX_get_ex_data(ctx, mark_index()) == static_cast<void*>(&tally_mark);
}

expected<tls_context> tls_context::server(const tls_server_files& files) {
  if (files.cert.empty() || files.key.empty())
    return make_error(errc::bad_config, "a TLS server needs a certificate and its key");
  auto ctx = new_context(TLS_server_method());
  if (!ctx)
    return ctx.err();
  if (auto st = use_certificate(ctx->get(), files.cert, files.key); !st)
    return st.err();
  tls_context out;
  out.server_ = true;
  if (!files.client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx->get(), files.client_ca.c_str(), nullptr) != 1)
      return file_error("the client CA", files.client_ca);
    // The CA names sent in the CertificateRequest, so a client with several
    // certificates can pick the right one.
    if (auto* names = SSL_load_client_CA_file(files.client_ca.c_str()))
      SSL_CTX_set_client_CA_list(ctx->get(), names);
    SSL_CTX_set_verify(ctx->get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    out.verify_clients_ = true;
  }
  // No session resumption: every connection proves its certificate again
  // (a client's connection lives long, so the full handshake is rare).
  SSL_CTX_set_session_cache_mode(ctx->get(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx->get(), 0);
  out.ctx_ = std::move(*ctx);
  return out;
}

expected<tls_context> tls_context::client(const tls_client_files& files) {
  if (files.ca.empty())
    return make_error(errc::bad_config,
                      "a TLS client needs the CA file that signed the node's certificate");
  if (files.cert.empty() != files.key.empty())
    return make_error(errc::bad_config, files.cert.empty()
                                          ? "a client key needs its certificate (--tls-cert)"
                                          : "a client certificate needs its key (--tls-key)");
  auto ctx = new_context(TLS_client_method());
  if (!ctx)
    return ctx.err();
  if (SSL_CTX_load_verify_locations(ctx->get(), files.ca.c_str(), nullptr) != 1)
    return file_error("the CA file", files.ca);
  SSL_CTX_set_verify(ctx->get(), SSL_VERIFY_PEER, nullptr);
  if (!files.cert.empty())
    if (auto st = use_certificate(ctx->get(), files.cert, files.key); !st)
      return st.err();
  tls_context out;
  out.server_name_ = files.server_name;
  out.ctx_ = std::move(*ctx);
  return out;
}

} // namespace tally
