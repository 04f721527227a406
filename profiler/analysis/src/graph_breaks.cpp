#include "graph_breaks.h"

#include <string>
#include <vector>

#include "json.h"
#include "tc/analysis/format.h"

namespace tc::analysis {

namespace {

// docs/findings.md's table of remedies, in matching order after the kinds
// ("ddp", "print") that say more than their code. Codes and Gb_types are
// torch 2.15's (torch/_dynamo/graph_break_registry.json).
constexpr BreakRemedy kRemedies[] = {
    {"", "", "ddp", "a break inside DistributedDataParallel's forward",
     "Compile the module DDP wraps instead of the wrapper: model = DDP(torch.compile(module)), so that DDP's own bookkeeping runs outside "
     "the graph (its all-reduce then overlaps less with the backward); or keep torch.compile(DDP(module)) and let compiled autograd run "
     "DDP's reducer: torch._dynamo.config.optimize_ddp = \"python_reducer\" with torch._dynamo.config.compiled_autograd = True"},
    {"", "", "print", "print",
     "Move the print at {where} out of the compiled function (return the value and print it after it returns, or every N steps), or let "
     "torch.compile run it after the graph: torch._dynamo.config.reorderable_logging_functions.add(print)"},
    {"GB0124", "Unsupported Tensor.item() call", "item", "Tensor.item()",
     "Return the tensor from the compiled function and call .item() after it returns (or every N steps), or let torch.compile capture it "
     "(torch._dynamo.config.capture_scalar_outputs = True)"},
    {"GB0033", "Data dependent operator", "", "data-dependent scalar",
     "Let torch.compile capture the scalar read at {where} (torch._dynamo.config.capture_scalar_outputs = True), or keep it a tensor"},
    {"GB0170 GB0035", "Data-dependent branching", "", "data-dependent branch",
     "Keep the branch at {where} in the graph: torch.where(cond, a, b) when it chooses between values, torch.cond(pred, true_fn, false_fn, "
     "operands) when it chooses between computations (or apply the change unconditionally when it does nothing to ordinary inputs, as a "
     "clamp does)"},
    {"GB0036 GB0037 GB0246", "Dynamic shape operator", "", "output size that depends on the data",
     "Let torch.compile capture the operation at {where} whose output size depends on the data "
     "(torch._dynamo.config.capture_dynamic_output_shape_ops = True), or keep the size fixed (torch.where with a mask instead of indexing "
     "with it)"},
    {"GB0291", "logging.Logger method", "", "logging call",
     "Log after the compiled function returns (or every N steps), or let torch.compile run the call after the graph: "
     "torch._dynamo.config.reorderable_logging_functions.add(<the logger method you call>)"},
    {"GB0105 GB0109 GB0290 GB0293", "", "to_host", "copy to the host",
     "Keep the value at {where} a tensor (torch operations instead of NumPy or Python lists) and convert it after the compiled function "
     "returns"},
    {"GB0025", "Call to `torch._dynamo.graph_break()`", "", "explicit graph_break()", "Remove the torch._dynamo.graph_break() at {where}"},
    {"GB0098 GB0099 GB0376 GB0377", "", "", "call of a disabled function",
     "The function called at {where} is excluded from compilation (torch.compiler.disable): call it outside the compiled function, or "
     "remove the decorator if it compiles now"},
    {"GB0142 GB0274 GB2710", "Unsupported context manager", "", "context manager",
     "Enter the context manager at {where} outside the compiled function, or compile the function inside it"},
    {"GB0123", "Unsupported Tensor.backward() call", "", "backward() inside the compiled function",
     "Call backward() after the compiled function returns (compile the model or the forward and loss); to compile the backward too, set "
     "torch._dynamo.config.compiled_autograd = True"},
    {"GB0007 GB0008 GB0009 GB7151", "Attempted to call function marked as skipped", "", "call of a function torch.compile skips",
     "Make the call at {where} outside the compiled function (torch.compile skips that function by design), or let it trace into skipped "
     "functions: torch._dynamo.config.dont_skip_tracing = True"},
    {"GB0147 GB0148 GB0156", "", "", "unsupported call",
     "Make the call at {where} outside the compiled function, or replace it with torch operations"},
};
constexpr BreakRemedy kGeneric = {"", "", "", "graph break", "Move the {kind} at {where} out of the compiled function, or run it every N steps"};

// The non-empty items of a `sep`-separated list (SQLite's group_concat: ',').
std::vector<std::string_view> split(std::string_view list, char sep = ',') {
  std::vector<std::string_view> out;
  for (size_t at = 0; at < list.size();) {
    size_t end = list.find(sep, at);
    if (end == std::string_view::npos) end = list.size();
    if (end > at) out.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

bool has_word(std::string_view list, std::string_view word, char sep) {
  for (std::string_view w : split(list, sep))
    if (w == word) return true;
  return false;
}

// Each of the comma-separated `codes` against the remedy's space-separated ones.
bool code_matches(const BreakRemedy& m, std::string_view codes) {
  for (std::string_view c : split(codes))
    if (has_word(m.codes, c, ' ')) return true;
  return false;
}

std::string filled(std::string_view fix, const std::string& where, const std::string& kind) {
  std::string s(fix);
  for (auto [key, value] : {std::pair<std::string_view, const std::string&>{"{where}", where}, {"{kind}", kind}}) {
    for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + value.size())) s.replace(at, key.size(), value);
  }
  return s;
}

std::string basename(const std::string& path) { return path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1); }

// "contextlib.py:105, distributed.py:1779" from the full "FILE:LINE,FILE:LINE".
std::string short_frames(const std::string& frames) {
  std::string out;
  for (std::string_view f : split(frames)) out += (out.empty() ? "" : ", ") + basename(std::string(f));
  return out;
}

}  // namespace

