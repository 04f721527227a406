// One row per op: forward against a double-precision reference, gradients
// against central finite differences of that reference (in double), run by
// the eager executor (OpTable), and on every backend (OpTableOnBackend:
// "eager", then each compiled backend with every row's forward value and
// gradients in one graph, one compilation, compared with the eager results
// and the reference). Adding an op is one more row in kRows; adding a
// backend is one more value of OpTableOnBackend.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <tc/tc.h>

#include "random.h"  // compiler/src: the counter-based RNG, for random ops' references
#include "backend/backend.h"  // compiler/src: the backends the table runs on
#include "events.h"  // compiler/src: counts compilations
#include "ref.h"

namespace {

using Arr = ref::Arr;
using T = tc::Tensor;
using Ts = std::vector<tc::Tensor>;
using As = std::vector<Arr>;

struct In {
  tc::Shape shape;
  tc::DType dtype = tc::f32;
  double lo = -1, hi = 1;  // value range (i32/b8: integers in [lo, hi])
};

struct Row {
  const char* name;
  std::vector<In> ins;
  std::function<T(const Ts&)> build;
  std::function<Arr(const As&)> reference;
  double fwd_tol = 1e-5;   // |got - want| <= tol * (1 + |want|)
  double grad_tol = 2e-3;  // same, gradient vs finite differences; < 0: no gradient
};

Arr E(const Arr& a, double (*f)(double)) { return ref::map(a, [f](double x) { return f(x); }); }

double gelu_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// Multi-head self-attention over packed qkv [B, T, 3D] (tc::self_attention):
// padded keys (mask[b, j] != 0) score -1e9, as masked_fill would.
Arr attention_ref(const Arr& x, const Arr* mask, int64_t H) {
  const int64_t B = x.s[0], T = x.s[1], D = x.s[2] / 3, Dh = D / H;
  const double scale = 1 / std::sqrt(double(Dh));
  Arr o{{B, T, D}, std::vector<double>(static_cast<std::size_t>(B * T * D), 0)};
  auto at = [&](int64_t b, int64_t t, int64_t c) { return x.v[static_cast<std::size_t>((b * T + t) * 3 * D + c)]; };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        std::vector<double> s(static_cast<std::size_t>(T));
        double m = -1e300, sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          double d = 0;
          for (int64_t c = 0; c < Dh; ++c) d += at(b, i, h * Dh + c) * at(b, j, D + h * Dh + c);
          s[j] = mask && mask->v[static_cast<std::size_t>(b * T + j)] != 0 ? -1e9 : d * scale;
          m = std::max(m, s[j]);
        }
        for (auto& e : s) sum += e = std::exp(e - m);
        for (int64_t c = 0; c < Dh; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += s[j] / sum * at(b, j, 2 * D + h * Dh + c);
          o.v[static_cast<std::size_t>((b * T + i) * D + h * Dh + c)] = acc;
        }
      }
  return o;
}

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
      {"add", {{{2, 3}}, {{3}}}, [](const Ts& x) { return x[0] + x[1]; },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return p + q; }); }},
      {"sub", {{{2, 1, 3}}, {{4, 1}}}, [](const Ts& x) { return x[0] - x[1]; },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return p - q; }); }},
      {"mul", {{{3, 4}}, {{3, 1}}}, [](const Ts& x) { return x[0] * x[1]; },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return p * q; }); }},
      {"div", {{{2, 3}}, {{2, 3}, tc::f32, 0.5, 2}}, [](const Ts& x) { return x[0] / x[1]; },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return p / q; }); }},
      {"scalar_ops", {{{2, 3}}}, [](const Ts& x) { return 1.0 - (x[0] * 2.5 + 1) / 4 * x[0]; },
       [](const As& a) { return ref::map(a[0], [](double p) { return 1 - (p * 2.5 + 1) / 4 * p; }); }},
      {"neg", {{{5}}}, [](const Ts& x) { return -x[0]; },
       [](const As& a) { return ref::map(a[0], [](double p) { return -p; }); }},
      {"pow_scalar", {{{2, 3}, tc::f32, 0.5, 2}}, [](const Ts& x) { return tc::pow(x[0], 3.0); },
       [](const As& a) { return ref::map(a[0], [](double p) { return p * p * p; }); }, 1e-5, 3e-3},
      {"pow", {{{2, 3}, tc::f32, 0.5, 2}, {{3}, tc::f32, -1, 2}},
       [](const Ts& x) { return tc::pow(x[0], x[1]); },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return std::pow(p, q); }); }},
      {"maximum", {{{3, 4}}, {{4}}}, [](const Ts& x) { return tc::maximum(x[0], x[1]); },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return std::max(p, q); }); }},
      {"minimum", {{{3, 4}}, {{3, 4}}}, [](const Ts& x) { return tc::minimum(x[0], x[1]); },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return std::min(p, q); }); }},
      {"relu", {{{4, 5}}}, [](const Ts& x) { return tc::relu(x[0]); },
       [](const As& a) { return ref::map(a[0], [](double p) { return p > 0 ? p : 0; }); }},
      {"gelu", {{{4, 5}, tc::f32, -3, 3}}, [](const Ts& x) { return tc::gelu(x[0]); },
       [](const As& a) { return E(a[0], gelu_ref); }},
      {"tanh", {{{4, 5}, tc::f32, -2, 2}}, [](const Ts& x) { return tc::tanh(x[0]); },
       [](const As& a) { return E(a[0], std::tanh); }},
      {"sigmoid", {{{4, 5}, tc::f32, -4, 4}}, [](const Ts& x) { return tc::sigmoid(x[0]); },
       [](const As& a) { return ref::map(a[0], [](double p) { return 1 / (1 + std::exp(-p)); }); }},
      {"exp", {{{4, 5}, tc::f32, -2, 2}}, [](const Ts& x) { return tc::exp(x[0]); },
       [](const As& a) { return E(a[0], std::exp); }},
      {"log", {{{4, 5}, tc::f32, 0.5, 3}}, [](const Ts& x) { return tc::log(x[0]); },
       [](const As& a) { return E(a[0], std::log); }},
      {"sqrt", {{{4, 5}, tc::f32, 0.5, 3}}, [](const Ts& x) { return tc::sqrt(x[0]); },
       [](const As& a) { return E(a[0], std::sqrt); }},
      {"rsqrt", {{{4, 5}, tc::f32, 0.5, 3}}, [](const Ts& x) { return tc::rsqrt(x[0]); },
       [](const As& a) { return ref::map(a[0], [](double p) { return 1 / std::sqrt(p); }); }},
      {"abs", {{{4, 5}}}, [](const Ts& x) { return tc::abs(x[0]); },
       [](const As& a) { return E(a[0], std::fabs); }},
      {"square", {{{4, 5}}}, [](const Ts& x) { return tc::square(x[0]); },
       [](const As& a) { return ref::map(a[0], [](double p) { return p * p; }); }},
      {"lt", {{{3, 4}}, {{4}}}, [](const Ts& x) { return x[0] < x[1]; },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return double(p < q); }); }, 0, -1},
      {"ge", {{{3, 4}}, {{3, 1}}}, [](const Ts& x) { return x[0] >= x[1]; },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return double(p >= q); }); }, 0, -1},
      {"gt", {{{3, 4}}, {{4}}}, [](const Ts& x) { return x[0] > x[1]; },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return double(p > q); }); }, 0, -1},
      {"le_scalar", {{{3, 4}}}, [](const Ts& x) { return x[0] <= 0.25; },
       [](const As& a) { return ref::map(a[0], [](double p) { return double(p <= 0.25f); }); }, 0, -1},
      {"eq_i32", {{{6}, tc::i32, 0, 2}, {{6}, tc::i32, 0, 2}}, [](const Ts& x) { return tc::eq(x[0], x[1]); },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return double(p == q); }); }, 0, -1},
      {"ne_i32", {{{6}, tc::i32, 0, 2}, {{6}, tc::i32, 0, 2}}, [](const Ts& x) { return tc::ne(x[0], x[1]); },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double q) { return double(p != q); }); }, 0, -1},
      {"logical_not", {{{7}, tc::b8, 0, 1}}, [](const Ts& x) { return tc::logical_not(x[0]); },
       [](const As& a) { return ref::map(a[0], [](double p) { return double(p == 0); }); }, 0, -1},
      {"where", {{{3, 4}, tc::b8, 0, 1}, {{3, 4}}, {{4}}},
       [](const Ts& x) { return tc::where(x[0], x[1], x[2]); },
       [](const As& a) { return ref::zip3(a[0], a[1], a[2], [](double c, double p, double q) { return c ? p : q; }); }},
      {"masked_fill", {{{3, 4}}, {{1, 4}, tc::b8, 0, 1}},
       [](const Ts& x) { return tc::masked_fill(x[0], x[1], -7.0); },
       [](const As& a) { return ref::zip(a[0], a[1], [](double p, double m) { return m ? -7.0 : p; }); }},
      {"sum_axis_keepdim", {{{2, 3, 4}}}, [](const Ts& x) { return tc::sum(x[0], {1}, true); },
       [](const As& a) { return ref::reduce(a[0], {1}, true, false); }},
      {"sum_all", {{{2, 3, 4}}}, [](const Ts& x) { return tc::sum(x[0]); },
       [](const As& a) { return ref::reduce(a[0], {}, false, false); }},
      {"sum_i32", {{{2, 3}, tc::i32, -5, 5}}, [](const Ts& x) { return tc::sum(x[0], {0}); },
       [](const As& a) { return ref::reduce(a[0], {0}, false, false); }, 0, -1},
      {"mean_axes", {{{2, 3, 4}}}, [](const Ts& x) { return tc::mean(x[0], {0, -1}); },
       [](const As& a) {
         Arr s = ref::reduce(a[0], {0, 2}, false, false);
         return ref::map(s, [](double p) { return p / 8; });
       }},
      // Column reductions (rows reduced, the last axis kept): the compiled
      // path accumulates blocks of 256 columns; 260 leave a partial block.
      {"sum_rows", {{{3, 260}}}, [](const Ts& x) { return tc::sum(x[0], {0}); },
       [](const As& a) { return ref::reduce(a[0], {0}, false, false); }},
      // Whole blocks (a block width known when the kernel is compiled): 256
      // columns in one block; 128 columns in blocks of 64 on the pool (the
      // bias gradient's shape; no finite differences over 32768 inputs).
      {"sum_rows_whole_block", {{{4, 256}}}, [](const Ts& x) { return tc::sum(x[0], {0}); },
       [](const As& a) { return ref::reduce(a[0], {0}, false, false); }},
      {"sum_rows_parallel_blocks", {{{256, 128}}}, [](const Ts& x) { return tc::sum(x[0], {0}); },
       [](const As& a) { return ref::reduce(a[0], {0}, false, false); }, 1e-5, -1},
      {"max_rows_keepdim", {{{9, 70}}}, [](const Ts& x) { return tc::max(x[0], {0}, true); },
       [](const As& a) { return ref::reduce(a[0], {0}, true, true); }},
      {"mean_leading", {{{5, 3, 130}}}, [](const Ts& x) { return tc::mean(x[0], {0, 1}); },
       [](const As& a) {
         Arr s = ref::reduce(a[0], {0, 1}, false, false);
         return ref::map(s, [](double p) { return p / 15; });
       }},
      {"max_axis", {{{3, 5}}}, [](const Ts& x) { return tc::max(x[0], {-1}); },
       [](const As& a) { return ref::reduce(a[0], {1}, false, true); }},
      {"max_all_keepdim", {{{3, 5}}}, [](const Ts& x) { return tc::max(x[0], {}, true); },
       [](const As& a) { return ref::reduce(a[0], {}, true, true); }},
      {"softmax", {{{3, 5}, tc::f32, -3, 3}}, [](const Ts& x) { return tc::softmax(x[0]); },
       [](const As& a) { return ref::softmax(a[0], false); }},
      {"log_softmax", {{{2, 2, 5}, tc::f32, -3, 3}}, [](const Ts& x) { return tc::log_softmax(x[0], -1); },
       [](const As& a) { return ref::softmax(a[0], true); }},
      {"matmul_2d", {{{3, 4}}, {{4, 5}}}, [](const Ts& x) { return tc::matmul(x[0], x[1]); },
       [](const As& a) { return ref::matmul(a[0], a[1]); }},
      {"matmul_batched", {{{2, 3, 4}}, {{2, 4, 2}}}, [](const Ts& x) { return tc::matmul(x[0], x[1]); },
       [](const As& a) { return ref::matmul(a[0], a[1]); }},
      {"matmul_broadcast", {{{2, 3, 4}}, {{4, 5}}}, [](const Ts& x) { return tc::matmul(x[0], x[1]); },
       [](const As& a) { return ref::matmul(a[0], a[1]); }},
      {"reshape", {{{2, 6}}}, [](const Ts& x) { return x[0].reshape({3, -1}) * x[0].reshape({3, 4}); },
       [](const As& a) {
         Arr o = ref::map(a[0], [](double p) { return p * p; });
         o.s = {3, 4};
         return o;
       }},
      {"unsqueeze", {{{3}}}, [](const Ts& x) { return tc::unsqueeze(x[0], 0) * 2.0; },
       [](const As& a) {
         Arr o = ref::map(a[0], [](double p) { return 2 * p; });
         o.s = {1, 3};
         return o;
       }},
      {"transpose", {{{2, 3, 4}}}, [](const Ts& x) { return tc::transpose(x[0], 0, 2); },
       [](const As& a) { return ref::permute(a[0], {2, 1, 0}); }},
      {"permute", {{{2, 3, 4}}}, [](const Ts& x) { return tc::permute(x[0], {1, 2, 0}); },
       [](const As& a) { return ref::permute(a[0], {1, 2, 0}); }},
      {"broadcast_to", {{{3, 1}}}, [](const Ts& x) { return tc::broadcast_to(x[0], {2, 3, 4}); },
       [](const As& a) { return ref::zip(a[0], Arr{{2, 3, 4}, std::vector<double>(24, 0)},
                                         [](double p, double) { return p; }); }},
      {"slice", {{{4, 5}}}, [](const Ts& x) { return tc::slice(x[0], 1, 1, 4); },
       [](const As& a) {
         Arr o{{4, 3}, {}};
         for (int i = 0; i < 4; ++i)
           for (int j = 1; j < 4; ++j) o.v.push_back(a[0].v[i * 5 + j]);
         return o;
       }},
      {"concat", {{{2, 3}}, {{2, 2}}}, [](const Ts& x) { return tc::concat({x[0], x[1]}, 1); },
       [](const As& a) {
         Arr o{{2, 5}, {}};
         for (int i = 0; i < 2; ++i) {
           for (int j = 0; j < 3; ++j) o.v.push_back(a[0].v[i * 3 + j]);
           for (int j = 0; j < 2; ++j) o.v.push_back(a[1].v[i * 2 + j]);
         }
         return o;
       }},
      {"gather_axis1", {{{2, 4, 3}}, {{5}, tc::i32, 0, 3}},
       [](const Ts& x) { return tc::gather(x[0], x[1], 1); },
       [](const As& a) {
         Arr o{{2, 5, 3}, {}};
         for (int i = 0; i < 2; ++i)
           for (int j = 0; j < 5; ++j)
             for (int k = 0; k < 3; ++k) o.v.push_back(a[0].v[(i * 4 + int(a[1].v[j])) * 3 + k]);
         return o;
       }},
      {"embedding", {{{5, 3}}, {{2, 3}, tc::i32, 0, 4}},
       [](const Ts& x) { return tc::embedding(x[0], x[1]); },
       [](const As& a) {
         Arr o{{2, 3, 3}, {}};
         for (double id : a[1].v)
           for (int k = 0; k < 3; ++k) o.v.push_back(a[0].v[int(id) * 3 + k]);
         return o;
       }},
      {"one_hot", {{{4}, tc::i32, -1, 3}}, [](const Ts& x) { return tc::one_hot(x[0], 3); },
       [](const As& a) {
         Arr o{{4, 3}, {}};
         for (double id : a[0].v)
           for (int k = 0; k < 3; ++k) o.v.push_back(int(id) == k);
         return o;
       }, 0, -1},
      {"cast_f32_i32", {{{6}, tc::f32, -3, 3}}, [](const Ts& x) { return tc::cast(x[0], tc::i32); },
       [](const As& a) { return E(a[0], std::trunc); }, 0, -1},
      {"cast_i32_f32", {{{6}, tc::i32, -3, 3}}, [](const Ts& x) { return tc::cast(x[0], tc::f32) * 0.5; },
       [](const As& a) { return ref::map(a[0], [](double p) { return p * 0.5; }); }, 1e-6, -1},
      {"dropout", {{{4, 8}}}, [](const Ts& x) { return tc::dropout(x[0], 0.25, 42); },
       [](const As& a) {
         Arr o = a[0];
         for (std::size_t i = 0; i < o.v.size(); ++i)
           o.v[i] = tc::detail::uniform01(42, i) >= 0.25 ? o.v[i] / 0.75 : 0.0;
         return o;
       }},
      {"randn_plus", {{{3, 4}}}, [](const Ts& x) { return x[0] + tc::randn({3, 4}, 7); },
       [](const As& a) {
         Arr o = a[0];
         for (std::size_t i = 0; i < o.v.size(); ++i) o.v[i] += tc::detail::normal01(7, i);
         return o;
       }},
      {"arange_full", {{{4}}}, [](const Ts& x) { return x[0] * tc::arange(4) + tc::full({4}, 0.5) - tc::ones({4}) + tc::zeros({1}); },
       [](const As& a) {
         Arr o = a[0];
         for (std::size_t i = 0; i < o.v.size(); ++i) o.v[i] = o.v[i] * double(i) - 0.5;
         return o;
       }},
      {"rand_times", {{{2, 5}}}, [](const Ts& x) { return x[0] * tc::rand({2, 5}, 3); },
       [](const As& a) {
         Arr o = a[0];
         for (std::size_t i = 0; i < o.v.size(); ++i) o.v[i] *= tc::detail::uniform01(3, i);
         return o;
       }},
      {"arange_range_i32", {{{3}, tc::i32, -2, 2}},
       [](const Ts& x) { return x[0] + tc::arange(2.0, 8.0, 2.0, tc::i32); },
       [](const As& a) {
         Arr o = a[0];
         for (std::size_t i = 0; i < o.v.size(); ++i) o.v[i] += 2.0 + 2.0 * double(i);
         return o;
       }, 0, -1},
      {"softmax_axis0", {{{4, 3}, tc::f32, -3, 3}}, [](const Ts& x) { return tc::softmax(x[0], 0); },
       [](const As& a) { return ref::permute(ref::softmax(ref::permute(a[0], {1, 0}), false), {1, 0}); }},
      {"cross_entropy_mask", {{{2, 3, 4}, tc::f32, -2, 2}, {{2, 3}, tc::i32, 0, 3}, {{2, 3}, tc::b8, 0, 1}},
       [](const Ts& x) { return tc::nn::cross_entropy(x[0], x[1], x[2]); },
       [](const As& a) {
         Arr l = ref::softmax(a[0], true);
         double s = 0, n = 0;
         for (int i = 0; i < 6; ++i)
           if (a[2].v[i]) s -= l.v[i * 4 + int(a[1].v[i])], n += 1;
         return Arr{{}, {s / std::max(n, 1.0)}};
       }},
      {"mse_loss", {{{3, 4}}, {{3, 4}}}, [](const Ts& x) { return tc::nn::mse_loss(x[0], x[1]); },
       [](const As& a) {
         double s = 0;
         for (std::size_t i = 0; i < a[0].v.size(); ++i) s += std::pow(a[0].v[i] - a[1].v[i], 2);
         return Arr{{}, {s / 12}};
       }},
      {"cross_entropy_ignore", {{{4, 5}, tc::f32, -2, 2}, {{4}, tc::i32, -1, 4}},
       [](const Ts& x) { return tc::nn::cross_entropy(x[0], x[1], -1); },
       [](const As& a) {
         Arr l = ref::softmax(a[0], true);
         double s = 0, n = 0;
         for (int i = 0; i < 4; ++i)
           if (a[1].v[i] >= 0) s -= l.v[i * 5 + int(a[1].v[i])], n += 1;
         return Arr{{}, {s / std::max(n, 1.0)}};
       }},
      {"layer_norm", {{{3, 6}}}, [](const Ts& x) { return tc::nn::LayerNorm(6).forward(x[0], tc::SourceLocation::current()); },
       [](const As& a) {
         Arr o = a[0];
         for (int r = 0; r < 3; ++r) {
           double m = 0, v = 0;
           for (int c = 0; c < 6; ++c) m += a[0].v[r * 6 + c] / 6;
           for (int c = 0; c < 6; ++c) v += std::pow(a[0].v[r * 6 + c] - m, 2) / 6;
           for (int c = 0; c < 6; ++c) o.v[r * 6 + c] = (a[0].v[r * 6 + c] - m) / std::sqrt(v + 1e-5);
         }
         return o;
       }, 1e-4, 5e-3},
      {"self_attention", {{{2, 5, 18}}}, [](const Ts& x) { return tc::self_attention(x[0], 2); },
       [](const As& a) { return attention_ref(a[0], nullptr, 2); }},
      {"self_attention_mask", {{{2, 6, 12}}, {{2, 6}, tc::b8, 0, 1}},
       [](const Ts& x) { return tc::self_attention(x[0], 1, x[1]); },
       [](const As& a) { return attention_ref(a[0], &a[1], 1); }},
      // gamma and beta as inputs (their gradients are the packed rows of layer_norm_grad); 70 rows
      // leave the compiled gradient's blocks of 64 a partial one.
      {"layer_norm_affine", {{{70, 10}, tc::f32, -2, 2}, {{10}}, {{10}}},
       [](const Ts& x) { return tc::layer_norm(x[0], x[1], x[2], 1e-3); },
       [](const As& a) {
         Arr o = a[0];
         for (int r = 0; r < 70; ++r) {
           double m = 0, v = 0;
           for (int c = 0; c < 10; ++c) m += a[0].v[r * 10 + c] / 10;
           for (int c = 0; c < 10; ++c) v += std::pow(a[0].v[r * 10 + c] - m, 2) / 10;
           for (int c = 0; c < 10; ++c)
             o.v[r * 10 + c] = (a[0].v[r * 10 + c] - m) / std::sqrt(v + 1e-3) * a[1].v[c] + a[2].v[c];
         }
         return o;
       }, 1e-4, 5e-3},
      {"layer_norm_3d", {{{2, 3, 12}}, {{12}}, {{12}}},
       [](const Ts& x) { return tc::layer_norm(x[0], x[1], x[2]) * x[0]; },
       [](const As& a) {
         Arr o = a[0];
         for (int r = 0; r < 6; ++r) {
           double m = 0, v = 0;
           for (int c = 0; c < 12; ++c) m += a[0].v[r * 12 + c] / 12;
           for (int c = 0; c < 12; ++c) v += std::pow(a[0].v[r * 12 + c] - m, 2) / 12;
           for (int c = 0; c < 12; ++c) {
             double x = a[0].v[r * 12 + c];
             o.v[r * 12 + c] = ((x - m) / std::sqrt(v + 1e-5) * a[1].v[c] + a[2].v[c]) * x;
           }
         }
         return o;
       }, 1e-4, 5e-3},
      // 70 queries: the compiled kernel's blocks of 64 leave a partial one.
      {"self_attention_blocks", {{{1, 70, 12}, tc::f32, -2, 2}, {{1, 70}, tc::b8, 0, 1}},
       [](const Ts& x) { return tc::self_attention(x[0], 2, x[1]); },
       [](const As& a) { return attention_ref(a[0], &a[1], 2); }},
      // 11 keys and heads of 11: the compiled gradient's row sums over the keys run in 8 lanes and a remainder of 3.
      {"self_attention_wide_heads", {{{2, 11, 66}}}, [](const Ts& x) { return tc::self_attention(x[0], 2); },
       [](const As& a) { return attention_ref(a[0], nullptr, 2); }},
  };
  return r;
}

