// The C boundary for versions, ids and communicators: argument checks and translation only.
#include <cstring>

#include "api/guard.h"
#include "api/handle.h"
#include "api/validate.h"
#include "base/environment.h"
#include "core/bootstrap.h"
#include "core/launcher_env.h"

using psdp::Config;
using psdp::Deadline;
using psdp::Result;
using psdp::Status;
using psdp::api::checkHandle;
using psdp::api::checkOut;
using psdp::api::guarded;
using psdp::core::RendezvousId;

namespace {

Result<Config> resolveConfig(const psdp_config_t* config) {
  return Config::resolve(config, psdp::ProcessEnvironment::instance());
}

// Wraps a new communicator into a handle that the registry knows.
Status publish(std::unique_ptr<psdp::core::Communicator> impl, psdp_comm_h* comm_p) {
  // Request handles for a full queue are made now, so that nonblocking calls allocate nothing.
  psdp_request::prime(impl->config().max_in_flight);
  auto handle = std::make_unique<psdp_comm>();
  handle->impl = std::move(impl);
  psdp::api::registerHandle(handle.get());
  *comm_p = handle.release();
  return Status::ok();
}

}  // namespace

extern "C" {

PSDP_API const char* psdp_status_string(psdp_status_t status) {
  return psdp::statusName(status);
}

PSDP_API psdp_status_t psdp_get_version(int* version_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkOut(version_p, "version_p"));
    *version_p = PSDP_VERSION_CODE;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_get_unique_id(psdp_unique_id_t* id_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkOut(id_p, "id_p"));
    PSDP_ASSIGN_OR_RETURN(Config config, resolveConfig(nullptr));
    PSDP_ASSIGN_OR_RETURN(RendezvousId id, psdp::core::startDetachedRoot(config));
    id.toUniqueId(id_p);
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_unique_id_to_string(const psdp_unique_id_t* id, char* buf, size_t buf_bytes) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkOut(id, "id"));
    PSDP_RETURN_IF_ERROR(checkOut(buf, "buf"));
    PSDP_ASSIGN_OR_RETURN(RendezvousId decoded, RendezvousId::fromUniqueId(*id));
    std::string text = decoded.toString();
    if (text.size() + 1 > buf_bytes) {
      return Status::invalidArgument("buf_bytes {} is too small, {} needed", buf_bytes, text.size() + 1);
    }
    std::memcpy(buf, text.c_str(), text.size() + 1);
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_unique_id_from_string(const char* text, psdp_unique_id_t* id_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkOut(text, "text"));
    PSDP_RETURN_IF_ERROR(checkOut(id_p, "id_p"));
    PSDP_ASSIGN_OR_RETURN(RendezvousId id, RendezvousId::fromString(text));
    id.toUniqueId(id_p);
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_comm_init(int nranks, const psdp_unique_id_t* id, int rank, const psdp_config_t* config,
                                      psdp_comm_h* comm_p) {
  return guarded(nullptr, [&] {
    if (nranks < 1) return Status::invalidArgument("nranks is {}, must be at least 1", nranks);
    if (rank < 0 || rank >= nranks) return Status::invalidArgument("rank {} is outside [0, {})", rank, nranks);
    PSDP_RETURN_IF_ERROR(checkOut(id, "id"));
    PSDP_RETURN_IF_ERROR(checkOut(comm_p, "comm_p"));
    PSDP_ASSIGN_OR_RETURN(RendezvousId decoded, RendezvousId::fromUniqueId(*id));
    PSDP_ASSIGN_OR_RETURN(Config resolved, resolveConfig(config));
    PSDP_ASSIGN_OR_RETURN(auto impl, psdp::core::Communicator::create(nranks, decoded, rank, resolved, nullptr));
    return publish(std::move(impl), comm_p);
  });
}

