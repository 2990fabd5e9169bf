// UCX backend for host memory: shared memory within a host, TCP (or RDMA) across hosts, as UCX chooses
// under UCX_TLS / UCX_NET_DEVICES.
//
// Behaviour beyond transport.h:
// - One UCP context and one worker per transport (a psdp context, which the communicators split from one
//   another share); tags on the wire are the caller's 45 bits with the sender's rank above them, matched
//   with a full mask, so at most 2^19 ranks.
// - failContext() fails one context field of the tags: its peers get a "cfail" notice, its receives are
//   canceled, its sends detached (UCX cannot cancel a send; it only reads the caller's buffer, and the peers,
//   told, no longer match it).
// - connect() exchanges one 0-byte message with every rank (itself included) under the reserved tag bit
//   (kReservedTagBit), then logs at info level the lanes UCX chose for each peer.
// - A recv completes with mismatch when the message is shorter or longer than `bytes`.
// - send/recv that return an error have not posted anything and leave the completion unwritten.
// - Shared memory: UCX 1.13 offers posix/sysv to endpoints with peer error handling only when they are
//   told to advertise it; psdp turns that on unless UCX_POSIX_ERROR_HANDLING or UCX_SYSV_ERROR_HANDLING is
//   set. UCX itself then finds a dead peer on shared memory only by its keepalive (every
//   UCX_KEEPALIVE_INTERVAL, 20 s by default), so psdp watches the processes of peers on the same host
//   itself (pidfds, peer_liveness.h; the process identity travels in front of the worker address): a
//   peer's death is seen within about a millisecond. Over TCP a dead peer is found as soon as its sockets
//   close.
// - Notices: a transport that closes tells its peers ("bye"), so that its process exiting afterwards is
//   not taken for a failure; one that fail-stops (fail()) tells them why, so that they fail with the root
//   cause instead of a reset connection. Messages a dead peer sent before it exited are drained before
//   its death is judged, and its exit note (exit_notes.h, whose reference travels in the address after the
//   process identity) tells a death from the exit of a peer that had learned of a failure itself.
// - CMA: with peer error handling UCX 1.13 uses CMA's single-copy rendezvous only if CMA advertises memory
//   invalidation, which it does only with UCX_CMA_MEMORY_INVALIDATE=y; psdp sets it unless the user set
//   that variable or UCX_TLS excludes cma (why this is safe: ucx_context.cc), and only with a progress
//   thread: the receiver acknowledges a CMA rendezvous after its recv completed, and in caller mode nothing
//   sends that acknowledgement once the receiver stops calling into psdp.
// - close() and the destructor complete still-pending recvs with aborted.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/environment.h"
#include "transport/transport.h"

namespace psdp::transport::ucx {

// Settings of this backend that are not psdp parameters; tests use them to pin UCX's choices without
// touching the process environment.
struct UcxOptions {
  // UCX variables without the UCX_ prefix (e.g. {"TLS", "tcp,self"}), applied over the UCX_* environment.
  std::vector<std::pair<std::string, std::string>> ucx_config;
  // Where UCX_TLS and UCX_*_ERROR_HANDLING are looked up to decide on shared-memory error handling;
  // null: the process environment. (UCX itself always reads the process environment.)
  const Environment* env = nullptr;
};

// One UCP context and worker per transport. Errors: invalidArgument (rank/nranks/progress mode, a bad
// ucx_config entry), system (UCX could not be initialised).
Result<std::unique_ptr<Transport>> createUcxTransport(const TransportParams& params);
Result<std::unique_ptr<Transport>> createUcxTransport(const TransportParams& params, const UcxOptions& options);

}  // namespace psdp::transport::ucx
