// Device buffers from the runtime allocator (see tc/memory.h).
#pragma once

#include <cstdint>
#include <memory>

#include "tc/error.h"

namespace tc::detail {

class Buffer {
 public:
  // Throws OutOfMemoryError (after recording it) past the capacity.
  Buffer(int64_t bytes, Category category);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  int64_t bytes() const { return bytes_; }
  Category category() const { return category_; }
  void set_category(Category c);  // moves the accounting
  void* raw() { return ptr_; }
  const void* raw() const { return ptr_; }
  template <typename T> T* as() { return static_cast<T*>(ptr_); }
  template <typename T> const T* as() const { return static_cast<const T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
  Category category_;
};

std::shared_ptr<Buffer> allocate(int64_t bytes, Category category);

}  // namespace tc::detail
