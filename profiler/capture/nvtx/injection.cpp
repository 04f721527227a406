// libtc_nvtx.so: tc's NVTX injection library.
//
// tc-profile sets NVTX_INJECTION64_PATH to this library for the program it
// starts. Every copy of NVTX in the program (nvtx3 is header-only: each
// library that includes it keeps its own state) dlopen()s it on its first
// NVTX call and calls InitializeInjectionNvtx2, once per copy; we then write
// our hooks into that copy's function tables. Each hook records into the same
// shared-memory rings as tc's own events (this library carries its own copy of
// the recording layer, attached through TC_PROFILE_FD), so a crash or a kill
// loses nothing recorded.
//
// What lands where (docs/schema.md): push/pop ranges are rows of `ranges`,
// marks rows of `instants`, both with a location per distinct site (name =
// the message, file = 'nvtx', function = the domain) described by a row of
// nvtx_sites; start/end ranges are nvtx_range_starts/_ends records; category
// and thread names, floating-point payloads have their own tables.
//
// The hot path (a push or a pop of a message seen before) takes no lock and
// allocates nothing: sites sit in a fixed open-addressing table keyed by a
// hash of the message's content and attributes (never by its pointer alone:
// Python hands over a temporary buffer, reused for the next message), and a
// thread's range stack is a fixed array. A site's first use locks once and
// copies the message.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <mutex>
#include <new>
#include <string>
#include <string_view>

#include "tc/trace/records.h"
#include "tc/trace/trace.h"

namespace tr = tc::trace;

namespace {

// ------------------------------------------------------------------ domains and strings

struct Domain {
  std::string name;     // "" for the default domain
  tr::StringId id;      // the name interned; StringId{} for the default domain
};

constexpr uint32_t kRegisteredMagic = 0x74637273;  // 'tcrs'
struct Registered {
  uint32_t magic = kRegisteredMagic;
  const Domain* domain;
  std::string text;
  uint64_t hash;
};

Domain g_default_domain{"", {}};

const Domain* domain_of(nvtxDomainHandle_t h) { return h ? reinterpret_cast<const Domain*>(h) : &g_default_domain; }

// 64-bit hash of bytes, 8 at a time (FNV-style mixing of words; the table
// verifies content on a hit, so this only has to spread well).
inline uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w) * 0x100000001b3ull;
  h ^= h >> 32;
  return h;
}

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

// UTF-32 (wchar_t) to UTF-8 into buf; returns the length. Never allocates.
size_t to_utf8(const wchar_t* w, char* buf, size_t cap) {
  size_t n = 0;
  for (; *w && n + 4 < cap; ++w) {
    uint32_t c = static_cast<uint32_t>(*w);
    if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) c = 0xfffd;
    if (c < 0x80) {
      buf[n++] = static_cast<char>(c);
    } else if (c < 0x800) {
      buf[n++] = static_cast<char>(0xc0 | (c >> 6));
      buf[n++] = static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      buf[n++] = static_cast<char>(0xe0 | (c >> 12));
      buf[n++] = static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      buf[n++] = static_cast<char>(0x80 | (c & 0x3f));
    } else {
      buf[n++] = static_cast<char>(0xf0 | (c >> 18));
      buf[n++] = static_cast<char>(0x80 | ((c >> 12) & 0x3f));
      buf[n++] = static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      buf[n++] = static_cast<char>(0x80 | (c & 0x3f));
    }
  }
  buf[n] = '\0';
  return n;
}

std::string utf8(const wchar_t* w) {
  std::string out(std::wcslen(w) * 4 + 1, '\0');
  out.resize(to_utf8(w, out.data(), out.size()));
  return out;
}

// ------------------------------------------------------------------ sites

enum class MessageType : uint8_t { kNone = 0, kAscii = 1, kUnicode = 2, kRegistered = 3 };
constexpr const char* kMessageTypeNames[] = {"none", "ascii", "unicode", "registered"};

struct SiteKey {
  const char* text;
  size_t len;
  uint64_t text_hash;
  const Domain* domain;
  uint32_t category;
  uint32_t color;  // 0: none
  MessageType type;
};

struct SiteEntry {
  std::atomic<uint64_t> key{0};  // 0: empty; published last (release)
  const Domain* domain;
  const char* text;  // our own copy
  uint32_t len;
  uint32_t category;
  uint32_t color;
  uint32_t loc;
  MessageType type;
};