// Inputs drawn from a seeded generator: f32 uniform in [lo, hi], integers in [lo, hi].
std::vector<Arr> make_inputs(const Row& row, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<Arr> out;
  for (const In& in : row.ins) {
    Arr a{in.shape, {}};
    for (int64_t i = 0; i < ref::numel(in.shape); ++i) {
      if (in.dtype == tc::f32) {
        // Round through float so the reference sees exactly what tc sees.
        a.v.push_back(static_cast<float>(std::uniform_real_distribution<double>(in.lo, in.hi)(gen)));
      } else {
        a.v.push_back(static_cast<double>(std::uniform_int_distribution<int>(int(in.lo), int(in.hi))(gen)));
      }
    }
    out.push_back(a);
  }
  return out;
}

Ts to_tensors(const Row& row, const std::vector<Arr>& xs) {
  Ts out;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const In& in = row.ins[k];
    if (in.dtype == tc::f32) {
      std::vector<float> v(xs[k].v.begin(), xs[k].v.end());
      out.push_back(tc::from_host(v, in.shape));
    } else {
      std::vector<int32_t> v(xs[k].v.begin(), xs[k].v.end());
      T t = tc::from_host(v, in.shape);
      out.push_back(in.dtype == tc::b8 ? tc::cast(t, tc::b8) : t);
    }
  }
  return out;
}

