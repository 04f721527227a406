#include <unistd.h>

#include <cctype>
#include <mutex>
#include <unordered_map>
#include <vector>
#include <cstdlib>
#include <new>
#include <sstream>

#include "backend/backend.h"
#include "buffer.h"
#include "events.h"
#include "tc/memory.h"
#include "tc/tensor.h"

namespace tc {

const char* category_name(Category c) {
  switch (c) {
    case Category::parameter: return "parameter";
    case Category::gradient: return "gradient";
    case Category::optimizer_state: return "optimizer_state";
    case Category::activation: return "activation";
    case Category::input: return "input";
    case Category::other: return "other";
  }
  return "?";
}

namespace {

std::string oom_message(int64_t requested, int64_t live, int64_t capacity,
                        const std::array<int64_t, kCategoryCount>& by) {
  std::ostringstream os;
  os << "tc::OutOfMemoryError: requested " << requested << " bytes with " << live
     << " bytes live of a capacity of " << capacity << " bytes; live by category:";
  for (int i = 0; i < kCategoryCount; ++i)
    os << (i ? ", " : " ") << category_name(static_cast<Category>(i)) << "=" << by[i];
  return os.str();
}

struct Allocator {
  int64_t env_capacity = 0;
  int64_t override_capacity = 0;
  bool env_given = false;  // TC_DEVICE_MEMORY_LIMIT: the user's, kept over the device's
  MemoryStats s;

  Allocator() {
    if (const char* e = std::getenv("TC_DEVICE_MEMORY_LIMIT"); e && *e) {
      env_capacity = parse_byte_size(e);
      env_given = true;
    } else {
      env_capacity = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
                     static_cast<int64_t>(sysconf(_SC_PAGESIZE));
    }
    s.capacity = env_capacity;
  }
};

Allocator& allocator() {
  static Allocator a;  // parse errors of TC_DEVICE_MEMORY_LIMIT surface at first use
  return a;
}

void account(Category c, int64_t delta) {
  auto& s = allocator().s;
  s.live += delta;
  s.live_by_category[static_cast<int>(c)] += delta;
  if (s.live > s.peak) s.peak = s.live;
  auto& pc = s.peak_by_category[static_cast<int>(c)];
  if (s.live_by_category[static_cast<int>(c)] > pc) pc = s.live_by_category[static_cast<int>(c)];
}

}  // namespace

ShapeError::ShapeError(std::string op_, Shape lhs_, Shape rhs_, std::string file_, int64_t line_,
                       std::string detail)
    : Error("tc::ShapeError in " + op_ + ": " + to_string(lhs_) + " and " + to_string(rhs_) +
            (detail.empty() ? "" : " (" + detail + ")") + " at " + file_ + ":" +
            std::to_string(line_)),
      op(std::move(op_)), lhs(std::move(lhs_)), rhs(std::move(rhs_)), file(std::move(file_)),
      line(line_) {}

OutOfMemoryError::OutOfMemoryError(int64_t requested_, int64_t live_, int64_t capacity_,
                                   std::array<int64_t, kCategoryCount> by)
    : Error(oom_message(requested_, live_, capacity_, by)), requested(requested_), live(live_),
      capacity(capacity_), live_by_category(by) {}

MemoryStats memory_stats() { return allocator().s; }

void reset_peak_memory() {
  auto& s = allocator().s;
  s.peak = s.live;
  s.peak_by_category = s.live_by_category;
}

void set_device_memory_limit(int64_t bytes) {
  auto& a = allocator();
  a.override_capacity = bytes;
  a.s.capacity = bytes > 0 ? bytes : a.env_capacity;
}

int64_t parse_byte_size(std::string_view text) {
  auto fail = [&]() -> int64_t {
    throw Error("tc: cannot read a byte size from \"" + std::string(text) +
                "\" (expected e.g. 2GiB, 512MiB, 64KiB, 1GB or 123456)");
  };
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::size_t start = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == start || i - start > 15) return fail();
  int64_t value = std::stoll(std::string(text.substr(start, i - start)));
  std::string unit;
  for (; i < text.size(); ++i)
    if (!std::isspace(static_cast<unsigned char>(text[i])))
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  int64_t mult = 1;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "kib" || unit == "k") mult = int64_t{1} << 10;
  else if (unit == "mib" || unit == "m") mult = int64_t{1} << 20;
  else if (unit == "gib" || unit == "g") mult = int64_t{1} << 30;
  else if (unit == "tib" || unit == "t") mult = int64_t{1} << 40;
  else if (unit == "kb") mult = 1000;
  else if (unit == "mb") mult = 1000 * 1000;
  else if (unit == "gb") mult = 1000 * 1000 * 1000;
  else if (unit == "tb") mult = int64_t{1000} * 1000 * 1000 * 1000;
  else return fail();
  if (value > (int64_t{1} << 62) / mult) return fail();
  return value * mult;
}

namespace detail {
namespace {

std::size_t block_bytes(int64_t bytes) { return static_cast<std::size_t>(bytes > 0 ? bytes : 1); }

thread_local int64_t t_batch_size = 0;

}  // namespace

Buffer::Buffer(int64_t bytes, Category category) : bytes_(bytes), category_(category) {
  auto& a = allocator();
  if (bytes < 0) throw Error("tc: negative allocation size");
  if (a.s.live + bytes > a.s.capacity) {
    events::on_out_of_memory(bytes, a.s.live, a.s.capacity, a.s.live_by_category, t_batch_size);
    throw OutOfMemoryError(bytes, a.s.live, a.s.capacity, a.s.live_by_category);
  }
  owner_ = &backend();
  ptr_ = owner_->alloc(block_bytes(bytes));
  if (!ptr_) {
    events::on_out_of_memory(bytes, a.s.live, a.s.capacity, a.s.live_by_category, t_batch_size);
    throw OutOfMemoryError(bytes, a.s.live, a.s.capacity, a.s.live_by_category);
  }
  account(category_, bytes_);
  a.s.allocations++;
  events::on_alloc(bytes_, category_, a.s.live, a.s.capacity);
}

Buffer::~Buffer() {
  owner_->free(ptr_, block_bytes(bytes_));
  account(category_, -bytes_);
  events::on_free(bytes_, category_, allocator().s.live);
}

void Buffer::set_category(Category c) {
  if (c == category_) return;
  account(category_, -bytes_);
  category_ = c;
  account(category_, bytes_);
}

ScopedBatchSize::ScopedBatchSize(int64_t batch_size) : saved_(t_batch_size) { t_batch_size = batch_size; }
ScopedBatchSize::~ScopedBatchSize() { t_batch_size = saved_; }

void Buffer::copy_to_host(void* dst, std::size_t bytes) const { owner_->copy_to_host(dst, ptr_, bytes); }
void Buffer::copy_from_host(const void* src, std::size_t bytes) { owner_->copy_from_host(ptr_, src, bytes); }
bool Buffer::host_memory() const { return owner_->host_memory(); }

void set_device_capacity(int64_t bytes) {
  auto& a = allocator();
  if (bytes <= 0 || a.env_given) return;
  a.env_capacity = bytes;
  if (a.override_capacity <= 0) a.s.capacity = bytes;
}

std::shared_ptr<Buffer> allocate(int64_t bytes, Category category) {
  return std::make_shared<Buffer>(bytes, category);
}

}  // namespace detail
}  // namespace tc
