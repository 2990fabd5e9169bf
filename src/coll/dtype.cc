// Names of the public op enum and which (dtype, op) pairs reduce, for the algorithms and for messages.
#include "coll/collectives.h"
#include "coll/reduce_kernels.h"

namespace psdp::coll {

bool isReductionSupported(psdp_dtype_t dtype, psdp_op_t op) {
  return findReduceKernel(dtype, op).isValid();
}

const char* opName(psdp_op_t op) {
  switch (op) {
    case PSDP_SUM: return "sum";
    case PSDP_PROD: return "prod";
    case PSDP_MIN: return "min";
    case PSDP_MAX: return "max";
    case PSDP_AVG: return "avg";
    case PSDP_NUM_OPS:
    case PSDP_OP_MAX_ENUM: break;
  }
  return "unknown";
}

}  // namespace psdp::coll