double weighted(const Arr& out, const std::vector<double>& w) {
  double s = 0;
  for (std::size_t i = 0; i < out.v.size(); ++i) s += out.v[i] * w[i];
  return s;
}

class OpTable : public ::testing::TestWithParam<std::tuple<std::size_t, bool>> {};

TEST_P(OpTable, ForwardAndGradient) {
  const auto [index, eager_mode] = GetParam();
  const Row& row = rows()[index];
  SCOPED_TRACE(row.name);
  struct EagerGuard {
    explicit EagerGuard(bool on) { tc::set_eager(on); }
    ~EagerGuard() { tc::set_eager(false); }
  } guard(eager_mode);
  auto xs = make_inputs(row, 1234 + index);
  Arr want = row.reference(xs);

  Ts ts = to_tensors(row, xs);
  T out = row.build(ts);
  ASSERT_EQ(out.shape(), want.s);
  std::vector<float> got = out.to_host();
  ASSERT_EQ(got.size(), want.v.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::fabs(got[i] - want.v[i]), row.fwd_tol * (1 + std::fabs(want.v[i])))
        << "forward element " << i << ": got " << got[i] << " want " << want.v[i];

  if (row.grad_tol >= 0) {
    // L = sum(out * w) for fixed random w; dL/dx from tc vs central differences of the reference.
    std::mt19937_64 gen(99 + index);
    std::vector<double> w(want.v.size());
    for (auto& x : w) x = std::uniform_real_distribution<double>(-1, 1)(gen);
    std::vector<float> wf(w.begin(), w.end());
    Ts fresh = to_tensors(row, xs);
    T loss = tc::sum(row.build(fresh) * tc::from_host(wf, want.s));
    Ts params;
    std::vector<std::size_t> which;
    for (std::size_t k = 0; k < fresh.size(); ++k)
      if (row.ins[k].dtype == tc::f32) params.push_back(fresh[k]), which.push_back(k);
    Ts grads = tc::grad(loss, params);
    tc::mark_step();
    for (std::size_t p = 0; p < params.size(); ++p) {
      std::vector<float> g = grads[p].to_host();
      std::size_t k = which[p];
      ASSERT_EQ(g.size(), xs[k].v.size());
      for (std::size_t i = 0; i < g.size(); ++i) {
        const double h = 1e-6;
        auto plus = xs, minus = xs;
        plus[k].v[i] += h;
        minus[k].v[i] -= h;
        double fd = (weighted(row.reference(plus), w) - weighted(row.reference(minus), w)) / (2 * h);
        EXPECT_LE(std::fabs(g[i] - fd), row.grad_tol * (1 + std::fabs(fd)))
            << "d/d input " << k << " element " << i << ": got " << g[i] << " want " << fd;
      }
    }
  }
}

