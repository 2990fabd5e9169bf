// Sizes and names of the public dtype and op enums, for the algorithms and for log and error messages.
#include "coll/collectives.h"
#include "coll/reduce_kernels.h"

namespace psdp::coll {

bool isReductionSupported(psdp_dtype_t dtype, psdp_op_t op) {
  return findReduceKernel(dtype, op).isValid();
}

size_t dtypeSize(psdp_dtype_t dtype) {
  switch (dtype) {
    case PSDP_INT8:
    case PSDP_UINT8: return 1;
    case PSDP_FLOAT16:
    case PSDP_BFLOAT16: return 2;
    case PSDP_INT32:
    case PSDP_UINT32:
    case PSDP_FLOAT32: return 4;
    case PSDP_INT64:
    case PSDP_UINT64:
    case PSDP_FLOAT64: return 8;
    case PSDP_NUM_DTYPES:
    case PSDP_DTYPE_MAX_ENUM: break;
  }
  return 0;
}

const char* dtypeName(psdp_dtype_t dtype) {
  switch (dtype) {
    case PSDP_INT8: return "int8";
    case PSDP_UINT8: return "uint8";
    case PSDP_INT32: return "int32";
    case PSDP_UINT32: return "uint32";
    case PSDP_INT64: return "int64";
    case PSDP_UINT64: return "uint64";
    case PSDP_FLOAT16: return "float16";
    case PSDP_BFLOAT16: return "bfloat16";
    case PSDP_FLOAT32: return "float32";
    case PSDP_FLOAT64: return "float64";
    case PSDP_NUM_DTYPES:
    case PSDP_DTYPE_MAX_ENUM: break;
  }
  return "unknown";
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
