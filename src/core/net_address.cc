#include "core/net_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>

#include <cstring>
#include <memory>

#include "base/raii.h"

namespace psdp::core {
namespace {

using IfAddrs = std::unique_ptr<ifaddrs, FnDeleter<freeifaddrs>>;
using AddrInfo = std::unique_ptr<addrinfo, FnDeleter<freeaddrinfo>>;

std::string numericHost(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, text, sizeof(text));
  } else if (addr->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, text, sizeof(text));
  }
  return text;
}

// Addresses a remote rank can reach: IPv4, or IPv6 that is neither link-local (it would need a scope id
// that cannot travel in the unique id) nor unspecified.
bool usableAddress(const sockaddr* addr) {
  if (addr == nullptr) return false;
  if (addr->sa_family == AF_INET) return true;
  if (addr->sa_family != AF_INET6) return false;
  const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr;
  return !IN6_IS_ADDR_LINKLOCAL(&a) && !IN6_IS_ADDR_UNSPECIFIED(&a);
}

bool isUp(const ifaddrs* ifa) {
  return (ifa->ifa_flags & IFF_UP) != 0;
}
bool isLoopback(const ifaddrs* ifa) {
  return (ifa->ifa_flags & IFF_LOOPBACK) != 0;
}

// The first usable address among the interfaces `accept` selects, IPv4 before IPv6; empty when none.
template <typename Pred>
std::string firstAddress(const ifaddrs* list, Pred accept) {
  for (int family : {AF_INET, AF_INET6}) {
    for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
      if (!accept(ifa) || !usableAddress(ifa->ifa_addr) || ifa->ifa_addr->sa_family != family) continue;
      return numericHost(ifa->ifa_addr);
    }
  }
  return {};
}

}  // namespace

Result<SockAddr> SockAddr::numeric(const std::string& host, uint16_t port) {
  SockAddr out;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage_);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    out.len_ = sizeof(sockaddr_in);
    return out;
  }
  out.storage_ = {};
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage_);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    out.len_ = sizeof(sockaddr_in6);
    return out;
  }
  return Status::invalidArgument("'{}' is not a numeric IPv4 or IPv6 address", host);
}

Result<SockAddr> SockAddr::fromSockaddr(const sockaddr* addr, socklen_t len) {
  SockAddr out;
  if (addr == nullptr || len > static_cast<socklen_t>(sizeof(out.storage_)) ||
      (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)) {
    return Status::invalidArgument("not an IPv4 or IPv6 socket address");
  }
  std::memcpy(&out.storage_, addr, len);
  out.len_ = len;
  return out;
}

std::string SockAddr::host() const {
  return len_ == 0 ? std::string() : numericHost(get());
}

uint16_t SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

std::string SockAddr::toString() const {
  return formatHostPort(host(), port());
}

std::string formatHostPort(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Result<std::string> interfaceAddress(const std::string& ifname) {
  ifaddrs* raw = nullptr;
  if (getifaddrs(&raw) != 0) return Status::fromErrno(errno, "getifaddrs");
  IfAddrs list(raw);
  if (!ifname.empty()) {
    std::string host =
        firstAddress(list.get(), [&](const ifaddrs* ifa) { return isUp(ifa) && ifname == ifa->ifa_name; });
    if (host.empty()) {
      return Status::system(
          "PSDP_SOCKET_IFNAME '{}': no interface of that name is up with an IPv4 or routable IPv6 "
          "address",
          ifname);
    }
    return host;
  }
  std::string host = firstAddress(list.get(), [](const ifaddrs* ifa) { return isUp(ifa) && !isLoopback(ifa); });
  if (!host.empty()) return host;
  // A machine with no network (a laptop, a container without one) can still run a single-host job.
  host = firstAddress(list.get(), [](const ifaddrs* ifa) { return isUp(ifa) && isLoopback(ifa); });
  if (!host.empty()) return host;
  return Status::system("no network interface is up (not even loopback)");
}

Result<std::string> resolveHost(const std::string& name) {
  if (SockAddr::numeric(name, 0).isOk()) return name;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  int rc = getaddrinfo(name.c_str(), nullptr, &hints, &raw);
  if (rc != 0) return Status::invalidArgument("host '{}' does not resolve: {}", name, gai_strerror(rc));
  AddrInfo list(raw);
  // IPv4 first: clusters with a half-configured IPv6 are common, and every rank must pick the same address.
  for (int family : {AF_INET, AF_INET6}) {
    for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
      if (ai->ai_family == family && usableAddress(ai->ai_addr)) return numericHost(ai->ai_addr);
    }
  }
  return Status::invalidArgument("host '{}' has no IPv4 or routable IPv6 address", name);
}

}  // namespace psdp::core
