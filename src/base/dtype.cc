#include "base/dtype.h"

namespace psdp {

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

}  // namespace psdp
