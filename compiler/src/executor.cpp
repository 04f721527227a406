// The eager reference executor: plain loops, BLAS for matmul.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "backend/backend.h"
#include "collective.h"
#include "compile.h"
#include "events.h"
#include "ir.h"
#include "random.h"

namespace tc::detail {
namespace {

using Strides = std::vector<int64_t>;

Strides strides_of(const Shape& s) {
  Strides st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i)
    st[static_cast<std::size_t>(i)] = st[static_cast<std::size_t>(i + 1)] * s[static_cast<std::size_t>(i + 1)];
  return st;
}

// Strides of `in` read as `out` under numpy broadcasting (0 on broadcast dims).
Strides bstrides(const Shape& in, const Shape& out) {
  Strides st(out.size(), 0), si = strides_of(in);
  std::size_t lead = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) st[lead + i] = in[i] == 1 ? 0 : si[i];
  return st;
}

// Calls f(out_index, offsets) for every element of `out` in row-major order,
// where offsets[k] is the element offset in operand k (strides st[k]).
template <std::size_t N, typename F>
void for_each(const Shape& out, const std::array<Strides, N>& st, F&& f) {
  int64_t total = numel(out);
  if (total == 0) return;
  std::array<int64_t, N> off{};
  if (out.empty()) {
    f(int64_t{0}, off);
    return;
  }
  std::size_t r = out.size();
  int64_t inner = out[r - 1];
  std::array<int64_t, N> ist;
  for (std::size_t k = 0; k < N; ++k) ist[k] = st[k][r - 1];
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < total; i += inner) {
    std::array<int64_t, N> o = off;
    for (int64_t j = 0; j < inner; ++j) {
      f(i + j, o);
      for (std::size_t k = 0; k < N; ++k) o[k] += ist[k];
    }
    for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d) {
      auto du = static_cast<std::size_t>(d);
      ++idx[du];
      for (std::size_t k = 0; k < N; ++k) off[k] += st[k][du];
      if (idx[du] < out[du]) break;
      for (std::size_t k = 0; k < N; ++k) off[k] -= st[k][du] * out[du];
      idx[du] = 0;
    }
  }
}

// Calls f(T*) with the element type of a dtype.
template <typename F>
void with_type(DType d, F&& f) {
  switch (d) {
    case DType::f32: f(static_cast<float*>(nullptr)); break;
    case DType::i32: f(static_cast<int32_t*>(nullptr)); break;
    case DType::b8: f(static_cast<uint8_t*>(nullptr)); break;
  }
}

template <typename T>
T* out_data(Node& n) { return n.data->as<T>(); }
template <typename T>
const T* in_data(const Node& n, std::size_t i) { return n.inputs[i]->data->as<T>(); }

void unary(Node& n) {
  const Node& x = *n.inputs[0];
  int64_t count = n.numel();
  if (n.op == Op::Not) {
    const uint8_t* a = x.data->as<uint8_t>();
    uint8_t* o = n.data->as<uint8_t>();
    for (int64_t i = 0; i < count; ++i) o[i] = !a[i];
    return;
  }
  if (x.dtype == DType::i32) {
    const int32_t* a = x.data->as<int32_t>();
    int32_t* o = n.data->as<int32_t>();
    for (int64_t i = 0; i < count; ++i) o[i] = n.op == Op::Neg ? -a[i] : std::abs(a[i]);
    return;
  }
  const float* a = x.data->as<float>();
  float* o = n.data->as<float>();
  switch (n.op) {
    case Op::Neg: for (int64_t i = 0; i < count; ++i) o[i] = -a[i]; break;
    case Op::Relu: for (int64_t i = 0; i < count; ++i) o[i] = a[i] > 0 ? a[i] : 0.0f; break;
    case Op::Tanh: for (int64_t i = 0; i < count; ++i) o[i] = std::tanh(a[i]); break;
    case Op::Sigmoid: for (int64_t i = 0; i < count; ++i) o[i] = 1.0f / (1.0f + std::exp(-a[i])); break;
    case Op::Exp: for (int64_t i = 0; i < count; ++i) o[i] = std::exp(a[i]); break;
    case Op::Log: for (int64_t i = 0; i < count; ++i) o[i] = std::log(a[i]); break;
    case Op::Sqrt: for (int64_t i = 0; i < count; ++i) o[i] = std::sqrt(a[i]); break;
    case Op::Rsqrt: for (int64_t i = 0; i < count; ++i) o[i] = 1.0f / std::sqrt(a[i]); break;
    case Op::Abs: for (int64_t i = 0; i < count; ++i) o[i] = std::fabs(a[i]); break;
    default: throw Error("tc: internal: bad unary op");
  }
}

