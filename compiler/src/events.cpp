#include "events.h"

#include <tc/tensor.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tc/trace/trace.h"

namespace tc::events {
namespace {
TestObserver* g_observer = nullptr;

namespace tr = tc::trace;

// Interned once per recording session: the eager path records an execution
// per op, and intern(std::string_view) takes a lock.
constinit tr::StaticString g_trigger_text[] = {{"mark_step"}, {"explicit_evaluation"}, {"eager"}, {"collective"}};
constinit tr::StaticString g_eval_kind_text[] = {{"item"}, {"to_host"}, {"print"}};
constinit tr::StaticString g_debug_text{"debug"};
constinit tr::StaticString g_warning_text{"warning"};

tr::StringId text(const std::string& s) { return s.empty() ? tr::StringId{} : tr::intern(s); }
}  // namespace

uint64_t ticks() { return tr::enabled() ? tr::now() : 0; }

int64_t new_graph_id() { return tr::new_graph_id(); }
int64_t new_execution_id() { return tr::new_execution_id(); }

const char* eval_kind_name(EvalKind k) { return g_eval_kind_text[static_cast<size_t>(k)].text; }

void set_test_observer(TestObserver* observer) { g_observer = observer; }

void on_mark_step(int64_t step, const std::source_location& where, uint64_t start) {
  if (g_observer) g_observer->mark_step(step);
  if (!tr::enabled()) return;
  uint64_t end = tr::now();
  tr::emit(tr::rec::Step{
      .ts = tr::Ticks{start}, .dur = tr::Ticks{end - start}, .step = step, .loc_id = tr::location_id("mark_step", where)});
}

void on_explicit_evaluation(EvalKind kind, const std::source_location& where, int64_t nodes,
                            int64_t dur_ns, uint64_t start, int64_t graph_id) {
  if (g_observer) g_observer->explicit_evaluation(kind, where, nodes, dur_ns);
  if (!tr::enabled()) return;
  uint64_t end = tr::now();
  tr::emit(tr::rec::ExplicitEvaluation{.ts = tr::Ticks{start},
                                       .dur = tr::Ticks{end - start},
                                       .step = current_step(),
                                       .kind = tr::intern(g_eval_kind_text[static_cast<size_t>(kind)]),
                                       .loc_id = tr::location_id(eval_kind_name(kind), where),
                                       .nodes = nodes,
                                       .graph_id = graph_id});
}

void on_graph_executed(ExecTrigger trigger, int64_t nodes, int64_t, uint64_t start, int64_t graph_id, int64_t execution_id,
                       int64_t dynamic_size) {
  if (g_observer) g_observer->graph_executed(trigger, nodes);
  if (!tr::enabled()) return;
  uint64_t end = tr::now();
  tr::emit(tr::rec::Execution{.ts = tr::Ticks{start},
                              .dur = tr::Ticks{end - start},
                              .graph_id = graph_id,
                              .step = current_step(),
                              .trigger = tr::intern(g_trigger_text[static_cast<size_t>(trigger)]),
                              .nodes = nodes,
                              .execution_id = execution_id,
                              .dynamic_size = dynamic_size});
}

void on_alloc(int64_t, Category, int64_t live, int64_t capacity) {
  if (!tr::enabled()) return;
  static std::atomic<int64_t> recorded_capacity{-1};
  if (recorded_capacity.exchange(capacity, std::memory_order_relaxed) != capacity) TC_TRACE_COUNTER("memory.capacity_bytes", capacity);
  TC_TRACE_COUNTER("memory.live_bytes", live);
}

void on_free(int64_t, Category, int64_t live) { TC_TRACE_COUNTER("memory.live_bytes", live); }

void on_out_of_memory(int64_t requested, int64_t live, int64_t capacity,
                      const std::array<int64_t, kCategoryCount>& by_category, int64_t batch_size) {
  if (g_observer) g_observer->out_of_memory(requested, live, capacity);
  if (!tr::enabled()) return;
  static_assert(kCategoryCount == 6, "out_of_memory has one column per category");
  auto at = [&](Category k) { return by_category[static_cast<size_t>(k)]; };
  tr::emit(tr::rec::OutOfMemory{.ts = tr::Ticks{tr::now()},
                                .step = current_step(),
                                .requested_bytes = requested,
                                .live_bytes = live,
                                .capacity_bytes = capacity,
                                .parameter_bytes = at(Category::parameter),
                                .gradient_bytes = at(Category::gradient),
                                .optimizer_state_bytes = at(Category::optimizer_state),
                                .activation_bytes = at(Category::activation),
                                .input_bytes = at(Category::input),
                                .other_bytes = at(Category::other),
                                .batch_size = batch_size});
}

void on_compilation(const CompilationRecord& c) {
  if (g_observer) g_observer->compilation(c);
  if (!tr::enabled()) return;
  uint64_t end = tr::now();
  tr::emit(tr::rec::Compilation{.ts = tr::Ticks{c.start},
                                .dur = tr::Ticks{end - c.start},
                                .graph_id = c.graph_id,
                                .step = c.step,
                                .signature = text(c.signature),
                                .shape_erased = text(c.shape_erased),
                                .reason = text(c.reason),
                                .trigger = text(c.trigger),
                                .loc_id = tr::location_id(c.site_name, c.site),
                                .nodes_before = c.nodes_before,
                                .nodes_after = c.nodes_after,
                                .kernels = c.kernels,
                                .passes_ns = c.passes_ns,
                                .codegen_ns = c.codegen_ns,
                                .build_ns = c.build_ns,
                                .cache = text(c.cache),
                                .diff = text(c.diff),
                                .source_path = text(c.source_path)});
}

void on_compilation_input(int64_t graph_id, const std::string& input, int64_t dim, int64_t old_value,
                          int64_t new_value, bool dynamic) {
  if (!tr::enabled()) return;
  tr::emit(tr::rec::CompilationInput{
      .graph_id = graph_id, .input = tr::intern(input), .dim = dim, .old_value = old_value, .new_value = new_value,
      .dynamic = dynamic ? 1 : 0});
}

void on_compile_pass(int64_t graph_id, uint64_t start, uint64_t end, const char* pass, int64_t nodes_after) {
  if (!tr::enabled()) return;
  tr::emit(tr::rec::CompilePass{.graph_id = graph_id,
                                .ts = tr::Ticks{start},
                                .dur = tr::Ticks{end - start},
                                .pass = tr::intern(pass),
                                .nodes_after = nodes_after});
}

void on_memory_plan(const MemoryPlanRecord& m) {
  if (g_observer) g_observer->memory_plan(m);
  if (!tr::enabled()) return;
  auto at = [&](Category k) { return m.by_category[static_cast<size_t>(k)]; };
  tr::emit(tr::rec::MemoryPlan{.graph_id = m.graph_id,
                               .peak_bytes = m.peak,
                               .parameter_bytes = at(Category::parameter),
                               .gradient_bytes = at(Category::gradient),
                               .optimizer_state_bytes = at(Category::optimizer_state),
                               .activation_bytes = at(Category::activation) + at(Category::other),
                               .input_bytes = at(Category::input),
                               .workspace_bytes = m.workspace,
                               .batch_bytes = m.batch_bytes,
                               .batch_size = m.batch_size,
                               .capacity_bytes = m.capacity});
}

void on_setting(const char* name, const char* value) {
  if (!tr::enabled()) return;
  tr::emit(tr::rec::RunEnv{.name = tr::intern(name), .value = tr::intern(value)});
}

namespace {
// Kernel `kernel` of graph `graph_id` (0: eager) as the store records it.
void emit_kernel(int64_t graph_id, int64_t kernel, const KernelRecord& r) {
  tr::emit(tr::rec::Kernel{.graph_id = graph_id,
                           .kernel = kernel,
                           .kind = text(r.kind),
                           .ops = text(r.ops),
                           .loop = text(r.loop),
                           .bytes_read = r.bytes_read,
                           .bytes_written = r.bytes_written,
                           .flops = r.flops,
                           .sites = text(r.sites)});
}
}  // namespace

void on_kernels(int64_t graph_id, const std::vector<KernelRecord>& kernels) {
  if (!tr::enabled()) return;
  for (std::size_t k = 0; k < kernels.size(); ++k) emit_kernel(graph_id, static_cast<int64_t>(k), kernels[k]);
}

bool timing_kernels() { return tr::enabled(); }
uint64_t clock_now() { return tr::now(); }

void on_kernel_times(int64_t execution_id, int64_t graph_id, const uint64_t* ticks, std::size_t kernels) {
  if (!tr::enabled()) return;
  for (std::size_t k = 0; k < kernels; ++k)
    tr::emit(tr::rec::KernelExecution{.execution_id = execution_id,
                                      .graph_id = graph_id,
                                      .kernel = static_cast<int64_t>(k),
                                      .ts = tr::Ticks{ticks[2 * k]},
                                      .dur = tr::Ticks{ticks[2 * k + 1] - ticks[2 * k]}});
}

void on_eager_kernel(int64_t kernel, const KernelRecord& r) {
  if (!tr::enabled()) return;
  emit_kernel(0, kernel, r);
}

uint32_t recording_session() { return tr::enabled() ? tr::detail::g_session.load(std::memory_order_relaxed) : 0; }

void on_eager_op_time(int64_t execution_id, int64_t kernel, uint64_t start, uint64_t end) {
  if (!tr::enabled()) return;
  tr::emit(tr::rec::KernelExecution{
      .execution_id = execution_id, .graph_id = 0, .kernel = kernel, .ts = tr::Ticks{start}, .dur = tr::Ticks{end - start}});
}

namespace {
std::atomic<uint32_t> g_ceilings_session{0};
}

void on_ceilings(const char* backend, const CeilingsRecord& c) {
  if (!tr::enabled()) return;
  g_ceilings_session.store(tr::detail::g_session.load(std::memory_order_relaxed), std::memory_order_relaxed);
  auto text = [](std::string_view s) { return s.empty() ? tr::StringId{} : tr::intern(s); };
  tr::emit(tr::rec::Ceilings{.backend = tr::intern(backend), .gflops = c.gflops, .gbps = c.gbps, .source = tr::intern(c.source),
                             .isa = text(c.isa), .kernel = text(c.kernel), .threads = c.threads});
}

bool ceilings_recorded() {
  return tr::enabled() && g_ceilings_session.load(std::memory_order_relaxed) == tr::detail::g_session.load(std::memory_order_relaxed);
}

bool debug_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TC_DEBUG");
    return e && *e && std::string_view(e) != "0";
  }();
  return on;
}

