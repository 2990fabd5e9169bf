// Socket addresses for the bootstrap: numeric IPv4/IPv6 hosts, the interface the root listens on, and
// hostname resolution for launcher variables. Everything the bootstrap stores or sends is numeric, so every
// rank connects to exactly the address the root bound, whatever its resolver would say.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace psdp::core {

class SockAddr {
 public:
  SockAddr() = default;
  // `host` must be a numeric IPv4 or IPv6 address (no brackets, no scope). Errors: invalid argument.
  static Result<SockAddr> numeric(const std::string& host, uint16_t port);
  // Errors: invalid argument (not AF_INET/AF_INET6).
  static Result<SockAddr> fromSockaddr(const sockaddr* addr, socklen_t len);

  int family() const { return storage_.ss_family; }
  std::string host() const;
  uint16_t port() const;
  // "host:port", "[v6]:port".
  std::string toString() const;

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t size() const { return len_; }

 private:
  sockaddr_storage storage_{};
  socklen_t len_ = 0;
};

// "host:port", with IPv6 hosts in brackets.
std::string formatHostPort(const std::string& host, uint16_t port);

// The numeric address the root listens on: the first usable address of interface `ifname`, or when
// `ifname` is empty the first interface that is up and not loopback (IPv4 preferred, IPv6 link-local
// skipped because it needs a scope id), else 127.0.0.1. Errors: system (no such interface, or it has no
// usable address).
Result<std::string> interfaceAddress(const std::string& ifname);

// A hostname or numeric address to one numeric address (IPv4 preferred). Blocks on the resolver.
// Errors: invalid argument (the name does not resolve).
Result<std::string> resolveHost(const std::string& name);

}  // namespace psdp::core