PSDP_API psdp_status_t psdp_comm_init_from_env(const psdp_config_t* config, psdp_comm_h* comm_p) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkOut(comm_p, "comm_p"));
    PSDP_ASSIGN_OR_RETURN(Config resolved, resolveConfig(config));
    PSDP_ASSIGN_OR_RETURN(auto launch, psdp::core::launchInfoFromEnv(psdp::ProcessEnvironment::instance(), resolved));
    if (launch.secret_derived && launch.rank == 0) {
      psdp::processLog().warn(
          "PSDP_JOB_SECRET is not set: the job secret is derived from the {} job id, which "
          "anyone who can read that id can reproduce",
          launch.launcher);
    }
    std::unique_ptr<psdp::core::RootServer> root;
    RendezvousId id = launch.id;
    if (launch.rank == 0) {
      PSDP_ASSIGN_OR_RETURN(
          root, psdp::core::RootServer::start(id.host, id.port, id.secret, resolved,
                                              Deadline::after(resolved.timeout_s), launch.root_listener_fd));
      id = root->id();
    }
    PSDP_ASSIGN_OR_RETURN(auto impl,
                          psdp::core::Communicator::create(launch.nranks, id, launch.rank, resolved, std::move(root)));
    return publish(std::move(impl), comm_p);
  });
}

PSDP_API psdp_status_t psdp_comm_finalize(psdp_comm_h comm) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    return comm->impl->finalize();
  });
}

PSDP_API psdp_status_t psdp_comm_destroy(psdp_comm_h comm) {
  return guarded(nullptr, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    psdp::api::unregisterHandle(comm);
    delete comm;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_comm_abort(psdp_comm_h comm) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    comm->impl->abort();
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_comm_split(psdp_comm_h comm, int color, int key, const psdp_config_t* config,
                                       psdp_comm_h* newcomm_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_RETURN_IF_ERROR(checkOut(newcomm_p, "newcomm_p"));
    Config resolved;
    if (config != nullptr) {
      PSDP_ASSIGN_OR_RETURN(resolved, resolveConfig(config));
    }
    PSDP_ASSIGN_OR_RETURN(auto impl, comm->impl->split(color, key, config != nullptr ? &resolved : nullptr));
    if (!impl) {
      *newcomm_p = nullptr;
      return Status::ok();
    }
    return publish(std::move(impl), newcomm_p);
  });
}

PSDP_API psdp_status_t psdp_comm_split_layout(psdp_comm_h comm, int group_size, const psdp_config_t* config,
                                              psdp_comm_h* shard_comm_p, psdp_comm_h* replica_comm_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_RETURN_IF_ERROR(checkOut(shard_comm_p, "shard_comm_p"));
    PSDP_RETURN_IF_ERROR(checkOut(replica_comm_p, "replica_comm_p"));
    Config resolved;
    if (config != nullptr) {
      PSDP_ASSIGN_OR_RETURN(resolved, resolveConfig(config));
    }
    PSDP_ASSIGN_OR_RETURN(psdp::core::Communicator::LayoutTeams teams,
                          comm->impl->splitLayout(group_size, config != nullptr ? &resolved : nullptr));
    psdp_comm_h shard = nullptr;
    PSDP_RETURN_IF_ERROR(publish(std::move(teams.shard), &shard));
    Status published = publish(std::move(teams.replica), replica_comm_p);
    if (!published.isOk()) {
      psdp_comm_destroy(shard);
      return published;
    }
    *shard_comm_p = shard;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_comm_rank(psdp_comm_h comm, int* rank_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_RETURN_IF_ERROR(checkOut(rank_p, "rank_p"));
    *rank_p = comm->impl->rank();
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_comm_size(psdp_comm_h comm, int* size_p) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_RETURN_IF_ERROR(checkOut(size_p, "size_p"));
    *size_p = comm->impl->size();
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_comm_interconnect(psdp_comm_h comm, char* buf, size_t* len) {
  return guarded(comm, [&] {
    PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
    PSDP_RETURN_IF_ERROR(psdp::api::checkTextOut(buf, len));
    PSDP_ASSIGN_OR_RETURN(psdp::tune::InterconnectSignature signature, comm->impl->interconnectSignature());
    psdp::api::copyTextOut(signature.format(), buf, len);
    return Status::ok();
  });
}

}  // extern "C"
