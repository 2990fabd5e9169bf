#include "base/status.h"

#include <cstring>

#include "base/log.h"

namespace psdp {

namespace {
const std::string kEmpty;
}

Status Status::fromErrno(int err, std::string_view what) {
  char buf[256];
  // GNU strerror_r returns the message, which may or may not live in buf.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return Status::system("{}: {}", what, text);
}

const std::string& Status::message() const {
  return state_ ? state_->message : kEmpty;
}

std::string Status::toString() const {
  if (isOk()) return "success";
  return fmt::format("{}: {}", statusName(code()), state_->message);
}

Status Status::withContext(std::string_view context) const {
  if (isOk()) return *this;
  return Status(state_->code, fmt::format("{}: {}", context, state_->message));
}

namespace detail {
void logPropagation(const Status& status, const char* file, int line) {
  processLog().trace("{}:{} -> {}", file, line, static_cast<int>(status.code()));
}
}  // namespace detail

const char* statusName(psdp_status_t status) {
  switch (status) {
    case PSDP_SUCCESS: return "success";
    case PSDP_IN_PROGRESS: return "in progress";
    case PSDP_ERR_INVALID_ARGUMENT: return "invalid argument";
    case PSDP_ERR_INVALID_USAGE: return "invalid usage";
    case PSDP_ERR_SYSTEM: return "system error";
    case PSDP_ERR_INTERNAL: return "internal error";
    case PSDP_ERR_REMOTE: return "remote error";
    case PSDP_ERR_TIMEOUT: return "timeout";
    case PSDP_ERR_UNSUPPORTED: return "unsupported";
    case PSDP_ERR_MISMATCH: return "mismatch";
    case PSDP_ERR_ABORTED: return "aborted";
    case PSDP_STATUS_MAX_ENUM: break;
  }
  return "unknown status";
}

}  // namespace psdp
