#include "actors/node_links.hpp"

#include <filesystem>
#include <fstream>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "actors/link_credentials.hpp"
#include "actors/link_refusals.hpp"
#include "common/log.hpp"

namespace tally {

namespace {

status readable(const std::string& flag, const std::string& path) {
  if (path.empty())
    return make_error(errc::bad_config, "TLS on node links needs --tls-cert, --tls-key and "
                                        "--tls-ca together; " + flag + " is missing");
  std::ifstream in{path};
  if (!in)
    return make_error(errc::bad_config, flag + " " + path + " cannot be read");
  return {};
}

std::string credentials_dir(const std::string& data_dir) {
  return (std::filesystem::path{data_dir} / "cluster" / "tls").string();
}

// The cluster secret when no flag names it: the data dir's own, made at
// the first start of a node that founds a cluster (or runs alone).
status find_default_secret(node_link_security& s, const std::string& data_dir, bool joining) {
  namespace fs = std::filesystem;
  auto path = default_secret_path(data_dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (joining)
      return make_error(errc::bad_config,
                        "--join needs the cluster's secret: give --cluster-secret-file FILE, the "
                        "file every member uses (a node started without one made its "
                        "cluster's in DATA-DIR/cluster/secret), or --insecure-cluster-links on "
                        "every member for unauthenticated links (docs/SECURITY.md)");
    if (fs::exists(fs::path{data_dir} / "cluster" / "node", ec))
      return make_error(errc::bad_config,
                        "data dir " + data_dir + " has no cluster secret (" + path
                          + "): give --cluster-secret-file FILE with its cluster's secret, or "
                            "--insecure-cluster-links if it ran with plain links "
                            "(docs/SECURITY.md)");
    fs::create_directories(fs::path{data_dir} / "cluster", ec);
    if (ec)
      return make_error(errc::io_error, "unusable data dir " + data_dir + ": " + ec.message());
    if (auto made = create_cluster_secret(path); !made && !fs::exists(path, ec))
      return made;
    log(log_level::info, "made a new cluster secret in ", path,
        ": nodes that join this cluster need a copy (--cluster-secret-file)");
  }
  auto secret = read_cluster_secret(path);
  if (!secret)
    return secret.err();
  s.secret = std::move(*secret);
  s.secret_path = path;
  return {};
}

} // namespace

std::string default_secret_path(const std::string& data_dir) {
  return (std::filesystem::path{data_dir} / "cluster" / "secret").string();
}

status configure_node_links(caf::actor_system_config& cfg, node_link_security& s,
                            const std::string& data_dir, bool joining) {
  if (s.insecure) {
    if (s.certificates() || !s.secret_file.empty())
      return make_error(errc::bad_config, "--insecure-cluster-links cannot be combined with "
                                          "--cluster-secret-file or --tls-cert/--tls-key/"
                                          "--tls-ca");
    s.mode = link_auth::none;
    return {};
  }
  if (s.certificates()) {
    if (!s.secret_file.empty())
      return make_error(errc::bad_config,
                        "--cluster-secret-file and --tls-cert/--tls-key/--tls-ca are two ways "
                        "to authenticate node links: give one of them");
    for (auto [flag, path] : {std::pair{"--tls-cert", &s.cert}, std::pair{"--tls-key", &s.key},
                              std::pair{"--tls-ca", &s.ca}})
      if (auto st = readable(flag, *path); !st)
        return st;
    s.mode = link_auth::certificates;
    cfg.openssl_certificate = s.cert;
    cfg.openssl_key = s.key;
    cfg.openssl_cafile = s.ca;
  } else {
    s.mode = link_auth::secret;
    if (!s.secret_file.empty()) {
      auto secret = read_cluster_secret(s.secret_file);
      if (!secret)
        return secret.err();
      s.secret = std::move(*secret);
      s.secret_path = s.secret_file;
    } else if (auto st = find_default_secret(s, data_dir, joining); !st) {
      return st;
    }
    auto dir = credentials_dir(data_dir);
    cfg.openssl_certificate = dir + "/node.pem";
    cfg.openssl_key = dir + "/node-key.pem";
    cfg.openssl_cafile = dir + "/ca.pem";
  }
  cfg.load<caf::openssl::manager>();
  log_refused_node_links(s.refusal_log_window);
  return {};
}

status write_node_link_files(const node_link_security& s, const std::string& data_dir) {
  if (s.mode != link_auth::secret)
    return {};
  auto files = write_link_credentials(s.secret, credentials_dir(data_dir));
  if (!files)
    return files.err();
  return {};
}

std::string describe_node_links(const node_link_security& s) {
  switch (s.mode) {
    case link_auth::secret:
      return "node links: TLS, members authenticated by the cluster secret in " + s.secret_path
             + " (cluster " + cluster_fingerprint(s.secret) + ")";
    case link_auth::certificates:
      return "node links: TLS, members authenticated by certificates of --tls-ca " + s.ca;
    case link_auth::none:
      break;
  }
  return "node links are plain TCP without authentication (--insecure-cluster-links): any "
         "process that reaches the cluster port can join, take partitions, or crash this node "
         "(docs/SECURITY.md, \"Node links\")";
}

bool node_links_use_tls(caf::actor_system& sys) {
  return sys.has_openssl_manager();
}

expected<std::uint16_t> publish_on_cluster_port(caf::actor_system& sys, const caf::actor& whom,
                                                std::uint16_t port, const std::string& bind) {
  auto published = node_links_use_tls(sys)
                     ? caf::openssl::publish(whom, port, bind.c_str(), true)
                     : sys.middleman().publish(whom, port, bind.c_str(), true);
  if (!published)
    return make_error(errc::unavailable, sys.render(published.error()));
  return *published;
}

expected<caf::actor> remote_cluster_actor(caf::actor_system& sys, const std::string& host,
                                          std::uint16_t port) {
  // CAF 0.17.6's BASP broker gives an outgoing connection a last-seen time of
  // zero until the member's handshake arrives (basp_broker.cpp, the
  // connect_atom handler default-constructs the endpoint context), so the
  // next heartbeat tick (every 250 ms, apps/tallyd.cpp) drops it with
  // sec::connection_timeout when the handshake is slower than that: a TLS
  // handshake on a loaded machine, or under ThreadSanitizer, where joins
  // failed 0.2 s after they began (docs/RELIABILITY.md, "TSan"). A real
  // connection timeout would need middleman.connection-timeout (2 s) of
  // silence. So that error is tried again, a bounded number of times; every
  // other error is returned at once.
  constexpr int attempts = 5;
  for (int attempt = 1;; ++attempt) {
    auto remote = node_links_use_tls(sys) ? caf::openssl::remote_actor(sys, host, port)
                                          : sys.middleman().remote_actor(host, port);
    if (remote)
      return *remote;
    if (remote.error() != caf::sec::connection_timeout || attempt == attempts)
      return make_error(errc::unavailable, sys.render(remote.error()));
  }
}

caf::io::middleman_actor node_link_opener(caf::actor_system& sys) {
  return node_links_use_tls(sys) ? sys.openssl_manager().actor_handle()
                                 : sys.middleman().actor_handle();
}

} // namespace tally
