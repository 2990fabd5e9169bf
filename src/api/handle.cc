#include "api/handle.h"

#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>

namespace psdp::api {
namespace {

struct HandleRegistry {
  std::shared_mutex mutex;
  std::unordered_set<psdp_comm_h> live;
  // Every request handle ever made, and whether it is live. Request memory is recycled (psdp_request), so
  // the map stops growing at the most requests alive at once, and registering allocates nothing after that.
  // Liveness is kept here rather than in the request, which must not be read once freed.
  std::unordered_map<psdp_request_h, bool> requests;
};

HandleRegistry& registry() {
  // Leaked on purpose: handles may be checked from static destructors of the application.
  static HandleRegistry* instance = new HandleRegistry();
  return *instance;
}

}  // namespace

void registerHandle(psdp_comm_h comm) {
  std::unique_lock lock(registry().mutex);
  registry().live.insert(comm);
}

void unregisterHandle(psdp_comm_h comm) {
  std::unique_lock lock(registry().mutex);
  registry().live.erase(comm);
}

Status checkHandle(psdp_comm_h comm, const char* arg_name) {
  if (comm == nullptr) return Status::invalidArgument("{} is NULL", arg_name);
  std::shared_lock lock(registry().mutex);
  if (registry().live.count(comm) == 0) {
    return Status::invalidUsage(
        "{} is not a live communicator (destroyed already, or never made by psdp_comm_init, psdp_comm_init_from_env or "
        "psdp_comm_split)",
        arg_name);
  }
  return Status::ok();
}

void registerRequest(psdp_request_h request) {
  std::unique_lock lock(registry().mutex);
  registry().requests[request] = true;
}

bool unregisterRequest(psdp_request_h request) {
  std::unique_lock lock(registry().mutex);
  auto it = registry().requests.find(request);
  if (it == registry().requests.end() || !it->second) return false;
  it->second = false;
  return true;
}

namespace {

// REQUIRES: the registry's mutex is held.
bool isLiveRequest(psdp_request_h request) {
  auto it = registry().requests.find(request);
  return it != registry().requests.end() && it->second;
}

}  // namespace

Status checkRequest(psdp_request_h request, const char* arg_name) {
  if (request == nullptr) return Status::invalidArgument("{} is NULL", arg_name);
  std::shared_lock lock(registry().mutex);
  if (!isLiveRequest(request)) {
    return Status::invalidUsage("{} is not a live request (already freed, or not made by a psdp collective)", arg_name);
  }
  return Status::ok();
}

psdp_comm_h requestComm(psdp_request_h request) {
  std::shared_lock lock(registry().mutex);
  if (!isLiveRequest(request)) return nullptr;
  return registry().live.count(request->comm) != 0 ? request->comm : nullptr;
}

}  // namespace psdp::api