constexpr size_t kSites = 1u << 15;  // distinct sites; beyond, events go to one overflow site
SiteEntry g_sites[kSites];
std::mutex g_site_mu;
// A fork() while another thread defines a site would leave the child's copy
// locked forever: the child starts with a fresh one (its tables are whole:
// an entry is published only when complete).
const bool g_site_mu_atfork = pthread_atfork(nullptr, nullptr, [] { new (&g_site_mu) std::mutex; }) == 0;
std::atomic<uint32_t> g_overflow_loc{0};

inline uint64_t key_of(const SiteKey& k) {
  uint64_t h = mix(mix(mix(mix(k.text_hash, reinterpret_cast<uintptr_t>(k.domain)), k.category), k.color), static_cast<uint64_t>(k.type));
  return h | 1;  // never 0
}

inline bool same(const SiteEntry& e, const SiteKey& k) {
  return e.len == k.len && e.domain == k.domain && e.category == k.category && e.color == k.color && e.type == k.type &&
         std::memcmp(e.text, k.text, k.len) == 0;
}

uint32_t define_site(const SiteKey& k) {
  std::string_view text(k.text, k.len);
  tr::LocationId loc = tr::new_location(text, "nvtx", 0, k.domain->name);
  if (loc.value == 0) return 0;
  tr::emit(tr::rec::NvtxSite{.loc_id = loc,
                             .domain = k.domain->id,
                             .category = static_cast<int64_t>(k.category),
                             .color = static_cast<int64_t>(k.color),
                             .message_type = tr::intern(kMessageTypeNames[static_cast<int>(k.type)])});
  return loc.value;
}

uint32_t overflow_site() {
  uint32_t loc = g_overflow_loc.load(std::memory_order_acquire);
  if (loc != 0) return loc;
  std::lock_guard lock(g_site_mu);
  loc = g_overflow_loc.load(std::memory_order_relaxed);
  if (loc == 0) {
    const char msg[] = "(more distinct NVTX messages than tc keeps apart)";
    SiteKey k{msg, sizeof msg - 1, 0, &g_default_domain, 0, 0, MessageType::kNone};
    loc = define_site(k);
    g_overflow_loc.store(loc, std::memory_order_release);
  }
  return loc;
}

constexpr uint32_t kTableFull = ~0u;

uint32_t site_slow(const SiteKey& k, uint64_t key) {
  std::lock_guard lock(g_site_mu);
  for (size_t probe = 0; probe < kSites; ++probe) {
    SiteEntry& e = g_sites[(key + probe) & (kSites - 1)];
    uint64_t have = e.key.load(std::memory_order_acquire);
    if (have == key && same(e, k)) return e.loc;
    if (have != 0) continue;
    if (probe > kSites / 2) break;  // keep probes short: the table is too full
    char* copy = static_cast<char*>(std::malloc(k.len + 1));
    if (copy == nullptr) return 0;
    std::memcpy(copy, k.text, k.len);
    copy[k.len] = '\0';
    uint32_t loc = define_site(k);
    if (loc == 0) {
      std::free(copy);
      return 0;
    }
    e.domain = k.domain;
    e.text = copy;
    e.len = static_cast<uint32_t>(k.len);
    e.category = k.category;
    e.color = k.color;
    e.type = k.type;
    e.loc = loc;
    e.key.store(key, std::memory_order_release);
    return loc;
  }
  return kTableFull;
}

// The location of a site: lock-free once it was seen.
inline uint32_t site(const SiteKey& k) {
  const uint64_t key = key_of(k);
  for (size_t probe = 0; probe < 64; ++probe) {
    const SiteEntry& e = g_sites[(key + probe) & (kSites - 1)];
    uint64_t have = e.key.load(std::memory_order_acquire);
    if (have == 0) break;
    if (have == key && same(e, k)) return e.loc;
  }
  uint32_t loc = site_slow(k, key);
  return loc == kTableFull ? overflow_site() : loc;
}

// ------------------------------------------------------------------ events

struct Event {
  uint32_t loc = 0;
  int64_t payload = 0;       // integer payloads
  bool real = false;         // a floating-point payload, in `value`
  double value = 0;
};

char* utf8_buffer();  // the calling thread's, for a Unicode message converted to UTF-8
constexpr size_t kUtf8Buffer = 4096;

