// Optimizing passes over the CGraph: a flat list of named rewrites.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <map>
#include <numeric>

#include "clock.h"
#include "compile.h"

namespace tc::detail {

bool is_elementwise(Op op) {
  return (op >= Op::Neg && op <= Op::Where) || op == Op::Cast;
}
bool is_attention(Op op) { return op == Op::Attention || op == Op::AttentionGrad; }
bool is_layer_norm(Op op) { return op == Op::LayerNorm || op == Op::LayerNormGrad; }

int buffer_base(const CGraph& g, int i) {
  for (;;) {
    const CNode& n = g.nodes[static_cast<std::size_t>(i)];
    if (n.materialize) return i;
    const bool prefix = n.op == Op::Slice && n.attrs.ints[0] == 0 && n.attrs.ints[1] == 0;
    if (n.op != Op::Reshape && !prefix) return -1;
    i = n.in[0];
  }
}

bool is_movement(Op op) {
  return op == Op::Reshape || op == Op::Broadcast || op == Op::Permute || op == Op::Slice;
}

int CGraph::live_nodes() const {
  int n = 0;
  for (auto& c : nodes) n += c.is_leaf() ? 0 : 1;
  return n;
}

namespace {

// ---- rewriting helpers --------------------------------------------------------

struct Rewriter {
  CGraph& g;
  std::vector<int> repl;
  explicit Rewriter(CGraph& graph) : g(graph), repl(graph.nodes.size()) {
    std::iota(repl.begin(), repl.end(), 0);
  }
  int find(int i) {
    while (repl[static_cast<std::size_t>(i)] != i) i = repl[static_cast<std::size_t>(i)];
    return i;
  }
  void refresh(CNode& n) {
    for (int& i : n.in) i = find(i);
  }
  void finish() {
    for (int& o : g.outputs) o = find(o);
  }
};

// The value a Fill node writes (Fill's scalar converted like the executors do).
double fill_value(const CNode& n) {
  switch (n.dtype) {
    case DType::f32: return static_cast<float>(n.attrs.scalar);
    case DType::i32: return static_cast<int32_t>(n.attrs.scalar);
    case DType::b8: return n.attrs.scalar != 0 ? 1 : 0;
  }
  return 0;
}

// Evaluates one elementwise op on constants with the executors' arithmetic.
bool eval_scalar(Op op, DType in_t, const std::vector<double>& v, double& out) {
  auto f32 = [](double x) { return static_cast<float>(x); };
  if (in_t == DType::f32) {
    float a = f32(v[0]), b = v.size() > 1 ? f32(v[1]) : 0.0f;
    switch (op) {
      case Op::Neg: out = -a; return true;
      case Op::Relu: out = a > 0 ? a : 0.0f; return true;
      case Op::Tanh: out = std::tanh(a); return true;
      case Op::Sigmoid: out = 1.0f / (1.0f + std::exp(-a)); return true;
      case Op::Exp: out = std::exp(a); return true;
      case Op::Log: out = std::log(a); return true;
      case Op::Sqrt: out = std::sqrt(a); return true;
      case Op::Rsqrt: out = 1.0f / std::sqrt(a); return true;
      case Op::Abs: out = std::fabs(a); return true;
      case Op::Add: out = a + b; return true;
      case Op::Sub: out = a - b; return true;
      case Op::Mul: out = a * b; return true;
      case Op::Div: out = a / b; return true;
      case Op::Pow: out = std::pow(a, b); return true;
      case Op::Maximum: out = a >= b ? a : b; return true;
      case Op::Minimum: out = a <= b ? a : b; return true;
      default: break;
    }
  }
  if (in_t == DType::i32) {
    auto a = static_cast<int32_t>(v[0]), b = v.size() > 1 ? static_cast<int32_t>(v[1]) : 0;
    switch (op) {
      case Op::Neg: out = -a; return true;
      case Op::Abs: out = std::abs(a); return true;
      case Op::Add: out = static_cast<int32_t>(a + b); return true;
      case Op::Sub: out = static_cast<int32_t>(a - b); return true;
      case Op::Mul: out = static_cast<int32_t>(a * b); return true;
      case Op::Div: out = b == 0 ? 0 : a / b; return true;
      case Op::Maximum: out = a >= b ? a : b; return true;
      case Op::Minimum: out = a <= b ? a : b; return true;
      default: break;
    }
  }
  if (v.size() == 2) {
    double a = v[0], b = v[1];
    switch (op) {
      case Op::Lt: out = a < b; return true;
      case Op::Le: out = a <= b; return true;
      case Op::Gt: out = a > b; return true;
      case Op::Ge: out = a >= b; return true;
      case Op::Eq: out = a == b; return true;
      case Op::Ne: out = a != b; return true;
      default: break;
    }
  }
  if (op == Op::Not) {
    out = v[0] == 0;
    return true;
  }
  return false;
}

void make_fill(CNode& n, double value) {
  n.op = Op::Fill;
  n.in.clear();
  n.attrs = {};
  n.attrs.scalar = value;
}

bool is_fill(const CGraph& g, int i, double value) {
  const CNode& n = g.nodes[static_cast<std::size_t>(i)];
  return n.op == Op::Fill && !n.is_leaf() && fill_value(n) == value;
}

// ---- the passes -----------------------------------------------------------------

// fold_constants: elementwise and movement ops of fills, reductions of fills.
void fold_constants(CGraph& g) {
  Rewriter rw(g);
  for (auto& n : g.nodes) {
    rw.refresh(n);
    if (n.is_leaf() || n.in.empty()) continue;
    bool all_fill = true;
    for (int i : n.in) all_fill = all_fill && g.nodes[static_cast<std::size_t>(i)].op == Op::Fill &&
                                  !g.nodes[static_cast<std::size_t>(i)].is_leaf();
    if (!all_fill) continue;
    const CNode& x = g.nodes[static_cast<std::size_t>(n.in[0])];
    double out = 0;
    if (is_movement(n.op)) {
      make_fill(n, fill_value(x));
    } else if (n.op == Op::Cast) {
      make_fill(n, fill_value(x));
    } else if (n.op == Op::Where) {
      const CNode& c = x;
      make_fill(n, fill_value(g.nodes[static_cast<std::size_t>(n.in[fill_value(c) != 0 ? 1 : 2])]));
    } else if (n.op == Op::Max) {
      make_fill(n, fill_value(x));
    } else if (n.op == Op::Sum && n.dtype == DType::f32) {
      double count = static_cast<double>(x.numel() / std::max<int64_t>(1, n.numel()));
      make_fill(n, static_cast<float>(fill_value(x) * count));
    } else if (is_elementwise(n.op)) {
      std::vector<double> v;
      for (int i : n.in) v.push_back(fill_value(g.nodes[static_cast<std::size_t>(i)]));
      if (eval_scalar(n.op, x.dtype, v, out)) make_fill(n, out);
    }
  }
  rw.finish();
}

// simplify: x*1, x/1, x+0, x-0, neg(neg x), identity reshapes/permutes/
// broadcasts/casts, reshape of reshape, permute of permute.
void simplify(CGraph& g) {
  Rewriter rw(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    CNode& n = g.nodes[i];
    rw.refresh(n);
    if (n.is_leaf()) continue;
    auto node = [&](int k) -> CNode& { return g.nodes[static_cast<std::size_t>(k)]; };
    auto same = [&](int k) { return node(k).shape == n.shape && node(k).dtype == n.dtype; };
    // x op unit is x, and so is unit op x when op commutes.
    auto with_unit = [&](double unit, bool commutes) {
      if (is_fill(g, n.in[1], unit) && same(n.in[0])) return n.in[0];
      if (commutes && is_fill(g, n.in[0], unit) && same(n.in[1])) return n.in[1];
      return -1;
    };
    int to = -1;
    switch (n.op) {
      case Op::Mul: to = with_unit(1, true); break;
      case Op::Div: to = with_unit(1, false); break;
      case Op::Add: to = with_unit(0, true); break;
      case Op::Sub: to = with_unit(0, false); break;
      case Op::Neg:
        if (node(n.in[0]).op == Op::Neg && !node(n.in[0]).is_leaf()) to = node(n.in[0]).in[0];
        break;
      case Op::Cast:
        if (same(n.in[0])) to = n.in[0];
        break;
      case Op::Broadcast:
        if (same(n.in[0])) to = n.in[0];
        break;
      case Op::Reshape:
        if (same(n.in[0])) to = n.in[0];
        else if (node(n.in[0]).op == Op::Reshape && !node(n.in[0]).is_leaf()) n.in[0] = node(n.in[0]).in[0];
        if (to < 0 && same(n.in[0])) to = n.in[0];
        break;
      case Op::Permute: {
        CNode& x = node(n.in[0]);
        // permute(permute(y, r), q) = permute(y, r[q[d]]).
        if (x.op == Op::Permute && !x.is_leaf()) {
          std::vector<int64_t> p(n.attrs.ints.size());
          for (std::size_t d = 0; d < p.size(); ++d)
            p[d] = x.attrs.ints[static_cast<std::size_t>(n.attrs.ints[d])];
          n.in[0] = x.in[0];
          n.attrs.ints = p;
        }
        bool identity = true;
        for (std::size_t d = 0; d < n.attrs.ints.size(); ++d)
          identity = identity && n.attrs.ints[d] == static_cast<int64_t>(d);
        if (identity) to = n.in[0];
        break;
      }
      default: break;
    }
    if (to >= 0) rw.repl[i] = rw.find(to);
  }
  rw.finish();
}

// cse: structurally equal nodes (op, dtype, shape, attrs, inputs) become one.
void cse(CGraph& g) {
  Rewriter rw(g);
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    CNode& n = g.nodes[i];
    rw.refresh(n);
    std::string key;
    auto put = [&](const void* p, std::size_t len) { key.append(static_cast<const char*>(p), len); };
    auto put64 = [&](int64_t v) { put(&v, sizeof v); };
    put64(static_cast<int64_t>(n.op));
    put64(static_cast<int64_t>(n.dtype));
    put64(n.input_slot);
    put64(static_cast<int64_t>(n.shape.size()));
    for (int64_t d : n.shape) put64(d);
    put64(static_cast<int64_t>(n.in.size()));
    for (int k : n.in) put64(k);
    put64(static_cast<int64_t>(n.attrs.ints.size()));
    for (int64_t v : n.attrs.ints) put64(v);
    put(&n.attrs.scalar, sizeof(double));
    put(&n.attrs.scalar2, sizeof(double));
    put64(static_cast<int64_t>(n.attrs.seed));
    put64(n.attrs.flag);
    auto [it, fresh] = seen.emplace(std::move(key), static_cast<int>(i));
    if (!fresh) rw.repl[i] = it->second;
  }
  rw.finish();
}

// dce: drops nodes no output needs; renumbers.
void dce(CGraph& g) {
  std::vector<bool> keep(g.nodes.size(), false);
  for (int o : g.outputs) keep[static_cast<std::size_t>(o)] = true;
  for (std::size_t i = g.nodes.size(); i-- > 0;)
    if (keep[i])
      for (int k : g.nodes[i].in) keep[static_cast<std::size_t>(k)] = true;
  std::vector<int> at(g.nodes.size(), -1);
  std::vector<CNode> out;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep[i] && !g.nodes[i].is_leaf()) continue;  // leaves stay: they are the input slots
    at[i] = static_cast<int>(out.size());
    out.push_back(std::move(g.nodes[i]));
    for (int& k : out.back().in) k = at[static_cast<std::size_t>(k)];
  }
  g.nodes = std::move(out);
  for (int& o : g.outputs) o = at[static_cast<std::size_t>(o)];
}