template <typename T>
void binary_typed(Node& n) {
  const Node &a = *n.inputs[0], &b = *n.inputs[1];
  std::array<Strides, 2> st{bstrides(a.shape, n.shape), bstrides(b.shape, n.shape)};
  const T* pa = a.data->as<T>();
  const T* pb = b.data->as<T>();
  auto run = [&](auto fn) {
    using R = decltype(fn(T{}, T{}));
    R* o = n.data->as<R>();
    for_each<2>(n.shape, st, [&](int64_t i, const std::array<int64_t, 2>& off) {
      o[i] = fn(pa[off[0]], pb[off[1]]);
    });
  };
  switch (n.op) {
    case Op::Add: run([](T x, T y) { return static_cast<T>(x + y); }); break;
    case Op::Sub: run([](T x, T y) { return static_cast<T>(x - y); }); break;
    case Op::Mul: run([](T x, T y) { return static_cast<T>(x * y); }); break;
    case Op::Div:
      if constexpr (std::is_integral_v<T>)
        run([](T x, T y) { return y == 0 ? T{0} : static_cast<T>(x / y); });
      else
        run([](T x, T y) { return x / y; });
      break;
    case Op::Pow: run([](T x, T y) { return static_cast<T>(std::pow(x, y)); }); break;
    case Op::Maximum: run([](T x, T y) { return x >= y ? x : y; }); break;
    case Op::Minimum: run([](T x, T y) { return x <= y ? x : y; }); break;
    case Op::Lt: run([](T x, T y) { return static_cast<uint8_t>(x < y); }); break;
    case Op::Le: run([](T x, T y) { return static_cast<uint8_t>(x <= y); }); break;
    case Op::Gt: run([](T x, T y) { return static_cast<uint8_t>(x > y); }); break;
    case Op::Ge: run([](T x, T y) { return static_cast<uint8_t>(x >= y); }); break;
    case Op::Eq: run([](T x, T y) { return static_cast<uint8_t>(x == y); }); break;
    case Op::Ne: run([](T x, T y) { return static_cast<uint8_t>(x != y); }); break;
    default: throw Error("tc: internal: bad binary op");
  }
}

void where_op(Node& n) {
  const Node &c = *n.inputs[0], &a = *n.inputs[1], &b = *n.inputs[2];
  std::array<Strides, 3> st{bstrides(c.shape, n.shape), bstrides(a.shape, n.shape),
                            bstrides(b.shape, n.shape)};
  const uint8_t* pc = c.data->as<uint8_t>();
  with_type(n.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* pa = a.data->as<T>();
    const T* pb = b.data->as<T>();
    T* o = n.data->as<T>();
    for_each<3>(n.shape, st, [&](int64_t i, const std::array<int64_t, 3>& off) {
      o[i] = pc[off[0]] ? pa[off[1]] : pb[off[2]];
    });
  });
}

void reduce_op(Node& n) {
  const Node& x = *n.inputs[0];
  // The output read with keepdim strides, 0 on reduced axes.
  Shape keep = x.shape;
  for (int64_t a : n.attrs.ints) keep[static_cast<std::size_t>(a)] = 1;
  Strides st = strides_of(keep);
  for (int64_t a : n.attrs.ints) st[static_cast<std::size_t>(a)] = 0;
  int64_t count = n.numel();
  bool is_max = n.op == Op::Max;
  with_type(n.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if constexpr (!std::is_same_v<T, uint8_t>) {
      const T* px = x.data->as<T>();
      std::vector<double> acc(static_cast<std::size_t>(count),
                              is_max ? -std::numeric_limits<double>::infinity() : 0.0);
      for_each<1>(x.shape, std::array<Strides, 1>{st}, [&](int64_t i, const std::array<int64_t, 1>& off) {
        double v = static_cast<double>(px[i]);
        double& a = acc[static_cast<std::size_t>(off[0])];
        if (is_max) a = v > a ? v : a;
        else a += v;
      });
      T* o = n.data->as<T>();
      for (int64_t i = 0; i < count; ++i) o[i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
    }
  });
}