Event event_of(const Domain* d, const nvtxEventAttributes_t* a) {
  Event ev;
  if (a == nullptr) return ev;
  SiteKey k{"", 0, 0, d, 0, 0, MessageType::kNone};
  // Fields beyond the size the program's NVTX declared are not read.
  const size_t size = a->size;
  auto has = [&](size_t end) { return size >= end; };
  if (has(offsetof(nvtxEventAttributes_t, category) + sizeof a->category)) k.category = a->category;
  if (has(offsetof(nvtxEventAttributes_t, color) + sizeof a->color) && a->colorType == NVTX_COLOR_ARGB) k.color = a->color;
  if (has(offsetof(nvtxEventAttributes_t, message) + sizeof a->message)) {
    switch (a->messageType) {
      case NVTX_MESSAGE_TYPE_ASCII:
        if (a->message.ascii) {
          k.text = a->message.ascii;
          k.len = std::strlen(k.text);
          k.text_hash = hash_bytes(k.text, k.len);
          k.type = MessageType::kAscii;
        }
        break;
      case NVTX_MESSAGE_TYPE_UNICODE:
        if (a->message.unicode) {
          k.text = utf8_buffer();
          k.len = to_utf8(a->message.unicode, const_cast<char*>(k.text), kUtf8Buffer);
          k.text_hash = hash_bytes(k.text, k.len);
          k.type = MessageType::kUnicode;
        }
        break;
      case NVTX_MESSAGE_TYPE_REGISTERED: {
        auto* r = reinterpret_cast<const Registered*>(a->message.registered);
        if (r && r->magic == kRegisteredMagic) {
          k.text = r->text.data();
          k.len = r->text.size();
          k.text_hash = r->hash;
          k.type = MessageType::kRegistered;
        }
        break;
      }
      default:
        break;
    }
  }
  if (has(offsetof(nvtxEventAttributes_t, payload) + sizeof a->payload)) {
    switch (a->payloadType) {
      case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: ev.payload = static_cast<int64_t>(a->payload.ullValue); break;
      case NVTX_PAYLOAD_TYPE_INT64: ev.payload = a->payload.llValue; break;
      case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: ev.payload = a->payload.uiValue; break;
      case NVTX_PAYLOAD_TYPE_INT32: ev.payload = a->payload.iValue; break;
      case NVTX_PAYLOAD_TYPE_DOUBLE: ev.real = true; ev.value = a->payload.dValue; break;
      case NVTX_PAYLOAD_TYPE_FLOAT: ev.real = true; ev.value = a->payload.fValue; break;
      default: break;
    }
  }
  ev.loc = site(k);
  return ev;
}

inline Event event_of(const char* message) {
  Event ev;
  if (message == nullptr) message = "";
  size_t len = std::strlen(message);
  ev.loc = site(SiteKey{message, len, hash_bytes(message, len), &g_default_domain, 0, 0, MessageType::kAscii});
  return ev;
}

Event event_of(const wchar_t* message) {
  Event ev;
  char* buf = utf8_buffer();
  size_t len = message ? to_utf8(message, buf, kUtf8Buffer) : 0;
  if (!message) buf[0] = '\0';
  ev.loc = site(SiteKey{buf, len, hash_bytes(buf, len), &g_default_domain, 0, 0, MessageType::kUnicode});
  return ev;
}

// A floating-point payload goes ahead of its event, with the event's ts.
inline uint64_t stamp(const Event& ev) {
  uint64_t ts = tr::now();
  if (ev.real) tr::emit(tr::rec::NvtxRealPayload{.ts = tr::Ticks{ts}, .loc_id = tr::LocationId{ev.loc}, .value = ev.value});
  return ts;
}

// ------------------------------------------------------------------ push/pop

// A thread's open push/pop ranges, over all domains, innermost last, and its
// producer. Per thread, found with pthread_getspecific: a thread-local of a
// dlopen()ed library costs a TLS-descriptor call per access (callgrind: 76
// instructions, a quarter of a push+pop), and initial-exec TLS would put the
// whole library's TLS in the static block, which a Python process may have
// used up ("cannot allocate memory in static TLS block", seen here).
constexpr uint32_t kMaxDepth = 256;
struct Stack {
  tr::detail::Producer* prod = nullptr;  // the recording layer's, cached (write_event_cached)
  uint32_t n = 0;
  uint32_t beyond = 0;     // pushes past kMaxDepth, recorded without a stack entry
  uint32_t default_n = 0;  // entries of the default domain
  struct Entry {
    uint32_t loc;
    uint32_t level;  // what push returned: ranges of its domain open below it
    const Domain* domain;
  } e[kMaxDepth];
  char utf8[kUtf8Buffer];
};

