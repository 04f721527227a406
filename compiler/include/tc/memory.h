// tc/memory.h: the runtime's device memory accounting.
//
// Every device buffer comes from one allocator with a capacity (on CPU:
// TC_DEVICE_MEMORY_LIMIT, e.g. "2GiB", "512MiB", "123456"; default the
// machine's physical memory). Going past it throws tc::OutOfMemoryError.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "tc/error.h"

namespace tc {

struct MemoryStats {
  int64_t capacity = 0;
  int64_t live = 0;  // bytes held by live buffers now
  int64_t peak = 0;  // highest `live` since start or reset_peak_memory()
  std::array<int64_t, kCategoryCount> live_by_category{};
  std::array<int64_t, kCategoryCount> peak_by_category{};
  int64_t allocations = 0;  // buffers allocated so far
};

MemoryStats memory_stats();
void reset_peak_memory();
// Overrides the capacity (bytes); 0 restores the TC_DEVICE_MEMORY_LIMIT/default.
void set_device_memory_limit(int64_t bytes);
// "2GiB", "512MiB", "64KiB", "1GB", "123456" -> bytes; throws tc::Error otherwise.
int64_t parse_byte_size(std::string_view text);

}  // namespace tc
