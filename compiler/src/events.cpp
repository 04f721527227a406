#include "events.h"

#include <tc/tensor.h>

#include <atomic>

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

}  // namespace tc::events
