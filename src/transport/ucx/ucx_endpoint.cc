#include "transport/ucx/ucx_endpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "transport/ucx/ucx_status.h"

namespace psdp::transport::ucx {
namespace {

// A forced close completes locally; this bounds it in case UCX still has to drain a transport queue.
constexpr double kForceCloseSeconds = 1.0;

// Progresses until `request` completes or the deadline passes; frees it either way (a request still in
// flight is then released to UCX, which recycles it when it completes or when the worker goes).
ucs_status_t waitRequest(ucp_worker_h worker, ucs_status_ptr_t request, const Deadline& deadline) {
  if (!UCS_PTR_IS_PTR(request)) return UCS_PTR_STATUS(request);
  ucs_status_t status;
  while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS && !deadline.expired()) {
    ucp_worker_progress(worker);
  }
  ucp_request_free(request);
  return status == UCS_INPROGRESS ? UCS_ERR_TIMED_OUT : status;
}

// "#   lane[0]:  3:sysv/memory.0 md[2]   -> md[2]/sysv/sysdev[255] am am_bw#0 keepalive" becomes
// "sysv/memory.0(am,am_bw#0,keepalive)".
std::string laneToken(const std::string& line) {
  std::istringstream words(line.substr(line.find(':') + 1));
  std::string resource, word, roles;
  words >> resource;
  resource = resource.substr(resource.find(':') + 1);
  while (words >> word && word != "->") {
  }
  words >> word;  // the remote md and resource
  while (words >> word) roles += (roles.empty() ? "" : ",") + word;
  return resource + "(" + roles + ")";
}

// The "lane[" lines of UCX's description of `ep`, tokenised (laneToken).
std::vector<std::string> laneTokens(ucp_ep_h ep) {
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return {};
  ucp_ep_print_info(ep, stream);
  fclose(stream);
  std::istringstream lines(std::string(text, size));
  free(text);
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("lane[") != std::string::npos) tokens.push_back(laneToken(line));
  }
  return tokens;
}

}  // namespace

Result<UcxEndpoint> UcxEndpoint::create(ucp_worker_h worker, std::span<const std::byte> address, int peer,
                                        ucp_err_handler_cb_t on_error, void* arg, Logger log) {
  ucp_ep_params_t params{};
  params.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = on_error;
  params.err_handler.arg = arg;
  ucp_ep_h ep = nullptr;
  PSDP_UCS_CHECK(ucp_ep_create(worker, &params, &ep), fmt::format("create endpoint to peer {}", peer));
  return UcxEndpoint(worker, ep, peer, std::move(log));
}

UcxEndpoint::UcxEndpoint(ucp_worker_h worker, ucp_ep_h ep, int peer, Logger log)
    : worker_(worker), ep_(ep), peer_(peer), log_(std::move(log)) {}

UcxEndpoint::UcxEndpoint(UcxEndpoint&& other) noexcept
    : worker_(other.worker_), ep_(std::exchange(other.ep_, nullptr)), peer_(other.peer_), log_(std::move(other.log_)) {}

UcxEndpoint& UcxEndpoint::operator=(UcxEndpoint&& other) noexcept {
  if (this != &other) {
    if (isOpen()) (void)close(/*force=*/true, Deadline::after(kForceCloseSeconds));
    worker_ = other.worker_;
    ep_ = std::exchange(other.ep_, nullptr);
    peer_ = other.peer_;
    log_ = std::move(other.log_);
  }
  return *this;
}

UcxEndpoint::~UcxEndpoint() {
  if (!isOpen()) return;
  log_->warn("endpoint to peer {} destroyed while open, force-closing it", peer_);
  (void)close(/*force=*/true, Deadline::after(kForceCloseSeconds));
}

Status UcxEndpoint::close(bool force, const Deadline& deadline) {
  if (!isOpen()) return Status::ok();
  ucp_request_param_t param{};
  ucs_status_t flushed = UCS_OK;
  if (!force) flushed = waitRequest(worker_, ucp_ep_flush_nbx(ep_, &param), deadline);
  // The forced close releases whatever the flush left behind; it waits for no reply from the peer, so it
  // gets its own short grace instead of what is left of the caller's deadline.
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_t closed =
      waitRequest(worker_, ucp_ep_close_nbx(std::exchange(ep_, nullptr), &param), Deadline::after(kForceCloseSeconds));
  if (flushed == UCS_ERR_TIMED_OUT) return Status::timeout("flush of endpoint to peer {} did not finish", peer_);
  PSDP_RETURN_IF_ERROR(ucsStatus(flushed, fmt::format("flush endpoint to peer {}", peer_)));
  return ucsStatus(closed, fmt::format("close endpoint to peer {}", peer_));
}

std::string UcxEndpoint::laneSummary() const {
  if (!isOpen()) return "closed";
  std::string summary;
  for (const std::string& token : laneTokens(ep_)) summary += (summary.empty() ? "" : " ") + token;
  return summary.empty() ? "none" : summary;
}

std::vector<std::string> UcxEndpoint::laneTransports() const {
  if (!isOpen()) return {};
  std::vector<std::string> transports;
  for (const std::string& token : laneTokens(ep_)) transports.push_back(token.substr(0, token.find('/')));
  std::sort(transports.begin(), transports.end());
  transports.erase(std::unique(transports.begin(), transports.end()), transports.end());
  return transports;
}

}  // namespace psdp::transport::ucx