pthread_key_t g_stack_key;
const bool g_stack_key_made = pthread_key_create(&g_stack_key, [](void* p) { delete static_cast<Stack*>(p); }) == 0;

Stack& new_stack() {
  static Stack no_memory;  // shared, when a thread's own cannot be had
  if (!g_stack_key_made) return no_memory;
  Stack* s = new (std::nothrow) Stack;  // once per thread; freed when it exits
  if (s == nullptr || pthread_setspecific(g_stack_key, s) != 0) {
    delete s;
    return no_memory;
  }
  return *s;
}

inline Stack& stack() {
  void* p = g_stack_key_made ? pthread_getspecific(g_stack_key) : nullptr;
  return __builtin_expect(p != nullptr, 1) ? *static_cast<Stack*>(p) : new_stack();
}

char* utf8_buffer() { return stack().utf8; }

inline uint64_t at_or_now(const Event& ev) { return ev.real ? stamp(ev) : tr::detail::read_now(); }

int push(const Domain* d, const Event& ev) {
  Stack& s = stack();
  uint32_t level = 0;
  if (d == &g_default_domain) {
    level = s.default_n;
  } else {
    for (uint32_t i = 0; i < s.n; ++i) level += s.e[i].domain == d;
  }
  if (!tr::enabled()) return static_cast<int>(level);
  tr::detail::write_event_cached(s.prod, tr::SlotKind::kBegin, ev.loc, 0, ev.payload, at_or_now(ev));
  if (s.n < kMaxDepth) {
    s.e[s.n++] = {ev.loc, level, d};
    s.default_n += d == &g_default_domain;
  } else {
    ++s.beyond;
  }
  return static_cast<int>(level);
}

int pop(const Domain* d) {
  Stack& s = stack();
  if (s.beyond > 0) {
    --s.beyond;
    // The collector ends the innermost open range.
    if (tr::enabled()) tr::detail::write_event_cached(s.prod, tr::SlotKind::kEnd, 0, 0, 0, tr::detail::read_now());
    return static_cast<int>(kMaxDepth);
  }
  uint32_t at = s.n;
  while (at > 0 && s.e[at - 1].domain != d) --at;
  if (at == 0) return -1;  // nothing of this domain is open on this thread
  const uint32_t loc = s.e[at - 1].loc, level = s.e[at - 1].level;
  for (uint32_t i = at; i < s.n; ++i) s.e[i - 1] = s.e[i];
  --s.n;
  s.default_n -= d == &g_default_domain;
  if (tr::enabled()) tr::detail::write_event_cached(s.prod, tr::SlotKind::kEnd, loc, 0, 0, tr::detail::read_now());
  return static_cast<int>(level);
}

// ------------------------------------------------------------------ start/end, marks

std::atomic<uint64_t> g_next_range{1};

nvtxRangeId_t start(const Event& ev) {
  if (!tr::enabled()) return 0;
  uint64_t id = g_next_range.fetch_add(1, std::memory_order_relaxed);
  uint64_t ts = stamp(ev);
  tr::emit(tr::rec::NvtxRangeStart{.ts = tr::Ticks{ts}, .range_id = static_cast<int64_t>(id), .loc_id = tr::LocationId{ev.loc}, .payload = ev.payload});
  return id;
}

void end(nvtxRangeId_t id) {
  if (!tr::enabled() || id == 0) return;
  tr::emit(tr::rec::NvtxRangeEnd{.ts = tr::Ticks{tr::now()}, .range_id = static_cast<int64_t>(id)});
}

void mark(const Event& ev) {
  if (!tr::enabled()) return;
  tr::instant_at(tr::LocationId{ev.loc}, ev.payload, ev.real ? stamp(ev) : 0);
}

void name_category(const Domain* d, uint32_t category, std::string_view name) {
  if (!tr::enabled()) return;
  tr::emit(tr::rec::NvtxCategory{.domain = d->id, .category = static_cast<int64_t>(category), .name = tr::intern(name)});
}

