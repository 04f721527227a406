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
// allocates nothing once a thread's stack has grown to its depth: sites sit
// in open-addressing tables keyed by a hash of the message's content and
// attributes (never by its pointer alone: Python hands over a temporary
// buffer, reused for the next message). A site's first use locks once and
// copies the message. What is kept, cut and capped: see "limits" below and
// docs/user-guide.md ("NVTX limits").
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
#include <unordered_map>

#include "tc/trace/records.h"
#include "tc/trace/trace.h"

namespace tr = tc::trace;

namespace {

// ------------------------------------------------------------------ limits

// Every text NVTX hands over (a message, a domain's name, a registered
// string) is kept up to kMaxText bytes; a longer one is cut at a UTF-8
// boundary and ends in kCutMark. Distinct texts are kept for the whole run
// (events may name them at any time), so each kind has a cap and all share
// one budget of bytes; beyond, a new one shares an overflow entry whose name
// says so, and a line in `logs` says when a cap was reached.
constexpr size_t kMaxText = 4096;
constexpr char kCutMark[] = "\xe2\x80\xa6[cut: longer than 4096 bytes]";
constexpr size_t kTextBuffer = kMaxText + sizeof kCutMark;
constexpr size_t kMaxSites = size_t{1} << 19;
constexpr size_t kMaxDomains = size_t{1} << 18;
constexpr size_t kMaxStrings = size_t{1} << 19;
constexpr size_t kTextBudget = size_t{64} << 20;

std::atomic<size_t> g_text_bytes{0};

// Takes `bytes` from the budget; false (nothing taken) when it is spent.
bool charge(size_t bytes) {
  size_t have = g_text_bytes.load(std::memory_order_relaxed);
  do {
    if (bytes > kTextBudget - have) return false;
  } while (!g_text_bytes.compare_exchange_weak(have, have + bytes, std::memory_order_relaxed));
  return true;
}

// The sites' cap: kMaxSites, or less with TC_NVTX_MAX_SITES (to bound memory).
size_t max_sites() {
  static const size_t cap = [] {
    const char* v = std::getenv("TC_NVTX_MAX_SITES");
    char* end = nullptr;
    unsigned long long n = v && *v ? std::strtoull(v, &end, 10) : 0;
    return end && *end == '\0' && n > 0 && n < kMaxSites ? static_cast<size_t>(n) : kMaxSites;
  }();
  return cap;
}

void say_cap_reached(const char* what) {
  if (!tr::enabled()) return;
  std::string line = std::string("NVTX: ") + what + "; later ones share one entry named so (docs/user-guide.md, NVTX limits)";
  tr::emit(tr::rec::Log{.ts = tr::Ticks{tr::now()}, .level = tr::intern("warning"), .message = tr::intern(line)});
}

// The bytes of `text` (NUL-terminated) kept: at most kMaxText, never ending
// inside a UTF-8 sequence. *cut: it was longer. Reads at most kMaxText + 1.
size_t kept_length(const char* text, bool* cut) {
  size_t n = strnlen(text, kMaxText + 1);
  *cut = n > kMaxText;
  if (!*cut) return n;
  n = kMaxText;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xc0) == 0x80) --n;
  return n;
}

