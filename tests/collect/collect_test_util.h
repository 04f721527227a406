// Helpers for the collector tests: a scratch directory, a region this
// process records into, and writing slots the way a (misbehaving) producer
// would.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tc/collect/collector.h"
#include "tc/store/reader.h"
#include "tc/store/writer.h"
#include "tc/trace/region.h"
#include "tc/trace/trace.h"

namespace tc::collect::testing {

namespace tr = tc::trace;

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tc_collect_test.XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data()) ? tmpl : "";
    EXPECT_FALSE(dir_.empty());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

// A private region this process records into, for the life of the process
// (threads' rings point into it). CLOCK_MONOTONIC: no TSC calibration per test.
inline tr::Region& recording_region(uint32_t rings, uint64_t capacity) {
  std::string err;
  auto r = tr::Region::create_private(rings, capacity, &err, tr::ClockKind::kMonotonic);
  EXPECT_TRUE(r) << err;
  tr::Region* raw = r.release();
  static auto* kept = new std::vector<tr::Region*>;  // never destroyed: the regions stay reachable for LeakSanitizer
  kept->push_back(raw);
  tr::detail::activate(raw);
  return *raw;
}

// Appends one slot (and its payload) to ring r and publishes it, as a
// producer would: whatever the slot says.
inline void append(tr::Region& region, uint32_t r, tr::Slot s, std::string_view payload = {}, uint32_t payload_slots = 0) {
  tr::RingHeader& h = region.ring(r);
  const uint64_t mask = region.capacity() - 1;
  uint64_t w = h.write.load();
  tr::Slot* slots = region.slots(r);
  slots[w & mask] = s;
  for (uint32_t k = 0; k < payload_slots; ++k) {
    tr::Slot& d = slots[(w + 1 + k) & mask];
    std::memset(&d, 0, sizeof d);
    size_t off = size_t{k} * sizeof(tr::Slot);
    if (off < payload.size()) std::memcpy(&d, payload.data() + off, std::min(sizeof d, payload.size() - off));
  }
  h.write.store(w + 1 + payload_slots);
}

inline tr::Slot slot(tr::SlotKind kind, uint32_t loc, int64_t value, int64_t arg, uint16_t extra = 0) {
  tr::Slot s{};
  s.ts = tr::now();
  s.loc = loc;
  s.kind = static_cast<uint16_t>(kind);
  s.extra = extra;
  s.value = value;
  s.arg = arg;
  return s;
}

inline int64_t count(const tc::store::Reader& r, const std::string& sql) {
  auto v = r.scalar_i64(sql);
  EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
  return v.ok() ? *v : -1;
}

inline RunEnd exited() { return {.exit_code = 0, .exit_signal = std::nullopt, .complete = true}; }

}  // namespace tc::collect::testing
