// tc/analysis/kernels.h: where a run's execute time went, kernel by kernel.
//
//   auto store = tc::store::Reader::open("run.tcdb");
//   auto table = tc::analysis::kernel_table(*store, tc::analysis::KernelsBy::kKernel);
//   for (const auto& k : table->rows) std::cout << k.name << " " << k.share << "\n";
//   std::cout << tc::analysis::kernels_json(*table);   // schema "tc-analyze-kernels/1"
//
// Reads the kernels and kernel_executions tables (schema v2; an older store
// gives an empty table) and the machine's ceilings, if recorded; and, from
// schema v5, the GPU activity CUPTI recorded (gpu_activity, gpu_capture) of
// any CUDA program: its kernels by name and its copies by direction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tc/store/reader.h"
#include "tc/store/status.h"

namespace tc::analysis {

enum class KernelsBy { kKernel, kSite };

struct KernelRow {
  // kKernel: the fused ops with graph and kernel, e.g. "matmul (g1 k7)";
  // kSite: the source line, "train.cpp:88" (a kernel's time counts for the
  // first of its sites: the line most of its ops came from).
  std::string name;
  // kKernel: elementwise, reduce, matmul, scatter, attention, attention_grad, layer_norm,
  // layer_norm_grad, collective; kSite: "", or
  // "collective" for a line's tc::dist collectives, a row of their own
  // ("dist_train.cpp:68 (collective)"): their time is mostly the wait for the
  // other ranks, which `collectives` and distributed.straggler report, so
  // kernel.hotspot leaves them out.
  std::string kind;
  int64_t graph_id = 0, kernel = 0;  // kKernel only (graph 0: the eager executor)
  int64_t calls = 0;
  double total_s = 0, share = 0;    // share of the run's execute time
  double mean_s = 0, p50_s = 0, p99_s = 0;
  double gflops = 0, gbps = 0;      // achieved, from the kernel IR's FLOPs and bytes
  double flops = 0, bytes = 0;      // per call (kSite: summed over the line's kernels)
  // Against the ceilings: "compute" when its FLOPs per byte exceed the
  // probe's ridge point (its GFLOP/s over its GB/s), else "memory"; and the
  // achieved fraction of that ceiling in use (KernelTable::peak_*), never
  // above 1. Empty / 0 without ceilings.
  std::string bound;
  double of_ceiling = 0;
  std::vector<std::string> sites;   // "file.cpp:88", most ops first (basenames)
};

// A GPU kernel as CUPTI named it, over all its launches. A tc kernel
// (tc_g<graph>_k<n>) carries its graph and kernel (kernels table).
struct GpuKernelRow {
  std::string name;
  int64_t graph_id = 0, kernel = -1;  // 0 / -1: not tc's
  int64_t calls = 0;
  double total_s = 0, share = 0;      // share of all GPU kernel time
  double mean_s = 0, p50_s = 0, p99_s = 0;
};
struct GpuCopyRow {
  std::string kind;  // memcpy_htod, memcpy_dtoh, memcpy_dtod, memcpy_other, memset
  int64_t calls = 0, bytes = 0;
  double total_s = 0, gbps = 0;
};
struct GpuActivity {
  // gpu_capture, over the run's processes: "recorded" when any process
  // recorded, else "unavailable" (detail: why), "" when no capture ran.
  std::string status, detail;
  int64_t dropped = 0;  // records CUPTI lost
  double kernel_s = 0;  // all GPU kernel time
  std::vector<GpuKernelRow> kernels;  // by total time, largest first
  std::vector<GpuCopyRow> copies;     // by total time, largest first
};

struct KernelTable {
  double execute_s = 0;  // all executions
  double kernel_s = 0;   // all timed kernel runs
  // The ceilings rows are put against (0 if not recorded): the probe's,
  // raised to the best rate a kernel of that bound reached where one went
  // above it. A kernel above the probe means the probe measured low (the
  // machine was busy while it ran, or it ran on fewer threads); only kernels
  // with at least 1% of the timed kernel time raise it (a shorter one's rate
  // is mostly timer noise), and each raise is a line of notes: "ceiling
  // measured low: kernel matmul (g1 k0) reached 157 GFLOP/s over the
  // probe's 83". Rates are computed per kernel whichever the grouping.
  double peak_gflops = 0, peak_gbps = 0;
  double probe_gflops = 0, probe_gbps = 0;  // as recorded (table ceilings)
  // What the probe ran on (schema v6; "" / 0 in older stores): the CPU's
  // widest vector ISA, the product kernel (TC_GEMM's choice), the threads.
  std::string isa, gemm_kernel;
  int64_t threads = 0;
  std::vector<std::string> notes;
  std::vector<KernelRow> rows;            // by total time, largest first
  GpuActivity gpu;
};

StatusOr<KernelTable> kernel_table(const store::Reader& store, KernelsBy by = KernelsBy::kKernel);
// {"schema":"tc-analyze-kernels/1","execute_s":..,"kernel_s":..,"ceilings":{..},"kernels":[{..}],
//  "gpu":{"status":..,"detail":..,"dropped":..,"kernel_s":..,"kernels":[{..}],"copies":[{..}]}}
std::string kernels_json(const KernelTable& table);
// "file.cpp:88" from "/path/to/file.cpp:88".
std::string short_site(std::string_view site);

}  // namespace tc::analysis
