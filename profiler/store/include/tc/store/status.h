// tc/store/status.h: Status and StatusOr, the error currency of the tools'
// libraries (store, collect, analysis, cli, viewer). They never throw across a
// module boundary; a failed call returns a Status whose message is one line
// that says what went wrong and what to do.
//
//   tc::StatusOr<tc::store::Reader> r = tc::store::Reader::open(path);
//   if (!r.ok()) { std::fprintf(stderr, "tc-analyze: %s\n", r.status().message().c_str()); return 2; }
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace tc {

// Each code maps to a distinct exit status in the command-line tools.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 2,  // bad flags, bad expression
  kNotFound = 3,         // the path does not exist
  kNotAStore = 4,        // a directory, an empty file, random bytes, another SQLite file
  kCorrupt = 5,          // a truncated or damaged store
  kNewerVersion = 6,     // written by a newer tc
  kIoError = 7,          // cannot read or write (permissions, full disk)
  kAlreadyExists = 8,    // refusing to overwrite
  kUnavailable = 9,      // a capability is missing (no GPU, no driver)
  kInternal = 10,        // a bug in tc
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "StatusOr built from an OK status without a value");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return checked(); }
  const T& value() const& { return const_cast<StatusOr*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &const_cast<StatusOr*>(this)->checked(); }
  T& operator*() { return checked(); }

 private:
  T& checked() {
    if (!value_) std::abort();  // reading the value of a failed StatusOr is a bug
    return *value_;
  }
  Status status_;
  std::optional<T> value_;
};

#define TC_RETURN_IF_ERROR(expr)        \
  do {                                  \
    ::tc::Status tc_status_ = (expr);   \
    if (!tc_status_.ok()) return tc_status_; \
  } while (0)

}  // namespace tc
