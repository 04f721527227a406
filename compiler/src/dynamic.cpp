// Families of graphs over one symbolic size, and unifying the programs
// scheduled from them (dynamic.h).
#include "dynamic.h"

#include "ir.h"
#include "tc/error.h"

#include <cmath>
#include <memory>
#include <tuple>

namespace tc::detail {
namespace {

// v[k] = c0 + c1 s[k] (+ c2 s[k]^2 when degree 2) with integer coefficients,
// checked at every point.
bool fit_int(const std::vector<int64_t>& v, const std::vector<int64_t>& s, int degree, SymInt* out) {
  *out = SymInt{v[0], 0, 0};
  bool same = true;
  for (int64_t x : v) same = same && x == v[0];
  if (same) return true;
  const std::size_t need = static_cast<std::size_t>(degree) + 1;
  if (v.size() < need) return false;
  SymInt f;
  auto div = [](int64_t a, int64_t b, int64_t* q) {
    if (b == 0 || a % b != 0) return false;
    *q = a / b;
    return true;
  };
  int64_t d01 = 0;
  if (!div(v[1] - v[0], s[1] - s[0], &d01)) return false;
  if (degree >= 2) {
    int64_t d12 = 0;
    if (!div(v[2] - v[1], s[2] - s[1], &d12) || !div(d12 - d01, s[2] - s[0], &f.c2)) return false;
  }
  f.c1 = d01 - f.c2 * (s[0] + s[1]);
  f.c0 = v[0] - f.c1 * s[0] - f.c2 * s[0] * s[0];
  for (std::size_t k = 0; k < v.size(); ++k)
    if (f.at(s[k]) != v[k]) return false;
  *out = f;
  return true;
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

// v[k] as a constant, a polynomial of s, or the reciprocal of one (a
// mean's 1/n); `snap`: coefficients k/den with den <= 8 only (two points
// fit anything otherwise).
bool fit_real(const std::vector<double>& v, const std::vector<int64_t>& s, int degree, bool snap, SymReal* out) {
  *out = SymReal{SymReal::constant, v[0]};
  bool same = true;
  for (double x : v) same = same && (x == v[0] || (std::isnan(x) && std::isnan(v[0])));
  if (same) return true;
  if (v.size() < static_cast<std::size_t>(degree) + 1) return false;
  for (SymReal::Kind kind : {SymReal::reciprocal, SymReal::poly}) {
    std::vector<double> y(v.size());
    bool ok = true;
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (!std::isfinite(v[k]) || (kind == SymReal::reciprocal && v[k] == 0)) ok = false;
      else y[k] = kind == SymReal::reciprocal ? 1.0 / v[k] : v[k];
    }
    if (!ok) continue;
    auto x = [&](std::size_t k) { return static_cast<double>(s[k]); };
    SymReal f{kind};
    double d01 = (y[1] - y[0]) / (x(1) - x(0));
    if (degree >= 2) f.d2 = ((y[2] - y[1]) / (x(2) - x(1)) - d01) / (x(2) - x(0));
    f.d1 = d01 - f.d2 * (x(0) + x(1));
    f.d0 = y[0] - f.d1 * x(0) - f.d2 * x(0) * x(0);
    // Coefficients k/den (den <= 8) where they are that close: the code then
    // computes 1/n as the eager executor does.
    SymReal snapped = f;
    bool nice = false;
    for (int den = 1; den <= 8 && !nice; ++den) {
      double a = std::round(f.d0 * den), b = std::round(f.d1 * den), c = std::round(f.d2 * den);
      nice = std::fabs(a - f.d0 * den) < 1e-6 && std::fabs(b - f.d1 * den) < 1e-6 && std::fabs(c - f.d2 * den) < 1e-6;
      if (nice) snapped.d0 = a / den, snapped.d1 = b / den, snapped.d2 = c / den;
    }
    for (const SymReal& g : {snapped, f}) {
      if (snap && !nice) break;  // two points fit anything: only nice forms
      bool fits = true;
      for (std::size_t k = 0; k < v.size() && fits; ++k) fits = close(g.at(x(k)), v[k]);
      if (fits) {
        *out = g;
        return true;
      }
    }
  }
  return false;
}

bool is_shape_attr(Op op) { return op == Op::Slice || op == Op::Fill || op == Op::OneHot; }

}  // namespace

bool fit_family(const std::vector<const CGraph*>& graphs, const std::vector<int64_t>& sizes,
                const std::vector<std::pair<int, int>>& dims, Family* out, std::string* why) {
  const CGraph& g0 = *graphs[0];
  Family f;
  f.base = g0;
  f.dims = dims;
  f.nodes.resize(g0.nodes.size());
  for (std::size_t i = 0; i < g0.nodes.size(); ++i) {
    const CNode& n = g0.nodes[i];
    f.collectives = f.collectives || n.op == Op::AllReduce;
    Family::Fit& fit = f.nodes[i];
    for (const CGraph* g : graphs)
      if (g->nodes.size() != g0.nodes.size() || g->nodes[i].shape.size() != n.shape.size() ||
          g->nodes[i].attrs.ints.size() != n.attrs.ints.size()) {
        *why = "the graphs differ in structure";
        return false;
      }
    auto fail = [&](const char* what) {
      *why = std::string(what) + " of node " + std::to_string(i) + " (" + op_name(n.op) + ") is no affine form of the size";
      return false;
    };
    std::vector<int64_t> v(graphs.size());
    for (std::size_t d = 0; d < n.shape.size(); ++d) {
      for (std::size_t k = 0; k < graphs.size(); ++k) v[k] = graphs[k]->nodes[i].shape[d];
      fit.shape.emplace_back();
      if (!fit_int(v, sizes, 1, &fit.shape.back())) return fail("a dim");
    }
    for (std::size_t a = 0; a < n.attrs.ints.size(); ++a) {
      for (std::size_t k = 0; k < graphs.size(); ++k) v[k] = graphs[k]->nodes[i].attrs.ints[a];
      fit.ints.emplace_back();
      if (!fit_int(v, sizes, 1, &fit.ints.back()) || (fit.ints.back().symbolic() && !is_shape_attr(n.op)))
        return fail("an attribute");
    }
    std::vector<double> r(graphs.size()), r2(graphs.size());
    for (std::size_t k = 0; k < graphs.size(); ++k) r[k] = graphs[k]->nodes[i].attrs.scalar, r2[k] = graphs[k]->nodes[i].attrs.scalar2;
    if (!fit_real(r, sizes, 1, true, &fit.scalar) || !fit_real(r2, sizes, 1, true, &fit.scalar2)) return fail("a scalar");
    if ((fit.scalar.kind != SymReal::constant || fit.scalar2.kind != SymReal::constant) && n.op != Op::Fill)
      return fail("a scalar");
  }
  *out = std::move(f);
  return true;
}

bool Family::symbolic_input(int slot, int64_t dim) const {
  for (std::size_t i = 0; i < base.nodes.size(); ++i)
    if (base.nodes[i].input_slot == slot && dim >= 0 && static_cast<std::size_t>(dim) < nodes[i].shape.size())
      return nodes[i].shape[static_cast<std::size_t>(dim)].symbolic();
  return false;
}

CGraph instantiate(const Family& f, int64_t s) {
  CGraph g = f.base;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    CNode& n = g.nodes[i];
    const Family::Fit& fit = f.nodes[i];
    for (std::size_t d = 0; d < n.shape.size(); ++d) n.shape[d] = fit.shape[d].at(s);
    for (std::size_t a = 0; a < n.attrs.ints.size(); ++a) n.attrs.ints[a] = fit.ints[a].at(s);
    if (fit.scalar.kind != SymReal::constant) n.attrs.scalar = fit.scalar.at(static_cast<double>(s));
    if (fit.scalar2.kind != SymReal::constant) n.attrs.scalar2 = fit.scalar2.at(static_cast<double>(s));
  }
  return g;
}

