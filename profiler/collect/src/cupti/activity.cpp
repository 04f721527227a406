#include "activity.h"

#include <cupti.h>
#include <dlfcn.h>

#include <cstdlib>

namespace tc::collect::cupti {
namespace {

bool parse_int(const char*& p, int64_t* out) {
  if (*p < '0' || *p > '9') return false;
  int64_t v = 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    if (v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (*p - '0');
  }
  *out = v;
  return true;
}

int64_t span(uint64_t start, uint64_t end) { return end >= start ? static_cast<int64_t>(end - start) : 0; }

}  // namespace

bool parse_kernel_name(const char* name, int64_t* graph_id, int64_t* kernel) {
  if (!name || name[0] != 't' || name[1] != 'c' || name[2] != '_' || name[3] != 'g') return false;
  const char* p = name + 4;
  int64_t g = 0, k = 0;
  if (!parse_int(p, &g) || p[0] != '_' || p[1] != 'k') return false;
  p += 2;
  if (!parse_int(p, &k) || (*p != '\0' && *p != '_')) return false;
  *graph_id = g;
  *kernel = k;
  return true;
}

NextRecordFn load_next_record(std::string* why) {
  static std::string reason;
  static NextRecordFn fn = [] {
    void* h = nullptr;
    for (const char* n : {"libcupti.so.13", "libcupti.so.12", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so",
                          "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"})
      if ((h = ::dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
    if (!h) {
      const char* e = ::dlerror();
      reason = std::string("no CUPTI (") + (e ? e : "libcupti.so does not load") + ")";
      return NextRecordFn(nullptr);
    }
    void* s = ::dlsym(h, "cuptiActivityGetNextRecord");
    if (!s) reason = "libcupti has no cuptiActivityGetNextRecord";
    return reinterpret_cast<NextRecordFn>(s);
  }();
  if (!fn && why) *why = reason;
  return fn;
}

void Translator::buffer(uint8_t* data, std::size_t valid_size) {
  void* r = nullptr;
  // CUPTI writes an external correlation record before the activity it tags.
  while (next_(data, valid_size, &r) == CUPTI_SUCCESS) {
    const auto* a = static_cast<const CUpti_Activity*>(r);
    switch (a->kind) {
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* e = static_cast<const CUpti_ActivityExternalCorrelation*>(r);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          execution_of_[e->correlationId] = static_cast<int64_t>(e->externalId);
        break;
      }
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = static_cast<const CUpti_ActivityKernel10*>(r);
        KernelRow row;
        if (!parse_kernel_name(k->name, &row.graph_id, &row.kernel)) {
          ++counts_.foreign_kernels;
          break;
        }
        auto it = execution_of_.find(k->correlationId);
        if (it == execution_of_.end()) {
          ++counts_.untagged_kernels;
          break;
        }
        row.execution_id = it->second;
        row.ts = static_cast<int64_t>(k->start);
        row.dur = span(k->start, k->end);
        kernels_.push_back(row);
        ++counts_.kernels;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = static_cast<const CUpti_ActivityMemcpy6*>(r);
        TransferRow t;
        t.kind = m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD   ? "memcpy_htod"
                 : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? "memcpy_dtoh"
                 : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD ? "memcpy_dtod"
                                                                  : "memcpy_other";
        auto it = execution_of_.find(m->correlationId);
        t.execution_id = it == execution_of_.end() ? -1 : it->second;
        t.bytes = static_cast<int64_t>(m->bytes);
        t.ts = static_cast<int64_t>(m->start);
        t.dur = span(m->start, m->end);
        transfers_.push_back(t);
        ++counts_.transfers;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = static_cast<const CUpti_ActivityMemset4*>(r);
        TransferRow t;
        t.kind = "memset";
        auto it = execution_of_.find(m->correlationId);
        t.execution_id = it == execution_of_.end() ? -1 : it->second;
        t.bytes = static_cast<int64_t>(m->bytes);
        t.ts = static_cast<int64_t>(m->start);
        t.dur = span(m->start, m->end);
        transfers_.push_back(t);
        ++counts_.transfers;
        break;
      }
      default: ++counts_.other_records; break;
    }
  }
}

}  // namespace tc::collect::cupti
