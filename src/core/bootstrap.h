// The TCP bootstrap: one root listens; every rank connects, root and rank prove to each other that they
// hold the job secret, and the rank sends a payload (its transport address); once all nranks have arrived
// the root sends each rank the table of every payload, and the connections close. Later out-of-band
// exchanges go over the transport itself.
//
// The root speaks a small framed protocol (bootstrap_protocol.h: magic, protocol version, lengths bounded
// by nranks and a 64 KiB payload limit) and drops any connection that does not follow it, fails to prove
// the secret or stalls (min(5 s, PSDP_TIMEOUT) to send its hello), so that a stray or hostile client
// cannot disturb a job that is initialising. The secret never travels: both ends prove it with MACs over
// fresh nonces (bootstrap_auth.h), the root first, so a listener squatting on a scanned port learns
// nothing from a rank; the table carries a MAC bound to the connection, so a table the root did not build
// is rejected. The payloads are not encrypted: an eavesdropper sees the ranks' addresses, not the secret.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "base/config.h"
#include "base/deadline.h"
#include "base/log.h"
#include "base/status.h"
#include "core/rendezvous_id.h"

namespace psdp::core {

// A root serving one rendezvous in its own thread. The thread ends when every rank has received the
// table, when the deadline passes (ranks that are waiting get a timeout naming the missing ranks), when
// the rendezvous fails (nranks mismatch or a rank claimed twice: every rank that comes is told, until all
// have been or the deadline passes), or when the object is destroyed (which stops and joins it). Logs go
// to processLog(); the secret is never logged, nor any byte a peer sent, and the warnings about dropped
// peers are limited per kind (wrong secret, protocol violation, ...) and summarised when the root ends.
class RootServer {
 public:
  // Binds to `bind_host` (empty: the interface chosen by PSDP_SOCKET_IFNAME, else the first non-loopback
  // interface that is up, else loopback) at `port` (0: the first free port of config.port_range, or any
  // port the kernel picks when the range is empty). `inherited_listener` >= 0 is a socket psdp-run already
  // bound there (PSDP_ROOT_FD): it is used instead of binding when adoptInheritedListener accepts it. Does
  // not block. Errors: system (no interface, port in use, no free port in the range), invalid argument
  // (bind_host is not a numeric address).
  static Result<std::unique_ptr<RootServer>> start(const std::string& bind_host, uint16_t port, const JobSecret& secret,
                                                   const Config& config, const Deadline& deadline,
                                                   int inherited_listener = -1);
  // Stops the thread and joins it. While ranks are still arriving it returns at once, and the waiting ranks
  // get an aborted error. Once every rank has arrived (or the rendezvous failed) it first lets the table
  // or error reach every rank, for at most about a second: the owner may destroy the root as soon as its
  // own rank has the table.
  virtual ~RootServer() = default;
  // The address ranks connect to, with the secret.
  virtual const RendezvousId& id() const = 0;
  // True once the thread has ended (rendezvous served, failed or timed out). Thread-safe.
  virtual bool finished() const = 0;
};

// Starts a root with a fresh random secret whose lifetime is not tied to any object (psdp_get_unique_id:
// the caller may never create a communicator). A process-wide registry owns it: it ends by itself after
// the rendezvous or after config.timeout_s, finished roots are joined on the next call, and roots still
// running when the library unloads (or the process exits) are stopped then. Thread-safe. Errors: those
// of RootServer::start and randomSecret.
Result<RendezvousId> startDetachedRoot(const Config& config);

// Client side: connects to the root of `id` (retrying with backoff while it is not listening yet, until
// the deadline; when id.port is 0, scanning config.port_range for a root that proves it holds our secret,
// warning once about each listener that fails to), sends rank, nranks and `payload` sealed with the secret,
// and returns every rank's payload indexed by rank. Blocks until
// the table arrives or the deadline. Thread-safe (ranks may be threads of one process). `log` may be null.
// Errors: invalid argument (rank/nranks out of range, payload over 64 KiB, port 0 with no range),
// mismatch (another rank used a different nranks, or two ranks claim one rank: the message names them;
// the root we were sent to could not prove it holds our secret), timeout (names the address, and the
// ranks that had not arrived when the root said so), aborted (the root was shut down), remote (the root
// went away, sent garbage, or sent a table or error whose MAC does not verify), system.
Result<std::vector<std::vector<std::byte>>> exchangeViaRoot(const RendezvousId& id, int rank, int nranks,
                                                            std::span<const std::byte> payload, const Config& config,
                                                            const Deadline& deadline, const Logger& log);

}  // namespace psdp::core