std::vector<std::vector<int>> consumers(const CGraph& g) {
  std::vector<std::vector<int>> users(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    for (int k : g.nodes[i].in) users[static_cast<std::size_t>(k)].push_back(static_cast<int>(i));
  return users;
}

bool reads_broadcast(const CNode& user, const CNode& x) {
  if (user.op == Op::Broadcast) return user.numel() > x.numel();
  if (is_elementwise(user.op)) return user.numel() > x.numel();
  return false;
}

// A reshape or prefix slice of an earlier node that has a buffer (buffer_base).
bool is_view_of_buffer(const CGraph& g, const CNode& n) {
  const bool prefix = n.op == Op::Slice && n.attrs.ints[0] == 0 && n.attrs.ints[1] == 0;
  return (n.op == Op::Reshape || prefix) && buffer_base(g, n.in[0]) >= 0;
}

// fuse_elementwise: decides which nodes get buffers. Everything else is
// inlined into its consumer's loop: elementwise chains fuse, and elementwise
// prologues fuse into reductions, matrix-product operands stay buffers.
void fuse_elementwise(CGraph& g) {
  auto users = consumers(g);
  std::vector<bool> is_out(g.nodes.size(), false);
  for (int o : g.outputs) is_out[static_cast<std::size_t>(o)] = true;
  std::vector<bool> cheap(g.nodes.size(), false);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    CNode& n = g.nodes[i];
    n.epilogue_of = -1;
    if (n.is_leaf()) {
      n.materialize = true;
      cheap[i] = true;
      continue;
    }
    // A collective packs whole buffers: it and each of its inputs get one.
    bool feeds_collective = false;
    for (int k : users[i]) feeds_collective = feeds_collective || g.nodes[static_cast<std::size_t>(k)].op == Op::AllReduce;
    // Attention and layer norm read whole buffers too; a reshape or prefix
    // slice of a buffer is read in place (buffer_base).
    bool feeds_attention = false;
    for (int k : users[i]) {
      Op u = g.nodes[static_cast<std::size_t>(k)].op;
      feeds_attention = feeds_attention || is_attention(u) || is_layer_norm(u);
    }
    bool m = is_out[i] || n.op == Op::MatMul || n.op == Op::Sum || n.op == Op::Max ||
             n.op == Op::ScatterAdd || n.op == Op::AllReduce || is_attention(n.op) || is_layer_norm(n.op) ||
             feeds_collective || (feeds_attention && !(is_view_of_buffer(g, n)));
    cheap[i] = n.op == Op::Fill || n.op == Op::Arange ||
               (is_movement(n.op) && cheap[static_cast<std::size_t>(n.in[0])]);
    if (!m && !cheap[i]) {
      const auto& u = users[i];
      if (u.size() > 1) m = true;
      for (int k : u) m = m || reads_broadcast(g.nodes[static_cast<std::size_t>(k)], n);
    }
    n.materialize = m;
    if (m) cheap[i] = true;  // a load is cheap
  }
}

