// XLA FFI handlers that run psdp collectives inside compiled JAX programs on the CPU.
//
// Built by psdp.jax (see _build.py) against the FFI headers of the installed jaxlib and against psdp.h; it
// uses psdp's C API only. A program names its communicator by a registry key (an attribute), never by a
// pointer, so compiled programs stay cacheable and a key unknown at run time is a clear error.
//
// Every handler takes and returns an ordering token, a uint32 scalar it passes on incremented. Threading it
// from one collective to the next makes each depend on the one before, so XLA cannot run them in another
// order on one rank than on the others (which would deadlock or mix up their data).

#include <psdp/psdp.h>

#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

class CommRegistry {
 public:
  void add(int64_t key, psdp_comm_h comm) {
    std::unique_lock lock(mu_);
    comms_[key] = comm;
  }
  void remove(int64_t key) {
    std::unique_lock lock(mu_);
    comms_.erase(key);
  }
  psdp_comm_h find(int64_t key) const {
    std::shared_lock lock(mu_);
    auto it = comms_.find(key);
    return it == comms_.end() ? nullptr : it->second;
  }

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<int64_t, psdp_comm_h> comms_;
};

CommRegistry& registry() {
  static CommRegistry instance;
  return instance;
}

// psdp's dtype for an XLA element type; false for one psdp has not.
bool psdpDtype(ffi::DataType type, psdp_dtype_t* dtype) {
  switch (type) {
    case ffi::DataType::S8: *dtype = PSDP_INT8; return true;
    case ffi::DataType::U8: *dtype = PSDP_UINT8; return true;
    case ffi::DataType::S32: *dtype = PSDP_INT32; return true;
    case ffi::DataType::U32: *dtype = PSDP_UINT32; return true;
    case ffi::DataType::S64: *dtype = PSDP_INT64; return true;
    case ffi::DataType::U64: *dtype = PSDP_UINT64; return true;
    case ffi::DataType::F16: *dtype = PSDP_FLOAT16; return true;
    case ffi::DataType::BF16: *dtype = PSDP_BFLOAT16; return true;
    case ffi::DataType::F32: *dtype = PSDP_FLOAT32; return true;
    case ffi::DataType::F64: *dtype = PSDP_FLOAT64; return true;
    default: return false;
  }
}

// A buffer as psdp counts it: its elements if psdp has the dtype, else (for calls that only move data) its
// bytes.
struct Elements {
  psdp_dtype_t dtype;
  size_t count;
};

ffi::ErrorOr<Elements> reductionElements(const ffi::AnyBuffer& buffer, const char* call) {
  psdp_dtype_t dtype;
  if (!psdpDtype(buffer.element_type(), &dtype)) {
    return ffi::Unexpected(
        ffi::Error::InvalidArgument(std::string(call) + ": psdp reduces int8, uint8, int32, uint32, int64, " +
                                    "uint64, float16, bfloat16, float32 and float64 arrays; got XLA type " +
                                    std::to_string(static_cast<int>(buffer.element_type()))));
  }
  return Elements{dtype, buffer.element_count()};
}

Elements movedElements(const ffi::AnyBuffer& buffer) {
  psdp_dtype_t dtype;
  if (psdpDtype(buffer.element_type(), &dtype)) return {dtype, buffer.element_count()};
  return {PSDP_UINT8, buffer.size_bytes()};
}

ffi::ErrorOr<psdp_comm_h> lookup(int64_t key, const char* call) {
  psdp_comm_h comm = registry().find(key);
  if (comm == nullptr) {
    return ffi::Unexpected(
        ffi::Error::InvalidArgument(std::string(call) + ": no psdp communicator is registered under key " +
                                    std::to_string(key) + " in this process (psdp.jax.register it first)"));
  }
  return comm;
}

ffi::Error failure(psdp_status_t status, psdp_comm_h comm, const char* call) {
  std::string message = std::string(call) + ": " + psdp_status_string(status) + ": " + psdp_get_last_error(comm);
  return ffi::Error(status == PSDP_ERR_INVALID_ARGUMENT ? ffi::ErrorCode::kInvalidArgument : ffi::ErrorCode::kInternal,
                    std::move(message));
}