void name_thread(uint32_t tid, std::string_view name) {
  if (!tr::enabled()) return;
  if (tid == static_cast<uint32_t>(::syscall(SYS_gettid))) tr::set_thread_name(name);
  tr::emit(tr::rec::NvtxThreadName{.tid = static_cast<int64_t>(tid), .name = tr::intern(name)});
}

// ------------------------------------------------------------------ the hooks

void NVTX_API hook_MarkEx(const nvtxEventAttributes_t* a) { mark(event_of(&g_default_domain, a)); }
void NVTX_API hook_MarkA(const char* m) { mark(event_of(m)); }
void NVTX_API hook_MarkW(const wchar_t* m) { mark(event_of(m)); }
nvtxRangeId_t NVTX_API hook_RangeStartEx(const nvtxEventAttributes_t* a) { return start(event_of(&g_default_domain, a)); }
nvtxRangeId_t NVTX_API hook_RangeStartA(const char* m) { return start(event_of(m)); }
nvtxRangeId_t NVTX_API hook_RangeStartW(const wchar_t* m) { return start(event_of(m)); }
void NVTX_API hook_RangeEnd(nvtxRangeId_t id) { end(id); }
int NVTX_API hook_RangePushEx(const nvtxEventAttributes_t* a) { return push(&g_default_domain, event_of(&g_default_domain, a)); }
int NVTX_API hook_RangePushA(const char* m) { return push(&g_default_domain, event_of(m)); }
int NVTX_API hook_RangePushW(const wchar_t* m) { return push(&g_default_domain, event_of(m)); }
int NVTX_API hook_RangePop() { return pop(&g_default_domain); }
void NVTX_API hook_NameCategoryA(uint32_t c, const char* n) { name_category(&g_default_domain, c, n ? n : ""); }
void NVTX_API hook_NameCategoryW(uint32_t c, const wchar_t* n) { name_category(&g_default_domain, c, n ? utf8(n) : ""); }
void NVTX_API hook_NameOsThreadA(uint32_t tid, const char* n) { name_thread(tid, n ? n : ""); }
void NVTX_API hook_NameOsThreadW(uint32_t tid, const wchar_t* n) { name_thread(tid, n ? utf8(n) : ""); }

void NVTX_API hook_DomainMarkEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) { mark(event_of(domain_of(h), a)); }
nvtxRangeId_t NVTX_API hook_DomainRangeStartEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) { return start(event_of(domain_of(h), a)); }
void NVTX_API hook_DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }
int NVTX_API hook_DomainRangePushEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) { return push(domain_of(h), event_of(domain_of(h), a)); }
int NVTX_API hook_DomainRangePop(nvtxDomainHandle_t h) { return pop(domain_of(h)); }
void NVTX_API hook_DomainNameCategoryA(nvtxDomainHandle_t h, uint32_t c, const char* n) { name_category(domain_of(h), c, n ? n : ""); }
void NVTX_API hook_DomainNameCategoryW(nvtxDomainHandle_t h, uint32_t c, const wchar_t* n) { name_category(domain_of(h), c, n ? utf8(n) : ""); }

nvtxStringHandle_t register_string(nvtxDomainHandle_t h, std::string text) {
  auto* r = new Registered{kRegisteredMagic, domain_of(h), std::move(text), 0};  // lives as long as the process
  r->hash = hash_bytes(r->text.data(), r->text.size());
  return reinterpret_cast<nvtxStringHandle_t>(r);
}
nvtxStringHandle_t NVTX_API hook_DomainRegisterStringA(nvtxDomainHandle_t h, const char* s) { return register_string(h, s ? s : ""); }
nvtxStringHandle_t NVTX_API hook_DomainRegisterStringW(nvtxDomainHandle_t h, const wchar_t* s) { return register_string(h, s ? utf8(s) : ""); }

nvtxDomainHandle_t create_domain(std::string name) {
  auto* d = new Domain{std::move(name), {}};  // lives as long as the process: events may name it after nvtxDomainDestroy
  d->id = tr::intern(d->name);
  return reinterpret_cast<nvtxDomainHandle_t>(d);
}
nvtxDomainHandle_t NVTX_API hook_DomainCreateA(const char* n) { return create_domain(n ? n : ""); }
nvtxDomainHandle_t NVTX_API hook_DomainCreateW(const wchar_t* n) { return create_domain(n ? utf8(n) : ""); }
void NVTX_API hook_DomainDestroy(nvtxDomainHandle_t) {}