// fold_transposes: a matmul operand that is a last-two-axes transpose of a
// buffer (through reshapes of it) is read in place with the BLAS trans flag.
void fold_transposes(CGraph& g) {
  auto contiguous_base = [&](int i) { return buffer_base(g, i); };
  for (auto& n : g.nodes) {
    if (n.op != Op::MatMul || n.is_leaf()) continue;
    for (int k = 0; k < 2; ++k) {
      int x = n.in[static_cast<std::size_t>(k)];
      CNode& xn = g.nodes[static_cast<std::size_t>(x)];
      n.mm_trans[k] = false;
      n.mm_base[k] = contiguous_base(x);
      if (n.mm_base[k] < 0 && xn.op == Op::Permute) {
        const auto& p = xn.attrs.ints;
        std::size_t r = p.size();
        bool swap = r >= 2 && p[r - 1] == static_cast<int64_t>(r - 2) && p[r - 2] == static_cast<int64_t>(r - 1);
        for (std::size_t d = 0; swap && d + 2 < r; ++d) swap = p[d] == static_cast<int64_t>(d);
        int base = swap ? contiguous_base(xn.in[0]) : -1;
        if (base >= 0) {
          n.mm_base[k] = base;
          n.mm_trans[k] = true;
        }
      }
      if (n.mm_base[k] < 0) {
        xn.materialize = true;
        n.mm_base[k] = x;
      }
    }
  }
}