std::string row_name(const ::testing::TestParamInfo<std::tuple<std::size_t, bool>>& info) {
  return std::string(rows()[std::get<0>(info.param)].name) + (std::get<1>(info.param) ? "_eager" : "_lazy");
}

// Eager rows; the compiled path runs all rows at once below (one compilation
// instead of one per row keeps the suite fast).
INSTANTIATE_TEST_SUITE_P(Ops, OpTable,
                         ::testing::Combine(::testing::Range<std::size_t>(0, rows().size()),
                                            ::testing::Values(true)),
                         row_name);

struct RowValues {
  std::vector<float> fwd;
  std::vector<std::vector<float>> grads;
};

// Every row's forward value and gradients (of sum(out * w)), built lazily and
// materialized by one mark_step(), or run eagerly.
std::vector<RowValues> all_rows(bool eager_mode) {
  tc::set_eager(eager_mode);
  std::vector<Ts> fwd(rows().size()), grads(rows().size());
  for (std::size_t index = 0; index < rows().size(); ++index) {
    const Row& row = rows()[index];
    auto xs = make_inputs(row, 1234 + index);
    Ts ts = to_tensors(row, xs);
    fwd[index] = {row.build(ts)};
    if (row.grad_tol < 0) continue;
    std::mt19937_64 gen(99 + index);
    std::vector<float> w(static_cast<std::size_t>(fwd[index][0].numel()));
    for (auto& x : w) x = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(gen));
    Ts params;
    for (std::size_t k = 0; k < ts.size(); ++k)
      if (row.ins[k].dtype == tc::f32) params.push_back(ts[k]);
    T loss = tc::sum(fwd[index][0] * tc::from_host(w, fwd[index][0].shape()));
    grads[index] = tc::grad(loss, params);
  }
  tc::mark_step();
  tc::set_eager(false);
  std::vector<RowValues> out(rows().size());
  for (std::size_t index = 0; index < rows().size(); ++index) {
    EXPECT_TRUE(fwd[index][0].is_materialized()) << rows()[index].name;
    out[index].fwd = fwd[index][0].to_host();
    for (auto& g : grads[index]) out[index].grads.push_back(g.to_host());
  }
  return out;
}

