// CUPTI activity records -> tc's rows (built when the CUDA toolkit and its
// CUPTI headers are there). CUPTI hands the activity of the device in
// buffers; each completed buffer is walked with CUPTI's own
// cuptiActivityGetNextRecord (loaded with dlopen, so tc links no CUPTI) and
// every kernel, memcpy and memset becomes one Row (a gpu_activity row,
// tc/trace/records.h):
// - a kernel named tc_g<graph>_k<n>[_suffix] (compiler/src/backend/cuda) is
//   tc's: it carries its graph and kernel;
// - the external correlation id tc pushed around the launch
//   (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, the execution id) gives the
//   execution of any kernel or copy launched inside it.
// Kernels of other code (cuBLAS's, PyTorch's) are rows too, with their names;
// records of other kinds are counted, never guessed at. The name of a row
// points into the buffer: use the rows before the buffer is handed back.
// The session that enables CUPTI and drains its buffers is injection.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tc::capture::cupti {

// "tc_g12_k3" or "tc_g12_k3_alpha" -> (12, 3); false for any other name.
bool parse_kernel_name(const char* name, int64_t* graph_id, int64_t* kernel);

struct Row {
  const char* kind = "";       // "kernel", "memcpy_htod", "memcpy_dtoh", "memcpy_dtod", "memcpy_other", "memset"
  const char* name = nullptr;  // a kernel's name (in the buffer); nullptr for a copy or a set
  int64_t ts = 0, dur = 0;     // CUPTI's clock, ns
  int64_t bytes = 0;           // copied or set; 0 for a kernel
  int64_t device = 0, stream = 0, correlation = 0;
  int64_t execution_id = -1;   // -1: no external correlation of tc's kind
  int64_t graph_id = -1, kernel = -1;  // -1: not a tc kernel
  int64_t blocks = 0, threads = 0;     // a kernel's grid and block sizes
};
struct Counts {
  int64_t kernels = 0, transfers = 0;
  int64_t foreign_kernels = 0;   // kernels whose name is not tc's (kept as rows)
  int64_t untagged_kernels = 0;  // tc kernels without an external correlation (kept as rows)
  int64_t other_records = 0;     // kinds not translated
  int64_t dropped = 0;           // records CUPTI reported lost (add_dropped)
  int64_t buffers = 0;           // buffers walked
  // Records that could not be used: a buffer whose walk ended before its
  // valid bytes (an incomplete or unknown record: the rest of that buffer is
  // lost, counted once), a kernel or copy without times (start = end = 0).
  int64_t unreadable = 0;
};


// cuptiActivityGetNextRecord's signature (CUpti_Activity** as void**).
using NextRecordFn = int (*)(uint8_t* buffer, std::size_t valid_size, void** record);
// libcupti, dlopen()ed once: TC_CUPTI_LIBRARY if set, else by its sonames
// and the toolkit's paths; nullptr with `why` (one line) when none loads.
// `path`: what was loaded.
void* open_cupti(std::string* why, std::string* path = nullptr);
// libcupti's, loaded once; nullptr with `why` when it cannot be loaded.
NextRecordFn load_next_record(std::string* why);

class Translator {
 public:
  explicit Translator(NextRecordFn next) : next_(next) {}
  // Walks one completed buffer; its rows replace rows().
  void buffer(uint8_t* data, std::size_t valid_size);
  // Records CUPTI lost (cuptiActivityGetNumDroppedRecords), counted.
  void add_dropped(std::size_t n) { counts_.dropped += static_cast<int64_t>(n); }
  // The last buffer's rows (names point into that buffer).
  const std::vector<Row>& rows() const { return rows_; }
  const Counts& counts() const { return counts_; }

 private:
  NextRecordFn next_;
  // correlation id -> execution id; bounded to the newest 32768 ids once it
  // holds 65536 (most API calls launch nothing).
  std::unordered_map<uint32_t, int64_t> execution_of_;
  uint32_t newest_correlation_ = 0;
  std::vector<Row> rows_;
  Counts counts_;
  int64_t take_execution(uint32_t correlation);
  template <class Record> Row* add_row(const Record& a, const char* kind);
};

}  // namespace tc::capture::cupti