// fuse_epilogues: a reduction whose only consumer chain is same-shape
// elementwise ops up to a buffer is computed inside that buffer's kernel.
void fuse_epilogues(CGraph& g) {
  auto users = consumers(g);
  std::vector<bool> is_out(g.nodes.size(), false);
  for (int o : g.outputs) is_out[static_cast<std::size_t>(o)] = true;
  for (std::size_t r = 0; r < g.nodes.size(); ++r) {
    CNode& red = g.nodes[r];
    if ((red.op != Op::Sum && red.op != Op::Max) || red.is_leaf() || is_out[r] || users[r].size() != 1)
      continue;
    int k = static_cast<int>(r);
    bool ok = true;
    int root = -1;
    for (int guard = 0; guard < 64 && ok; ++guard) {
      const auto& u = users[static_cast<std::size_t>(k)];
      if (u.size() != 1) { ok = false; break; }
      const CNode& c = g.nodes[static_cast<std::size_t>(u[0])];
      int uses_of_k = 0;
      for (int x : c.in) uses_of_k += x == k;
      if (!is_elementwise(c.op) || c.shape != red.shape || uses_of_k != 1) { ok = false; break; }
      if (c.materialize) { root = u[0]; break; }
      k = u[0];
    }
    if (!ok || root < 0) continue;
    CNode& rt = g.nodes[static_cast<std::size_t>(root)];
    if (rt.epilogue_of >= 0) continue;
    rt.epilogue_of = static_cast<int>(r);
    red.materialize = false;
  }
}

}  // namespace

