// The C boundary for premul-sum ops: each lives in its communicator's table (coll::CustomOps), which the
// collectives of that communicator consult when they are posted.
#include "api/guard.h"
#include "api/handle.h"
#include "coll/custom_ops.h"
#include "core/communicator.h"

using psdp::Status;
using psdp::api::checkHandle;
using psdp::api::guarded;

namespace {

psdp::Result<psdp::coll::CustomOps*> opsOf(psdp_comm_h comm, const char* what) {
  PSDP_RETURN_IF_ERROR(checkHandle(comm, "comm"));
  psdp::coll::CustomOps* ops = comm->impl->customOps();
  if (ops == nullptr) return Status::invalidUsage("{}: the communicator has been finalized", what);
  return ops;
}

}  // namespace

extern "C" {

PSDP_API psdp_status_t psdp_op_create_premul_sum(psdp_comm_h comm, const void* scalar, psdp_dtype_t dtype,
                                                 psdp_op_t* op_p) {
  return guarded(comm, [&]() -> Status {
    PSDP_ASSIGN_OR_RETURN(psdp::coll::CustomOps * ops, opsOf(comm, "psdp_op_create_premul_sum"));
    if (op_p == nullptr) return Status::invalidArgument("psdp_op_create_premul_sum: op_p is NULL");
    PSDP_ASSIGN_OR_RETURN(psdp_op_t op, ops->createPremulSum(scalar, dtype));
    *op_p = op;
    return Status::ok();
  });
}

PSDP_API psdp_status_t psdp_op_destroy(psdp_comm_h comm, psdp_op_t op) {
  return guarded(comm, [&]() -> Status {
    PSDP_ASSIGN_OR_RETURN(psdp::coll::CustomOps * ops, opsOf(comm, "psdp_op_destroy"));
    return ops->destroy(op);
  });
}

}  // extern "C"