// Runs one collective: finds the communicator, makes `call(comm)` (which returns psdp's status, or an error of
// its own before calling psdp), and passes the token on.
template <typename Call>
ffi::Error runCollective(const char* name, int64_t comm_key, const ffi::BufferR0<ffi::U32>& token,
                         ffi::ResultBufferR0<ffi::U32>& next, Call call) {
  auto comm = lookup(comm_key, name);
  if (comm.has_error()) return comm.error();
  ffi::ErrorOr<psdp_status_t> status = call(*comm);
  if (status.has_error()) return status.error();
  if (*status != PSDP_SUCCESS) return failure(*status, *comm, name);
  *next->typed_data() = *token.typed_data() + 1;
  return ffi::Error::Success();
}

ffi::Error allReduce(ffi::AnyBuffer x, ffi::BufferR0<ffi::U32> token, ffi::Result<ffi::AnyBuffer> y,
                     ffi::ResultBufferR0<ffi::U32> next, int64_t comm_key, int64_t op) {
  static constexpr const char* kName = "psdp all_reduce";
  return runCollective(kName, comm_key, token, next, [&](psdp_comm_h comm) -> ffi::ErrorOr<psdp_status_t> {
    auto elements = reductionElements(x, kName);
    if (elements.has_error()) return ffi::Unexpected(elements.error());
    return psdp_all_reduce(x.untyped_data(), y->untyped_data(), elements->count, elements->dtype,
                           static_cast<psdp_op_t>(op), comm, nullptr, nullptr);
  });
}

ffi::Error reduceScatter(ffi::AnyBuffer x, ffi::BufferR0<ffi::U32> token, ffi::Result<ffi::AnyBuffer> y,
                         ffi::ResultBufferR0<ffi::U32> next, int64_t comm_key, int64_t op) {
  static constexpr const char* kName = "psdp reduce_scatter";
  return runCollective(kName, comm_key, token, next, [&](psdp_comm_h comm) -> ffi::ErrorOr<psdp_status_t> {
    auto elements = reductionElements(x, kName);
    if (elements.has_error()) return ffi::Unexpected(elements.error());
    return psdp_reduce_scatter(x.untyped_data(), y->untyped_data(), y->element_count(), elements->dtype,
                               static_cast<psdp_op_t>(op), comm, nullptr, nullptr);
  });
}

ffi::Error allGather(ffi::AnyBuffer x, ffi::BufferR0<ffi::U32> token, ffi::Result<ffi::AnyBuffer> y,
                     ffi::ResultBufferR0<ffi::U32> next, int64_t comm_key) {
  return runCollective("psdp all_gather", comm_key, token, next, [&](psdp_comm_h comm) -> ffi::ErrorOr<psdp_status_t> {
    Elements elements = movedElements(x);
    return psdp_all_gather(x.untyped_data(), y->untyped_data(), elements.count, elements.dtype, comm, nullptr, nullptr);
  });
}

// Every handler's signature: the array, the token in; the result, the token out; the communicator's key.
auto collectiveBinding() {
  return ffi::Ffi::Bind()
      .Arg<ffi::AnyBuffer>()
      .Arg<ffi::BufferR0<ffi::U32>>()
      .Ret<ffi::AnyBuffer>()
      .Ret<ffi::BufferR0<ffi::U32>>()
      .Attr<int64_t>("comm");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PsdpAllReduce, allReduce, collectiveBinding().Attr<int64_t>("op"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(PsdpReduceScatter, reduceScatter, collectiveBinding().Attr<int64_t>("op"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(PsdpAllGather, allGather, collectiveBinding());

// The registry, called from Python (ctypes) outside of any program.
extern "C" void psdp_jax_register(int64_t key, psdp_comm_h comm) {
  registry().add(key, comm);
}

extern "C" void psdp_jax_unregister(int64_t key) {
  registry().remove(key);
}