void matmul_op(Node& n) {
  const Node &a = *n.inputs[0], &b = *n.inputs[1];
  int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  Shape batch(n.shape.begin(), n.shape.end() - 2);
  Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  std::array<Strides, 2> st{bstrides(ba, batch), bstrides(bb, batch)};
  const float* pa = a.data->as<float>();
  const float* pb = b.data->as<float>();
  float* o = n.data->as<float>();
  if (M == 0 || N == 0) return;
  if (K == 0) {
    std::fill(o, o + n.numel(), 0.0f);
    return;
  }
  for_each<2>(batch, st, [&](int64_t i, const std::array<int64_t, 2>& off) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), 1.0f, pa + off[0] * M * K, static_cast<int>(K),
                pb + off[1] * K * N, static_cast<int>(N), 0.0f, o + i * M * N, static_cast<int>(N));
  });
}

// Copies elements of input 0 to the output through strides (movement ops).
void strided_copy(Node& n, const Node& x, const Strides& st, int64_t base, const Shape& shape,
                  int64_t out_base, const Strides& out_st) {
  with_type(n.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* px = x.data->as<T>();
    T* o = n.data->as<T>();
    for_each<2>(shape, std::array<Strides, 2>{st, out_st},
                [&](int64_t, const std::array<int64_t, 2>& off) {
                  o[out_base + off[1]] = px[base + off[0]];
                });
  });
}

void gather_op(Node& n, bool scatter) {
  // gather: out[o, j, in] = x[o, idx[j], in]; scatter_add: out[o, idx[j], in] += src[o, j, in].
  const Node& src = *n.inputs[0];
  const Node& idx = *n.inputs[1];
  auto axis = static_cast<std::size_t>(n.attrs.ints[0]);
  const Shape& full = scatter ? n.shape : src.shape;
  int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= full[i];
  for (std::size_t i = axis + 1; i < full.size(); ++i) inner *= full[i];
  int64_t dim = full[axis], count = idx.numel();
  const int32_t* pi = idx.data->as<int32_t>();
  for (int64_t j = 0; j < count; ++j)
    if (pi[j] < 0 || pi[j] >= dim)
      throw Error("tc: gather index " + std::to_string(pi[j]) + " out of range [0, " +
                  std::to_string(dim) + ") (op created at " + n.where.file_name() + ":" +
                  std::to_string(n.where.line()) + ")");
  with_type(n.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* ps = src.data->as<T>();
    T* o = n.data->as<T>();
    if (scatter) std::fill(o, o + n.numel(), T{0});
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t j = 0; j < count; ++j) {
        int64_t k = pi[j];
        for (int64_t c = 0; c < inner; ++c) {
          if (scatter) o[(a * dim + k) * inner + c] += ps[(a * count + j) * inner + c];
          else o[(a * count + j) * inner + c] = ps[(a * dim + k) * inner + c];
        }
      }
  });
}