void verify(const CGraph& g, const char* after) {
  auto fail = [&](std::size_t i, const std::string& what) {
    throw Error(std::string("tc: IR verifier after pass '") + after + "': node " + std::to_string(i) +
                " (" + op_name(g.nodes[i].op) + "): " + what);
  };
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const CNode& n = g.nodes[i];
    for (int k : n.in)
      if (k < 0 || static_cast<std::size_t>(k) >= i) fail(i, "input " + std::to_string(k) + " is not an earlier node");
    if (n.is_leaf()) {
      if (!n.in.empty()) fail(i, "a leaf with inputs");
      continue;
    }
    auto in = [&](std::size_t k) -> const CNode& { return g.nodes[static_cast<std::size_t>(n.in[k])]; };
    if (is_elementwise(n.op)) {
      Shape s;
      for (std::size_t k = 0; k < n.in.size(); ++k) {
        const Shape& a = in(k).shape;
        std::size_t r = std::max(s.size(), a.size());
        Shape o(r);
        for (std::size_t d = 0; d < r; ++d) {
          int64_t x = d < r - s.size() ? 1 : s[d - (r - s.size())];
          int64_t y = d < r - a.size() ? 1 : a[d - (r - a.size())];
          if (x != y && x != 1 && y != 1) fail(i, "inputs do not broadcast");
          o[d] = x == 1 ? y : x;
        }
        s = o;
      }
      if (s != n.shape) fail(i, "shape " + to_string(n.shape) + " is not the broadcast of its inputs " + to_string(s));
    }
    if (n.op == Op::Reshape && in(0).numel() != n.numel()) fail(i, "reshape changes the element count");
    if (n.op == Op::MatMul) {
      const Shape &a = in(0).shape, &b = in(1).shape;
      if (a.size() < 2 || b.size() < 2 || a.back() != b[b.size() - 2]) fail(i, "matmul inner dimensions differ");
    }
    if (n.op == Op::Fill && !n.in.empty()) fail(i, "a fill with inputs");
    if (is_attention(n.op)) {
      const Shape& x = in(0).shape;
      if (x.size() != 3 || n.attrs.ints.size() != 1 || n.attrs.ints[0] <= 0 || x[2] % (3 * n.attrs.ints[0]) != 0)
        fail(i, "attention's qkv is not [B, T, 3 * heads * Dh]");
      const Shape want = n.op == Op::Attention ? Shape{x[0], x[1], x[2] / 3} : x;
      if (n.shape != want) fail(i, "attention's shape is not its qkv's");
      for (std::size_t k = 0; n.materialize && k < n.in.size(); ++k)
        if (buffer_base(g, n.in[k]) < 0) fail(i, "an attention input has no buffer");
    }
    if (is_layer_norm(n.op)) {
      const Shape& x = in(0).shape;
      const int64_t D = x.empty() ? -1 : x.back();
      if (n.in.size() != 3 || in(1).shape != Shape{D} || (n.op == Op::LayerNorm && in(2).shape != Shape{D}) ||
          (n.op == Op::LayerNormGrad && in(2).shape != x))
        fail(i, "layer norm's operands are not x [..., D], gamma [D] and beta [D] or dy [..., D]");
      const Shape want = n.op == Op::LayerNorm ? x : Shape{(D == 0 ? 0 : in(0).numel() / D) + 2, D};
      if (n.shape != want) fail(i, "layer norm's shape is not its input's");
      for (std::size_t k = 0; n.materialize && k < n.in.size(); ++k)
        if (buffer_base(g, n.in[k]) < 0) fail(i, "a layer norm input has no buffer");
    }
    if (n.op == Op::AllReduce) {
      int64_t total = 0;
      for (std::size_t k = 0; k < n.in.size(); ++k) total += in(k).numel();
      if (n.shape != Shape{total} || n.dtype != DType::f32) fail(i, "a collective's value is not its f32 inputs packed flat");
      if (n.attrs.ints.size() != 1) fail(i, "a collective without its ordinal");
      for (std::size_t k = 0; n.materialize && k < n.in.size(); ++k)
        if (!in(k).materialize) fail(i, "a collective's input has no buffer");
    }
  }
  for (int o : g.outputs)
    if (o < 0 || static_cast<std::size_t>(o) >= g.nodes.size()) throw Error(std::string("tc: IR verifier after pass '") + after + "': output out of range");
}

