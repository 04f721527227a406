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

int64_t i64(uint64_t v) { return static_cast<int64_t>(v); }
}  // namespace

uint64_t ticks() { return tr::enabled() ? tr::now() : 0; }

const char* eval_kind_name(EvalKind k) {
  switch (k) {
    case EvalKind::item: return "item";
    case EvalKind::to_host: return "to_host";
    case EvalKind::print: return "print";
  }
  return "?";
}

void set_test_observer(TestObserver* observer) { g_observer = observer; }

void on_mark_step(int64_t step, const std::source_location& where, uint64_t start) {
  if (g_observer) g_observer->mark_step(step);
  if (!tr::enabled()) return;
  uint64_t end = tr::now();
  tr::record(tr::RecordKind::kStep, {i64(start), i64(end - start), step, tr::location_id("mark_step", where)});
}

void on_explicit_evaluation(EvalKind kind, const std::source_location& where, int64_t nodes,
                            int64_t dur_ns, uint64_t start, int64_t graph_id) {
  if (g_observer) g_observer->explicit_evaluation(kind, where, nodes, dur_ns);
  if (!tr::enabled()) return;
  uint64_t end = tr::now();
  tr::record(tr::RecordKind::kExplicitEvaluation,
             {i64(start), i64(end - start), current_step(), tr::intern(eval_kind_name(kind)),
              tr::location_id(eval_kind_name(kind), where), nodes, graph_id});
}

void on_graph_executed(ExecTrigger trigger, int64_t nodes, int64_t, uint64_t start, int64_t graph_id) {
  if (g_observer) g_observer->graph_executed(trigger, nodes);
  if (!tr::enabled()) return;
  uint64_t end = tr::now();
  const char* name = trigger == ExecTrigger::mark_step ? "mark_step" : trigger == ExecTrigger::explicit_eval ? "explicit_evaluation" : "eager";
  tr::record(tr::RecordKind::kExecution, {i64(start), i64(end - start), graph_id, current_step(), tr::intern(name), nodes});
}

void on_alloc(int64_t, Category, int64_t live, int64_t capacity) {
  if (!tr::enabled()) return;
  static std::atomic<int64_t> recorded_capacity{-1};
  if (recorded_capacity.exchange(capacity, std::memory_order_relaxed) != capacity) TC_TRACE_COUNTER("memory.capacity_bytes", capacity);
  TC_TRACE_COUNTER("memory.live_bytes", live);
}

void on_free(int64_t, Category, int64_t live) { TC_TRACE_COUNTER("memory.live_bytes", live); }

void on_out_of_memory(int64_t requested, int64_t live, int64_t capacity,
                      const std::array<int64_t, kCategoryCount>& by_category) {
  if (g_observer) g_observer->out_of_memory(requested, live, capacity);
  if (!tr::enabled()) return;
  static_assert(kCategoryCount == 6, "out_of_memory has one column per category");
  const auto& c = by_category;
  auto at = [&](Category k) { return c[static_cast<size_t>(k)]; };
  // batch_size: unknown to the eager runtime; the compiled path's planner knows it.
  tr::record(tr::RecordKind::kOutOfMemory,
             {i64(tr::now()), current_step(), requested, live, capacity, at(Category::parameter), at(Category::gradient),
              at(Category::optimizer_state), at(Category::activation), at(Category::input), at(Category::other)});
}

void on_compilation(const CompilationRecord& c) {
  if (g_observer) g_observer->compilation(c);
  if (!tr::enabled()) return;
  uint64_t end = tr::now();
  auto text = [](const std::string& s) { return s.empty() ? int64_t{0} : static_cast<int64_t>(tr::intern(s)); };
  tr::record(tr::RecordKind::kCompilation,
             {i64(c.start), i64(end - c.start), c.graph_id, c.step, text(c.signature), text(c.shape_erased),
              text(c.reason), text(c.trigger), tr::location_id(c.site_name, c.site), c.nodes_before, c.nodes_after,
              c.kernels, c.passes_ns, c.codegen_ns, c.build_ns, text(c.cache), text(c.diff), text(c.source_path)});
}

void on_compilation_input(int64_t graph_id, const std::string& input, int64_t dim, int64_t old_value,
                          int64_t new_value) {
  if (!tr::enabled()) return;
  tr::record(tr::RecordKind::kCompilationInput, {graph_id, tr::intern(input), dim, old_value, new_value});
}

void on_compile_pass(int64_t graph_id, uint64_t start, uint64_t end, const char* pass, int64_t nodes_after) {
  if (!tr::enabled()) return;
  tr::record(tr::RecordKind::kCompilePass, {graph_id, i64(start), i64(end - start), tr::intern(pass), nodes_after});
}

void on_memory_plan(const MemoryPlanRecord& m) {
  if (g_observer) g_observer->memory_plan(m);
  if (!tr::enabled()) return;
  auto at = [&](Category k) { return m.by_category[static_cast<size_t>(k)]; };
  tr::record(tr::RecordKind::kMemoryPlan,
             {m.graph_id, m.peak, at(Category::parameter), at(Category::gradient), at(Category::optimizer_state),
              at(Category::activation) + at(Category::other), at(Category::input), m.workspace, m.batch_bytes,
              m.batch_size, m.capacity});
}

bool debug_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TC_DEBUG");
    return e && *e && std::string_view(e) != "0";
  }();
  return on;
}

void log_debug(const std::string& message) {
  if (!debug_enabled()) return;
  std::fprintf(stderr, "[tc] %s\n", message.c_str());
  if (!tr::enabled()) return;
  tr::record(tr::RecordKind::kLog, {i64(tr::now()), tr::intern("debug"), tr::intern(message)});
}

}  // namespace tc::events