int64_t family_size(const Family& f, const CGraph& g) {
  if (g.nodes.size() != f.nodes.size() || f.dims.empty()) return 0;
  int64_t s = 0;
  for (const CNode& n : g.nodes)
    if (n.input_slot == f.dims[0].first && static_cast<std::size_t>(f.dims[0].second) < n.shape.size())
      s = n.shape[static_cast<std::size_t>(f.dims[0].second)];
  if (s < 2) return 0;  // sizes 0 and 1 stay specialized (broadcasting)
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const CNode& n = g.nodes[i];
    const Family::Fit& fit = f.nodes[i];
    if (n.shape.size() != fit.shape.size() || n.attrs.ints.size() != fit.ints.size()) return 0;
    for (std::size_t d = 0; d < n.shape.size(); ++d)
      if (n.shape[d] != fit.shape[d].at(s) || (fit.shape[d].symbolic() && n.shape[d] < 1)) return 0;
    for (std::size_t a = 0; a < n.attrs.ints.size(); ++a)
      if (n.attrs.ints[a] != fit.ints[a].at(s)) return 0;
    const Family::Fit& b = fit;
    auto same = [&](const SymReal& r, double x, double base) {
      return r.kind == SymReal::constant ? (x == base || (std::isnan(x) && std::isnan(base))) : close(x, r.at(static_cast<double>(s)));
    };
    if (!same(b.scalar, n.attrs.scalar, f.base.nodes[i].attrs.scalar) || !same(b.scalar2, n.attrs.scalar2, f.base.nodes[i].attrs.scalar2))
      return 0;
  }
  return s;
}

