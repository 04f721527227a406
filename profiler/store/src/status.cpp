#include "tc/store/status.h"

namespace tc {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kNotAStore: return "not a store";
    case StatusCode::kCorrupt: return "corrupt";
    case StatusCode::kNewerVersion: return "newer version";
    case StatusCode::kIoError: return "I/O error";
    case StatusCode::kAlreadyExists: return "already exists";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

}  // namespace tc
