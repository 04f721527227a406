// Device buffers from the runtime allocator (see tc/memory.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tc/error.h"

namespace tc::detail {

class Backend;

// Memory of the process's backend (backend/backend.h), with the runtime's
// accounting. raw() is a device pointer: host memory only when the backend
// says so; read and write it from the host with the copies below.
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
  // Host <-> buffer copies through the backend that owns the memory.
  void copy_to_host(void* dst, std::size_t bytes) const;
  void copy_from_host(const void* src, std::size_t bytes);
  // True when raw() is host memory (the eager executor reads it directly).
  bool host_memory() const;

 private:
  Backend* owner_ = nullptr;
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
  Category category_;
};

std::shared_ptr<Buffer> allocate(int64_t bytes, Category category);

// While alive, an out-of-memory error on this thread records `batch_size`
// (the running compiled graph's batch dimension; 0: unknown).
class ScopedBatchSize {
 public:
  explicit ScopedBatchSize(int64_t batch_size);
  ~ScopedBatchSize();
  ScopedBatchSize(const ScopedBatchSize&) = delete;
  ScopedBatchSize& operator=(const ScopedBatchSize&) = delete;

 private:
  int64_t saved_;
};

}  // namespace tc::detail