template <class F>
NvtxFunctionPointer fp(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

// Writes our hooks into one module's table (slots beyond its size untouched).
template <size_t N>
void install(const NvtxExportTableCallbacks* cb, NvtxCallbackModule module, const std::pair<unsigned, NvtxFunctionPointer> (&hooks)[N]) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!cb->GetModuleFunctionTable(module, &table, &size) || table == nullptr) return;
  for (const auto& [id, f] : hooks) {
    if (id < size && table[id] != nullptr) *table[id] = f;
  }
}

bool g_said_outside = false;

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  tr::start_from_environment();  // normally done when the library was loaded
  if (!tr::enabled()) {
    if (!g_said_outside && std::getenv("TC_PROFILE_FD") == nullptr) {
      g_said_outside = true;
      std::fprintf(stderr, "tc: libtc_nvtx.so was loaded outside tc-profile; NVTX is not recorded (run the program under tc-profile)\n");
    }
    return 0;
  }
  auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (cb == nullptr || cb->struct_size < sizeof(NvtxExportTableCallbacks) || cb->GetModuleFunctionTable == nullptr) return 0;
  const std::pair<unsigned, NvtxFunctionPointer> core[] = {
      {NVTX_CBID_CORE_MarkEx, fp(hook_MarkEx)},
      {NVTX_CBID_CORE_MarkA, fp(hook_MarkA)},
      {NVTX_CBID_CORE_MarkW, fp(hook_MarkW)},
      {NVTX_CBID_CORE_RangeStartEx, fp(hook_RangeStartEx)},
      {NVTX_CBID_CORE_RangeStartA, fp(hook_RangeStartA)},
      {NVTX_CBID_CORE_RangeStartW, fp(hook_RangeStartW)},
      {NVTX_CBID_CORE_RangeEnd, fp(hook_RangeEnd)},
      {NVTX_CBID_CORE_RangePushEx, fp(hook_RangePushEx)},
      {NVTX_CBID_CORE_RangePushA, fp(hook_RangePushA)},
      {NVTX_CBID_CORE_RangePushW, fp(hook_RangePushW)},
      {NVTX_CBID_CORE_RangePop, fp(hook_RangePop)},
      {NVTX_CBID_CORE_NameCategoryA, fp(hook_NameCategoryA)},
      {NVTX_CBID_CORE_NameCategoryW, fp(hook_NameCategoryW)},
      {NVTX_CBID_CORE_NameOsThreadA, fp(hook_NameOsThreadA)},
      {NVTX_CBID_CORE_NameOsThreadW, fp(hook_NameOsThreadW)},
  };
  const std::pair<unsigned, NvtxFunctionPointer> core2[] = {
      {NVTX_CBID_CORE2_DomainMarkEx, fp(hook_DomainMarkEx)},
      {NVTX_CBID_CORE2_DomainRangeStartEx, fp(hook_DomainRangeStartEx)},
      {NVTX_CBID_CORE2_DomainRangeEnd, fp(hook_DomainRangeEnd)},
      {NVTX_CBID_CORE2_DomainRangePushEx, fp(hook_DomainRangePushEx)},
      {NVTX_CBID_CORE2_DomainRangePop, fp(hook_DomainRangePop)},
      {NVTX_CBID_CORE2_DomainNameCategoryA, fp(hook_DomainNameCategoryA)},
      {NVTX_CBID_CORE2_DomainNameCategoryW, fp(hook_DomainNameCategoryW)},
      {NVTX_CBID_CORE2_DomainRegisterStringA, fp(hook_DomainRegisterStringA)},
      {NVTX_CBID_CORE2_DomainRegisterStringW, fp(hook_DomainRegisterStringW)},
      {NVTX_CBID_CORE2_DomainCreateA, fp(hook_DomainCreateA)},
      {NVTX_CBID_CORE2_DomainCreateW, fp(hook_DomainCreateW)},
      {NVTX_CBID_CORE2_DomainDestroy, fp(hook_DomainDestroy)},
  };
  install(cb, NVTX_CB_MODULE_CORE, core);
  install(cb, NVTX_CB_MODULE_CORE2, core2);
  return 1;
}
