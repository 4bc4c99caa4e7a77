#include "tls/tls_stream.hpp"

#include <cerrno>
#include <climits>
#include <cstring>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace tally {

namespace {

bool is_ip_address(const std::string& name) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, name.c_str(), buf) == 1
         || ::inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

// SSL_read and SSL_write take an int.
int clamp(std::size_t n) {
  return n > static_cast<std::size_t>(INT_MAX) ? INT_MAX : static_cast<int>(n);
}

} // namespace

void tls_stream::free_ssl::operator()(ssl_st* s) const noexcept {
  SSL_free(s);
}

tls_stream::tls_stream(ssl_st* s) : ssl_(s) {}

tls_stream::~tls_stream() = default;

expected<tls_stream> tls_stream::accept(const tls_context& ctx, int fd) {
  ERR_clear_error();
  SSL* s = SSL_new(ctx.native());
  if (s == nullptr || SSL_set_fd(s, fd) != 1) {
    SSL_free(s);
    return make_error(errc::io_error, "cannot start a TLS session: " + take_openssl_errors());
  }
  SSL_set_accept_state(s);
  return tls_stream{s};
}

expected<tls_stream> tls_stream::connect(const tls_context& ctx, int fd,
                                         const std::string& name) {
  ERR_clear_error();
  SSL* s = SSL_new(ctx.native());
  if (s == nullptr || SSL_set_fd(s, fd) != 1) {
    SSL_free(s);
    return make_error(errc::io_error, "cannot start a TLS session: " + take_openssl_errors());
  }
  tls_stream out{s};
  const auto& expect = ctx.server_name().empty() ? name : ctx.server_name();
  // The node's certificate must name what the client asked for: a DNS name
  // (also sent as SNI) or an IP address (matched against IP SANs only).
  bool ok = is_ip_address(expect)
              ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), expect.c_str()) == 1
              : SSL_set_tlsext_host_name(s, expect.c_str()) == 1
                  && SSL_set1_host(s, expect.c_str()) == 1;
  if (!ok)
    return make_error(errc::bad_config, "cannot check the node's certificate for the name '"
                                          + expect + "': " + take_openssl_errors());
  SSL_set_connect_state(s);
  return out;
}

tls_stream::result tls_stream::outcome(int rc) {
  int sys = errno; // before anything else may change it
  if (rc > 0)
    return {state::done, static_cast<std::size_t>(rc)};
  int err = SSL_get_error(ssl_.get(), rc);
  switch (err) {
  case SSL_ERROR_WANT_READ:
    return {state::want_read, 0};
  case SSL_ERROR_WANT_WRITE:
    return {state::want_write, 0};
  case SSL_ERROR_ZERO_RETURN:
    return {state::closed, 0};
  case SSL_ERROR_SYSCALL:
    // The socket's own error (a would-block is WANT_READ/WRITE, not this);
    // 0: an EOF OpenSSL did not map to ZERO_RETURN.
    ERR_clear_error();
    broken_ = true;
    if (sys == 0)
      return {state::closed, 0};
    failure_ = std::strerror(sys);
    return {state::failed, 0};
  default:
    break;
  }
  broken_ = true;
  failure_ = take_openssl_errors();
  if (failure_.empty())
    failure_ = "TLS error " + std::to_string(err);
  if (auto v = SSL_get_verify_result(ssl_.get()); v != X509_V_OK)
    failure_ += std::string{" ("} + X509_verify_cert_error_string(v) + ")";
  return {state::failed, 0};
}

tls_stream::result tls_stream::handshake() {
  ERR_clear_error();
  int rc = SSL_do_handshake(ssl_.get());
  if (rc == 1)
    return {state::done, 0};
  return outcome(rc);
}

tls_stream::result tls_stream::read(char* buf, std::size_t size) {
  ERR_clear_error();
  return outcome(SSL_read(ssl_.get(), buf, clamp(size)));
}

tls_stream::result tls_stream::write(const char* data, std::size_t size) {
  if (size == 0)
    return {state::done, 0};
  ERR_clear_error();
  return outcome(SSL_write(ssl_.get(), data, clamp(size)));
}

bool tls_stream::handshake_done() const noexcept {
  return SSL_is_init_finished(ssl_.get()) == 1;
}

bool tls_stream::has_buffered_input() const noexcept {
  return SSL_has_pending(ssl_.get()) == 1;
}

std::string tls_stream::describe() const {
  return std::string{SSL_get_version(ssl_.get())} + " "
         + SSL_CIPHER_get_name(SSL_get_current_cipher(ssl_.get()));
}

void tls_stream::shutdown() noexcept {
  if (broken_ || !handshake_done())
    return;
  ERR_clear_error();
  SSL_shutdown(ssl_.get());
  ERR_clear_error();
}

} // namespace tally
