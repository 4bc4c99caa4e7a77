#include "actors/link_refusals.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <map>
#include <mutex>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/log.hpp"
#include "tls/tls_context.hpp"

namespace tally {

namespace {

std::atomic<bool> enabled{false};
std::atomic<std::int64_t> window_ms{10000};

// What one SSL object's callbacks learned; kept in its ex_data slot.
struct link_record {
  bool accepting = false;
  bool done = false;   // the handshake completed
  std::string peer;    // "ip:port" of the other side
  std::string reason;  // the fatal alert, if any
};

int record_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

std::string peer_of(int fd, std::string& ip) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return {};
  char buf[INET6_ADDRSTRLEN] = {0};
  std::uint16_t port = 0;
  if (a.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    port = ntohs(in->sin_port);
    ip = buf;
    return ip + ":" + std::to_string(port);
  }
  if (a.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &in->sin6_addr, buf, sizeof buf);
    port = ntohs(in->sin6_port);
    ip = buf;
    return "[" + ip + "]:" + std::to_string(port);
  }
  return {};
}

void on_info(const SSL* ssl, int where, int ret) {
  auto* r = static_cast<link_record*>(SSL_get_ex_data(ssl, record_index()));
  if (r == nullptr)
    return;
  if (r->peer.empty()) {
    std::string ip;
    r->peer = peer_of(SSL_get_fd(ssl), ip);
  }
  if ((where & SSL_CB_HANDSHAKE_DONE) != 0)
    r->done = true;
  // A handshake call that failed: OpenSSL's reason ("wrong version number"
  // for garbage, "http request", ...); the queue holds only this call's
  // errors (see SSL_read below).
  if ((where & SSL_CB_EXIT) != 0 && ret <= 0 && r->reason.empty())
    if (auto e = ERR_peek_last_error(); e != 0)
      if (const char* why = ERR_reason_error_string(e); why != nullptr)
        r->reason = std::string{"TLS handshake failed: "} + why;
  // A fatal alert names why the handshake failed ("unknown CA", "bad
  // certificate", "protocol version", ...).
  if ((where & SSL_CB_ALERT) != 0 && std::string{SSL_alert_type_string(ret)} == "F"
      && r->reason.empty())
    r->reason = std::string{(where & SSL_CB_READ) != 0
                              ? "the peer does not accept this node's certificate (TLS alert: "
                              : "its certificate or handshake is not accepted (TLS alert: "}
                + SSL_alert_desc_string_long(ret) + ")";
}

// Rate limit: one line per address and window; `more` counts the rest.
struct address_state {
  std::chrono::steady_clock::time_point last{};
  std::uint64_t more = 0;
};
std::mutex limiter_mutex; // SSL_free runs on CAF's middleman thread(s)
std::map<std::string, address_state> limiter;

void report(const link_record& r, const SSL* ssl) {
  auto reason = r.reason;
  if (reason.empty()) {
    auto v = SSL_get_verify_result(ssl);
    reason = v != X509_V_OK ? std::string{"certificate not accepted: "}
                                + X509_verify_cert_error_string(v)
                            : "no TLS handshake (not a Tally node of this cluster, or it "
                              "closed the connection)";
  }
  auto ip = r.peer.substr(0, r.peer.rfind(':'));
  auto now = std::chrono::steady_clock::now();
  std::uint64_t suppressed = 0;
  {
    std::lock_guard<std::mutex> guard{limiter_mutex};
    if (limiter.size() > 4096) // a scan from many addresses: start over
      limiter.clear();
    auto& st = limiter[ip];
    if (st.last.time_since_epoch().count() != 0
        && now - st.last < std::chrono::milliseconds{window_ms.load()}) {
      ++st.more;
      return;
    }
    suppressed = st.more;
    st.more = 0;
    st.last = now;
  }
  log(log_level::warn, "refused node link ", r.accepting ? "from " : "to ",
      r.peer.empty() ? std::string{"an unknown address"} : r.peer, ": ", reason,
      "; a member needs this cluster's secret or certificates (docs/SECURITY.md, "
      "\"Node links\")",
      suppressed > 0 ? " (" + std::to_string(suppressed) + " more from " + ip
                         + " not logged since its last line)"
                     : std::string{});
}

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

} // namespace

void log_refused_node_links(std::chrono::milliseconds window) {
  window_ms = window.count();
  record_index();
  enabled = true;
}

} // namespace tally

// The interposed OpenSSL functions (see the header). Same signatures as
// <openssl/ssl.h>.
extern "C" SSL* SSL_new(SSL_CTX* ctx) {
  static const auto next = tally::real<SSL* (*)(SSL_CTX*)>("SSL_new");
  SSL* ssl = next(ctx);
  // Only node links (CAF's contexts): not the client port's sessions.
  if (ssl != nullptr && tally::enabled.load() && !tally::is_tally_context(ctx)) {
    auto* r = new tally::link_record;
    if (SSL_set_ex_data(ssl, tally::record_index(), r) == 1)
      SSL_set_info_callback(ssl, tally::on_info);
    else
      delete r;
  }
  return ssl;
}

extern "C" void SSL_free(SSL* ssl) {
  static const auto next = tally::real<void (*)(SSL*)>("SSL_free");
  if (ssl != nullptr && tally::enabled.load()) {
    auto* r = static_cast<tally::link_record*>(SSL_get_ex_data(ssl, tally::record_index()));
    if (r != nullptr) {
      r->accepting = SSL_is_server(ssl) == 1;
      if (!r->done)
        tally::report(*r, ssl);
      SSL_set_ex_data(ssl, tally::record_index(), nullptr);
      delete r;
    }
  }
  next(ssl);
}

// CAF's OpenSSL session calls SSL_get_error after a failed call without
// clearing the thread's error queue first, which OpenSSL requires
// (SSL_get_error(3)): a handshake that failed on garbage left its error in
// the middleman thread's queue, and the next SSL_read of a healthy node link
// on that thread was taken as failed too, so 32 bytes of garbage made a node
// drop its links to its peers (seen: "peer ... is down" 150 ms after). These
// wrappers clear the queue before each call, as the manual asks.
extern "C" int SSL_read(SSL* ssl, void* buf, int num) {
  static const auto next = tally::real<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return next(ssl, buf, num);
}

extern "C" int SSL_write(SSL* ssl, const void* buf, int num) {
  static const auto next = tally::real<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return next(ssl, buf, num);
}

extern "C" int SSL_accept(SSL* ssl) {
  static const auto next = tally::real<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return next(ssl);
}

extern "C" int SSL_connect(SSL* ssl) {
  static const auto next = tally::real<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return next(ssl);
}
