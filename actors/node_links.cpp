#include "actors/node_links.hpp"

#include <fstream>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

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

} // namespace

status configure_node_links(caf::actor_system_config& cfg, const node_link_security& s) {
  if (!s.tls())
    return {};
  for (auto [flag, path] : {std::pair{"--tls-cert", &s.cert}, std::pair{"--tls-key", &s.key},
                            std::pair{"--tls-ca", &s.ca}})
    if (auto st = readable(flag, *path); !st)
      return st;
  cfg.load<caf::openssl::manager>();
  cfg.openssl_certificate = s.cert;
  cfg.openssl_key = s.key;
  cfg.openssl_cafile = s.ca;
  return {};
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
  auto remote = node_links_use_tls(sys) ? caf::openssl::remote_actor(sys, host, port)
                                        : sys.middleman().remote_actor(host, port);
  if (!remote)
    return make_error(errc::unavailable, sys.render(remote.error()));
  return *remote;
}

caf::io::middleman_actor node_link_opener(caf::actor_system& sys) {
  return node_links_use_tls(sys) ? sys.openssl_manager().actor_handle()
                                 : sys.middleman().actor_handle();
}

} // namespace tally