struct CountCompilations : tc::events::TestObserver {
  int n = 0;
  void compilation(const tc::events::CompilationRecord&) override { ++n; }
};

// Forward values against the reference (the row's tolerance) and gradients
// against finite differences of the reference; with `eager`, also against
// the eager executor's values (1e-5 forward, 1e-4 gradients, relative).
void check_rows(const std::vector<RowValues>& got, const std::vector<RowValues>* eager) {
  for (std::size_t index = 0; index < rows().size(); ++index) {
    const Row& row = rows()[index];
    SCOPED_TRACE(row.name);
    auto xs = make_inputs(row, 1234 + index);
    Arr want = row.reference(xs);
    const auto& c = got[index];
    ASSERT_EQ(c.fwd.size(), want.v.size());
    for (std::size_t i = 0; i < c.fwd.size(); ++i)
      EXPECT_LE(std::fabs(c.fwd[i] - want.v[i]), row.fwd_tol * (1 + std::fabs(want.v[i]))) << "forward " << i;
    if (eager) {
      const auto& e = (*eager)[index];
      ASSERT_EQ(c.fwd.size(), e.fwd.size());
      for (std::size_t i = 0; i < c.fwd.size(); ++i)
        EXPECT_LE(std::fabs(c.fwd[i] - e.fwd[i]), 1e-5 * (1 + std::fabs(e.fwd[i]))) << "forward vs eager " << i;
      ASSERT_EQ(c.grads.size(), e.grads.size());
      for (std::size_t p = 0; p < c.grads.size(); ++p) {
        ASSERT_EQ(c.grads[p].size(), e.grads[p].size());
        for (std::size_t i = 0; i < c.grads[p].size(); ++i)
          EXPECT_LE(std::fabs(c.grads[p][i] - e.grads[p][i]), 1e-4 * (1 + std::fabs(e.grads[p][i])))
              << "gradient " << p << " element " << i << ": got " << c.grads[p][i] << " eager " << e.grads[p][i];
      }
      continue;
    }
    if (row.grad_tol < 0) continue;
    // The gradients of sum(out * w), w as all_rows() draws it, against central differences.
    std::mt19937_64 gen(99 + index);
    std::vector<double> w(want.v.size());
    for (auto& x : w) x = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(gen));
    std::size_t p = 0;
    for (std::size_t k = 0; k < row.ins.size(); ++k) {
      if (row.ins[k].dtype != tc::f32) continue;
      ASSERT_LT(p, c.grads.size());
      ASSERT_EQ(c.grads[p].size(), xs[k].v.size());
      for (std::size_t i = 0; i < xs[k].v.size(); ++i) {
        const double h = 1e-6;
        auto plus = xs, minus = xs;
        plus[k].v[i] += h;
        minus[k].v[i] -= h;
        double fd = (weighted(row.reference(plus), w) - weighted(row.reference(minus), w)) / (2 * h);
        EXPECT_LE(std::fabs(c.grads[p][i] - fd), row.grad_tol * (1 + std::fabs(fd)))
            << "d/d input " << k << " element " << i << ": got " << c.grads[p][i] << " want " << fd;
      }
      ++p;
    }
  }
}

// Every row on every backend: "eager" is the reference executor (against the
// double reference and finite differences); a compiled backend runs every
// row's forward value and gradients in one graph, one compilation, against
// the reference and the eager executor. A new backend is one more value; one
// that cannot run here (no device) is skipped with the reason.
class OpTableOnBackend : public ::testing::TestWithParam<const char*> {};

TEST_P(OpTableOnBackend, EveryRowMatchesReference) {
  const std::string name = GetParam();
  auto eager = all_rows(true);
  if (name == "eager") {
    check_rows(eager, nullptr);
    return;
  }
  std::string why;
  tc::detail::Backend* b = tc::detail::find_backend(name, &why);
  if (!b) GTEST_SKIP() << "backend " << name << " cannot run here: " << why;
  std::vector<RowValues> compiled;
  CountCompilations count;
  {
    tc::detail::ScopedBackend use(*b);
    tc::events::set_test_observer(&count);
    compiled = all_rows(false);
    tc::events::set_test_observer(nullptr);
  }
  EXPECT_LE(count.n, 1);  // one graph for every row (0 when the disk or memory cache had it)
  check_rows(compiled, &eager);
  check_rows(compiled, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Backends, OpTableOnBackend, ::testing::Values("eager", "cpu", "cuda"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
