// tc's own NVTX ranges, for a tool other than tc (see events.h: NvtxScope).
#include <cstdlib>
#include <cstring>

#include "events.h"

#if TC_HAVE_NVTX3
#include <nvtx3/nvToolsExt.h>
#endif

namespace tc::events {

bool nvtx_to_other_tool() {
  static const bool on = [] {
#if TC_HAVE_NVTX3
    const char* path = std::getenv("NVTX_INJECTION64_PATH");
    if (path == nullptr || *path == '\0') return false;
    const char* base = std::strrchr(path, '/');
    return std::strcmp(base ? base + 1 : path, "libtc_nvtx.so") != 0;
#else
    return false;
#endif
  }();
  return on;
}

#if TC_HAVE_NVTX3
namespace {
nvtxDomainHandle_t tc_domain() {
  static nvtxDomainHandle_t d = nvtxDomainCreateA("tc");
  return d;
}
constexpr const char* kNames[] = {"tc.step", "tc.compile", "tc.execute"};
constexpr uint32_t kColors[] = {0xFF4C9BE8u, 0xFFE8A33Cu, 0xFF5CB85Cu};
}  // namespace
#endif

NvtxScope::NvtxScope(Kind kind, int64_t payload) noexcept : on_(nvtx_to_other_tool()) {
#if TC_HAVE_NVTX3
  if (!on_) return;
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = kColors[kind];
  a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
  a.payload.llValue = payload;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = kNames[kind];
  nvtxDomainRangePushEx(tc_domain(), &a);
#else
  (void)kind;
  (void)payload;
#endif
}

NvtxScope::~NvtxScope() {
#if TC_HAVE_NVTX3
  if (on_) nvtxDomainRangePop(tc_domain());
#endif
}

}  // namespace tc::events
