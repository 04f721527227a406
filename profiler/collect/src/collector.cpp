#include "tc/collect/collector.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <span>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "tc/store/json_text.h"
#include "tc/store/schema.h"
#include "tc/store/writer.h"
#include "tc/trace/records.h"
#include "tc/trace/region.h"
#include "tc/trace/trace.h"

extern char** environ;

namespace tc::collect {

namespace {


uint64_t unix_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

}  // namespace

RunInfo gather_run_info(std::vector<std::string> command, std::string collector) {
  RunInfo info;
  info.command = std::move(command);
  std::error_code ec;
  info.cwd = std::filesystem::current_path(ec).string();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) info.host = host;
  info.collector = std::move(collector);
  info.tc_version = TC_VERSION_STRING;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (!kv.starts_with("TC_")) continue;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    info.env.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  std::sort(info.env.begin(), info.env.end());
  info.start_ts = trace::monotonic_ns();
  info.start_unix_ns = unix_ns();
  return info;
}

// ---------------------------------------------------------------- ClockMap

namespace {

// One (ticks, ns) pair read as close together as possible: the pair with the
// narrowest TSC window of several tries, so a preemption between the reads
// (common on a loaded machine) cannot skew it. False if every try was wide.
bool sample_pair(uint64_t& t, double& n) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 16; ++i) {
    uint64_t a = trace::read_clock(trace::ClockKind::kTsc);
    uint64_t ns = trace::monotonic_ns();
    uint64_t b = trace::read_clock(trace::ClockKind::kTsc);
    if (b - a < best) {
      best = b - a;
      t = a + (b - a) / 2;
      n = static_cast<double>(ns);
    }
  }
  return best < 100'000;  // ticks: tens of microseconds at any TSC rate
}

}  // namespace

ClockMap::ClockMap(bool tsc) : tsc_(tsc) {
  if (!tsc_) return;
  // Initial slope from a short busy calibration; resync() refines it.
  while (!sample_pair(first_t_, first_n_)) {
  }
  uint64_t t1 = 0;
  double n1 = 0;
  do {
    if (!sample_pair(t1, n1)) continue;
  } while (n1 - first_n_ < 10e6 || t1 <= first_t_);
  segments_.push_back({first_t_, first_n_, (n1 - first_n_) / static_cast<double>(t1 - first_t_)});
}

double ClockMap::ns_per_tick() const { return tsc_ ? segments_.back().slope : 1.0; }

uint64_t ClockMap::to_ns(uint64_t t) const {
  if (!tsc_) return t;
  // Segments are few and the newest is the usual answer: search from the back.
  size_t i = segments_.size() - 1;
  while (i > 0 && t < segments_[i].t0) --i;
  const Segment& s = segments_[i];
  double dt = t >= s.t0 ? static_cast<double>(t - s.t0) : -static_cast<double>(s.t0 - t);
  double ns = s.n0 + dt * s.slope;
  return ns <= 0 ? 0 : static_cast<uint64_t>(ns);
}

void ClockMap::resync() {
  if (!tsc_) return;
  uint64_t t = 0;
  double n = 0;
  if (!sample_pair(t, n)) return;  // try again at the next pass
  const Segment& last = segments_.back();
  if (t <= last.t0 || n - first_n_ < 1e6) return;
  uint64_t ns = static_cast<uint64_t>(n);
  // Continuity: the new segment starts where the current one is at t, so the
  // map stays increasing; its slope steers the error away over about 1 s.
  double base = (static_cast<double>(ns) - first_n_) / static_cast<double>(t - first_t_);
  double at = last.n0 + static_cast<double>(t - last.t0) * last.slope;
  double error_ns = static_cast<double>(ns) - at;
  double horizon_ticks = 1e9 / base;
  double slope = std::clamp(base + error_ns / horizon_ticks, base * 0.5, base * 1.5);
  segments_.push_back({t, at, slope});
}

// ---------------------------------------------------------------- Collector

