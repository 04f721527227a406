// Double-precision reference implementations for the op table test.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

namespace ref {

using Shape = std::vector<int64_t>;

struct Arr {
  Shape s;
  std::vector<double> v;
};

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
inline std::vector<int64_t> strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}
// Multi-index of linear index i in shape s.
inline std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = s[d] ? i % s[d] : 0;
    i = s[d] ? i / s[d] : 0;
  }
  return idx;
}
inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t o = 0;
  for (std::size_t d = 0; d < s.size(); ++d) o = o * s[d] + idx[d];
  return o;
}
inline Shape bshape(const Shape& a, const Shape& b) {
  std::size_t r = std::max(a.size(), b.size());
  Shape o(r);
  for (std::size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    o[i] = da == 1 ? db : da;
  }
  return o;
}
// Value of `a` at output index `idx` under broadcasting.
inline double at(const Arr& a, const std::vector<int64_t>& idx) {
  std::size_t lead = idx.size() - a.s.size();
  int64_t o = 0;
  for (std::size_t d = 0; d < a.s.size(); ++d) o = o * a.s[d] + (a.s[d] == 1 ? 0 : idx[lead + d]);
  return a.v[o];
}
inline Arr map(const Arr& a, const std::function<double(double)>& f) {
  Arr o = a;
  for (auto& x : o.v) x = f(x);
  return o;
}
inline Arr zip(const Arr& a, const Arr& b, const std::function<double(double, double)>& f) {
  Arr o{bshape(a.s, b.s), {}};
  o.v.resize(numel(o.s));
  for (int64_t i = 0; i < numel(o.s); ++i) {
    auto idx = unravel(i, o.s);
    o.v[i] = f(at(a, idx), at(b, idx));
  }
  return o;
}
inline Arr zip3(const Arr& a, const Arr& b, const Arr& c,
                const std::function<double(double, double, double)>& f) {
  Arr o{bshape(bshape(a.s, b.s), c.s), {}};
  o.v.resize(numel(o.s));
  for (int64_t i = 0; i < numel(o.s); ++i) {
    auto idx = unravel(i, o.s);
    o.v[i] = f(at(a, idx), at(b, idx), at(c, idx));
  }
  return o;
}
inline Arr reduce(const Arr& a, std::vector<int64_t> axes, bool keepdim, bool is_max) {
  int64_t r = static_cast<int64_t>(a.s.size());
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  for (auto& x : axes) x = x < 0 ? x + r : x;
  Shape keep = a.s;
  for (auto x : axes) keep[x] = 1;
  Arr o{keep, std::vector<double>(numel(keep), is_max ? -INFINITY : 0.0)};
  for (int64_t i = 0; i < numel(a.s); ++i) {
    auto idx = unravel(i, a.s);
    for (auto x : axes) idx[x] = 0;
    double& t = o.v[ravel(idx, keep)];
    t = is_max ? std::max(t, a.v[i]) : t + a.v[i];
  }
  if (!keepdim) {
    Shape s;
    for (int64_t i = 0; i < r; ++i)
      if (std::find(axes.begin(), axes.end(), i) == axes.end()) s.push_back(a.s[i]);
    o.s = s;
  }
  return o;
}
inline Arr matmul(const Arr& a, const Arr& b) {
  int64_t M = a.s[a.s.size() - 2], K = a.s.back(), N = b.s.back();
  Shape ba(a.s.begin(), a.s.end() - 2), bb(b.s.begin(), b.s.end() - 2);
  Shape batch = bshape(ba, bb);
  Shape os = batch;
  os.push_back(M);
  os.push_back(N);
  Arr o{os, std::vector<double>(numel(os), 0)};
  for (int64_t bi = 0; bi < numel(batch); ++bi) {
    auto idx = unravel(bi, batch);
    auto off = [&](const Shape& bs) {
      std::size_t lead = idx.size() - bs.size();
      int64_t x = 0;
      for (std::size_t d = 0; d < bs.size(); ++d) x = x * bs[d] + (bs[d] == 1 ? 0 : idx[lead + d]);
      return x;
    };
    int64_t oa = off(ba) * M * K, ob = off(bb) * K * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += a.v[oa + m * K + k] * b.v[ob + k * N + n];
        o.v[bi * M * N + m * N + n] = s;
      }
  }
  return o;
}
inline Arr permute(const Arr& a, const std::vector<int64_t>& perm) {
  Shape os;
  for (auto p : perm) os.push_back(a.s[p]);
  Arr o{os, std::vector<double>(numel(os))};
  for (int64_t i = 0; i < numel(os); ++i) {
    auto idx = unravel(i, os);
    std::vector<int64_t> src(a.s.size());
    for (std::size_t d = 0; d < perm.size(); ++d) src[perm[d]] = idx[d];
    o.v[i] = a.v[ravel(src, a.s)];
  }
  return o;
}
inline Arr softmax(const Arr& a, bool log_space) {
  Arr o = a;
  int64_t C = a.s.back(), rows = numel(a.s) / C;
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, z = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, a.v[r * C + c]);
    for (int64_t c = 0; c < C; ++c) z += std::exp(a.v[r * C + c] - m);
    for (int64_t c = 0; c < C; ++c)
      o.v[r * C + c] = log_space ? a.v[r * C + c] - m - std::log(z) : std::exp(a.v[r * C + c] - m) / z;
  }
  return o;
}

}  // namespace ref
