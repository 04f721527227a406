// Helpers shared by ops, autodiff and nn.
#pragma once

#include <source_location>
#include <string>

#include "ir.h"

namespace tc::detail {

std::string site(const std::source_location& w);
[[noreturn]] void misuse(const std::string& what, const std::source_location& w);
const NodePtr& need(const Tensor& t, const char* op, const std::source_location& w);
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op, const std::source_location& w);
int64_t norm_axis(int64_t axis, int64_t rank, const char* op, const Shape& s,
                  const std::source_location& w);
Tensor constant(double v, DType dt, const std::source_location& w);  // shape {}
Tensor sum_to(const Tensor& g, const Shape& target, const std::source_location& w);
Tensor binary(Op op, const Tensor& a, const Tensor& b, const std::source_location& w);
Tensor reduce(Op op, const Tensor& x, std::vector<int64_t> axes, bool keepdim,
              const std::source_location& w);
Tensor scatter_add(const Tensor& src, const Tensor& indices, int64_t axis, const Shape& target,
                   const std::source_location& w);

}  // namespace tc::detail