void on_thread_name(std::string_view name) { tr::set_thread_name(name); }

void log_debug(const std::string& message) {
  if (!debug_enabled()) return;
  std::fprintf(stderr, "[tc] %s\n", message.c_str());
  if (!tr::enabled()) return;
  tr::emit(tr::rec::Log{.ts = tr::Ticks{tr::now()}, .level = tr::intern(g_debug_text), .message = tr::intern(message)});
}

void log_warning(const std::string& message) {
  if (!tr::enabled()) return;
  tr::emit(tr::rec::Log{.ts = tr::Ticks{tr::now()}, .level = tr::intern(g_warning_text), .message = tr::intern(message)});
}

void on_collective(uint64_t start, int64_t seq, const char* op, int64_t bytes, int64_t tensors, const std::source_location& where) {
  if (!tr::enabled()) return;
  uint64_t end = tr::now();
  tr::emit(tr::rec::Collective{.ts = tr::Ticks{start},
                               .dur = tr::Ticks{end - start},
                               .step = current_step(),
                               .seq = seq,
                               .op = tr::intern(op),
                               .bytes = bytes,
                               .tensors = tensors,
                               .loc_id = tr::location_id(op, where)});
}

void on_rank(int64_t rank, int64_t world_size, const std::string& host, const std::string& job, int64_t offset_ns, int64_t error_ns) {
  if (!tr::enabled()) return;
  tr::emit(tr::rec::Rank{.rank = rank,
                         .world_size = world_size,
                         .host = text(host),
                         .job = text(job),
                         .clock_offset_ns = offset_ns,
                         .clock_error_ns = error_ns});
}

}  // namespace tc::events