namespace {
// TC_SKIP_PASSES=a,b: debugging aid; the optional passes named are skipped.
bool skipped(const char* name) {
  static const std::string skip = [] {
    const char* e = std::getenv("TC_SKIP_PASSES");
    return e ? "," + std::string(e) + "," : std::string();
  }();
  return skip.find("," + std::string(name) + ",") != std::string::npos;
}
}  // namespace

std::vector<PassInfo> run_passes(CGraph& g, bool check) {
  struct P {
    const char* name;
    void (*fn)(CGraph&);
    bool required;  // the schedule needs it; TC_SKIP_PASSES cannot skip it
  };
  static constexpr P kPasses[] = {
      {"fold_constants", fold_constants, false},    // constant subgraphs become fills
      {"simplify", simplify, false},                // algebraic identities
      {"cse", cse, false},                          // common subexpressions
      {"dce", dce, false},                          // unreachable nodes
      {"fuse_elementwise", fuse_elementwise, true}, // buffers vs inlined values
      {"fold_transposes", fold_transposes, true},   // transposes into BLAS trans flags
      {"fuse_epilogues", fuse_epilogues, false},    // elementwise epilogues into reductions
  };
  std::vector<PassInfo> out;
  if (check) verify(g, "lower");
  for (const P& p : kPasses) {
    if (!p.required && skipped(p.name)) continue;
    int64_t t0 = now_ns();
    p.fn(g);
    out.push_back({p.name, now_ns() - t0, g.live_nodes()});
    if (check) verify(g, p.name);
  }
  return out;
}

std::vector<PassInfo> run_kernel_passes(const CGraph& scheduled, Program& p, bool check) {
  struct P {
    const char* name;
    void (*fn)(const CGraph&, Program&);
  };
  static constexpr P kPasses[] = {
      {"fuse_gemm_updates", fuse_gemm_updates},  // W - s * (X^T G) becomes one sgemm accumulating into W
  };
  std::vector<PassInfo> out;
  if (check) verify_kernels(p, "schedule");
  for (const P& k : kPasses) {
    if (skipped(k.name)) continue;
    int64_t t0 = now_ns();
    k.fn(scheduled, p);
    // nodes_after: the kernel passes change kernels, not graph nodes.
    out.push_back({k.name, now_ns() - t0, scheduled.live_nodes()});
    if (check) verify_kernels(p, k.name);
  }
  return out;
}

}  // namespace tc::detail