const BreakRemedy& break_remedy(std::string_view codes, std::string_view reason, std::string_view kinds) {
  for (const BreakRemedy& m : kRemedies)
    if (m.codes.empty() && has_word(kinds, m.kind, ',')) return m;
  for (const BreakRemedy& m : kRemedies)
    if (code_matches(m, codes)) return m;
  for (const BreakRemedy& m : kRemedies)
    if (!m.gb_type.empty() && reason.starts_with(m.gb_type)) return m;
  for (const BreakRemedy& m : kRemedies)
    if (has_word(kinds, m.kind, ',')) return m;
  return kGeneric;
}

// Logged once per compilation of its frame, not per step (the trace has no
// run times), so a break's cost is the graphs it split the frame into and
// their compile time.
void graph_break_finding(const store::Reader& r, Report& report, const BreakSite& site) {
  const std::string where = site.file.empty() ? std::string("an unknown call site") : site.file + ":" + std::to_string(site.line);
  const std::string short_where = basename(where);
  // The frames torch.compile resumes in after the break ("torch_dynamo_resume_in_loss_of_at_122"): their compilations.
  // A break in library code resumes there, in the library frames named.
  std::vector<std::string> frames;
  for (std::string_view b : split(site.broke_at)) frames.emplace_back(b);
  if (frames.empty()) frames.push_back(site.file + ":" + std::to_string(site.line));
  int64_t resumed = 0;
  double resume_s = 0;
  for (const std::string& frame : frames) {
    std::string file = frame.substr(0, frame.rfind(':')), quoted;
    for (char c : file) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    auto line = frame.substr(frame.rfind(':') + 1);
    if (line.empty() || line.find_first_not_of("0123456789") != std::string::npos) continue;
    auto resume = r.query("SELECT count(*), coalesce(sum(dur), 0) FROM compilations WHERE framework = 'torch.compile' AND trigger = 'graph_break' "
                          "AND loc_id IN (SELECT id FROM locations WHERE line = " + line + " AND file = '" + quoted + "')");
    if (resume.next()) {
      resumed += resume.i64(0);
      resume_s += static_cast<double>(resume.i64(1)) / 1e9;
    }
  }
  const BreakRemedy& remedy = break_remedy(site.codes, site.reason, site.kinds);
  Finding f;
  f.kind = "explicit_evaluation";
  f.identity = site.kinds + " at " + where;
  f.severity = Severity::kWarning;
  const std::string reason = site.reason.empty() ? "" : " (" + site.reason + ")";
  const std::string each = counted(site.compilations, "compilation", "compilations");
  if (site.broke_at.empty()) {
    f.title = "Graph break at " + short_where + reason + ": torch.compile splits " + (site.function.empty() ? std::string("the frame") : site.function) +
              " there, in " + (site.compilations == 1 ? std::string("its compilation") : "each of its " + each) + "; the part after it runs as another graph";
  } else {
    f.title = "Graph break inside library code at " + short_frames(site.broke_at) + reason + ", reached from " + short_where +
              (site.function.empty() ? "" : " in " + site.function) + ": torch.compile splits the graph there, in " + each +
              "; the part after it runs as another graph";
  }
  // Never the library's file: the user changes their own call, or a setting.
  // torch logged no user frame: the call site is the library's own line.
  const bool no_user_frame = has_word(site.broke_at, where, ',');
  const std::string act = no_user_frame ? std::string("your code's call into it (torch logged no frame of yours)") : where;
  std::string fix = filled(remedy.fix, act, site.kinds);
  if (!site.broke_at.empty()) fix = "The break is inside library code, reached from " + std::string(no_user_frame ? "" : "your call at ") + act + " (change that, not the library). " + fix;
  f.suggestion = fix + ": one graph per step instead of two, and no resume frame to compile (" + std::to_string(resumed) + " compiled, " +
                 format_seconds(resume_s) + ").";
  f.estimated_saving_s = resume_s;
  Json j;
  j.begin_object().field("call_site", where).field("function", site.function).field("kind", site.kinds).field("framework", "torch.compile");
  j.field("reason", site.reason).field("compilations", site.compilations).field("steps", report.summary.steps);
  j.key("codes").begin_array();
  for (std::string_view c : split(site.codes)) j.value(std::string(c));
  j.end_array().field("remedy", remedy.name);
  j.key("broke_at").begin_array();
  for (std::string_view b : split(site.broke_at)) j.value(std::string(b));
  j.end_array();
  j.field("resume_compilations", resumed).field("resume_compile_s", resume_s).end_object();
  f.evidence_json = j.str();
  f.anchors_ts.push_back(site.first_ts);
  report.findings.push_back(std::move(f));
}

}  // namespace tc::analysis