namespace {

struct OpenRange {
  uint64_t ts;
  uint32_t loc;
  int64_t arg;
};

// What the collector knows about the thread that owns a ring.
struct RingReader {
  bool known = false;
  uint64_t claims = 0;
  int64_t utid = 0;
  std::vector<OpenRange> open;
  uint64_t last_ts = 0;
};

struct ThreadRow {
  int64_t utid;
  int64_t upid;
  uint32_t tid;
  std::string name;
};

struct PendingRecord {
  uint16_t kind;
  int64_t utid;
  std::vector<int64_t> fields;
};

struct ProcessRow {
  int64_t upid;
  uint32_t pid;
  uint64_t start_ts = UINT64_MAX;
  uint64_t end_ts = 0;
};

}  // namespace

struct Collector::Impl {
  trace::Region& region;
  store::Writer& writer;
  RunInfo info;
  ClockMap clock;
  std::vector<RingReader> rings;
  std::vector<ThreadRow> threads;
  std::vector<ProcessRow> processes;
  std::unordered_map<uint32_t, size_t> process_by_pid;
  std::unordered_map<uint32_t, std::string> strings;  // for thread names
  std::unordered_set<std::string> env_written;         // run_env rows, as name=value
  std::vector<std::pair<int64_t, uint64_t>> dropped_by_thread;  // utid, count (from ring counters at finish)
  uint64_t events = 0;
  uint64_t unmatched_ends = 0;
  uint64_t unknown_records = 0;
  uint64_t unresolved_strings = 0;
  // Records whose field count is not their declaration's: (utid, kind, fields) -> count.
  std::map<std::tuple<int64_t, uint16_t, size_t>, uint64_t> malformed;
  uint64_t malformed_total = 0;
  std::vector<PendingRecord> pending;  // records naming a string defined in a ring not drained yet
  CollectorStats live;                 // steps, compilations, peak memory as they arrive
  uint32_t live_bytes_loc = 0;
  // Field index of the compilation record's reason.
  size_t reason_field = [] {
    const auto& fields = trace::record_decl(static_cast<uint16_t>(trace::RecordKind::kCompilation))->fields;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].name == "reason") return i;
    }
    return size_t{0};
  }();

  void count_record(uint16_t kind, const std::vector<int64_t>& f) {
    if (kind == static_cast<uint16_t>(trace::RecordKind::kStep)) ++live.steps;
    if (kind != static_cast<uint16_t>(trace::RecordKind::kCompilation)) return;
    ++live.compilations;
    if (reason_field < f.size()) {
      auto it = strings.find(static_cast<uint32_t>(f[reason_field]));
      if (it != strings.end() && it->second != "first") ++live.recompilations;
    }
  }
  uint64_t last_resync_ns = 0;
  std::vector<char> payload;

  Impl(trace::Region& r, store::Writer& w, RunInfo i)
      : region(r), writer(w), info(std::move(i)), clock(static_cast<trace::ClockKind>(r.header().clock) == trace::ClockKind::kTsc) {
    rings.resize(r.header().ring_count);
  }

  ProcessRow& process_for(uint32_t pid) {
    auto it = process_by_pid.find(pid);
    if (it != process_by_pid.end()) return processes[it->second];
    processes.push_back({static_cast<int64_t>(processes.size() + 1), pid});
    process_by_pid[pid] = processes.size() - 1;
    return processes.back();
  }

  Status write_run(const RunEnd* end) {
    auto row = writer.row(store::schema::run);
    row.i64(1).text(info.tc_version).text(store::json_string_array(info.command)).text(info.cwd).text(info.host).text(info.collector);
    row.text(static_cast<trace::ClockKind>(region.header().clock) == trace::ClockKind::kTsc ? "tsc" : "monotonic");
    row.i64(static_cast<int64_t>(info.start_ts));
    if (end) row.i64(static_cast<int64_t>(trace::monotonic_ns())); else row.null();
    row.i64(static_cast<int64_t>(info.start_unix_ns));
    if (end && end->exit_code) row.i64(*end->exit_code); else row.null();
    if (end && end->exit_signal) row.i64(*end->exit_signal); else row.null();
    row.i64(end && end->complete ? 1 : 0);
    row.i64(static_cast<int64_t>(events));
    row.i64(static_cast<int64_t>(total_dropped()));
    row.text(info.cuda);
    return row.insert();
  }

  uint64_t total_dropped() const {
    uint64_t n = region.header().dropped_no_ring.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < region.header().ring_count; ++i) n += region.ring(i).dropped.load(std::memory_order_relaxed);
    return n + retired_dropped + malformed_total;
  }
  uint64_t retired_dropped = 0;

  // Copies a record's payload out of the ring (it may wrap around).
  const char* read_payload(const trace::Slot* slots, uint64_t mask, uint64_t first, uint32_t count, uint64_t bytes) {
    payload.resize(static_cast<size_t>(count) * sizeof(trace::Slot) + 1);
    for (uint32_t i = 0; i < count; ++i) std::memcpy(payload.data() + i * sizeof(trace::Slot), &slots[(first + i) & mask], sizeof(trace::Slot));
    payload[std::min<uint64_t>(bytes, payload.size() - 1)] = '\0';
    return payload.data();
  }

  Status new_thread(RingReader& rr, trace::RingHeader& h) {
    ProcessRow& p = process_for(h.pid);
    rr = RingReader{};
    rr.known = true;
    rr.claims = h.claims.load(std::memory_order_relaxed);
    rr.utid = static_cast<int64_t>(threads.size() + 1);
    threads.push_back({rr.utid, p.upid, h.tid, {}});
    return Status::Ok();
  }

  Status close_open_ranges(RingReader& rr) {
    // The thread ended (or its process died) inside these ranges: dur = -1.
    for (size_t d = 0; d < rr.open.size(); ++d) {
      const OpenRange& o = rr.open[d];
      TC_RETURN_IF_ERROR(writer.row(store::schema::ranges)
                             .null()
                             .i64(rr.utid)
                             .i64(static_cast<int64_t>(o.ts))
                             .i64(-1)
                             .i64(static_cast<int64_t>(d))
                             .i64(o.loc)
                             .i64(o.arg)
                             .insert());
      ++events;
    }
    rr.open.clear();
    return Status::Ok();
  }

  Status consume(RingReader& rr, const trace::Slot* slots, uint64_t mask, uint64_t from, uint64_t to) {
    ProcessRow& proc = processes[static_cast<size_t>(threads[static_cast<size_t>(rr.utid - 1)].upid - 1)];
    for (uint64_t i = from; i < to;) {
      const trace::Slot& s = slots[i & mask];
      auto kind = static_cast<trace::SlotKind>(s.kind);
      uint64_t ts = clock.to_ns(s.ts);
      if (ts < rr.last_ts) ts = rr.last_ts;  // never reorder a thread's own events
      switch (kind) {
        case trace::SlotKind::kBegin:
          rr.open.push_back({ts, s.loc, s.arg});
          break;
        case trace::SlotKind::kEnd: {
          if (rr.open.empty()) {
            ++unmatched_ends;
            break;
          }
          OpenRange o = rr.open.back();
          rr.open.pop_back();
          TC_RETURN_IF_ERROR(writer.row(store::schema::ranges)
                                 .null()
                                 .i64(rr.utid)
                                 .i64(static_cast<int64_t>(o.ts))
                                 .i64(static_cast<int64_t>(ts - o.ts))
                                 .i64(static_cast<int64_t>(rr.open.size()))
                                 .i64(o.loc)
                                 .i64(o.arg)
                                 .insert());
          ++events;
          break;
        }
        case trace::SlotKind::kInstant:
          TC_RETURN_IF_ERROR(
              writer.row(store::schema::instants).null().i64(rr.utid).i64(static_cast<int64_t>(ts)).i64(s.loc).i64(s.arg).insert());
          ++events;
          break;
        case trace::SlotKind::kCounter: {
          double v;
          std::memcpy(&v, &s.value, sizeof v);
          TC_RETURN_IF_ERROR(
              writer.row(store::schema::counters).null().i64(rr.utid).i64(static_cast<int64_t>(ts)).i64(s.loc).f64(v).insert());
          ++events;
          if (s.loc == live_bytes_loc && v > live.peak_live_bytes) live.peak_live_bytes = v;
          break;
        }
        case trace::SlotKind::kLocationDef: {
          const char* p = read_payload(slots, mask, i + 1, s.extra, static_cast<uint64_t>(s.arg));
          std::string_view name(p);
          std::string_view file(p + name.size() + 1);
          std::string_view function(p + name.size() + file.size() + 2);
          TC_RETURN_IF_ERROR(writer.row(store::schema::locations).i64(s.loc).text(name).text(file).text(function).i64(s.value).insert());
          if (name == "memory.live_bytes") live_bytes_loc = s.loc;
          break;
        }
        case trace::SlotKind::kStringDef: {
          const char* p = read_payload(slots, mask, i + 1, s.extra, static_cast<uint64_t>(s.arg));
          std::string_view text(p, static_cast<size_t>(s.arg));
          strings[s.loc] = std::string(text);
          TC_RETURN_IF_ERROR(writer.row(store::schema::strings).i64(s.loc).text(text).insert());
          break;
        }
        case trace::SlotKind::kRecord: {
          // The payload size comes from shared memory: never read past the slots it occupies.
          uint64_t bytes = std::min<uint64_t>(static_cast<uint64_t>(std::max<int64_t>(s.arg, 0)), uint64_t{s.extra} * sizeof(trace::Slot));
          const char* p = read_payload(slots, mask, i + 1, s.extra, bytes);
          size_t n = static_cast<size_t>(bytes / sizeof(int64_t));
          const trace::RecordDecl* decl = trace::record_decl(static_cast<uint16_t>(s.loc));
          if (decl == nullptr) {
            ++unknown_records;
            break;
          }
          if (n != decl->fields.size()) {
            // Stored padded or cut, every later column would hold the wrong field.
            ++malformed[{rr.utid, static_cast<uint16_t>(s.loc), n}];
            ++malformed_total;
            break;
          }
          std::vector<int64_t> fields(n);
          std::memcpy(fields.data(), p, n * sizeof(int64_t));
          count_record(static_cast<uint16_t>(s.loc), fields);
          auto done = write_record(static_cast<uint16_t>(s.loc), rr.utid, fields.data(), n, false);
          if (!done.ok()) return done.status();
          if (!*done) pending.push_back({static_cast<uint16_t>(s.loc), rr.utid, std::move(fields)});
          break;
        }
        case trace::SlotKind::kThreadName: {
          auto it = strings.find(s.loc);
          if (it != strings.end()) threads[static_cast<size_t>(rr.utid - 1)].name = it->second;
          break;
        }
        default:
          ++unknown_records;
          break;
      }
      if (kind != trace::SlotKind::kLocationDef && kind != trace::SlotKind::kStringDef && kind != trace::SlotKind::kRecord) {
        rr.last_ts = ts;
        proc.start_ts = std::min<uint64_t>(proc.start_ts, ts);
        proc.end_ts = std::max<uint64_t>(proc.end_ts, ts);
      }
      i += 1 + s.extra;
    }
    return Status::Ok();
  }

  // Writes a record's row, or returns false when it names a string whose
  // definition has not been read yet (it sits in another thread's ring).
  StatusOr<bool> write_record(uint16_t kind, int64_t utid, const int64_t* f, size_t n, bool force) {
    const trace::RecordDecl* decl = trace::record_decl(kind);
    const store::TableDecl* table = store::schema::record_table(kind);
    if (decl == nullptr || table == nullptr || n != decl->fields.size()) {
      ++unknown_records;  // consume() checked both; a pending record cannot change kind
      return true;
    }
    const std::span<const trace::FieldDecl> fields = decl->fields;
    if (!force) {
      for (size_t i = 0; i < n; ++i) {
        if (fields[i].type == trace::FieldType::kText && f[i] != 0 && !strings.contains(static_cast<uint32_t>(f[i]))) return false;
      }
    }
    if (decl->kind == trace::RecordKind::kRunEnv) {
      // A setting a process chose: once per distinct name and value.
      auto name = strings.find(static_cast<uint32_t>(f[0])), value = strings.find(static_cast<uint32_t>(f[1]));
      if (name == strings.end() || value == strings.end() || !env_written.insert(name->second + "=" + value->second).second) return true;
    }
    auto row = writer.row(*table);
    row.null();
    if (decl->utid_doc.size()) row.i64(utid);
    uint64_t ts_ticks = 0;
    for (size_t i = 0; i < n; ++i) {
      int64_t v = f[i];
      switch (fields[i].type) {
        case trace::FieldType::kInt:
        case trace::FieldType::kLoc: row.i64(v); break;
        case trace::FieldType::kIntOrNull:
          if (v == 0) row.null(); else row.i64(v);
          break;
        case trace::FieldType::kTs:
          ts_ticks = static_cast<uint64_t>(v);
          row.i64(static_cast<int64_t>(clock.to_ns(ts_ticks)));
          break;
        case trace::FieldType::kDur:
          row.i64(static_cast<int64_t>(clock.to_ns(ts_ticks + static_cast<uint64_t>(v))) - static_cast<int64_t>(clock.to_ns(ts_ticks)));
          break;
        case trace::FieldType::kReal: row.f64(std::bit_cast<double>(v)); break;
        case trace::FieldType::kText: {
          auto it = v == 0 ? strings.end() : strings.find(static_cast<uint32_t>(v));
          if (it == strings.end()) {
            if (v != 0) ++unresolved_strings;
            row.null();
          } else {
            row.text(it->second);
          }
          break;
        }
      }
    }
    TC_RETURN_IF_ERROR(row.insert());
    return true;
  }

  Status retry_pending(bool force) {
    size_t kept = 0;
    for (PendingRecord& p : pending) {
      auto done = write_record(p.kind, p.utid, p.fields.data(), p.fields.size(), force);
      if (!done.ok()) return done.status();
      if (!*done) pending[kept++] = std::move(p);
    }
    pending.resize(kept);
    return Status::Ok();
  }

  StatusOr<uint64_t> drain_once() {
    uint64_t now = trace::monotonic_ns();
    if (now - last_resync_ns > 100'000'000) {
      clock.resync();
      last_resync_ns = now;
    }
    region.header().collector_heartbeat.fetch_add(1, std::memory_order_relaxed);
    uint64_t consumed = 0;
    const uint64_t capacity = region.header().ring_capacity;
    for (uint32_t r = 0; r < region.header().ring_count; ++r) {
      trace::RingHeader& h = region.ring(r);
      auto state = static_cast<trace::RingState>(h.state.load(std::memory_order_acquire));
      if (state == trace::RingState::kFree || state == trace::RingState::kClaiming) continue;
      RingReader& rr = rings[r];
      if (!rr.known || rr.claims != h.claims.load(std::memory_order_relaxed)) TC_RETURN_IF_ERROR(new_thread(rr, h));
      uint64_t from = h.read.load(std::memory_order_relaxed);
      uint64_t to = h.write.load(std::memory_order_acquire);
      if (to != from) {
        TC_RETURN_IF_ERROR(consume(rr, region.slots(r), capacity - 1, from, to));
        h.read.store(to, std::memory_order_release);
        consumed += to - from;
      }
      if (state == trace::RingState::kRetired && h.write.load(std::memory_order_acquire) == to) {
        TC_RETURN_IF_ERROR(close_open_ranges(rr));
        uint64_t d = h.dropped.exchange(0, std::memory_order_relaxed);
        if (d) dropped_by_thread.emplace_back(rr.utid, d);
        retired_dropped += d;
        rr.known = false;
        h.state.store(static_cast<uint32_t>(trace::RingState::kFree), std::memory_order_release);
      }
    }
    if (!pending.empty()) TC_RETURN_IF_ERROR(retry_pending(false));
    return consumed;
  }
};

