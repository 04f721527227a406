// tc/error.h: the exceptions the tensor API throws.
//
// Every user-facing failure is a tc::Error. Shape mismatches are ShapeError
// (op, both shapes, the caller's file:line); exceeding the device capacity is
// OutOfMemoryError (requested, live, capacity and the live bytes by category).
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tc {

using Shape = std::vector<int64_t>;

// What a device buffer holds. The memory breakdown is kept per category.
enum class Category : uint8_t { parameter, gradient, optimizer_state, activation, input, other };
inline constexpr int kCategoryCount = 6;
const char* category_name(Category c);

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ShapeError : public Error {
 public:
  ShapeError(std::string op, Shape lhs, Shape rhs, std::string file, int64_t line,
             std::string detail);
  std::string op;
  Shape lhs, rhs;
  std::string file;
  int64_t line = 0;
};

class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(int64_t requested, int64_t live, int64_t capacity,
                   std::array<int64_t, kCategoryCount> live_by_category);
  int64_t requested = 0, live = 0, capacity = 0;
  std::array<int64_t, kCategoryCount> live_by_category{};  // indexed by Category
};

}  // namespace tc
