#include "events.h"

// The lead wires each of these to tc::trace (profiler/trace). Until then they
// only feed the test observer.
namespace tc::events {
namespace {
TestObserver* g_observer = nullptr;
}

const char* eval_kind_name(EvalKind k) {
  switch (k) {
    case EvalKind::item: return "item";
    case EvalKind::to_host: return "to_host";
    case EvalKind::print: return "print";
  }
  return "?";
}

void set_test_observer(TestObserver* observer) { g_observer = observer; }

void on_mark_step(int64_t step, const std::source_location&) {
  if (g_observer) g_observer->mark_step(step);
}
void on_explicit_evaluation(EvalKind kind, const std::source_location& where, int64_t nodes,
                            int64_t dur_ns) {
  if (g_observer) g_observer->explicit_evaluation(kind, where, nodes, dur_ns);
}
void on_graph_executed(ExecTrigger trigger, int64_t nodes, int64_t) {
  if (g_observer) g_observer->graph_executed(trigger, nodes);
}
void on_alloc(int64_t, Category, int64_t) {}
void on_free(int64_t, Category, int64_t) {}
void on_out_of_memory(int64_t requested, int64_t live, int64_t capacity,
                      const std::array<int64_t, kCategoryCount>&) {
  if (g_observer) g_observer->out_of_memory(requested, live, capacity);
}

}  // namespace tc::events
