#include "coll/ring_send_stream.h"

namespace psdp::coll {

// The send depth() places back must be complete. The ring of completions may be larger than depth() (it is
// made for the table's deepest rule), so that one is not necessarily the last user of the next one's slot.
Result<bool> RingSendStream::slotFree() const {
  if (next_.index() < depth()) return true;
  const transport::Completion& previous = op_.sends->at(next_.index() - depth());
  if (!previous.isDone()) return false;
  if (!previous.status.isOk()) return previous.status;
  return true;
}

Status RingSendStream::post(const std::byte* data) {
  transport::Completion& completion = op_.sends->at(next_.index());
  completion.reset();
  PSDP_RETURN_IF_ERROR(op_.transport->send(op_.rightPeer(), op_.tag, data, next_.count() * elem_size_, &completion));
  next_.advance();
  return Status::ok();
}

Result<bool> RingSendStream::settled() const {
  bool settled = true;
  for (uint64_t i = windowBegin(); i < next_.index(); ++i) {
    const transport::Completion& completion = op_.sends->at(i);
    if (!completion.isDone()) {
      settled = false;
    } else if (!completion.status.isOk()) {
      return completion.status;
    }
  }
  return settled;
}

}  // namespace psdp::coll