// Op::Attention / Op::AttentionGrad (tc::self_attention), per batch and head:
// S = scale Q K^T with padded keys set to -1e9, P = softmax over each row,
// O = P V; the gradient recomputes P, then dV = P^T dO, dP = dO V^T,
// dS = P (dP - rowsum(dO O)) (0 at padded keys), dQ = scale dS K,
// dK = scale dS^T Q. Q, K, V, dQ, dK, dV are [T, Dh] slices of [B, T, 3D]
// rows (leading dimension 3D), O and dO of [B, T, D] rows.
void attention_op(Node& n) {
  const bool grad = n.op == Op::AttentionGrad;
  const Node& x = *n.inputs[0];
  const std::size_t mask_at = grad ? 3 : 1;
  const uint8_t* mask = n.inputs.size() > mask_at ? n.inputs[mask_at]->data->as<uint8_t>() : nullptr;
  const int64_t B = x.shape[0], T = x.shape[1], D = x.shape[2] / 3, H = n.attrs.ints[0], Dh = D / H;
  const float scale = static_cast<float>(n.attrs.scalar);
  const float* qkv = x.data->as<float>();
  const float* o = grad ? n.inputs[1]->data->as<float>() : nullptr;
  const float* d_o = grad ? n.inputs[2]->data->as<float>() : nullptr;
  float* out = n.data->as<float>();
  if (n.numel() == 0) return;
  if (grad) std::fill(out, out + n.numel(), 0.0f);
  if (T == 0) return;
  const int t = static_cast<int>(T), dh = static_cast<int>(Dh), ld = static_cast<int>(3 * D), ldo = static_cast<int>(D);
  std::vector<float> p(static_cast<std::size_t>(T * T)), dp(grad ? p.size() : 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const float* q = qkv + b * T * 3 * D + h * Dh;
      const float* k = q + D;
      const float* v = q + 2 * D;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, dh, scale, q, ld, k, ld, 0.0f, p.data(), t);
      for (int64_t i = 0; i < T; ++i) {
        float* row = p.data() + i * T;
        if (mask)
          for (int64_t j = 0; j < T; ++j)
            if (mask[b * T + j]) row[j] = -1e9f;
        float m = row[0];
        for (int64_t j = 1; j < T; ++j) m = row[j] > m ? row[j] : m;
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) sum += row[j] = std::exp(row[j] - m);
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < T; ++j) row[j] *= inv;
      }
      if (!grad) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, dh, t, 1.0f, p.data(), t, v, ld, 0.0f,
                    out + b * T * D + h * Dh, ldo);
        continue;
      }
      const float* go = d_o + b * T * D + h * Dh;
      const float* oo = o + b * T * D + h * Dh;
      float* dq = out + b * T * 3 * D + h * Dh;
      float* dk = dq + D;
      float* dv = dq + 2 * D;
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, dh, t, 1.0f, p.data(), t, go, ldo, 0.0f, dv, ld);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, dh, 1.0f, go, ldo, v, ld, 0.0f, dp.data(), t);
      for (int64_t i = 0; i < T; ++i) {
        double di = 0;
        for (int64_t j = 0; j < Dh; ++j) di += static_cast<double>(go[i * D + j]) * oo[i * D + j];
        float* ds = dp.data() + i * T;
        const float* pr = p.data() + i * T;
        for (int64_t j = 0; j < T; ++j)
          ds[j] = mask && mask[b * T + j] ? 0.0f : pr[j] * (ds[j] - static_cast<float>(di));
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, dh, t, scale, dp.data(), t, k, ld, 0.0f, dq, ld);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, dh, t, scale, dp.data(), t, q, ld, 0.0f, dk, ld);
    }
}

