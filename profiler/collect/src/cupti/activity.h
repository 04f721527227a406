// CUPTI activity records -> tc's rows (built when the CUDA toolkit and its
// CUPTI headers are there). CUPTI hands the activity of the device in
// buffers; each completed buffer is walked with CUPTI's own
// cuptiActivityGetNextRecord (loaded with dlopen, so tc links no CUPTI) and
// turned into:
// - one kernel_executions row per tc kernel: the kernel's name
//   tc_g<graph>_k<n>[_suffix] (compiler/src/backend/cuda) gives graph and
//   kernel, the external correlation id tc pushed around the launch
//   (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, the execution id) the execution;
// - one transfer per memcpy and memset (kind, bytes, time, execution).
// Everything else is counted, never guessed: kernels of other code (not
// tc's names), tc kernels without an execution, records of other kinds.
// NOT YET: enabling CUPTI, the buffer callbacks and draining into the store
// from the collector thread (issue #18); this is the translation, tested on
// buffers of real CUPTI structs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tc::collect::cupti {

// "tc_g12_k3" or "tc_g12_k3_alpha" -> (12, 3); false for any other name.
bool parse_kernel_name(const char* name, int64_t* graph_id, int64_t* kernel);

struct KernelRow {  // a kernel_executions row (tc/trace/records.h), times in CUPTI's clock
  int64_t execution_id = 0, graph_id = 0, kernel = 0;
  int64_t ts = 0, dur = 0;
};
struct TransferRow {
  const char* kind = "";  // "memcpy_htod", "memcpy_dtoh", "memcpy_dtod", "memcpy_other", "memset"
  int64_t execution_id = -1;  // -1: no external correlation
  int64_t bytes = 0, ts = 0, dur = 0;
};
struct Counts {
  int64_t kernels = 0, transfers = 0;
  int64_t foreign_kernels = 0;   // kernels whose name is not tc's
  int64_t untagged_kernels = 0;  // tc kernels without an external correlation
  int64_t other_records = 0;     // kinds not translated
  int64_t dropped = 0;           // records CUPTI reported lost (add_dropped)
};

// cuptiActivityGetNextRecord's signature (CUpti_Activity** as void**).
using NextRecordFn = int (*)(uint8_t* buffer, std::size_t valid_size, void** record);
// libcupti's, loaded once; nullptr with `why` when it cannot be loaded.
NextRecordFn load_next_record(std::string* why);

class Translator {
 public:
  explicit Translator(NextRecordFn next) : next_(next) {}
  // Walks one completed buffer; rows append to kernels() and transfers().
  void buffer(uint8_t* data, std::size_t valid_size);
  // Records CUPTI lost (cuptiActivityGetNumDroppedRecords), counted.
  void add_dropped(std::size_t n) { counts_.dropped += static_cast<int64_t>(n); }
  const std::vector<KernelRow>& kernels() const { return kernels_; }
  const std::vector<TransferRow>& transfers() const { return transfers_; }
  const Counts& counts() const { return counts_; }

 private:
  NextRecordFn next_;
  std::unordered_map<uint32_t, int64_t> execution_of_;  // correlation id -> execution id
  std::vector<KernelRow> kernels_;
  std::vector<TransferRow> transfers_;
  Counts counts_;
};

}  // namespace tc::collect::cupti
