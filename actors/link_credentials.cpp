#include "actors/link_credentials.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace tally {

namespace {

// Domain separation for the CA key seed: a new scheme gets a new label, so
// a secret never yields one key under two meanings.
constexpr const char* ca_seed_label = "tally cluster CA v1";

struct pkey_free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct x509_free {
  void operator()(X509* x) const { X509_free(x); }
};
struct bio_free {
  void operator()(BIO* b) const { BIO_free(b); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;
using x509_ptr = std::unique_ptr<X509, x509_free>;
using bio_ptr = std::unique_ptr<BIO, bio_free>;

std::string openssl_reason() {
  std::string out;
  while (auto e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += out.empty() ? "" : "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

error openssl_error(const std::string& what) {
  return make_error(errc::io_error, what + ": " + openssl_reason());
}

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

pkey_ptr ca_key(const std::string& secret) {
  unsigned char seed[32];
  unsigned int len = sizeof seed;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(ca_seed_label), std::strlen(ca_seed_label),
           seed, &len)
      == nullptr)
    return nullptr;
  pkey_ptr k{EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed, sizeof seed)};
  OPENSSL_cleanse(seed, sizeof seed);
  return k;
}

std::string fingerprint_of(EVP_PKEY* k) {
  unsigned char pub[32];
  std::size_t n = sizeof pub;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_PKEY_get_raw_public_key(k, pub, &n) != 1
      || EVP_Digest(pub, n, md, &mdlen, EVP_sha256(), nullptr) != 1)
    return "unknown";
  return hex(md, 8);
}

bool add_ext(X509* subject, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, subject, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr)
    return false;
  bool ok = X509_add_ext(subject, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `subject_key` named `cn`, signed by `issuer_key`
// (`issuer` null: self-signed). Fixed validity: node certificates are made
// anew at every start, and the CA's bytes must not depend on the day.
x509_ptr make_cert(EVP_PKEY* subject_key, const std::string& cn, std::uint64_t serial,
                   bool is_ca, X509* issuer, EVP_PKEY* issuer_key) {
  x509_ptr x{X509_new()};
  if (!x || X509_set_version(x.get(), 2) != 1
      || ASN1_INTEGER_set_uint64(X509_get_serialNumber(x.get()), serial) != 1
      || ASN1_TIME_set_string(X509_getm_notBefore(x.get()), "20200101000000Z") != 1
      || ASN1_TIME_set_string(X509_getm_notAfter(x.get()), "99991231235959Z") != 1
      || X509_set_pubkey(x.get(), subject_key) != 1)
    return nullptr;
  auto* name = X509_get_subject_name(x.get());
  if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>("Tally"), -1, -1, 0)
        != 1
      || X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                    reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                    0)
           != 1)
    return nullptr;
  X509* signer = issuer != nullptr ? issuer : x.get();
  if (X509_set_issuer_name(x.get(), X509_get_subject_name(signer)) != 1)
    return nullptr;
  bool ok = is_ca ? add_ext(x.get(), signer, NID_basic_constraints, "critical,CA:TRUE")
                      && add_ext(x.get(), signer, NID_key_usage, "critical,keyCertSign")
                  : add_ext(x.get(), signer, NID_basic_constraints, "critical,CA:FALSE")
                      && add_ext(x.get(), signer, NID_key_usage, "critical,digitalSignature")
                      && add_ext(x.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth");
  // Ed25519 signs without a separate digest (md = nullptr).
  if (!ok || X509_sign(x.get(), issuer_key, nullptr) <= 0)
    return nullptr;
  return x;
}

std::string bio_text(BIO* b) {
  char* p = nullptr;
  auto n = BIO_get_mem_data(b, &p);
  return std::string(p, static_cast<std::size_t>(n));
}

std::string file_text(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream buf;
  buf << in.rdbuf();
  return in ? buf.str() : std::string{};
}

// The node key of an earlier start, if `path` holds an Ed25519 key.
pkey_ptr saved_key(const std::string& path) {
  auto text = file_text(path);
  if (text.empty())
    return nullptr;
  bio_ptr b{BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))};
  pkey_ptr k{b ? PEM_read_bio_PrivateKey(b.get(), nullptr, nullptr, nullptr) : nullptr};
  OPENSSL_cleanse(text.data(), text.size());
  ERR_clear_error(); // a damaged or foreign key is replaced, not an error
  if (k && EVP_PKEY_get_id(k.get()) != EVP_PKEY_ED25519)
    return nullptr;
  return k;
}