// Op::LayerNorm / Op::LayerNormGrad (tc::layer_norm) over rows of D: mean
// and biased variance in double, rstd = 1 / sqrt(var + eps), xhat =
// (x - mean) rstd, y = xhat gamma + beta; the gradient recomputes them, then
// g = dy gamma, dx = rstd (g - mean(g) - xhat mean(g xhat)), and sums
// d gamma = dy xhat and d beta = dy over the rows, packed as rows R, R + 1.
void layer_norm_op(Node& n) {
  const bool grad = n.op == Op::LayerNormGrad;
  const Node& xn = *n.inputs[0];
  const int64_t D = xn.shape.back(), R = D == 0 ? 0 : xn.numel() / D;
  const float* x = xn.data->as<float>();
  const float* gamma = n.inputs[1]->data->as<float>();
  const float* other = n.inputs[2]->data->as<float>();  // beta, or dy for the gradient
  float* out = n.data->as<float>();
  const double eps = n.attrs.scalar;
  std::vector<double> dg(grad ? static_cast<std::size_t>(D) : 0, 0.0), db(dg.size(), 0.0);
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x + r * D;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < D; ++j) mean += xr[j];
    mean /= static_cast<double>(D);
    for (int64_t j = 0; j < D; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= static_cast<double>(D);
    const double rstd = 1.0 / std::sqrt(var + eps);
    if (!grad) {
      for (int64_t j = 0; j < D; ++j)
        out[r * D + j] = static_cast<float>((xr[j] - mean) * rstd * gamma[j] + other[j]);
      continue;
    }
    const float* dy = other + r * D;
    double mg = 0, mgx = 0;
    for (int64_t j = 0; j < D; ++j) {
      const double xh = (xr[j] - mean) * rstd, g = static_cast<double>(dy[j]) * gamma[j];
      mg += g;
      mgx += g * xh;
      dg[static_cast<std::size_t>(j)] += dy[j] * xh;
      db[static_cast<std::size_t>(j)] += dy[j];
    }
    mg /= static_cast<double>(D);
    mgx /= static_cast<double>(D);
    for (int64_t j = 0; j < D; ++j) {
      const double xh = (xr[j] - mean) * rstd, g = static_cast<double>(dy[j]) * gamma[j];
      out[r * D + j] = static_cast<float>(rstd * (g - mg - xh * mgx));
    }
  }
  if (grad)
    for (int64_t j = 0; j < D; ++j) {
      out[R * D + j] = static_cast<float>(dg[static_cast<std::size_t>(j)]);
      out[(R + 1) * D + j] = static_cast<float>(db[static_cast<std::size_t>(j)]);
    }
}

template <typename T>
T cast_value(double v) {
  if constexpr (std::is_same_v<T, uint8_t>) return v != 0 ? 1 : 0;
  else return static_cast<T>(v);
}

}  // namespace

