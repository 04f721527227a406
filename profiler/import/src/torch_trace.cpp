// torch.compile's structured trace (TORCH_TRACE=DIR) into the store; see
// tc/import/import.h for the contract and docs/frameworks.md for the format.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "import_common.h"
#include "json.h"
#include "tc/import/import.h"
#include "tc/store/schema.h"
#include "tc/store/writer.h"

namespace tc::import {

namespace {

using import_common::to_int;
using import_common::valid_batch;
using import_common::valid_bytes;
using import_common::valid_ts;

// The trace's times are the wall clock's, which may step (NTP) during the run.
constexpr int64_t kWallClockSlackNs = 100'000'000;
// Dimensions of a tensor beyond this are no tensor's.
constexpr int64_t kMaxDims = 64;

// Kinds torch 2.x writes (those read and those skipped, docs/frameworks.md); any other is counted as unknown.
constexpr std::string_view kKnownKinds[] = {
    "str", "compilation_metrics", "bwd_compilation_metrics", "aot_autograd_backward_compilation_metrics", "compilation_metrics_runtime",
    "bwd_compilation_metrics_runtime", "chromium_event",
    "artifact", "dynamo_start", "describe_tensor", "describe_storage", "describe_source", "create_symbol", "create_unbacked_symbol",
    "guard_added", "guard_added_fast", "dynamo_output_graph", "dynamo_cpp_guards_str", "dynamo_guards", "dynamo_error",
    "aot_joint_graph", "aot_forward_graph", "aot_backward_graph", "aot_inference_graph", "inductor_pre_grad_graph",
    "inductor_post_grad_graph", "inductor_output_code", "optimize_ddp_split_graph", "optimize_ddp_split_child",
    "compiled_autograd_graph", "symbolic_shape_specialization", "propagate_real_tensors", "propagate_real_tensors_provenance",
    "expression_created", "unbacked_symbol_created", "missing_fake_kernel", "mismatched_fake_kernel", "graph_dump", "dump_file",
    "link", "exported_program", "cache_hit", "fx_graph_cache_hit", "fx_graph_cache_miss", "fx_graph_cache_bypass",
    "aotautograd_cache_hit", "aotautograd_cache_miss", "aotautograd_cache_bypass", "frame_locals", "guard_failure"};

bool known_kind(std::string_view k) {
  return std::find(std::begin(kKnownKinds), std::end(kKnownKinds), k) != std::end(kKnownKinds);
}

// A record: its header's JSON and its payload lines (TAB removed), joined by '\n'.
struct Record {
  uint32_t pid = 0;
  json::Value header;
  std::string payload;
  bool keep_payload = false;
  bool lost = false;  // a line of it was over the limit (counted there): not imported
};

Record lost_record() {
  Record r;
  r.lost = true;
  return r;
}

struct DynamicDim {
  std::string input;
  int64_t dim = 0, old_value = 0, new_value = 0;
};

struct Metrics {
  std::string compile_id;  // "F/C"
  int64_t frame = -1, compile = -1;
  uint32_t pid = 0;
  std::string co_name, co_filename;
  int64_t co_firstlineno = 0;
  double start_us = 0, duration_us = 0;
  double backend_s = 0, codegen_s = 0;
  int64_t ops = 0;
  int64_t cache_hits = 0, cache_misses = 0;
  bool backward = false;  // AOT autograd's backward graph of compile_id, compiled at its first backward
  std::string reason_line, failure;  // the recompile_reason's first line
  std::vector<DynamicDim> mismatches;  // its size mismatches
};

struct GraphBreak {
  int64_t frame = -1, compile = -1;
  uint32_t pid = 0;
  std::string file, reason, kind;
  int64_t line = 0;
  std::string code;      // torch's graph-break registry code, "GB0170"; empty when the record names none
  std::string function;  // the user's frame's function when the break was in library code; else empty (the compiled frame's)
  std::string broke_at;  // "FILE:LINE" of the library frame it broke in, when file:line is the user's frame that led there
};

// "[rank0]:V1201 08:46:49.219000 18312 torch/_dynamo/guards.py:6378] {json}": the pid and the JSON.
bool split_header(std::string_view line, uint32_t& pid, std::string_view& body) {
  if (line.starts_with("[rank")) {
    size_t end = line.find("]:");
    if (end == std::string_view::npos || end > 16) return false;
    line.remove_prefix(end + 2);
  }
  // Level letter, MMDD, space, HH:MM:SS.uuuuuu, space, pid, space, file:line, "] ".
  if (line.size() < 24 || std::strchr("VIWEC", line[0]) == nullptr) return false;
  for (size_t i = 1; i <= 4; ++i)
    if (line[i] < '0' || line[i] > '9') return false;
  if (line[5] != ' ' || line[8] != ':' || line[11] != ':' || line[14] != '.') return false;
  size_t at = line.find(' ', 15);
  if (at == std::string_view::npos) return false;
  size_t p = at + 1;
  uint64_t v = 0;
  size_t digits = 0;
  while (p < line.size() && line[p] >= '0' && line[p] <= '9' && digits < 10) {
    v = v * 10 + static_cast<uint64_t>(line[p] - '0');
    ++p;
    ++digits;
  }
  if (digits == 0 || v > UINT32_MAX || p >= line.size() || line[p] != ' ') return false;
  size_t close = line.find("] ", p);
  if (close == std::string_view::npos) return false;
  pid = static_cast<uint32_t>(v);
  body = line.substr(close + 2);
  return !body.empty() && body.front() == '{';
}

// The record's kind: its one key besides the common ones.
std::string_view kind_of(const json::Value& h) {
  for (const auto& [k, v] : h.o) {
    if (k != "frame_id" && k != "frame_compile_id" && k != "attempt" && k != "has_payload" && k != "rank") return k;
  }
  return {};
}

// L['token_ids'] -> token_ids; L['model']._modules['embed']._parameters['weight'] -> model.embed.weight.
std::string user_name(std::string_view source) {
  std::string out;
  size_t i = 0;
  if (source.starts_with("L[") || source.starts_with("G[")) i = 1;
  while (i < source.size()) {
    for (std::string_view skip : {"._modules", "._parameters", "._buffers"}) {
      if (source.substr(i).starts_with(skip) && source.substr(i + skip.size()).starts_with("[")) i += skip.size();
    }
    if (source.substr(i).starts_with("['")) {
      size_t end = source.find("']", i + 2);
      if (end == std::string_view::npos) break;
      if (!out.empty()) out += '.';
      out += source.substr(i + 2, end - i - 2);
      i = end + 2;
    } else {
      out += source[i++];
    }
  }
  return out.empty() ? std::string(source) : out;
}

// "tensor 'token_ids' size mismatch at index 1. expected 39, actual 40", anywhere in the text, each one.
std::vector<DynamicDim> size_mismatches(std::string_view text) {
  std::vector<DynamicDim> out;
  size_t at = 0;
  while ((at = text.find("tensor '", at)) != std::string_view::npos) {
    at += 8;
    size_t q = text.find('\'', at);
    if (q == std::string_view::npos) break;
    std::string_view name = text.substr(at, q - at);
    std::string_view rest = text.substr(q);
    constexpr std::string_view kIndex = "' size mismatch at index ", kExpected = ". expected ", kActual = ", actual ";
    if (!rest.starts_with(kIndex)) continue;
    rest.remove_prefix(kIndex.size());
    auto num = [&](std::string_view& r) {
      size_t n = 0;
      while (n < r.size() && r[n] >= '0' && r[n] <= '9') ++n;
      auto v = to_int(r.substr(0, n));
      r.remove_prefix(n);
      return v;
    };
    auto dim = num(rest);
    if (!dim || !rest.starts_with(kExpected)) continue;
    rest.remove_prefix(kExpected.size());
    auto old_value = num(rest);
    if (!old_value || !rest.starts_with(kActual)) continue;
    rest.remove_prefix(kActual.size());
    auto new_value = num(rest);
    if (!new_value) continue;
    out.push_back({user_name(name), *dim, *old_value, *new_value});
  }
  return out;
}

std::string first_line(std::string_view s) {
  size_t nl = s.find('\n');
  std::string_view l = s.substr(0, nl);
  while (!l.empty() && (l.back() == ' ' || l.back() == '\r')) l.remove_suffix(1);
  return std::string(l);
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// Python's library, site-packages (torch among them), frozen modules and
// tc's own start-up hook (PREFIX/lib/tc/python/sitecustomize.py, whose
// torch.compile wrapper is a frame between the user's call and torch): not
// the user's to edit.
bool is_library_file(std::string_view f) {
  if (f.starts_with("<frozen ") || f.find("/site-packages/") != std::string_view::npos || f.find("/dist-packages/") != std::string_view::npos) return true;
  if (f.ends_with("/lib/tc/python/sitecustomize.py")) return true;
  // Python's standard library: .../lib/python3.11/contextlib.py
  size_t at = f.find("/lib/python");
  return at != std::string_view::npos && f.find('/', at + 11) != std::string_view::npos;
}

// The registry code of a break from the link torch gives for it: ".../gb/gb0170.html" -> "GB0170".
std::string break_code(std::string_view p) {
  constexpr std::string_view kGb = "/gb/gb";
  size_t at = p.find(kGb);
  if (at == std::string_view::npos) return {};
  std::string_view digits = p.substr(at + kGb.size());
  size_t n = 0;
  while (n < digits.size() && n < 8 && digits[n] >= '0' && digits[n] <= '9') ++n;
  if (n == 0 || digits.substr(n, 5) != ".html") return {};
  return "GB" + std::string(digits.substr(0, n));
}

struct UserFrame {
  std::string file, function;
  int64_t line = 0;
};

// The payload's "User code traceback:", up to the blank line that ends it; "" when none.
std::string_view traceback(std::string_view p) {
  size_t at = p.find("User code traceback:");
  if (at == std::string_view::npos) return {};
  std::string_view tb = p.substr(at);
  return tb.substr(0, tb.find("\n\n"));
}

// The deepest frame of the traceback that is not library code:
// '  File "/src/train.py", line 39, in main'.
std::optional<UserFrame> last_user_frame(std::string_view p) {
  std::string_view rest = traceback(p);
  std::optional<UserFrame> found;
  constexpr std::string_view kFile = "File \"", kLine = "\", line ", kIn = ", in ";
  for (size_t f = rest.find(kFile); f != std::string_view::npos; f = rest.find(kFile, f + 1)) {
    std::string l = first_line(rest.substr(f + kFile.size()));
    size_t q = l.find(kLine), in = l.find(kIn);
    if (q == std::string::npos || in == std::string::npos || in < q) continue;
    auto line = to_int(l.substr(q + kLine.size(), in - q - kLine.size()));
    std::string file = l.substr(0, q);
    if (!line || *line <= 0 || is_library_file(file)) continue;
    found = UserFrame{file, l.substr(in + kIn.size()), *line};
  }
  return found;
}

// Whether the break's traceback runs through DistributedDataParallel's forward.
bool in_ddp_forward(std::string_view p) { return traceback(p).find("/torch/nn/parallel/distributed.py\"") != std::string_view::npos; }

// The dynamo_graph_break_reason payload: "Graph break in user code at FILE:LINE\nGraph Break Reason: ...".
std::optional<GraphBreak> graph_break(std::string_view p) {
  constexpr std::string_view kAt = "Graph break in user code at ";
  size_t at = p.find(kAt);
  if (at == std::string_view::npos) return std::nullopt;
  std::string where = first_line(p.substr(at + kAt.size()));
  size_t colon = where.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  auto line = to_int(where.substr(colon + 1));
  if (!line) return std::nullopt;
  GraphBreak g;
  g.file = where.substr(0, colon);
  g.line = *line;
  // The reason: what follows "Graph Break Reason:", or its first line of
  // substance when that line only introduces it ("Encountered graph break when ...:").
  constexpr std::string_view kReason = "Graph Break Reason: ";
  size_t r = p.find(kReason);
  if (r != std::string_view::npos) {
    std::string_view rest = p.substr(r + kReason.size());
    std::string head = first_line(rest);
    if (!head.empty() && head.back() == ':') {
      size_t nl = rest.find('\n');
      while (nl != std::string_view::npos) {
        rest.remove_prefix(nl + 1);
        std::string l = trim(first_line(rest));
        if (!l.empty()) {
          head = l;
          break;
        }
        nl = rest.find('\n');
      }
    }
    g.reason = head;
  }
  g.code = break_code(p);
  if (is_library_file(g.file)) {
    g.broke_at = g.file + ":" + std::to_string(g.line);
    if (auto user = last_user_frame(p)) {
      g.file = user->file;
      g.line = user->line;
      g.function = user->function;
    }
  }
  const std::string& why = g.reason;
  g.kind = !g.broke_at.empty() && in_ddp_forward(p)      ? "ddp"
           : why.find("item()") != std::string::npos      ? "item"
           : why.find("print") != std::string::npos || p.find("builtin operator `print`") != std::string_view::npos ? "print"
           : why.find("tolist") != std::string::npos || why.find("numpy") != std::string::npos ? "to_host"
                                                         : "graph_break";
  return g;
}

// tc's Python hook's log beside the trace: TORCH_TRACE/tc-torch-PID.jsonl.
constexpr std::string_view kHookPrefix = "tc-torch-", kHookSuffix = ".jsonl";

// The training's tensors at a step, by role, as the hook counted them
// (sitecustomize.py, _TorchMemory): the optimizers' parameters, gradients and
// state, the storages autograd saved for backward, the step's batch; on a
// GPU torch.cuda's peak allocated and reserved bytes of the step too.
struct HookMemory {
  int64_t param = 0, grad = 0, opt = 0, act = 0, batch = 0, capacity = 0;
  std::string capacity_source;
  int64_t cuda_allocated = -1, cuda_reserved = -1;  // -1: not on a GPU
  int64_t tensors() const { return param + grad + opt + act; }
  // What the step held at its peak: the allocator's on a GPU, else the tensors.
  int64_t peak() const { return cuda_allocated >= 0 ? cuda_allocated : tensors(); }
};

// A step the hook marked, with its first call of what torch.compile returned.
struct HookStep {
  int64_t end = 0;
  int64_t call = 0;  // 0: no call in the step
  std::optional<import_common::InputShapes> in;  // the call's shapes when they differ from the record before
  std::optional<HookMemory> mem;  // its memory when it differs from the record before
  bool after_lost = false;  // a malformed record came before it: what it carries over is unknown
};

// torch's out-of-memory error as the hook saw it pass through a compiled
// call or a backward: the bytes asked for (0: not said), the step's batch,
// the last step's memory.
struct HookOom {
  int64_t ts = 0, requested = 0, batch = 0;
  std::optional<HookMemory> mem;
};

struct HookProcess {
  uint32_t pid = 0;
  int64_t start = 0;  // when the hook began (torch's import): step 0 starts there
  std::vector<HookStep> steps;
  std::vector<HookOom> ooms;  // at most 16 (the hook's limit)
  bool lost = false;
};

// A user's TORCH_TRACE directory keeps earlier runs' logs: only recent ones are read.
class TorchImporter : public import_common::Importer {
 public:
  TorchImporter(ImportTarget& t, const ImportLimits& l) : Importer(t, l, "torch.compile", /*recent_only=*/true) {}

 private:
  void parse(import_common::LineReader& r, uint32_t pid_from_name) override {
    if (hook_file_) return parse_hook(r, pid_from_name);
    std::optional<Record> cur;
    std::string_view line;
    for (import_common::LineReader::Next n; (n = r.next(line)) != import_common::LineReader::kEnd;) {
      ++s_.lines;
      if (n == import_common::LineReader::kTooLong) {
        ++s_.malformed;
        ++s_.too_long;
        // A payload line lost: its record is incomplete. A header: the record
        // before it was whole, and the lost one's payload lines are its own.
        if (r.first() != '\t' && cur) take(std::move(*cur));
        if (r.first() != '\t' || cur) cur = lost_record();
        continue;
      }
      if (line.starts_with("\t")) {
        if (!cur) {
          ++s_.malformed;  // a payload line of no record
        } else if (cur->keep_payload) {
          add_payload(cur, line.substr(1));
        }
        continue;
      }
      if (cur) take(std::move(*cur));
      cur.reset();
      cur = header(line);
    }
    // A last line without its newline was cut while it was written. Cut in
    // a payload line, the record it belongs to is incomplete; cut in a
    // header line, the record before it was whole. The last record may have
    // lost payload lines to a cut: import it only whole.
    if (r.cut()) s_.truncated = true;
    const bool last_incomplete = r.cut() && (r.larger() || r.partial().empty() || r.partial().starts_with("\t"));
    if (cur && !last_incomplete) take(std::move(*cur));
  }

  // The hook's logs, after the trace's.
  void read_extra(const std::string& dir) override {
    hook_file_ = true;
    for (const std::string& name : import_common::list_logs(dir, kHookPrefix, nullptr, kHookSuffix)) {
      if (stop_requested() || !take_file(dir + "/" + name, "log files")) break;
      read_file(dir + "/" + name, import_common::pid_in_name(name, kHookPrefix, kHookSuffix));
    }
    hook_file_ = false;
  }

  void parse_hook(import_common::LineReader& lr, uint32_t pid_from_name) {
    HookProcess p;
    p.pid = pid_from_name;
    const int64_t before = s_.records;
    import_common::for_each_record(lr, s_, [&](const json::Value& v, std::string_view k) {
      if (!hook_record(p, v, k)) {
        ++s_.malformed;
        p.lost = true;
      }
    });
    if (take_process(p.pid, before, "a log of tc's Python hook")) hooks_.push_back(std::move(p));
  }

  // One record of the hook's log; false when it is malformed.
  bool hook_record(HookProcess& p, const json::Value& v, std::string_view k) {
    if (k == "start") {
      auto ts = v.int64("ts");
      auto pid = v.int64("pid");
      if (!valid_ts(ts) || !in_run(*ts) || !pid || *pid <= 0 || *pid > UINT32_MAX || !p.steps.empty()) return false;
      p.pid = static_cast<uint32_t>(*pid);
      p.start = *ts;
      return true;
    }
    if (k == "oom") {
      auto ts = v.int64("ts");
      auto requested = v.int64("requested");
      auto batch = v.int64("batch");
      HookOom o;
      if (!valid_ts(ts) || *ts < p.start || !in_run(*ts) || !valid_bytes(requested) || !valid_batch(batch) ||
          p.ooms.size() >= 16)
        return false;
      o.ts = *ts, o.requested = *requested, o.batch = *batch;
      if (const json::Value* mem = v.get("mem")) {
        o.mem.emplace();
        if (!read_memory(*mem, *o.mem)) return false;
      }
      p.ooms.push_back(std::move(o));
      return true;
    }
    if (k != "step") {
      ++s_.unknown_kinds;
      return true;
    }
    auto end = v.int64("end");
    auto call = v.int64("call");
    const int64_t after = p.steps.empty() ? p.start : p.steps.back().end;
    if (!valid_ts(end) || *end < after || !in_run(*end) || (call && (!valid_ts(call) || *call < after || *call > *end))) return false;
    HookStep st{*end, call.value_or(0), std::nullopt, std::nullopt, p.lost};
    if (const json::Value* in = v.get("in")) {
      st.in.emplace();
      if (!call || !import_common::read_shapes(*in, *st.in)) return false;
    }
    if (const json::Value* mem = v.get("mem")) {
      st.mem.emplace();
      if (!read_memory(*mem, *st.mem)) return false;
    }
    if (!keep(store::schema::steps, kept_steps_)) return true;
    ++kept_steps_;
    p.lost = false;
    p.steps.push_back(std::move(st));
    return true;
  }

  // A step record's "mem"; false when a count is missing or out of range
  // (bytes in 0..2^56, a batch below 2^31).
  static bool read_memory(const json::Value& v, HookMemory& m) {
    if (v.type != json::Value::kObject) return false;
    auto bytes = [&](const char* key, int64_t& out) {
      auto x = v.int64(key);
      if (!valid_bytes(x)) return false;
      out = *x;
      return true;
    };
    if (!bytes("param", m.param) || !bytes("grad", m.grad) || !bytes("opt", m.opt) || !bytes("act", m.act) || !bytes("cap", m.capacity))
      return false;
    auto batch = v.int64("batch");
    if (!valid_batch(batch)) return false;
    m.batch = *batch;
    auto source = v.str("cap_src");
    if (source && source->size() <= 16) m.capacity_source = std::string(*source);
    if (const json::Value* cuda = v.get("cuda")) {
      if (cuda->type != json::Value::kArray || cuda->a.size() != 2) return false;
      for (int i = 0; i < 2; ++i) {
        const json::Value& x = cuda->a[static_cast<size_t>(i)];
        if (!valid_bytes(x)) return false;
        (i == 0 ? m.cuda_allocated : m.cuda_reserved) = x.i;
      }
    }
    return true;
  }

  // A header line's record (nullopt, counted, when it is malformed).
  std::optional<Record> header(std::string_view line) {
    uint32_t pid = 0;
    std::string_view body;
    if (!split_header(line, pid, body)) {
      ++s_.malformed;
      return std::nullopt;
    }
    auto h = json::parse(body);
    if (!h || h->type != json::Value::kObject) {
      ++s_.malformed;
      return std::nullopt;
    }
    Record rec{pid, std::move(*h), {}};
    // Only the payloads read are kept (an inductor_output_code's is the generated code).
    const std::string_view kind = kind_of(rec.header);
    const json::Value* body_value = rec.header.get(kind);
    auto name = body_value ? body_value->str("name") : std::nullopt;
    rec.keep_payload = kind == "chromium_event" || (kind == "artifact" && (name == "torch_version" || name == "dynamo_graph_break_reason"));
    return rec;
  }

  // A payload kept whole up to the limit of a line; beyond it the record is malformed.
  void add_payload(std::optional<Record>& cur, std::string_view part) {
    if (cur->payload.size() + part.size() + 1 > limits_.max_line_bytes) {
      ++s_.malformed;
      ++s_.too_long;
      *cur = lost_record();
      return;
    }
    if (!cur->payload.empty()) cur->payload += '\n';
    cur->payload += part;
  }

  void take(Record r) {
    if (r.lost) return;
    ++s_.records;
    std::string_view kind = kind_of(r.header);
    const json::Value* body = r.header.get(kind);
    if (kind.empty() || body == nullptr) {
      ++s_.malformed;
      return;
    }
    if (!known_kind(kind)) {
      ++s_.unknown_kinds;
      return;
    }
    if (kind == "compilation_metrics" || kind == "bwd_compilation_metrics" || kind == "aot_autograd_backward_compilation_metrics") {
      if (!process(r.pid)) return;
      if (!metrics(r, *body, kind != "compilation_metrics")) ++s_.malformed;
    } else if (kind == "chromium_event") {
      chromium(r.payload);
    } else if (kind == "artifact") {
      artifact(r, *body);
    }
  }

  // A compile record; a backward one (bwd_compilation_metrics, or before
  // torch 2.6 aot_autograd_backward_compilation_metrics around an untimed
  // bwd_compilation_metrics) is a compilation of its own, joined to its forward by compile_id.
  bool metrics(const Record& r, const json::Value& m, bool backward) {
    if (m.type != json::Value::kObject) return false;
    const uint32_t pid = r.pid;
    std::optional<std::string> id;
    if (auto body_id = m.str("compile_id")) id = std::string(*body_id);
    auto hf = r.header.int64("frame_id"), hc = r.header.int64("frame_compile_id");
    if (!id && backward && hf && hc) id = std::to_string(*hf) + "/" + std::to_string(*hc);  // its envelope's
    if (!id || id->size() > 64) return false;
    // torch < 2.6's bwd_compilation_metrics has no times: they are inside its aot_autograd_backward record.
    if (backward && !m.number("start_time_us") && !m.number("start_time")) return true;
    Metrics x;
    x.compile_id = *id;
    x.pid = pid;
    x.backward = backward;
    // "F/C", or "!F/C" / "F/C_R" for restarts and compiled autograd: only the plain form is a frame's compilation.
    size_t slash = x.compile_id.find('/');
    if (slash == std::string::npos) return false;
    auto f = to_int(x.compile_id.substr(0, slash));
    auto c = to_int(x.compile_id.substr(slash + 1));
    if (!f || !c) return false;
    x.frame = *f;
    x.compile = *c;
    x.co_name = import_common::bounded(m.str("co_name").value_or(""));
    x.co_filename = import_common::bounded(m.str("co_filename").value_or(""));
    x.co_firstlineno = m.int64("co_firstlineno").value_or(0);
    if (auto us = m.number("start_time_us")) x.start_us = *us;
    else if (auto s = m.number("start_time")) x.start_us = *s * 1e6;
    if (auto d = m.number("duration_us")) x.duration_us = *d;
    else if (auto s = m.number("entire_frame_compile_time_s")) x.duration_us = *s * 1e6;
    else if (auto e = m.number("elapsed_time")) x.duration_us = *e * 1e6;
    else return false;
    x.backend_s = m.number(backward ? "inductor_compile_time_s" : "backend_compile_time_s").value_or(0);
    x.codegen_s = m.number("code_gen_time_s").value_or(0);
    x.ops = m.int64("graph_op_count").value_or(0);
    x.cache_hits = m.int64("inductor_fx_local_cache_hit_count").value_or(0);
    x.cache_misses = m.int64("inductor_fx_local_cache_miss_count").value_or(0);
    const std::string_view reason = m.str("recompile_reason").value_or("");
    x.reason_line = import_common::bounded(first_line(reason));
    auto ft = m.str("fail_type");
    auto fr = m.str("fail_reason");
    if (ft || fr) x.failure = import_common::bounded(std::string(ft.value_or("failed")) + (fr ? ": " + first_line(*fr) : std::string()));
    if (!valid(x)) return false;
    if (backward && !backward_keys_.emplace(pid, x.compile_id).second) return true;  // both kinds for one backward: once
    if (!keep(store::schema::compilations, metrics_.size())) return true;
    x.mismatches = size_mismatches(reason);
    if (!x.mismatches.empty() && !keep(store::schema::compilation_inputs, kept_inputs_)) x.mismatches.clear();
    kept_inputs_ += x.mismatches.size();
    metrics_.push_back(std::move(x));
    return true;
  }

  // Its times within the run (the wall clock may step a little during it),
  // its stages within its time, its counts counts.
  bool valid(const Metrics& x) const {
    if (!std::isfinite(x.start_us) || !std::isfinite(x.duration_us) || x.start_us < 0 || x.start_us > 1e17 || x.duration_us < 0 ||
        x.duration_us > 1e13)
      return false;
    const int64_t dur = static_cast<int64_t>(x.duration_us * 1000.0);
    if (!in_run(store_ts(x.start_us), dur, kWallClockSlackNs)) return false;
    auto within = [&](double secs) { return std::isfinite(secs) && secs >= 0 && secs * 1e9 <= static_cast<double>(dur) * 1.01 + 1e6; };
    auto count = [](int64_t n) { return n >= 0 && n <= INT32_MAX; };
    return within(x.backend_s) && within(x.codegen_s) && count(x.ops) && count(x.cache_hits) && count(x.cache_misses) &&
           count(x.co_firstlineno);
  }

  void chromium(const std::string& payload) {
    if (payload.find("\"automatic_dynamic\"") == std::string::npos) return;
    auto e = json::parse(payload);
    if (!e || e->str("name") != std::optional<std::string_view>("automatic_dynamic")) {
      if (!e) ++s_.malformed;
      return;
    }
    const json::Value* args = e->get("args");
    if (args == nullptr) return;
    auto name = args->str("name");
    auto dim = args->int64("dim_changed");
    auto cached = args->str("cached");
    auto now = args->str("new");
    auto id = args->str("compile_id");
    if (!name || !dim || *dim < 0 || *dim >= kMaxDims || !cached || !now || !id || id->size() > 64) {
      ++s_.malformed;
      return;
    }
    // "cached": "AutoDynamic.token" when the dim was dynamic already: nothing changed then.
    auto old_value = to_int(*cached), new_value = to_int(*now);
    if (!old_value || !new_value) return;
    if (!keep(store::schema::compilation_inputs, kept_inputs_)) return;
    ++kept_inputs_;
    dynamic_[std::string(*id)].push_back({import_common::bounded(user_name(*name)), *dim, *old_value, *new_value});
  }

  void artifact(const Record& r, const json::Value& a) {
    auto name = a.str("name");
    if (!name) return;
    if (*name == "torch_version") {
      auto v = json::parse(r.payload);
      if (v && v->str("pytorch_version") && v->str("pytorch_version")->size() <= 64) s_.version = std::string(*v->str("pytorch_version"));
    } else if (*name == "dynamo_graph_break_reason") {
      auto g = graph_break(r.payload);
      if (!g) return;
      g->frame = r.header.int64("frame_id").value_or(-1);
      g->compile = r.header.int64("frame_compile_id").value_or(-1);
      g->pid = r.pid;
      if (g->frame < -1 || g->compile < -1 || g->line > INT32_MAX) {
        ++s_.malformed;
        return;
      }
      if (!process(r.pid)) return;
      // One per compilation: a restart logs the same break again.
      if (!break_keys_.emplace(g->pid, g->frame, g->compile, g->line, g->file).second) return;
      if (keep(store::schema::explicit_evaluations, breaks_.size())) breaks_.push_back(std::move(*g));
    }
  }

  // A compilation that failed before it had a code object (the recompile
  // limit) names none: it is the frame of its earlier compilations.
  void finish_metrics() {
    std::sort(metrics_.begin(), metrics_.end(), [](const Metrics& a, const Metrics& b) { return a.start_us < b.start_us; });
    std::map<std::pair<uint32_t, int64_t>, const Metrics*> named;
    for (Metrics& m : metrics_) {
      auto key = std::make_pair(m.pid, m.frame);
      if (!m.co_name.empty()) {
        named.try_emplace(key, &m);
      } else if (auto it = named.find(key); it != named.end()) {
        m.co_name = it->second->co_name;
        m.co_filename = it->second->co_filename;
        m.co_firstlineno = it->second->co_firstlineno;
      }
    }
  }

  int64_t store_ts(double us) const {
    double ns = us * 1000.0 - static_cast<double>(t_.start_unix_ns) + static_cast<double>(t_.start_ts);
    return ns <= 0 ? 0 : ns >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(ns);
  }

  // The ends of a process's steps: the collector's (tc's marks), else the hook log's.
  const std::vector<int64_t>* steps_of(uint32_t pid) const {
    if (auto it = t_.step_ends.find(pid); it != t_.step_ends.end() && !it->second.empty()) return &it->second;
    auto it = hook_ends_.find(pid);
    return it == hook_ends_.end() ? nullptr : &it->second;
  }

  int64_t step_at(uint32_t pid, int64_t ts) const {
    const std::vector<int64_t>* ends = steps_of(pid);
    if (ends == nullptr) return 0;
    return static_cast<int64_t>(std::upper_bound(ends->begin(), ends->end(), ts) - ends->begin());
  }

  // Each step's inputs (step_inputs), from the hook's record of the step's
  // first compiled call: in the step its time falls in. A process without
  // the collector's steps gets the hook's (steps rows, framework 'torch').
  Status write_hook_steps() {
    for (const HookProcess& p : hooks_) {
      const int64_t u = utid(p.pid);
      const bool own = !t_.step_ends.contains(p.pid) || t_.step_ends.at(p.pid).empty();
      const std::vector<int64_t>* ends = steps_of(p.pid);
      std::set<int64_t> done;
      const import_common::InputShapes* in = nullptr;
      const HookMemory* mem = nullptr;
      std::map<int64_t, const HookMemory*> largest;  // batch -> the step memory with the largest peak
      for (size_t i = 0; i < p.steps.size(); ++i) {
        const HookStep& st = p.steps[i];
        if (st.in) in = &*st.in;
        else if (st.after_lost) in = nullptr;
        if (st.mem) mem = &*st.mem;
        else if (st.after_lost) mem = nullptr;
        const int64_t from = i > 0 ? p.steps[i - 1].end : p.start ? p.start : st.call ? st.call : st.end;
        if (own && room(store::schema::steps)) {
          TC_RETURN_IF_ERROR(t_.writer->row(store::schema::steps).null().i64(u).i64(from).i64(st.end - from).i64(static_cast<int64_t>(i)).i64(0)
                                 .text("torch").insert());
          ++s_.steps;
        }
        if (mem != nullptr) {
          // At the step's start (the memory lane, the summary's peak), whose: the tensors' count or the allocator's peak.
          TC_RETURN_IF_ERROR(write_counter(u, from, "memory.live_bytes", mem->cuda_allocated >= 0 ? "torch.cuda" : "torch",
                                           static_cast<double>(mem->peak())));
          auto [it, fresh] = largest.try_emplace(mem->batch, mem);
          if (!fresh && mem->peak() > it->second->peak()) it->second = mem;
        }
        if (st.call == 0 || in == nullptr || ends == nullptr) continue;
        const int64_t step = step_at(p.pid, st.call);
        if (step >= static_cast<int64_t>(ends->size()) || !done.insert(step).second) continue;  // after the last step, or not its first call
        for (const auto& [name, dims] : *in) TC_RETURN_IF_ERROR(write_step_input(u, step, user_name(name), dims));
      }
      // Each out-of-memory error an out_of_memory row: what was live is the last step's parameters, gradients and
      // optimizer state (the failing step's activations are not known), the batch the failing step's.
      for (const HookOom& o : p.ooms) {
        if (!room(store::schema::out_of_memory)) break;
        const HookMemory m = o.mem.value_or(HookMemory{});
        auto row = t_.writer->row(store::schema::out_of_memory);
        row.null().i64(u).i64(o.ts).i64(step_at(p.pid, o.ts)).i64(o.requested).i64(m.param + m.grad + m.opt).i64(m.capacity);
        row.i64(m.param).i64(m.grad).i64(m.opt).i64(0).i64(0).i64(0);
        if (o.batch > 0) row.i64(o.batch); else row.null();
        TC_RETURN_IF_ERROR(row.insert());
      }
      // Each batch's largest step a memory_plans row (no graph: the step's, not one compiled graph's), its
      // activations the bytes that scale with the batch: the batch model behind memory.headroom.
      for (const auto& [batch, m] : largest) {
        if (!room(store::schema::memory_plans)) break;
        auto row = t_.writer->row(store::schema::memory_plans);
        row.null().i64(u).i64(0).i64(m->peak()).i64(m->param).i64(m->grad).i64(m->opt).i64(m->act).i64(0).i64(0).i64(batch > 0 ? m->act : 0);
        if (batch > 0) row.i64(batch); else row.null();
        TC_RETURN_IF_ERROR(row.i64(m->capacity).insert());
      }
    }
    return Status::Ok();
  }

  Status write_rows() override {
    finish_metrics();
    for (const HookProcess& p : hooks_) {
      if (p.steps.empty() || (t_.step_ends.contains(p.pid) && !t_.step_ends.at(p.pid).empty())) continue;
      std::vector<int64_t>& ends = hook_ends_[p.pid];
      for (const HookStep& st : p.steps) ends.push_back(st.end);
    }
    std::map<std::tuple<uint32_t, int64_t, int64_t>, int64_t> graph_of;  // (pid, frame, compile) -> graph id
    std::map<std::tuple<uint32_t, int64_t, int64_t>, const Metrics*> metrics_of;  // forward compilations
    std::map<std::pair<uint32_t, std::string>, std::string> reason_of;  // (pid, compile id) -> its forward's reason
    int64_t next_graph = t_.first_graph_id;
    for (const Metrics& m : metrics_) {
      if (!room(store::schema::compilations)) continue;
      const int64_t graph = next_graph++;
      if (!m.backward) {
        graph_of[{m.pid, m.frame, m.compile}] = graph;
        metrics_of[{m.pid, m.frame, m.compile}] = &m;
      }
      s_.last_graph_id = graph;
      const int64_t ts = store_ts(m.start_us);
      std::vector<DynamicDim> dims;
      std::set<std::pair<std::string, int64_t>> seen;
      std::vector<bool> dynamic;
      if (auto d = dynamic_.find(m.compile_id); d != dynamic_.end()) {
        for (const DynamicDim& x : d->second) {
          if (seen.insert({x.input, x.dim}).second) {
            dims.push_back(x);
            dynamic.push_back(true);
          }
        }
      }
      for (const DynamicDim& x : m.mismatches) {
        if (seen.insert({x.input, x.dim}).second) {
          dims.push_back(x);
          dynamic.push_back(false);
        }
      }
      const bool first = m.compile == 0;
      std::string reason = first ? "first" : !dims.empty() ? "shape_change" : "structure_change";
      // A backward is compiled for the reason its forward was (one whose forward's record is missing, a cut
      // trace: 'first', as nothing says what changed); it changes no input of its own.
      if (m.backward) {
        auto f = reason_of.find({m.pid, m.compile_id});
        reason = f != reason_of.end() ? f->second : "first";
        dims.clear();
      } else {
        reason_of[{m.pid, m.compile_id}] = reason;
      }
      auto frame_loc = location(m.co_name.empty() ? "(unnamed frame)" : m.co_name, m.co_filename, m.co_name, m.co_firstlineno);
      if (!frame_loc.ok()) return frame_loc.status();
      const uint32_t loc = *frame_loc;
      const std::string frame_key = m.co_filename + ":" + std::to_string(m.co_firstlineno) + ":" + m.co_name;
      const bool resume = m.co_name.starts_with("torch_dynamo_resume_in_");
      auto row = t_.writer->row(store::schema::compilations);
      row.null().i64(utid(m.pid)).i64(ts).i64(static_cast<int64_t>(m.duration_us * 1000.0)).i64(graph).i64(step_at(m.pid, ts));
      const char* trigger = m.backward ? "backward" : resume ? "graph_break" : "frame_call";
      row.text("torch.compile " + m.compile_id + (m.backward ? " backward" : "")).text(frame_key).text(reason).text(trigger).i64(loc);
      row.i64(m.ops).i64(m.ops).i64(0).i64(0).i64(static_cast<int64_t>(m.codegen_s * 1e9)).i64(static_cast<int64_t>(m.backend_s * 1e9));
      row.text(m.cache_hits > 0 && m.cache_misses == 0 ? "disk_hit" : "built");
      if (reason == "structure_change" && !m.reason_line.empty()) row.text(m.reason_line); else row.null();
      row.null();  // source_path
      row.text("torch.compile").text(m.compile_id);
      if (m.failure.empty()) row.null(); else row.text(m.failure);
      TC_RETURN_IF_ERROR(row.insert());
      ++s_.compilations;
      // A failed compilation compiled no graph: its sizes are no graph's.
      if (!m.failure.empty()) continue;
      for (size_t i = 0; i < dims.size(); ++i) {
        const DynamicDim& x = dims[i];
        TC_RETURN_IF_ERROR(write_input(utid(m.pid), graph, x.input, x.dim, x.old_value, x.new_value, dynamic[i]));
      }
    }
    for (const GraphBreak& g : breaks_) {
      auto key = std::make_tuple(g.pid, g.frame, g.compile);
      auto m = metrics_of.find(key);
      const Metrics* at = m == metrics_of.end() ? nullptr : m->second;
      if (at == nullptr) continue;  // its compilation's record was cut off: no time to give it
      const int64_t ts = store_ts(at->start_us);
      auto break_loc = location("graph_break", g.file, g.function.empty() ? at->co_name : g.function, g.line);
      if (!break_loc.ok()) return break_loc.status();
      const uint32_t loc = *break_loc;
      TC_RETURN_IF_ERROR(write_evaluation({.utid = utid(g.pid), .ts = ts, .dur = 0, .step = step_at(g.pid, ts), .kind = g.kind, .location = loc,
                                           .ops = at->ops, .graph = graph_of[key],
                                           .what = g.reason.empty() ? std::nullopt : std::optional<std::string_view>(g.reason),
                                           .code = g.code, .broke_at = g.broke_at}));
    }
    return write_hook_steps();
  }

  std::vector<Metrics> metrics_;
  std::map<std::string, std::vector<DynamicDim>> dynamic_;  // compile id -> its automatic_dynamic changes
  std::vector<GraphBreak> breaks_;
  std::set<std::tuple<uint32_t, int64_t, int64_t, int64_t, std::string>> break_keys_;  // (pid, frame, compile, line, file)
  std::set<std::pair<uint32_t, std::string>> backward_keys_;  // (pid, compile id) of the backward compilations kept
  size_t kept_inputs_ = 0;  // compilation_inputs held: mismatches and automatic_dynamic changes
  bool hook_file_ = false;  // parse() is reading a log of the hook
  std::vector<HookProcess> hooks_;
  size_t kept_steps_ = 0;  // the hook's step records held
  std::map<uint32_t, std::vector<int64_t>> hook_ends_;  // pid -> its steps' ends, for a process the collector has none of
};

}  // namespace

StatusOr<ImportSummary> import_torch_trace(const std::string& dir, ImportTarget& target, const ImportLimits& limits) {
  TorchImporter im(target, limits);
  return import_common::import_dir(im, "import_torch_trace", dir, "", "log files");
}

}  // namespace tc::import