namespace {

// Walks programs[0] against the others; every value that may depend on the
// size is fitted, everything else must be equal.
struct Unifier {
  std::vector<Program>& ps;
  const std::vector<int64_t>& s;
  std::string why;

  bool fail(const std::string& w) {
    if (why.empty()) why = w;
    return false;
  }
  template <class F>
  bool equal(F get, const char* what) {
    for (std::size_t k = 1; k < ps.size(); ++k)
      if (!(get(ps[k]) == get(ps[0]))) return fail(std::string("programs differ in ") + what);
    return true;
  }
  template <class F>
  bool ints(F get, SymInt* out, const char* what) {
    std::vector<int64_t> v;
    for (const Program& p : ps) v.push_back(get(p));
    return fit_int(v, s, 2, out) || fail(std::string(what) + " is no polynomial of the size");
  }
  template <class F>
  bool reals(F get, SymReal* out, const char* what) {
    std::vector<double> v;
    for (const Program& p : ps) v.push_back(get(p));
    return fit_real(v, s, 2, false, out) || fail(std::string(what) + " is no form of the size");
  }
  template <class F>
  bool int_vec(F get, std::vector<SymInt>* out, const char* what) {
    if (!equal([&](const Program& p) { return get(p).size(); }, what)) return false;
    out->resize(get(ps[0]).size());
    for (std::size_t i = 0; i < out->size(); ++i)
      if (!ints([&](const Program& p) { return get(p)[i]; }, &(*out)[i], what)) return false;
    return true;
  }

  bool expr(std::size_t k, std::size_t i, KernelSyms& ks) {
    auto e = [&](const Program& p) -> const KExpr& { return p.kernels[k].ex[i]; };
    const KExpr& e0 = e(ps[0]);
    for (std::size_t q = 1; q < ps.size(); ++q) {
      const KExpr& x = e(ps[q]);
      if (x.k != e0.k || x.dt != e0.dt || x.op != e0.op || x.a != e0.a || x.b != e0.b || x.c != e0.c || x.buf != e0.buf)
        return fail("kernel " + std::to_string(k) + " expressions differ");
    }
    if (e0.k == KOp::IConst || e0.k == KOp::Chk) return ints([&](const Program& p) { return e(p).i; }, &ks.ex_i[i], "an index constant");
    if (!equal([&](const Program& p) { return e(p).i; }, "an expression")) return false;
    if (e0.k == KOp::FConst) return reals([&](const Program& p) { return e(p).f; }, &ks.ex_f[i], "a constant");
    return equal([&](const Program& p) { return e(p).f; }, "an expression") &&
           equal([&](const Program& p) { return e(p).f2; }, "an expression");
  }