// UTF-32 (wchar_t) to UTF-8 into buf (kTextBuffer bytes), cut like
// kept_length and marked; returns the length. Never allocates.
size_t to_utf8(const wchar_t* w, char* buf) {
  size_t n = 0;
  for (; *w && n + 4 <= kMaxText; ++w) {
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
  if (*w) {
    std::memcpy(buf + n, kCutMark, sizeof kCutMark - 1);
    n += sizeof kCutMark - 1;
  }
  buf[n] = '\0';
  return n;
}

// A name or registered string as kept: cut and marked.
std::string kept(const char* text) {
  bool cut = false;
  std::string out(text, kept_length(text, &cut));
  if (cut) out += kCutMark;
  return out;
}
std::string kept(const wchar_t* text) {
  std::string out(kTextBuffer, '\0');
  out.resize(to_utf8(text, out.data()));
  return out;
}

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

// ------------------------------------------------------------------ domains and registered strings

struct Domain {
  std::string name;  // "" for the default domain
  tr::StringId id;   // the name interned; StringId{} for the default domain
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

// Domains by name (one handle per name) and registered strings by domain and
// text. Created under a lock of their own, once per distinct name: not the
// hot path, which only reads the handles. Leaked on purpose: handles live as
// long as the process (events may name them after nvtxDomainDestroy).
struct Names {
  std::mutex mu;
  std::unordered_map<std::string, Domain*> domains;
  std::unordered_map<std::string, Registered*> strings;  // key: the domain's address, then the text
  Domain* overflow_domain = nullptr;
  Registered* overflow_string = nullptr;
};
Names& names() {
  static Names* n = new Names;
  return *n;
}
// A fork() while another thread registers would leave the child's copy
// locked forever: the child starts with a fresh one (the maps are whole).
const bool g_names_atfork = pthread_atfork(nullptr, nullptr, [] { new (&names().mu) std::mutex; }) == 0;

Domain* new_domain(std::string name) {
  auto* d = new Domain{std::move(name), {}};
  d->id = tr::intern(d->name);
  return d;
}

// With names().mu held: the handle of `key`, made once; past `cap` handles or
// the text budget, the overflow one (made once, and said in logs).
template <class T, class Make>
T* intern_handle(std::unordered_map<std::string, T*>& map, std::string key, size_t text_bytes, size_t cap, T*& overflow, const char* what,
                 Make make) {
  auto it = map.find(key);
  if (it != map.end()) return it->second;
  if (map.size() >= cap || !charge(text_bytes)) {
    if (overflow == nullptr) {
      overflow = make(/*overflow=*/true);
      say_cap_reached(what);
    }
    return overflow;
  }
  return map.emplace(std::move(key), make(/*overflow=*/false)).first->second;
}

nvtxDomainHandle_t create_domain(std::string name) {
  Names& n = names();
  std::lock_guard lock(n.mu);
  const size_t bytes = name.size();
  return reinterpret_cast<nvtxDomainHandle_t>(
      intern_handle(n.domains, name, bytes, kMaxDomains, n.overflow_domain, "more distinct domain names than tc keeps apart", [&](bool overflow) {
        return new_domain(overflow ? "(more NVTX domains than tc keeps apart)" : name);
      }));
}

Registered* new_registered(const Domain* d, std::string text) {
  auto* r = new Registered{kRegisteredMagic, d, std::move(text), 0};
  r->hash = hash_bytes(r->text.data(), r->text.size());
  return r;
}

nvtxStringHandle_t register_string(nvtxDomainHandle_t h, std::string text) {
  const Domain* d = domain_of(h);
  std::string key(reinterpret_cast<const char*>(&d), sizeof d);
  key += text;
  Names& n = names();
  std::lock_guard lock(n.mu);
  return reinterpret_cast<nvtxStringHandle_t>(intern_handle(
      n.strings, std::move(key), text.size(), kMaxStrings, n.overflow_string, "more distinct registered strings than tc keeps apart",
      [&](bool overflow) {
        return overflow ? new_registered(&g_default_domain, "(more NVTX registered strings than tc keeps apart)") : new_registered(d, text);
      }));
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

struct Site {
  const Domain* domain;
  const char* text;  // our own copy
  uint32_t len;
  uint32_t category;
  uint32_t color;
  uint32_t loc;
  MessageType type;
};

struct SiteSlot {
  std::atomic<uint64_t> key{0};  // 0: empty; published last (release), after site
  const Site* site = nullptr;
};

// Sites sit in open-addressing tables of growing size, never more than half
// full, whose slots never move once written: a reader finds a site without a
// lock, newest table first. A full table gets a successor twice its size
// (the old one stays), so a new site costs O(1) amortized; the cap bounds the
// tables (at most 2 * 2 * kMaxSites slots of 16 bytes) and the sites.
constexpr size_t kFirstTable = size_t{1} << 12;
constexpr int kMaxTables = 20;
struct SiteTable {
  size_t mask;
  size_t used;  // under g_site_mu
  SiteSlot* slots;
};
std::atomic<SiteTable*> g_tables[kMaxTables];
std::atomic<int> g_table_count{0};
size_t g_site_count = 0;  // under g_site_mu
std::mutex g_site_mu;
// As for names(): the child of a fork() gets a fresh lock.
const bool g_site_mu_atfork = pthread_atfork(nullptr, nullptr, [] { new (&g_site_mu) std::mutex; }) == 0;
uint32_t g_overflow_loc = 0;  // under g_site_mu

inline uint64_t key_of(const SiteKey& k) {
  uint64_t h = mix(mix(mix(mix(k.text_hash, reinterpret_cast<uintptr_t>(k.domain)), k.category), k.color), static_cast<uint64_t>(k.type));
  return h | 1;  // never 0
}

inline bool same(const Site& e, const SiteKey& k) {
  return e.len == k.len && e.domain == k.domain && e.category == k.category && e.color == k.color && e.type == k.type &&
         std::memcmp(e.text, k.text, k.len) == 0;
}

// The site's location, or 0 when it has none yet. Lock-free.
inline uint32_t find_site(const SiteKey& k, uint64_t key) {
  for (int t = g_table_count.load(std::memory_order_acquire) - 1; t >= 0; --t) {
    const SiteTable* table = g_tables[t].load(std::memory_order_acquire);
    for (size_t i = key & table->mask;; i = (i + 1) & table->mask) {
      const SiteSlot& slot = table->slots[i];
      const uint64_t have = slot.key.load(std::memory_order_acquire);
      if (have == 0) break;  // a table is at most half full: probes end
      if (have == key && same(*slot.site, k)) return slot.site->loc;
    }
  }
  return 0;
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

// With g_site_mu held.
uint32_t overflow_site() {
  if (g_overflow_loc == 0) {
    const char msg[] = "(more distinct NVTX messages than tc keeps apart)";
    g_overflow_loc = define_site(SiteKey{msg, sizeof msg - 1, 0, &g_default_domain, 0, 0, MessageType::kNone});
    if (g_overflow_loc != 0) say_cap_reached("more distinct messages than tc keeps apart");
  }
  return g_overflow_loc;
}

// With g_site_mu held: the newest table when it has room, else a new one.
SiteTable* table_with_room() {
  const int n = g_table_count.load(std::memory_order_relaxed);
  SiteTable* last = n > 0 ? g_tables[n - 1].load(std::memory_order_relaxed) : nullptr;
  if (last != nullptr && (last->used + 1) * 2 <= last->mask + 1) return last;
  if (n == kMaxTables) return nullptr;
  const size_t size = last ? (last->mask + 1) * 2 : kFirstTable;
  auto* slots = new (std::nothrow) SiteSlot[size];
  auto* table = slots ? new (std::nothrow) SiteTable{size - 1, 0, slots} : nullptr;
  if (table == nullptr) {
    delete[] slots;
    return nullptr;
  }
  g_tables[n].store(table, std::memory_order_release);
  g_table_count.store(n + 1, std::memory_order_release);
  return table;
}

// A site's first use: defines it, under the lock.
uint32_t site_slow(const SiteKey& k, uint64_t key) {
  std::lock_guard lock(g_site_mu);
  if (uint32_t loc = find_site(k, key)) return loc;
  SiteTable* table = g_site_count < max_sites() ? table_with_room() : nullptr;
  if (table == nullptr || !charge(k.len)) return overflow_site();
  char* copy = static_cast<char*>(std::malloc(k.len + 1));
  auto* site = copy ? new (std::nothrow) Site{k.domain, copy, static_cast<uint32_t>(k.len), k.category, k.color, 0, k.type} : nullptr;
  if (site == nullptr || (site->loc = define_site(k)) == 0) {
    std::free(copy);
    delete site;
    return 0;
  }
  std::memcpy(copy, k.text, k.len);
  copy[k.len] = '\0';
  size_t i = key & table->mask;
  while (table->slots[i].key.load(std::memory_order_relaxed) != 0) i = (i + 1) & table->mask;
  table->slots[i].site = site;
  table->slots[i].key.store(key, std::memory_order_release);
  ++table->used;
  ++g_site_count;
  return site->loc;
}

// The location of a site: lock-free once it was seen.
inline uint32_t site(const SiteKey& k) {
  const uint64_t key = key_of(k);
  const uint32_t loc = find_site(k, key);
  return __builtin_expect(loc != 0, 1) ? loc : site_slow(k, key);
}

// ------------------------------------------------------------------ events

struct Event {
  uint32_t loc = 0;
  int64_t payload = 0;       // integer payloads
  bool real = false;         // a floating-point payload, in `value`
  double value = 0;
};

char* text_buffer();  // the calling thread's kTextBuffer bytes, for a message converted or cut

// A message as a site sees it: cut and marked when longer than kMaxText.
void set_text(SiteKey& k, const char* text) {
  bool cut = false;
  k.len = kept_length(text, &cut);
  k.text = text;
  if (cut) {
    char* buf = text_buffer();
    std::memcpy(buf, text, k.len);
    std::memcpy(buf + k.len, kCutMark, sizeof kCutMark);
    k.len += sizeof kCutMark - 1;
    k.text = buf;
  }
  k.text_hash = hash_bytes(k.text, k.len);
}

void set_text(SiteKey& k, const wchar_t* text) {
  char* buf = text_buffer();
  k.len = to_utf8(text, buf);
  k.text = buf;
  k.text_hash = hash_bytes(k.text, k.len);
}

void set_message(SiteKey& k, const nvtxEventAttributes_t* a) {
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      if (a->message.ascii) {
        set_text(k, a->message.ascii);
        k.type = MessageType::kAscii;
      }
      break;
    case NVTX_MESSAGE_TYPE_UNICODE:
      if (a->message.unicode) {
        set_text(k, a->message.unicode);
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

Event event_of(const Domain* d, const nvtxEventAttributes_t* a) {
  Event ev;
  if (a == nullptr) return ev;
  SiteKey k{"", 0, 0, d, 0, 0, MessageType::kNone};
  // Fields beyond the size the program's NVTX declared are not read.
  const size_t size = a->size;
  auto has = [&](size_t end) { return size >= end; };
  if (has(offsetof(nvtxEventAttributes_t, category) + sizeof a->category)) k.category = a->category;
  if (has(offsetof(nvtxEventAttributes_t, color) + sizeof a->color) && a->colorType == NVTX_COLOR_ARGB) k.color = a->color;
  if (has(offsetof(nvtxEventAttributes_t, message) + sizeof a->message)) set_message(k, a);
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
  SiteKey k{"", 0, 0, &g_default_domain, 0, 0, MessageType::kAscii};
  set_text(k, message ? message : "");
  ev.loc = site(k);
  return ev;
}

Event event_of(const wchar_t* message) {
  Event ev;
  SiteKey k{"", 0, 0, &g_default_domain, 0, 0, MessageType::kUnicode};
  if (message) set_text(k, message);
  ev.loc = site(k);
  return ev;
}

// A floating-point payload goes ahead of its event, with the event's ts.
inline uint64_t stamp(const Event& ev) {
  uint64_t ts = tr::now();
  if (ev.real) tr::emit(tr::rec::NvtxRealPayload{.ts = tr::Ticks{ts}, .loc_id = tr::LocationId{ev.loc}, .value = ev.value});
  return ts;
}

// ------------------------------------------------------------------ push/pop

// A thread's open push/pop ranges: one stack per domain (NVTX's push/pop
// ranges nest per thread and per domain), linked through one pool of entries
// that grows as deep as the thread goes and is reused as ranges end. The
// default domain's stack top is kept apart; the others' are in a small
// open-addressing map holding only domains with open ranges. Per thread,
// found with pthread_getspecific: a thread-local of a dlopen()ed library
// costs a TLS-descriptor call per access (callgrind: 76 instructions, a
// quarter of a push+pop), and initial-exec TLS would put the whole library's
// TLS in the static block, which a Python process may have used up ("cannot
// allocate memory in static TLS block", seen here).
struct Open {
  uint32_t loc;
  uint32_t below;  // the entry (index + 1) open below it in its domain; for a free entry, the next free one
};
struct DomainTop {
  const Domain* domain;  // nullptr: an empty slot of the map
  uint32_t top;          // the innermost open entry (index + 1)
  uint32_t n;            // ranges of the domain open on this thread
};
constexpr uint32_t kMaxOpen = uint32_t{1} << 30;  // entries per thread: what push/pop's int return values can count

struct Stack {
  tr::detail::Producer* prod = nullptr;  // the recording layer's, cached (write_event_cached)
  bool shared = false;                   // the stack of threads whose own could not be allocated: tracks nothing
  Open* open = nullptr;
  uint32_t capacity = 0, used = 0, free = 0;  // free: a free entry (index + 1), 0 for none
  DomainTop default_top{&g_default_domain, 0, 0};
  DomainTop* tops = nullptr;  // the other domains with open ranges
  uint32_t tops_mask = 0, tops_n = 0;
  char text[kTextBuffer];
  explicit Stack(bool is_shared = false) : shared(is_shared) {}
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;
  ~Stack() {
    std::free(open);
    std::free(tops);
  }
};

pthread_key_t g_stack_key;
const bool g_stack_key_made = pthread_key_create(&g_stack_key, [](void* p) { delete static_cast<Stack*>(p); }) == 0;

Stack& new_stack() {
  static Stack no_memory(/*is_shared=*/true);  // shared, when a thread's own cannot be had
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

char* text_buffer() { return stack().text; }

inline uint64_t at_or_now(const Event& ev) { return ev.real ? stamp(ev) : tr::detail::read_now(); }

// A free entry (index + 1), or 0 when out of memory.
uint32_t take_entry(Stack& s) {
  if (s.free != 0) {
    const uint32_t i = s.free;
    s.free = s.open[i - 1].below;
    return i;
  }
  if (s.used == s.capacity) {
    const uint32_t cap = s.capacity ? s.capacity * 2 : 64;
    if (cap > kMaxOpen) return 0;
    void* p = std::realloc(s.open, sizeof(Open) * cap);
    if (p == nullptr) return 0;
    s.open = static_cast<Open*>(p);
    s.capacity = cap;
  }
  return ++s.used;
}

void give_entry(Stack& s, uint32_t i) {
  s.open[i - 1].below = s.free;
  s.free = i;
}

inline size_t home_of(const Domain* d, uint32_t mask) { return static_cast<size_t>((reinterpret_cast<uintptr_t>(d) >> 4) * 0x9e3779b97f4a7c15ull >> 32) & mask; }

DomainTop* find_top(Stack& s, const Domain* d) {
  if (s.tops == nullptr) return nullptr;
  for (size_t i = home_of(d, s.tops_mask);; i = (i + 1) & s.tops_mask) {
    if (s.tops[i].domain == d) return &s.tops[i];
    if (s.tops[i].domain == nullptr) return nullptr;
  }
}

// The domain's entry of the map, added (n = 0) when missing; nullptr when out of memory.
DomainTop* add_top(Stack& s, const Domain* d) {
  if (DomainTop* t = find_top(s, d)) return t;
  if ((s.tops_n + 1) * 2 > s.tops_mask + 1 || s.tops == nullptr) {  // at most half full
    const uint32_t size = s.tops ? (s.tops_mask + 1) * 2 : 8;
    auto* grown = static_cast<DomainTop*>(std::calloc(size, sizeof(DomainTop)));
    if (grown == nullptr) return nullptr;
    for (uint32_t i = 0; s.tops && i <= s.tops_mask; ++i) {
      if (s.tops[i].domain == nullptr) continue;
      size_t j = home_of(s.tops[i].domain, size - 1);
      while (grown[j].domain != nullptr) j = (j + 1) & (size - 1);
      grown[j] = s.tops[i];
    }
    std::free(s.tops);
    s.tops = grown;
    s.tops_mask = size - 1;
  }
  size_t i = home_of(d, s.tops_mask);
  while (s.tops[i].domain != nullptr) i = (i + 1) & s.tops_mask;
  s.tops[i] = {d, 0, 0};
  ++s.tops_n;
  return &s.tops[i];
}

// Removes a domain whose ranges all ended (backward-shift deletion: no tombstones).
void remove_top(Stack& s, DomainTop* t) {
  const size_t mask = s.tops_mask;
  size_t i = static_cast<size_t>(t - s.tops);
  for (size_t j = (i + 1) & mask; s.tops[j].domain != nullptr; j = (j + 1) & mask) {
    const size_t home = home_of(s.tops[j].domain, s.tops_mask);
    if (((j - home) & mask) >= ((j - i) & mask)) {  // its home is not in (i, j]: it may move to i
      s.tops[i] = s.tops[j];
      i = j;
    }
  }
  s.tops[i] = {nullptr, 0, 0};
  --s.tops_n;
}

std::atomic<bool> g_said_no_memory{false};

int push(const Domain* d, const Event& ev) {
  Stack& s = stack();
  const bool on = tr::enabled();
  if (on) tr::detail::write_event_cached(s.prod, tr::SlotKind::kBegin, ev.loc, 0, ev.payload, at_or_now(ev));
  if (s.shared) return 0;
  const uint32_t i = take_entry(s);
  DomainTop* t = i == 0 ? nullptr : d == &g_default_domain ? &s.default_top : add_top(s, d);
  if (t == nullptr) {
    // Out of memory: the range stays open (cut at the thread's end) and its pop ends another.
    if (i != 0) give_entry(s, i);
    if (on && !g_said_no_memory.exchange(true)) say_cap_reached("out of memory for a thread's open ranges");
    return 0;
  }
  s.open[i - 1] = {ev.loc, t->top};
  t->top = i;
  return static_cast<int>(t->n++);
}

int pop(const Domain* d) {
  Stack& s = stack();
  if (s.shared) {
    if (tr::enabled()) tr::detail::write_event_cached(s.prod, tr::SlotKind::kEnd, 0, 0, 0, tr::detail::read_now());
    return 0;
  }
  DomainTop* t = d == &g_default_domain ? &s.default_top : find_top(s, d);
  if (t == nullptr || t->n == 0) return -1;  // nothing of this domain is open on this thread: no side effects
  const uint32_t i = t->top;
  const uint32_t loc = s.open[i - 1].loc;
  t->top = s.open[i - 1].below;
  const int level = static_cast<int>(--t->n);
  give_entry(s, i);
  if (t->n == 0 && t != &s.default_top) remove_top(s, t);
  if (tr::enabled()) tr::detail::write_event_cached(s.prod, tr::SlotKind::kEnd, loc, 0, 0, tr::detail::read_now());
  return level;
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
void NVTX_API hook_NameCategoryA(uint32_t c, const char* n) { name_category(&g_default_domain, c, kept(n ? n : "")); }
void NVTX_API hook_NameCategoryW(uint32_t c, const wchar_t* n) { name_category(&g_default_domain, c, n ? kept(n) : ""); }
void NVTX_API hook_NameOsThreadA(uint32_t tid, const char* n) { name_thread(tid, kept(n ? n : "")); }
void NVTX_API hook_NameOsThreadW(uint32_t tid, const wchar_t* n) { name_thread(tid, n ? kept(n) : ""); }

void NVTX_API hook_DomainMarkEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) { mark(event_of(domain_of(h), a)); }
nvtxRangeId_t NVTX_API hook_DomainRangeStartEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) { return start(event_of(domain_of(h), a)); }
void NVTX_API hook_DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }
int NVTX_API hook_DomainRangePushEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) { return push(domain_of(h), event_of(domain_of(h), a)); }
int NVTX_API hook_DomainRangePop(nvtxDomainHandle_t h) { return pop(domain_of(h)); }
void NVTX_API hook_DomainNameCategoryA(nvtxDomainHandle_t h, uint32_t c, const char* n) { name_category(domain_of(h), c, kept(n ? n : "")); }
void NVTX_API hook_DomainNameCategoryW(nvtxDomainHandle_t h, uint32_t c, const wchar_t* n) { name_category(domain_of(h), c, n ? kept(n) : ""); }

nvtxStringHandle_t NVTX_API hook_DomainRegisterStringA(nvtxDomainHandle_t h, const char* s) { return register_string(h, kept(s ? s : "")); }
nvtxStringHandle_t NVTX_API hook_DomainRegisterStringW(nvtxDomainHandle_t h, const wchar_t* s) { return register_string(h, s ? kept(s) : ""); }
nvtxDomainHandle_t NVTX_API hook_DomainCreateA(const char* n) { return create_domain(kept(n ? n : "")); }
nvtxDomainHandle_t NVTX_API hook_DomainCreateW(const wchar_t* n) { return create_domain(n ? kept(n) : ""); }
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
  // Each hook is hook_NAME, in the slot NVTX_CBID_<module>_NAME.
#define TC_NVTX_HOOK(module, name) {NVTX_CBID_##module##_##name, fp(hook_##name)}
  const std::pair<unsigned, NvtxFunctionPointer> core[] = {
      TC_NVTX_HOOK(CORE, MarkEx), TC_NVTX_HOOK(CORE, MarkA), TC_NVTX_HOOK(CORE, MarkW),
      TC_NVTX_HOOK(CORE, RangeStartEx), TC_NVTX_HOOK(CORE, RangeStartA), TC_NVTX_HOOK(CORE, RangeStartW), TC_NVTX_HOOK(CORE, RangeEnd),
      TC_NVTX_HOOK(CORE, RangePushEx), TC_NVTX_HOOK(CORE, RangePushA), TC_NVTX_HOOK(CORE, RangePushW), TC_NVTX_HOOK(CORE, RangePop),
      TC_NVTX_HOOK(CORE, NameCategoryA), TC_NVTX_HOOK(CORE, NameCategoryW),
      TC_NVTX_HOOK(CORE, NameOsThreadA), TC_NVTX_HOOK(CORE, NameOsThreadW),
  };
  const std::pair<unsigned, NvtxFunctionPointer> core2[] = {
      TC_NVTX_HOOK(CORE2, DomainMarkEx),
      TC_NVTX_HOOK(CORE2, DomainRangeStartEx), TC_NVTX_HOOK(CORE2, DomainRangeEnd),
      TC_NVTX_HOOK(CORE2, DomainRangePushEx), TC_NVTX_HOOK(CORE2, DomainRangePop),
      TC_NVTX_HOOK(CORE2, DomainNameCategoryA), TC_NVTX_HOOK(CORE2, DomainNameCategoryW),
      TC_NVTX_HOOK(CORE2, DomainRegisterStringA), TC_NVTX_HOOK(CORE2, DomainRegisterStringW),
      TC_NVTX_HOOK(CORE2, DomainCreateA), TC_NVTX_HOOK(CORE2, DomainCreateW), TC_NVTX_HOOK(CORE2, DomainDestroy),
  };
#undef TC_NVTX_HOOK
  install(cb, NVTX_CB_MODULE_CORE, core);
  install(cb, NVTX_CB_MODULE_CORE2, core2);
  return 1;
}