Collector::Collector(trace::Region& region, store::Writer& writer, RunInfo info)
    : impl_(std::make_unique<Impl>(region, writer, std::move(info))) {}

Collector::~Collector() = default;

Status Collector::begin() {
  TC_RETURN_IF_ERROR(impl_->write_run(nullptr));
  for (const auto& [name, value] : impl_->info.env) {
    if (!impl_->env_written.insert(name + "=" + value).second) continue;
    TC_RETURN_IF_ERROR(impl_->writer.row(store::schema::run_env).null().text(name).text(value).insert());
  }
  return impl_->writer.commit();
}

StatusOr<uint64_t> Collector::drain() { return impl_->drain_once(); }

Status Collector::finish(const RunEnd& end) {
  Impl& m = *impl_;
  // Drain until a pass finds nothing: threads of a live process may still write.
  for (int pass = 0; pass < 1000; ++pass) {
    auto n = m.drain_once();
    if (!n.ok()) return n.status();
    if (*n == 0) break;
  }
  TC_RETURN_IF_ERROR(m.retry_pending(true));
  for (uint32_t r = 0; r < m.region.header().ring_count; ++r) {
    RingReader& rr = m.rings[r];
    if (!rr.known) continue;
    TC_RETURN_IF_ERROR(m.close_open_ranges(rr));
    uint64_t d = m.region.ring(r).dropped.load(std::memory_order_relaxed);
    if (d) m.dropped_by_thread.emplace_back(rr.utid, d);
  }
  for (const ProcessRow& p : m.processes) {
    auto row = m.writer.row(store::schema::processes);
    row.i64(p.upid).i64(p.pid);
    std::string comm;
    if (FILE* f = std::fopen(("/proc/" + std::to_string(p.pid) + "/comm").c_str(), "r")) {
      char buf[64] = {};
      if (std::fgets(buf, sizeof buf, f)) comm = buf;
      std::fclose(f);
      if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    }
    if (comm.empty() && !m.info.command.empty()) comm = std::filesystem::path(m.info.command[0]).filename().string();
    row.text(comm);
    if (p.start_ts == UINT64_MAX) row.null().null(); else row.i64(static_cast<int64_t>(p.start_ts)).i64(static_cast<int64_t>(p.end_ts));
    TC_RETURN_IF_ERROR(row.insert());
  }
  for (const ThreadRow& t : m.threads) {
    auto row = m.writer.row(store::schema::threads);
    row.i64(t.utid).i64(t.upid).i64(t.tid);
    if (t.name.empty()) row.null(); else row.text(t.name);
    TC_RETURN_IF_ERROR(row.insert());
  }
  for (const auto& [utid, count] : m.dropped_by_thread) {
    int64_t upid = m.threads[static_cast<size_t>(utid - 1)].upid;
    TC_RETURN_IF_ERROR(m.writer.row(store::schema::dropped).null().i64(upid).i64(utid).i64(static_cast<int64_t>(count)).text("ring full: the collector fell behind").insert());
  }
  if (uint64_t n = m.region.header().dropped_no_ring.load(); n) {
    TC_RETURN_IF_ERROR(m.writer.row(store::schema::dropped).null().null().null().i64(static_cast<int64_t>(n)).text("no free ring: more threads than rings").insert());
  }
  if (m.unmatched_ends) {
    TC_RETURN_IF_ERROR(m.writer.row(store::schema::dropped).null().null().null().i64(static_cast<int64_t>(m.unmatched_ends)).text("range end without a begin").insert());
  }
  if (m.unresolved_strings) {
    TC_RETURN_IF_ERROR(m.writer.row(store::schema::dropped).null().null().null().i64(static_cast<int64_t>(m.unresolved_strings)).text("string named by a record but never defined (stored as NULL)").insert());
  }
  for (const auto& [key, count] : m.malformed) {
    const auto& [utid, kind, fields] = key;
    const trace::RecordDecl* decl = trace::record_decl(kind);
    std::string reason = "record of kind " + std::string(decl->table) + " with " + std::to_string(fields) + " fields, expected " +
                         std::to_string(decl->fields.size());
    int64_t upid = m.threads[static_cast<size_t>(utid - 1)].upid;
    TC_RETURN_IF_ERROR(m.writer.row(store::schema::dropped).null().i64(upid).i64(utid).i64(static_cast<int64_t>(count)).text(reason).insert());
  }
  if (m.unknown_records) {
    TC_RETURN_IF_ERROR(m.writer.row(store::schema::dropped).null().null().null().i64(static_cast<int64_t>(m.unknown_records)).text("record of a kind this tc does not know").insert());
  }
  RunEnd final_end = end;
  if (m.total_dropped() > 0) final_end.complete = false;
  TC_RETURN_IF_ERROR(m.write_run(&final_end));
  return m.writer.finalize();
}

CollectorStats Collector::stats() const {
  CollectorStats s = impl_->live;
  s.events = impl_->events;
  s.dropped = impl_->total_dropped();
  s.threads = impl_->threads.size();
  s.processes = impl_->processes.size();
  return s;
}

}  // namespace tc::collect