void execute_node(Node& n) {
  n.data = allocate(n.numel() * dtype_size(n.dtype), n.category);
  switch (n.op) {
    case Op::Data: throw Error("tc: internal: executing a data node without data");
    case Op::Fill:
      with_type(n.dtype, [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        std::fill(n.data->as<T>(), n.data->as<T>() + n.numel(), cast_value<T>(n.attrs.scalar));
      });
      break;
    case Op::Random: {
      float* o = n.data->as<float>();
      bool normal = n.attrs.ints[0] == 0;
      uint64_t seed = n.attrs.seed;
      if (!n.inputs.empty()) {  // the seed is a device input (structure stays the same across steps)
        const int32_t* s = n.inputs[0]->data->as<int32_t>();
        seed = static_cast<uint64_t>(static_cast<uint32_t>(s[0])) | static_cast<uint64_t>(static_cast<uint32_t>(s[1])) << 32;
      }
      for (int64_t i = 0; i < n.numel(); ++i)
        o[i] = static_cast<float>(normal ? normal01(seed, static_cast<uint64_t>(i))
                                         : uniform01(seed, static_cast<uint64_t>(i)));
      break;
    }
    case Op::Arange:
      with_type(n.dtype, [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        for (int64_t i = 0; i < n.numel(); ++i)
          n.data->as<T>()[i] = cast_value<T>(n.attrs.scalar + static_cast<double>(i) * n.attrs.scalar2);
      });
      break;
    case Op::Neg: case Op::Relu: case Op::Tanh: case Op::Sigmoid: case Op::Exp: case Op::Log:
    case Op::Sqrt: case Op::Rsqrt: case Op::Abs: case Op::Not:
      unary(n);
      break;
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow: case Op::Maximum:
    case Op::Minimum: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: case Op::Eq: case Op::Ne:
      switch (n.inputs[0]->dtype) {
        case DType::f32: binary_typed<float>(n); break;
        case DType::i32: binary_typed<int32_t>(n); break;
        case DType::b8: binary_typed<uint8_t>(n); break;
      }
      break;
    case Op::Where: where_op(n); break;
    case Op::Sum: case Op::Max: reduce_op(n); break;
    case Op::MatMul: matmul_op(n); break;
    case Op::Reshape:
      std::memcpy(n.data->raw(), n.inputs[0]->data->raw(), static_cast<std::size_t>(n.data->bytes()));
      break;
    case Op::Permute: {
      const Node& x = *n.inputs[0];
      Strides sx = strides_of(x.shape), st(n.shape.size());
      for (std::size_t i = 0; i < st.size(); ++i) st[i] = sx[static_cast<std::size_t>(n.attrs.ints[i])];
      strided_copy(n, x, st, 0, n.shape, 0, strides_of(n.shape));
      break;
    }
    case Op::Broadcast:
      strided_copy(n, *n.inputs[0], bstrides(n.inputs[0]->shape, n.shape), 0, n.shape, 0,
                   strides_of(n.shape));
      break;
    case Op::Slice: {
      const Node& x = *n.inputs[0];
      Strides sx = strides_of(x.shape);
      int64_t base = n.attrs.ints[1] * sx[static_cast<std::size_t>(n.attrs.ints[0])];
      strided_copy(n, x, sx, base, n.shape, 0, strides_of(n.shape));
      break;
    }
    case Op::Concat: {
      auto axis = static_cast<std::size_t>(n.attrs.ints[0]);
      Strides so = strides_of(n.shape);
      int64_t at = 0;
      for (auto& in : n.inputs) {
        strided_copy(n, *in, strides_of(in->shape), 0, in->shape, at * so[axis], so);
        at += in->shape[axis];
      }
      break;
    }
    case Op::Gather: gather_op(n, false); break;
    case Op::ScatterAdd: gather_op(n, true); break;
    case Op::OneHot: {
      const Node& ids = *n.inputs[0];
      int64_t depth = n.attrs.ints[0];
      const int32_t* pi = ids.data->as<int32_t>();
      with_type(n.dtype, [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        T* o = n.data->as<T>();
        std::fill(o, o + n.numel(), T{0});
        for (int64_t i = 0; i < ids.numel(); ++i)
          if (pi[i] >= 0 && pi[i] < depth) o[i * depth + pi[i]] = T{1};
      });
      break;
    }
    case Op::Cast: {
      const Node& x = *n.inputs[0];
      with_type(x.dtype, [&](auto* itag) {
        using I = std::remove_pointer_t<decltype(itag)>;
        with_type(n.dtype, [&](auto* otag) {
          using O = std::remove_pointer_t<decltype(otag)>;
          const I* px = x.data->as<I>();
          O* o = n.data->as<O>();
          for (int64_t i = 0; i < n.numel(); ++i) o[i] = cast_value<O>(static_cast<double>(px[i]));
        });
      });
      break;
    }
    case Op::AllReduce: {
      // Packed in order, then the ranks' mean in place (collective.h).
      float* o = n.data->as<float>();
      int64_t at = 0;
      for (const auto& in : n.inputs) {
        if (in->numel() > 0) std::memcpy(o + at, in->data->as<float>(), static_cast<std::size_t>(in->numel()) * sizeof(float));
        at += in->numel();
      }
      all_reduce_mean_inplace(o, n.numel(), static_cast<int64_t>(n.inputs.size()), n.where);
      break;
    }
    case Op::Attention: case Op::AttentionGrad: attention_op(n); break;
    case Op::LayerNorm: case Op::LayerNormGrad: layer_norm_op(n); break;
    case Op::Count: throw Error("tc: internal: bad op");
  }
}

