// Status and Result<T>: the error model inside psdp. Nothing throws; every fallible function returns one of
// these and the C boundary (src/api) turns them into psdp_status_t plus the last-error text.
#pragma once

#include <psdp/psdp.h>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace psdp {

// A code plus a message. OK holds no allocation, so returning success is as cheap as returning an int
// (LevelDB's Status does the same).
class [[nodiscard]] Status {
 public:
  Status() = default;

  static Status ok() { return Status(); }
  template <typename... Args>
  static Status make(psdp_status_t code, fmt::format_string<Args...> format, Args&&... args) {
    // Success carries no message, so that isOk() stays the one test for success.
    if (code == PSDP_SUCCESS) return Status();
    return Status(code, fmt::format(format, std::forward<Args>(args)...));
  }
#define PSDP_STATUS_FACTORY(Name, Code)                                    \
  template <typename... Args>                                              \
  static Status Name(fmt::format_string<Args...> format, Args&&... args) { \
    return Status(Code, fmt::format(format, std::forward<Args>(args)...)); \
  }
  PSDP_STATUS_FACTORY(invalidArgument, PSDP_ERR_INVALID_ARGUMENT)
  PSDP_STATUS_FACTORY(invalidUsage, PSDP_ERR_INVALID_USAGE)
  PSDP_STATUS_FACTORY(system, PSDP_ERR_SYSTEM)
  PSDP_STATUS_FACTORY(internal, PSDP_ERR_INTERNAL)
  PSDP_STATUS_FACTORY(remote, PSDP_ERR_REMOTE)
  PSDP_STATUS_FACTORY(timeout, PSDP_ERR_TIMEOUT)
  PSDP_STATUS_FACTORY(unsupported, PSDP_ERR_UNSUPPORTED)
  PSDP_STATUS_FACTORY(mismatch, PSDP_ERR_MISMATCH)
  PSDP_STATUS_FACTORY(aborted, PSDP_ERR_ABORTED)
#undef PSDP_STATUS_FACTORY

  // A system error from errno: "<what>: <strerror(err)>".
  static Status fromErrno(int err, std::string_view what);

  bool isOk() const {
    return state_ == nullptr;
  }
  psdp_status_t code() const {
    return state_ ? state_->code : PSDP_SUCCESS;
  }
  // Empty for OK.
  const std::string& message() const;
  // "<status string>: <message>", for logs.
  std::string toString() const;

  // The same code with "<context>: " put in front of the message. OK stays OK.
  Status withContext(std::string_view context) const;

 private:
  struct State {
    psdp_status_t code;
    std::string message;
  };
  Status(psdp_status_t code, std::string message)
      : state_(std::make_shared<const State>(State{code, std::move(message)})) {}

  std::shared_ptr<const State> state_;
};

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool isOk() const { return std::holds_alternative<T>(v_); }
  // REQUIRES: !isOk() for a meaningful status; OK otherwise.
  Status status() const { return isOk() ? Status::ok() : std::get<Status>(v_); }
  // REQUIRES: isOk().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }

 private:
  std::variant<T, Status> v_;
};

// The text psdp_status_string returns.
const char* statusName(psdp_status_t status);

namespace detail {
void logPropagation(const Status& status, const char* file, int line);
}  // namespace detail

}  // namespace psdp

#define PSDP_CONCAT_INNER(a, b) a##b
#define PSDP_CONCAT(a, b) PSDP_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if it is an error, logging "-> code" at trace level with
// file and line: a cheap backtrace in the log (NCCL's NCCLCHECK does the same).
#define PSDP_RETURN_IF_ERROR(expr)                                      \
  do {                                                                  \
    ::psdp::Status psdp_status_ = (expr);                               \
    if (!psdp_status_.isOk()) {                                         \
      ::psdp::detail::logPropagation(psdp_status_, __FILE__, __LINE__); \
      return psdp_status_;                                              \
    }                                                                   \
  } while (0)

#define PSDP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                    \
  auto tmp = (expr);                                                  \
  if (!tmp.isOk()) {                                                  \
    ::psdp::detail::logPropagation(tmp.status(), __FILE__, __LINE__); \
    return tmp.status();                                              \
  }                                                                   \
  lhs = std::move(tmp).value()

// `lhs = value of expr`, or return its status from the enclosing function.
#define PSDP_ASSIGN_OR_RETURN(lhs, expr) PSDP_ASSIGN_OR_RETURN_IMPL(PSDP_CONCAT(psdp_result_, __LINE__), lhs, expr)