// Writes `text` unless the file already holds it: a restart with the same
// secret writes nothing, so a node starts on a full disk (docs/NODE.md,
// "Damaged storage") and never rewrites files a running node reads.
status write_private(const std::string& path, const std::string& text, mode_t mode) {
  if (file_text(path) == text)
    return {};
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    return make_error(errc::io_error, "cannot write " + path + ": " + std::strerror(errno));
  bool ok = ::fchmod(fd, mode) == 0
            && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int saved = errno;
  ::close(fd);
  if (!ok)
    return make_error(errc::io_error, "cannot write " + path + ": " + std::strerror(saved));
  return {};
}

} // namespace

expected<std::string> read_cluster_secret(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    return make_error(errc::bad_config, "cluster secret file " + path + " cannot be read: "
                                          + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return make_error(errc::bad_config,
                      "cluster secret file " + path + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return make_error(errc::bad_config,
                      "cluster secret file " + path + " has mode " + mode
                        + ": group or others may access it; it must be readable by the "
                          "tallyd user only (chmod 600 " + path + ")");
  }
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return make_error(errc::bad_config, "cluster secret file " + path + " cannot be read: "
                                          + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  auto secret = buf.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r'
                             || secret.back() == ' ' || secret.back() == '\t'))
    secret.pop_back();
  if (secret.size() < min_cluster_secret_bytes)
    return make_error(errc::bad_config,
                      "cluster secret file " + path + " holds " + std::to_string(secret.size())
                        + " bytes; a cluster secret has at least "
                        + std::to_string(min_cluster_secret_bytes)
                        + " (make one with: openssl rand -hex 32 > FILE; chmod 600 FILE)");
  return secret;
}

status create_cluster_secret(const std::string& path) {
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1)
    return openssl_error("cannot make a cluster secret");
  auto text = hex(raw, sizeof raw) + "\n";
  OPENSSL_cleanse(raw, sizeof raw);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return make_error(errc::io_error,
                      "cannot create cluster secret " + path + ": " + std::strerror(errno));
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size())
            && ::fsync(fd) == 0;
  int saved = errno;
  ::close(fd);
  OPENSSL_cleanse(text.data(), text.size());
  if (!ok) {
    ::unlink(path.c_str());
    return make_error(errc::io_error,
                      "cannot write cluster secret " + path + ": " + std::strerror(saved));
  }
  return {};
}

std::string cluster_fingerprint(const std::string& secret) {
  auto k = ca_key(secret);
  return k ? fingerprint_of(k.get()) : "unknown";
}

expected<link_credential_files> write_link_credentials(const std::string& secret,
                                                       const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || ::chmod(dir.c_str(), 0700) != 0)
    return make_error(errc::io_error, "cannot create " + dir + ": "
                                        + (ec ? ec.message() : std::strerror(errno)));
  auto ca_k = ca_key(secret);
  if (!ca_k)
    return openssl_error("cannot derive the cluster CA key");
  auto ca = make_cert(ca_k.get(), "tally cluster " + fingerprint_of(ca_k.get()), 1, true,
                      nullptr, ca_k.get());
  if (!ca)
    return openssl_error("cannot make the cluster CA certificate");
  link_credential_files files{dir + "/node.pem", dir + "/node-key.pem", dir + "/ca.pem"};
  pkey_ptr node_k = saved_key(files.key);
  if (!node_k)
    node_k.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!node_k)
    return openssl_error("cannot make a node key");
  // The serial from the node's public key: the same key and secret give
  // the same certificate bytes (Ed25519 signatures are deterministic).
  auto fp = fingerprint_of(node_k.get());
  if (fp == "unknown")
    return openssl_error("cannot read the node's public key");
  std::uint64_t serial = std::stoull(fp, nullptr, 16);
  serial = (serial >> 1) | 2; // positive, and never the CA's serial 1
  auto cert = make_cert(node_k.get(), "tally node", serial, false, ca.get(), ca_k.get());
  if (!cert)
    return openssl_error("cannot make the node certificate");
  bio_ptr ca_pem{BIO_new(BIO_s_mem())}, cert_pem{BIO_new(BIO_s_mem())},
    key_pem{BIO_new(BIO_s_mem())};
  if (!ca_pem || !cert_pem || !key_pem || PEM_write_bio_X509(ca_pem.get(), ca.get()) != 1
      || PEM_write_bio_X509(cert_pem.get(), cert.get()) != 1
      || PEM_write_bio_PrivateKey(key_pem.get(), node_k.get(), nullptr, nullptr, 0, nullptr,
                                  nullptr)
           != 1)
    return openssl_error("cannot encode the node link credentials");
  for (auto [path, bio, mode] :
       {std::tuple{&files.key, key_pem.get(), mode_t{0600}},
        std::tuple{&files.cert, cert_pem.get(), mode_t{0644}},
        std::tuple{&files.ca, ca_pem.get(), mode_t{0644}}})
    if (auto st = write_private(*path, bio_text(bio), mode); !st)
      return st.err();
  return files;
}

} // namespace tally