  bool kernel(std::size_t k) {
    auto K = [k](const Program& p) -> const Kernel& { return p.kernels[k]; };
    const Kernel& k0 = K(ps[0]);
    auto ks = std::make_shared<KernelSyms>();
    bool ok = equal([&](const Program& p) { return K(p).kind; }, "kernel kinds") &&
              equal([&](const Program& p) { return std::tie(K(p).root, K(p).out_buf, K(p).value, K(p).store, K(p).epilogue, K(p).index); }, "kernels") &&
              equal([&](const Program& p) { return std::tie(K(p).a_buf, K(p).b_buf, K(p).o_buf, K(p).do_buf, K(p).alpha_buf, K(p).product); }, "kernel operands") &&
              equal([&](const Program& p) { return std::tie(K(p).out_dtype, K(p).reduced, K(p).is_max, K(p).ta, K(p).tb, K(p).accumulate, K(p).backward); }, "kernel flags") &&
              equal([&](const Program& p) { return std::tie(K(p).pack, K(p).ordinal, K(p).reads); }, "kernel buffers") &&
              equal([&](const Program& p) { return K(p).ex.size(); }, "kernel expressions") &&
              int_vec([&](const Program& p) -> const std::vector<int64_t>& { return K(p).loop; }, &ks->loop, "a loop extent") &&
              int_vec([&](const Program& p) -> const std::vector<int64_t>& { return K(p).batch; }, &ks->batch, "a batch extent") &&
              int_vec([&](const Program& p) -> const std::vector<int64_t>& { return K(p).a_stride; }, &ks->a_stride, "a stride") &&
              int_vec([&](const Program& p) -> const std::vector<int64_t>& { return K(p).b_stride; }, &ks->b_stride, "a stride") &&
              ints([&](const Program& p) { return K(p).M; }, &ks->M, "M") && ints([&](const Program& p) { return K(p).N; }, &ks->N, "N") &&
              ints([&](const Program& p) { return K(p).K; }, &ks->K, "K") && ints([&](const Program& p) { return K(p).dim; }, &ks->dim, "a dim") &&
              reals([&](const Program& p) { return K(p).alpha_scale; }, &ks->alpha, "alpha");
    if (!ok) return false;
    if (k0.kind == Kernel::Collective) return fail("a collective in a dynamic program");
    ks->ex_i.resize(k0.ex.size());
    ks->ex_f.resize(k0.ex.size());
    for (std::size_t i = 0; i < k0.ex.size(); ++i)
      if (!expr(k, i, *ks)) return false;
    ps[0].kernels[k].sym = std::move(ks);
    return true;
  }

  bool run() {
    auto syms = std::make_shared<ProgramSyms>();
    Program& p0 = ps[0];
    bool ok = equal([](const Program& p) { return std::tie(p.num_inputs, p.num_outputs, p.output_buf, p.inplace_input); }, "buffers") &&
              equal([](const Program& p) { return p.kernels.size(); }, "kernel count") &&
              equal([](const Program& p) { return p.bufs.size(); }, "buffer count");
    for (std::size_t b = 0; ok && b < p0.bufs.size(); ++b) {
      auto B = [b](const Program& p) -> const BufDecl& { return p.bufs[b]; };
      ok = equal([&](const Program& p) { return std::tie(B(p).kind, B(p).slot, B(p).node, B(p).dtype); }, "buffers");
      syms->bytes.emplace_back();
      ok = ok && ints([&](const Program& p) { return B(p).bytes; }, &syms->bytes.back(), "a buffer's bytes");
    }
    for (std::size_t k = 0; ok && k < p0.kernels.size(); ++k) ok = kernel(k);
    if (!ok) return false;
    syms->table_slot = p0.num_inputs + p0.num_outputs + 1;
    syms->planned_s = s[0];
    p0.sym = std::move(syms);
    return true;
  }
};

}  // namespace

bool unify(std::vector<Program>& programs, const std::vector<int64_t>& sizes, std::string* why) {
  Unifier u{programs, sizes, {}};
  if (u.run()) return true;
  for (Kernel& k : programs[0].kernels) k.sym.reset();
  *why = u.why;
  return false;
}

int64_t bytes_at(const Program& p, int buf, int64_t s) {
  const BufDecl& b = p.bufs[static_cast<std::size_t>(buf)];
  if (!p.sym || b.bytes == 0) return b.bytes;  // 0: never allocated (taken in place, or fused away)
  return p.sym->bytes[static_cast<std::size_t>(buf)].at(s);
}

}  // namespace tc::detail

namespace tc {
namespace {
const Tensor& mark(const Tensor& t, int64_t dim, int8_t how) {
  detail::Node& n = detail::node_of(t);
  if (dim < 0) dim += static_cast<int64_t>(n.shape.size());
  if (dim < 0 || dim >= static_cast<int64_t>(n.shape.size()))
    throw Error("tc: mark_dynamic/mark_static: dim " + std::to_string(dim) + " is out of range for shape " + to_string(n.shape));
  n.dim_marks.resize(n.shape.size(), 0);
  n.dim_marks[static_cast<std::size_t>(dim)] = how;
  return t;
}
}  // namespace
const Tensor& mark_dynamic(const Tensor& t, int64_t dim) { return mark(t, dim, 1); }
const Tensor& mark_static(const Tensor& t, int64_t dim) { return mark(t, dim, -1); }
}  // namespace tc