namespace {

// The eager executor's kernels: one per distinct op, call site and shapes on
// this thread, described once per recording session (the map is the
// thread's own: no lock; it grows once per distinct op).
int64_t eager_kernel(const Node& n) {
  struct Entry {
    int64_t id;
    uint32_t session;
  };
  thread_local std::unordered_map<uint64_t, Entry> known;
  uint64_t h = mix64(static_cast<uint64_t>(n.op) * 0x9e3779b97f4a7c15ULL ^ reinterpret_cast<uintptr_t>(n.where.file_name()));
  h = mix64(h ^ (static_cast<uint64_t>(n.where.line()) << 20 | n.where.column()) ^ static_cast<uint64_t>(n.dtype) << 56);
  auto add_shape = [&h](const Shape& s) {
    for (int64_t d : s) h = mix64(h ^ static_cast<uint64_t>(d));
    h = mix64(h ^ 0xabcdef);
  };
  add_shape(n.shape);
  for (const auto& in : n.inputs) add_shape(in->shape);
  uint32_t session = events::recording_session();
  auto [it, fresh] = known.try_emplace(h, Entry{0, 0});
  if (!fresh && it->second.session == session) return it->second.id;
  if (fresh) it->second.id = events::new_execution_id();  // ids unique in the run
  it->second.session = session;
  events::KernelRecord k;
  bool reduce = n.op == Op::Sum || n.op == Op::Max;
  k.kind = n.op == Op::MatMul         ? "matmul"
           : reduce                     ? "reduce"
           : n.op == Op::ScatterAdd     ? "scatter"
           : n.op == Op::AllReduce      ? "collective"
           : n.op == Op::Attention      ? "attention"
           : n.op == Op::AttentionGrad  ? "attention_grad"
           : n.op == Op::LayerNorm      ? "layer_norm"
           : n.op == Op::LayerNormGrad  ? "layer_norm_grad"
                                        : "elementwise";
  k.ops = op_name(n.op);
  for (int64_t d : n.shape) k.loop += (k.loop.empty() ? "" : "x") + std::to_string(d);
  k.sites = std::string(n.where.file_name()) + ":" + std::to_string(n.where.line());
  for (const auto& in : n.inputs) k.bytes_read += in->numel() * dtype_size(in->dtype);
  k.bytes_written = n.numel() * dtype_size(n.dtype);
  if (n.op == Op::MatMul) {
    const Shape& a = n.inputs[0]->shape;
    k.flops = 2 * n.numel() * a.back();
    k.loop += "x" + std::to_string(a.back());
  } else if (n.op == Op::Attention || n.op == Op::AttentionGrad) {
    k.flops = attention_flops(n.inputs[0]->shape, n.attrs.ints[0], n.op == Op::AttentionGrad);
  } else if (n.op == Op::LayerNorm || n.op == Op::LayerNormGrad) {
    k.flops = layer_norm_flops(n.inputs[0]->numel(), n.op == Op::LayerNormGrad);
  } else if (reduce) {
    k.flops = n.inputs[0]->numel();
  } else if (n.op >= Op::Neg && n.op <= Op::Where) {  // arithmetic; movement and constants do none
    k.flops = n.numel();
  }
  events::on_eager_kernel(it->second.id, k);
  return it->second.id;
}

}  // namespace

void execute_eager(const Graph& g, int64_t execution_id) {
  // The eager executor is the host reference: it reads and writes buffers directly.
  for (const Node* in : g.inputs)
    if (in->data && !in->data->host_memory())
      throw Error("tc: the eager executor (TC_EAGER=1, eager ops) needs host memory, and this tensor lives on the " +
                  std::string(backend().name()) + " device; unset TC_EAGER or use TC_DEVICE=cpu");
  std::unordered_map<Node*, int> uses;
  for (Node* n : g.nodes)
    for (auto& in : n->inputs)
      if (!in->realized()) ++uses[in.get()];
  std::unordered_map<Node*, bool> is_out;
  for (Node* o : g.outputs) is_out[o] = true;
  std::vector<Node*> done;
  try {
    const bool timed = events::timing_kernels();
    for (Node* n : g.nodes) {
      uint64_t t0 = timed ? events::clock_now() : 0;
      execute_node(*n);
      if (timed) events::on_eager_op_time(execution_id, eager_kernel(*n), t0, events::clock_now());
      done.push_back(n);
      for (auto& in : n->inputs) {
        auto it = uses.find(in.get());
        if (it == uses.end()) continue;  // a leaf of this cut
        if (--it->second == 0 && !is_out.count(in.get())) in->data.reset();
      }
    }
  } catch (...) {
    // Leave no half-executed graph behind: drop what this cut produced.
    for (Node* n : g.nodes) n->data.reset();
    throw;
  }
}

}  // namespace tc::detail
