#include "activity.h"

#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <vector>

namespace tc::capture::cupti {
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

void* open_cupti(std::string* why, std::string* path) {
  static std::string reason, where;
  static void* handle = [] {
    std::vector<std::string> names;
    if (const char* user = std::getenv("TC_CUPTI_LIBRARY"); user && *user) names.push_back(user);
    for (const char* n : {"libcupti.so.13", "libcupti.so.12", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so.13",
                          "/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"})
      names.push_back(n);
    // The one the program loaded already (a framework's own copy), if any:
    // one CUPTI per process.
    if (!std::getenv("TC_CUPTI_LIBRARY"))
      for (const char* n : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"})
        if (void* h = ::dlopen(n, RTLD_NOW | RTLD_NOLOAD)) {
          where = n;
          return h;
        }
    for (const std::string& n : names) {
      if (void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        where = n;
        return h;
      }
    }
    const char* e = ::dlerror();
    reason = std::string("no CUPTI library (") + (e ? e : "libcupti.so does not load") +
             "); set TC_CUPTI_LIBRARY to its path";
    return static_cast<void*>(nullptr);
  }();
  if (!handle && why) *why = reason;
  if (handle && path) *path = where;
  return handle;
}

NextRecordFn load_next_record(std::string* why) {
  static std::string reason;
  static NextRecordFn fn = [] {
    void* h = open_cupti(&reason, nullptr);
    if (!h) return NextRecordFn(nullptr);
    void* s = ::dlsym(h, "cuptiActivityGetNextRecord");
    if (!s) reason = "libcupti has no cuptiActivityGetNextRecord";
    return reinterpret_cast<NextRecordFn>(s);
  }();
  if (!fn && why) *why = reason;
  return fn;
}

int64_t Translator::take_execution(uint32_t correlation) {
  // Kept after use: the kernels of one graph launch share its correlation id.
  auto it = execution_of_.find(correlation);
  return it == execution_of_.end() ? -1 : it->second;
}

// The fields every kernel, memcpy and memset record has; nullptr (counted)
// for one CUPTI has no times for (start = end = 0).
template <class Record>
Row* Translator::add_row(const Record& a, const char* kind) {
  if (a.start == 0 && a.end == 0) {
    ++counts_.unreadable;
    return nullptr;
  }
  Row& row = rows_.emplace_back();
  row.kind = kind;
  row.ts = static_cast<int64_t>(a.start);
  row.dur = span(a.start, a.end);
  row.device = a.deviceId;
  row.stream = a.streamId;
  row.correlation = a.correlationId;
  row.execution_id = take_execution(a.correlationId);
  return &row;
}

void Translator::buffer(uint8_t* data, std::size_t valid_size) {
  rows_.clear();
  ++counts_.buffers;
  if (data == nullptr || valid_size == 0) return;
  void* r = nullptr;
  int status = CUPTI_SUCCESS;
  // CUPTI writes an external correlation record before the activity it tags.
  while ((status = next_(data, valid_size, &r)) == CUPTI_SUCCESS) {
    const auto* a = static_cast<const CUpti_Activity*>(r);
    switch (a->kind) {
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* e = static_cast<const CUpti_ActivityExternalCorrelation*>(r);
        if (e->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) break;
        execution_of_[e->correlationId] = static_cast<int64_t>(e->externalId);
        newest_correlation_ = std::max(newest_correlation_, e->correlationId);
        if (execution_of_.size() > (1u << 16)) {  // drop the oldest half: calls that launched nothing
          for (auto it = execution_of_.begin(); it != execution_of_.end();)
            it = newest_correlation_ - it->first > (1u << 15) ? execution_of_.erase(it) : std::next(it);
        }
        break;
      }
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = static_cast<const CUpti_ActivityKernel10*>(r);
        Row* row = add_row(*k, "kernel");
        if (!row) break;
        row->name = k->name;
        row->blocks = static_cast<int64_t>(k->gridX) * k->gridY * k->gridZ;
        row->threads = static_cast<int64_t>(k->blockX) * k->blockY * k->blockZ;
        if (parse_kernel_name(k->name, &row->graph_id, &row->kernel)) {
          if (row->execution_id < 0) ++counts_.untagged_kernels;
        } else {
          row->graph_id = row->kernel = -1;
          ++counts_.foreign_kernels;
        }
        ++counts_.kernels;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = static_cast<const CUpti_ActivityMemcpy6*>(r);
        const char* kind = m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD   ? "memcpy_htod"
                           : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? "memcpy_dtoh"
                           : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD ? "memcpy_dtod"
                                                                            : "memcpy_other";
        if (Row* row = add_row(*m, kind)) row->bytes = static_cast<int64_t>(m->bytes), ++counts_.transfers;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = static_cast<const CUpti_ActivityMemset4*>(r);
        if (Row* row = add_row(*m, "memset")) row->bytes = static_cast<int64_t>(m->bytes), ++counts_.transfers;
        break;
      }
      default: ++counts_.other_records; break;
    }
  }
  // The walk ends at the buffer's end (MAX_LIMIT_REACHED); anything else is
  // a record it cannot read, and the rest of the buffer with it.
  if (status != CUPTI_ERROR_MAX_LIMIT_REACHED) ++counts_.unreadable;
}

}  // namespace tc::capture::cupti
