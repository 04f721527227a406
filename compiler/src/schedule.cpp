// Kernel IR construction (fused CGraph -> kernels), in-place updates, and
// the liveness-based arena planner.
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>

#include "compile.h"

namespace tc::detail {
namespace {

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

struct Builder {
  const CGraph& g;
  const std::vector<int>& buf_of;  // node -> buffer, -1 when inlined
  Kernel& k;
  int root;
  int acc_node = -1;  // the reduction an epilogue refers to
  int zero = -1;
  // Loads of each buffer, and whether every one of them reads the root's own index.
  std::map<int, bool> identity_loads;
  std::vector<int> root_idx;

  int add(KExpr e) {
    k.ex.push_back(e);
    return static_cast<int>(k.ex.size()) - 1;
  }
  const KExpr& at(int i) const { return k.ex[static_cast<std::size_t>(i)]; }
  bool is_const(int i, int64_t* v = nullptr) const {
    if (at(i).k != KOp::IConst) return false;
    if (v) *v = at(i).i;
    return true;
  }
  int iconst(int64_t v) {
    if (v == 0 && zero >= 0) return zero;
    KExpr e{KOp::IConst};
    e.i = v;
    int id = add(e);
    if (v == 0) zero = id;
    return id;
  }
  int ibin(KOp op, int a, int b) {
    int64_t x, y;
    if (is_const(a, &x) && is_const(b, &y)) {
      switch (op) {
        case KOp::IAdd: return iconst(x + y);
        case KOp::IMul: return iconst(x * y);
        case KOp::IDiv: return iconst(x / y);
        case KOp::IMod: return iconst(x % y);
        default: break;
      }
    }
    if (op == KOp::IAdd && is_const(a, &x) && x == 0) return b;
    if (op == KOp::IAdd && is_const(b, &y) && y == 0) return a;
    if (op == KOp::IMul && ((is_const(a, &x) && x == 0) || (is_const(b, &y) && y == 0))) return iconst(0);
    if (op == KOp::IMul && is_const(b, &y) && y == 1) return a;
    if (op == KOp::IMul && is_const(a, &x) && x == 1) return b;
    if (op == KOp::IDiv && is_const(b, &y) && y == 1) return a;
    if (op == KOp::IMod && is_const(b, &y) && y == 1) return iconst(0);
    KExpr e{op};
    e.a = a;
    e.b = b;
    return add(e);
  }
  int offset(const Shape& s, const std::vector<int>& idx) {
    auto st = contiguous_strides(s);
    int off = iconst(0);
    for (std::size_t d = 0; d < s.size(); ++d)
      if (s[d] != 1) off = ibin(KOp::IAdd, off, ibin(KOp::IMul, idx[d], iconst(st[d])));
    return off;
  }
  // Index of an input of shape `in` read by an output of shape `out` (numpy broadcasting).
  std::vector<int> bcast(const Shape& in, const Shape& out, const std::vector<int>& idx) {
    std::vector<int> r(in.size());
    std::size_t lead = out.size() - in.size();
    for (std::size_t d = 0; d < in.size(); ++d) r[d] = in[d] == 1 ? iconst(0) : idx[lead + d];
    return r;
  }
  int load(int node, const std::vector<int>& idx) {
    const CNode& n = g.nodes[static_cast<std::size_t>(node)];
    int b = buf_of[static_cast<std::size_t>(node)];
    KExpr e{KOp::Load};
    e.dt = n.dtype;
    e.buf = b;
    e.a = offset(n.shape, idx);
    bool ident = n.shape == g.nodes[static_cast<std::size_t>(root)].shape && idx == root_idx;
    auto [it, fresh] = identity_loads.emplace(b, ident);
    if (!fresh) it->second = it->second && ident;
    return add(e);
  }
  int load_flat(int node, int flat) {
    int b = buf_of[static_cast<std::size_t>(node)];
    KExpr e{KOp::Load};
    e.dt = g.nodes[static_cast<std::size_t>(node)].dtype;
    e.buf = b;
    e.a = flat;
    identity_loads[b] = false;
    return add(e);
  }

  int val(int i, const std::vector<int>& idx) {
    const CNode& n = g.nodes[static_cast<std::size_t>(i)];
    if (i == acc_node) {
      KExpr e{KOp::Acc};
      e.dt = n.dtype;
      return add(e);
    }
    if (n.materialize && i != root) return load(i, idx);
    auto in = [&](std::size_t k) -> const CNode& { return g.nodes[static_cast<std::size_t>(n.in[k])]; };
    KExpr e{KOp::FConst};
    e.dt = n.dtype;
    e.op = n.op;
    switch (n.op) {
      case Op::Fill:
        e.f = n.attrs.scalar;
        return add(e);
      case Op::Arange:
        e.k = KOp::Arange;
        e.a = idx.empty() ? iconst(0) : idx[0];
        e.f = n.attrs.scalar;
        e.f2 = n.attrs.scalar2;
        return add(e);
      case Op::Random:
        e.k = KOp::Rand;
        e.a = offset(n.shape, idx);
        e.f = n.attrs.ints[0];
        e.i = static_cast<int64_t>(n.attrs.seed);
        if (!n.in.empty()) {
          e.b = val(n.in[0], {iconst(0)});
          e.c = val(n.in[0], {iconst(1)});
        }
        return add(e);
      case Op::Neg: case Op::Relu: case Op::Tanh: case Op::Sigmoid: case Op::Exp: case Op::Log:
      case Op::Sqrt: case Op::Rsqrt: case Op::Abs: case Op::Not:
        e.k = KOp::Unary;
        e.a = val(n.in[0], idx);
        return add(e);
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow: case Op::Maximum:
      case Op::Minimum: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: case Op::Eq: case Op::Ne:
        e.k = KOp::Binary;
        e.a = val(n.in[0], bcast(in(0).shape, n.shape, idx));
        e.b = val(n.in[1], bcast(in(1).shape, n.shape, idx));
        e.dt = in(0).dtype;  // operand type; comparisons produce b8
        return add(e);
      case Op::Where:
        e.k = KOp::Select;
        e.a = val(n.in[0], bcast(in(0).shape, n.shape, idx));
        e.b = val(n.in[1], bcast(in(1).shape, n.shape, idx));
        e.c = val(n.in[2], bcast(in(2).shape, n.shape, idx));
        return add(e);
      case Op::Cast:
        e.k = KOp::Cast;
        e.a = val(n.in[0], idx);
        return add(e);
      case Op::Broadcast:
        return val(n.in[0], bcast(in(0).shape, n.shape, idx));
      case Op::Reshape: {
        int flat = offset(n.shape, idx);
        if (in(0).materialize) return load_flat(n.in[0], flat);
        const Shape& s = in(0).shape;
        auto st = contiguous_strides(s);
        std::vector<int> r(s.size());
        for (std::size_t d = 0; d < s.size(); ++d)
          r[d] = s[d] == 1 ? iconst(0) : ibin(KOp::IMod, ibin(KOp::IDiv, flat, iconst(st[d])), iconst(s[d]));
        return val(n.in[0], r);
      }
      case Op::Permute: {
        std::vector<int> r(idx.size());
        for (std::size_t d = 0; d < idx.size(); ++d) r[static_cast<std::size_t>(n.attrs.ints[d])] = idx[d];
        return val(n.in[0], r);
      }
      case Op::Slice: {
        std::vector<int> r = idx;
        auto ax = static_cast<std::size_t>(n.attrs.ints[0]);
        r[ax] = ibin(KOp::IAdd, idx[ax], iconst(n.attrs.ints[1]));
        return val(n.in[0], r);
      }
      case Op::Concat: {
        auto ax = static_cast<std::size_t>(n.attrs.ints[0]);
        std::vector<int64_t> start;
        int64_t at_ = 0;
        for (std::size_t k = 0; k < n.in.size(); ++k) start.push_back(at_), at_ += in(k).shape[ax];
        int out = -1;
        for (std::size_t k = n.in.size(); k-- > 0;) {
          std::vector<int> r = idx;
          r[ax] = ibin(KOp::IAdd, idx[ax], iconst(-start[k]));
          int v = val(n.in[k], r);
          if (out < 0) {
            out = v;
          } else {
            KExpr lt{KOp::ILt};
            lt.a = idx[ax];
            lt.b = iconst(start[k + 1]);
            KExpr s{KOp::Select};
            s.dt = n.dtype;
            s.a = add(lt);
            s.b = v;
            s.c = out;
            out = add(s);
          }
        }
        return out;
      }
      case Op::Gather: {
        auto ax = static_cast<std::size_t>(n.attrs.ints[0]);
        std::size_t ri = in(1).shape.size();
        std::vector<int> ii(idx.begin() + static_cast<std::ptrdiff_t>(ax),
                            idx.begin() + static_cast<std::ptrdiff_t>(ax + ri));
        KExpr c{KOp::Chk};
        c.a = val(n.in[1], ii);
        c.i = in(0).shape[ax];
        std::vector<int> r(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(ax));
        int chk = add(c);
        r.push_back(chk);
        r.insert(r.end(), idx.begin() + static_cast<std::ptrdiff_t>(ax + ri), idx.end());
        // The check runs even when the table's value ignores the index (a fill).
        KExpr seq{KOp::Seq};
        seq.dt = n.dtype;
        seq.a = chk;
        seq.b = val(n.in[0], r);
        return add(seq);
      }
      case Op::OneHot: {
        std::vector<int> ii(idx.begin(), idx.end() - 1);
        KExpr eq{KOp::IEq};
        eq.a = val(n.in[0], ii);
        eq.b = idx.back();
        KExpr one{KOp::FConst}, zero_{KOp::FConst};
        one.dt = zero_.dt = n.dtype;
        one.f = 1;
        KExpr s{KOp::Select};
        s.dt = n.dtype;
        s.a = add(eq);
        s.b = add(one);
        s.c = add(zero_);
        return add(s);
      }
      default:
        throw Error(std::string("tc: internal: cannot inline op ") + op_name(n.op));
    }
  }

  std::vector<int> vars(const Shape& s) {
    std::vector<int> v;
    for (std::size_t d = 0; d < s.size(); ++d) {
      if (s[d] == 1) {
        v.push_back(iconst(0));
      } else {
        KExpr e{KOp::Var};
        e.i = static_cast<int64_t>(d);
        v.push_back(add(e));
      }
    }
    return v;
  }
};

// The scalar a node broadcasts (through inlined broadcasts and reshapes):
// a one-element leaf (its buffer) or fill (its value). False otherwise.
bool scalar_of(const CGraph& g, const std::vector<int>& buf_of, int i, int* buf, double* value) {
  for (;;) {
    const CNode& n = g.nodes[static_cast<std::size_t>(i)];
    if (n.dtype != DType::f32) return false;
    if (n.is_leaf()) {
      if (n.numel() != 1) return false;
      *buf = buf_of[static_cast<std::size_t>(i)];
      return true;
    }
    if (n.op == Op::Fill) {
      *value = static_cast<float>(n.attrs.scalar);
      return true;
    }
    if (n.materialize || (n.op != Op::Broadcast && n.op != Op::Reshape)) return false;
    i = n.in[0];
  }
}

}  // namespace

// Elementwise updates W - G * s (in place into W's buffer) where G is a
// matrix product read by nothing else become that product accumulated into
// W: sgemm with alpha = -s and beta = 1. The product moves to the update's
// place in the order (after every other reader of W); G is never stored.
void fuse_gemm_updates(const CGraph& g, Program& p) {
  std::vector<int> buf_of(g.nodes.size(), -1);
  std::vector<int> writer(p.bufs.size(), -1);
  for (std::size_t k = 0; k < p.kernels.size(); ++k) writer[static_cast<std::size_t>(p.kernels[k].out_buf)] = static_cast<int>(k);
  for (std::size_t b = 0; b < p.bufs.size(); ++b)
    if (p.bufs[b].node >= 0) buf_of[static_cast<std::size_t>(p.bufs[b].node)] = static_cast<int>(b);
  std::vector<bool> drop(p.kernels.size(), false);
  for (std::size_t e = 0; e < p.kernels.size(); ++e) {
    Kernel& up = p.kernels[e];
    if (up.kind != Kernel::Elementwise || up.out_buf >= p.num_inputs) continue;  // in place into an input only
    const CNode& o = g.nodes[static_cast<std::size_t>(up.root)];
    if (o.op != Op::Sub || o.dtype != DType::f32) continue;
    const CNode& w = g.nodes[static_cast<std::size_t>(o.in[0])];
    const CNode& m = g.nodes[static_cast<std::size_t>(o.in[1])];
    if (!w.is_leaf() || w.input_slot != up.out_buf || w.shape != o.shape) continue;
    if (m.op != Op::Mul || m.materialize || m.shape != o.shape) continue;
    int alpha_buf = -1;
    double alpha = 1.0;
    int gi = -1;
    for (int side = 0; side < 2 && gi < 0; ++side) {
      const CNode& c = g.nodes[static_cast<std::size_t>(m.in[side])];
      if (c.op == Op::MatMul && c.materialize && c.shape == o.shape &&
          scalar_of(g, buf_of, m.in[1 - side], &alpha_buf, &alpha))
        gi = m.in[side];
    }
    if (gi < 0) continue;
    int gbuf = buf_of[static_cast<std::size_t>(gi)];
    if (gbuf < 0 || p.bufs[static_cast<std::size_t>(gbuf)].kind != BufKind::arena) continue;
    int mk = writer[static_cast<std::size_t>(gbuf)];
    if (mk < 0 || mk >= static_cast<int>(e) || drop[static_cast<std::size_t>(mk)]) continue;
    Kernel& mm = p.kernels[static_cast<std::size_t>(mk)];
    if (mm.kind != Kernel::MatMul || mm.accumulate || numel(mm.batch) != 1) continue;
    if (mm.a_buf == up.out_buf || mm.b_buf == up.out_buf) continue;
    // Nothing but the update reads G, and nothing between the product and
    // the update writes the product's operands.
    bool ok = true;
    for (std::size_t k = 0; k < p.kernels.size() && ok; ++k) {
      const Kernel& kn = p.kernels[k];
      if (k != e && std::count(kn.reads.begin(), kn.reads.end(), gbuf)) ok = false;
      if (k > static_cast<std::size_t>(mk) && k <= e && (kn.out_buf == mm.a_buf || kn.out_buf == mm.b_buf)) ok = false;
    }
    if (!ok) continue;
    Kernel fused = mm;
    fused.root = up.root;
    fused.product = mm.root;
    fused.out_buf = up.out_buf;
    fused.accumulate = true;
    fused.alpha_scale = -alpha;
    fused.alpha_buf = alpha_buf;
    fused.label = "matmul_sub_mul";
    fused.reads = {mm.a_buf, mm.b_buf, up.out_buf};
    if (alpha_buf >= 0) fused.reads.push_back(alpha_buf);
    up = std::move(fused);
    drop[static_cast<std::size_t>(mk)] = true;
    BufDecl& gb = p.bufs[static_cast<std::size_t>(gbuf)];
    gb.bytes = 0;  // never allocated
    gb.node = -1;
  }
  std::vector<Kernel> ks;
  for (std::size_t k = 0; k < p.kernels.size(); ++k)
    if (!drop[k]) ks.push_back(std::move(p.kernels[k]));
  p.kernels = std::move(ks);
}

namespace {

std::string label_of(const CGraph& g, int root) {
  // The ops inlined into this root, for comments and logs.
  std::string s = op_name(g.nodes[static_cast<std::size_t>(root)].op);
  std::vector<int> stack(g.nodes[static_cast<std::size_t>(root)].in);
  int count = 0;
  while (!stack.empty() && count < 6) {
    int i = stack.back();
    stack.pop_back();
    const CNode& n = g.nodes[static_cast<std::size_t>(i)];
    if (n.materialize || n.op == Op::Fill) continue;
    s += "_";
    s += op_name(n.op);
    ++count;
    stack.insert(stack.end(), n.in.begin(), n.in.end());
  }
  return s;
}

// What the stages of schedule() share.
struct Scheduling {
  const CGraph& graph;  // as lowered (its inplace_ok)
  CGraph& g;            // the scheduled graph: graph plus the outputs' copies
  Program p;
  std::vector<int> buf_of;                           // node -> buffer, -1 when inlined
  std::vector<std::map<int, bool>> loads;            // per kernel: Builder::identity_loads
  std::vector<std::pair<std::size_t, int>> inplace;  // (kernel, input slot)
  std::vector<int> order;                            // kernels in run order
};

void copy_leaf_outputs(Scheduling& s) {
  CGraph& g = s.g;
  for (int& o : g.outputs) {
    CNode& n = g.nodes[static_cast<std::size_t>(o)];
    if (!n.is_leaf()) continue;
    CNode c;
    c.op = Op::Reshape;
    c.dtype = n.dtype;
    c.shape = n.shape;
    c.in = {o};
    c.where = n.where;
    c.materialize = true;
    g.nodes.push_back(c);
    o = static_cast<int>(g.nodes.size()) - 1;
  }
}

void declare_buffers(Scheduling& s) {
  const CGraph& g = s.g;
  Program& p = s.p;
  std::vector<bool> is_out(g.nodes.size(), false);
  for (int o : g.outputs) is_out[static_cast<std::size_t>(o)] = true;
  p.num_outputs = static_cast<int>(g.outputs.size());
  s.buf_of.assign(g.nodes.size(), -1);
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].is_leaf()) p.num_inputs = std::max(p.num_inputs, g.nodes[i].input_slot + 1);
  p.num_inputs = std::max<int>(p.num_inputs, static_cast<int>(s.graph.inplace_ok.size()));
  for (int slot = 0; slot < p.num_inputs; ++slot) p.bufs.push_back({BufKind::input, slot});
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const CNode& n = g.nodes[i];
    if (n.is_leaf()) {
      s.buf_of[i] = n.input_slot;
      p.bufs[static_cast<std::size_t>(n.input_slot)].node = static_cast<int>(i);
      p.bufs[static_cast<std::size_t>(n.input_slot)].dtype = n.dtype;
      p.bufs[static_cast<std::size_t>(n.input_slot)].bytes = n.numel() * dtype_size(n.dtype);
    }
  }
  p.output_buf.assign(g.outputs.size(), -1);
  p.inplace_input.assign(g.outputs.size(), -1);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const CNode& n = g.nodes[i];
    if (n.is_leaf() || !n.materialize) continue;
    BufDecl b{is_out[i] ? BufKind::output : BufKind::arena};
    b.node = static_cast<int>(i);
    b.dtype = n.dtype;
    b.bytes = n.numel() * dtype_size(n.dtype);
    if (is_out[i])
      for (std::size_t o = 0; o < g.outputs.size(); ++o)
        if (g.outputs[o] == static_cast<int>(i) && b.slot < 0) b.slot = static_cast<int>(o);
    s.buf_of[i] = static_cast<int>(p.bufs.size());
    p.bufs.push_back(b);
  }
  for (std::size_t o = 0; o < g.outputs.size(); ++o) p.output_buf[o] = s.buf_of[static_cast<std::size_t>(g.outputs[o])];
}

// ---- one function per kernel kind: fills b.k for the materialized node n.

// The buffer behind operand `in` of a kernel that reads whole buffers.
int operand_buffer(Builder& b, int in, const char* what) {
  int base = buffer_base(b.g, in);
  int buf = base < 0 ? -1 : b.buf_of[static_cast<std::size_t>(base)];
  if (buf < 0) throw Error(std::string("tc: internal: ") + what + " input has no buffer");
  b.identity_loads[buf] = false;
  return buf;
}

void collective_kernel(Builder& b, const CNode& n) {
  Kernel& k = b.k;
  k.kind = Kernel::Collective;
  k.loop = n.shape;
  k.ordinal = n.attrs.ints.at(0);
  for (int in : n.in) {
    int buf = b.buf_of[static_cast<std::size_t>(in)];
    if (buf < 0) throw Error("tc: internal: a collective's input has no buffer");
    k.pack.push_back(buf);
    b.identity_loads[buf] = false;
  }
}

void attention_kernel(Builder& b, const CNode& n) {
  Kernel& k = b.k;
  k.kind = Kernel::Attention;
  k.backward = n.op == Op::AttentionGrad;
  const Shape& x = b.g.nodes[static_cast<std::size_t>(n.in[0])].shape;
  const int64_t heads = n.attrs.ints.at(0);
  k.loop = {x[0], x[1], heads, x[2] / 3 / heads};
  k.alpha_scale = n.attrs.scalar;
  k.a_buf = operand_buffer(b, n.in[0], "an attention");
  std::size_t mask_at = k.backward ? 3 : 1;
  if (n.in.size() > mask_at) k.b_buf = operand_buffer(b, n.in[mask_at], "an attention");
  if (k.backward) {
    k.o_buf = operand_buffer(b, n.in[1], "an attention");
    k.do_buf = operand_buffer(b, n.in[2], "an attention");
  }
}

void layer_norm_kernel(Builder& b, const CNode& n) {
  Kernel& k = b.k;
  k.kind = Kernel::LayerNorm;
  k.backward = n.op == Op::LayerNormGrad;
  const CNode& x = b.g.nodes[static_cast<std::size_t>(n.in[0])];
  const int64_t D = x.shape.back();
  k.loop = {D == 0 ? 0 : x.numel() / D, D};
  k.alpha_scale = n.attrs.scalar;
  k.a_buf = operand_buffer(b, n.in[0], "a layer norm");
  k.b_buf = operand_buffer(b, n.in[1], "a layer norm");
  k.do_buf = operand_buffer(b, n.in[2], "a layer norm");
}

void matmul_kernel(Builder& b, const CNode& n) {
  Kernel& k = b.k;
  k.kind = Kernel::MatMul;
  const Shape &sa = b.g.nodes[static_cast<std::size_t>(n.in[0])].shape, &sb = b.g.nodes[static_cast<std::size_t>(n.in[1])].shape;
  k.M = sa[sa.size() - 2];
  k.K = sa.back();
  k.N = sb.back();
  k.batch.assign(n.shape.begin(), n.shape.end() - 2);
  k.a_buf = b.buf_of[static_cast<std::size_t>(n.mm_base[0])];
  k.b_buf = b.buf_of[static_cast<std::size_t>(n.mm_base[1])];
  k.ta = n.mm_trans[0];
  k.tb = n.mm_trans[1];
  auto bst = [&](const Shape& s, int64_t mat) {
    Shape bs(s.begin(), s.end() - 2);
    std::vector<int64_t> st(k.batch.size(), 0);
    auto cs = contiguous_strides(bs);
    std::size_t lead = k.batch.size() - bs.size();
    for (std::size_t d = 0; d < bs.size(); ++d) st[lead + d] = bs[d] == 1 ? 0 : cs[d] * mat;
    return st;
  };
  k.a_stride = bst(sa, k.M * k.K);
  k.b_stride = bst(sb, k.K * k.N);
  b.identity_loads[k.a_buf] = false;
  b.identity_loads[k.b_buf] = false;
}

void scatter_add_kernel(Builder& b, const CNode& n) {
  Kernel& k = b.k;
  k.kind = Kernel::ScatterAdd;
  const CNode& src = b.g.nodes[static_cast<std::size_t>(n.in[0])];
  const CNode& ids = b.g.nodes[static_cast<std::size_t>(n.in[1])];
  auto ax = static_cast<std::size_t>(n.attrs.ints[0]);
  std::size_t ri = ids.shape.size();
  k.loop = src.shape;
  auto v = b.vars(src.shape);
  b.root_idx = {};  // nothing is read at the root's own index
  k.value = b.val(n.in[0], v);
  std::vector<int> ii(v.begin() + static_cast<std::ptrdiff_t>(ax), v.begin() + static_cast<std::ptrdiff_t>(ax + ri));
  KExpr c{KOp::Chk};
  c.a = b.val(n.in[1], ii);
  c.i = n.shape[ax];
  int chk = b.add(c);
  int64_t inner = 1;
  for (std::size_t d = ax + 1; d < n.shape.size(); ++d) inner *= n.shape[d];
  Shape outer_s(n.shape.begin(), n.shape.begin() + static_cast<std::ptrdiff_t>(ax));
  Shape inner_s(n.shape.begin() + static_cast<std::ptrdiff_t>(ax + 1), n.shape.end());
  int o = b.offset(outer_s, std::vector<int>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(ax)));
  int c_off = b.offset(inner_s, std::vector<int>(v.begin() + static_cast<std::ptrdiff_t>(ax + ri), v.end()));
  k.store = b.ibin(KOp::IAdd, b.ibin(KOp::IMul, b.ibin(KOp::IAdd, b.ibin(KOp::IMul, o, b.iconst(n.shape[ax])), chk), b.iconst(inner)), c_off);
  k.dim = n.shape[ax];
}

// A reduction, or the elementwise epilogue fused into one (n.epilogue_of).
void reduce_kernel(Builder& b, const CNode& n) {
  Kernel& k = b.k;
  k.kind = Kernel::Reduce;
  int r = n.epilogue_of >= 0 ? n.epilogue_of : k.root;
  const CNode& red = b.g.nodes[static_cast<std::size_t>(r)];
  const CNode& x = b.g.nodes[static_cast<std::size_t>(red.in[0])];
  k.is_max = red.op == Op::Max;
  k.loop = x.shape;
  k.reduced.assign(x.shape.size(), false);
  for (int64_t a : red.attrs.ints) k.reduced[static_cast<std::size_t>(a)] = true;
  auto v = b.vars(x.shape);
  std::vector<int> out_idx;
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    if (!k.reduced[d]) out_idx.push_back(v[d]);
    else if (red.attrs.flag) out_idx.push_back(b.iconst(0));
  }
  b.root_idx = out_idx;
  k.store = b.offset(n.shape, out_idx);
  b.acc_node = r;
  int saved_root = b.root;
  b.root = r;  // the reduction itself is computed here, not loaded
  k.value = b.val(red.in[0], v);
  b.root = saved_root;
  if (n.epilogue_of >= 0) k.epilogue = b.val(k.root, out_idx);
}

void elementwise_kernel(Builder& b, const CNode& n) {
  Kernel& k = b.k;
  k.kind = Kernel::Elementwise;
  k.loop = n.shape;
  b.root_idx = b.vars(n.shape);
  k.value = b.val(k.root, b.root_idx);
  k.store = b.offset(n.shape, b.root_idx);
}

using KernelFill = void (*)(Builder&, const CNode&);
KernelFill kernel_fill(const CNode& n) {
  if (n.op == Op::AllReduce) return collective_kernel;
  if (is_attention(n.op)) return attention_kernel;
  if (is_layer_norm(n.op)) return layer_norm_kernel;
  if (n.op == Op::MatMul) return matmul_kernel;
  if (n.op == Op::ScatterAdd) return scatter_add_kernel;
  if (n.op == Op::Sum || n.op == Op::Max || n.epilogue_of >= 0) return reduce_kernel;
  return elementwise_kernel;
}

void build_kernels(Scheduling& s) {
  const CGraph& g = s.g;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const CNode& n = g.nodes[i];
    if (n.is_leaf() || !n.materialize) continue;
    Kernel k;
    k.root = static_cast<int>(i);
    k.out_buf = s.buf_of[i];
    k.out_dtype = n.dtype;
    k.label = label_of(g, k.root);
    Builder b{g, s.buf_of, k, k.root, -1, -1, {}, {}};
    kernel_fill(n)(b, n);
    for (auto& [buf, ident] : b.identity_loads) k.reads.push_back(buf);
    s.loads.push_back(b.identity_loads);
    s.p.kernels.push_back(std::move(k));
  }
}

// An output computed elementwise from an input it reads only at its own
// index, whose buffer nobody else holds, may take that buffer.
void choose_inplace(Scheduling& s) {
  const Program& p = s.p;
  std::set<int> used_inputs;
  for (std::size_t k = 0; k < p.kernels.size(); ++k) {
    const Kernel& kn = p.kernels[k];
    const BufDecl& ob = p.bufs[static_cast<std::size_t>(kn.out_buf)];
    if (kn.kind != Kernel::Elementwise || ob.kind != BufKind::output) continue;
    for (auto& [buf, ident] : s.loads[k]) {
      if (buf >= p.num_inputs || !ident || used_inputs.count(buf)) continue;
      if (static_cast<std::size_t>(buf) >= s.graph.inplace_ok.size() || !s.graph.inplace_ok[static_cast<std::size_t>(buf)]) continue;
      const BufDecl& ib = p.bufs[static_cast<std::size_t>(buf)];
      if (ib.dtype != ob.dtype || ib.bytes != ob.bytes) continue;
      used_inputs.insert(buf);
      s.inplace.push_back({k, buf});
      break;
    }
  }
}

// Stable topological order (Kahn, lowest index first) with an extra edge per
// in-place update: every other reader of the input runs before its writer.
// False when those edges make a cycle.
bool order_with(const Program& p, const std::vector<std::pair<std::size_t, int>>& ip, std::vector<int>& order) {
  std::vector<int> producer(p.bufs.size(), -1);
  for (std::size_t k = 0; k < p.kernels.size(); ++k) producer[static_cast<std::size_t>(p.kernels[k].out_buf)] = static_cast<int>(k);
  std::size_t n = p.kernels.size();
  std::vector<std::set<int>> deps(n);
  for (std::size_t k = 0; k < n; ++k)
    for (int b : p.kernels[k].reads)
      if (producer[static_cast<std::size_t>(b)] >= 0) deps[k].insert(producer[static_cast<std::size_t>(b)]);
  for (auto& [w, slot] : ip)
    for (std::size_t k = 0; k < n; ++k)
      if (k != w && std::count(p.kernels[k].reads.begin(), p.kernels[k].reads.end(), slot)) deps[w].insert(static_cast<int>(k));
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<int>> users(n);
  for (std::size_t k = 0; k < n; ++k)
    for (int d : deps[k]) ++indeg[k], users[static_cast<std::size_t>(d)].push_back(static_cast<int>(k));
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (std::size_t k = 0; k < n; ++k)
    if (!indeg[k]) ready.push(static_cast<int>(k));
  order.clear();
  while (!ready.empty()) {
    int k = ready.top();
    ready.pop();
    order.push_back(k);
    for (int u : users[static_cast<std::size_t>(k)])
      if (--indeg[static_cast<std::size_t>(u)] == 0) ready.push(u);
  }
  return order.size() == n;
}

void order_kernels(Scheduling& s) {
  if (order_with(s.p, s.inplace, s.order)) return;
  s.inplace.clear();
  order_with(s.p, s.inplace, s.order);
}

void take_inplace_buffers(Scheduling& s) {
  Program& p = s.p;
  for (auto& [w, slot] : s.inplace) {
    int old = p.kernels[w].out_buf;
    for (std::size_t o = 0; o < p.output_buf.size(); ++o)
      if (p.output_buf[o] == old) p.output_buf[o] = slot, p.inplace_input[o] = slot;
    // Everyone reads the new value from the input's buffer now.
    for (Kernel& kn : p.kernels) {
      if (kn.out_buf == old) kn.out_buf = slot;
      if (kn.a_buf == old) kn.a_buf = slot;
      if (kn.b_buf == old) kn.b_buf = slot;
      if (kn.o_buf == old) kn.o_buf = slot;
      if (kn.do_buf == old) kn.do_buf = slot;
      for (int& x : kn.pack)
        if (x == old) x = slot;
      for (KExpr& e : kn.ex)
        if (e.k == KOp::Load && e.buf == old) e.buf = slot;
      for (int& r : kn.reads)
        if (r == old) r = slot;
    }
    p.bufs[static_cast<std::size_t>(old)].bytes = 0;  // never allocated
    p.bufs[static_cast<std::size_t>(old)].kind = BufKind::arena;
    p.bufs[static_cast<std::size_t>(old)].node = -1;
  }
  std::vector<Kernel> ks;
  for (int k : s.order) ks.push_back(std::move(p.kernels[static_cast<std::size_t>(k)]));
  p.kernels = std::move(ks);
}

}  // namespace

Program schedule(const CGraph& graph, CGraph* scheduled) {
  struct Stage {
    const char* name;
    void (*fn)(Scheduling&);
  };
  static constexpr Stage kStages[] = {
      {"copy_leaf_outputs", copy_leaf_outputs},        // an output that is an input gets its own copy (an identity reshape)
      {"declare_buffers", declare_buffers},            // inputs, then a buffer per materialized node (output or arena)
      {"build_kernels", build_kernels},                // a kernel per materialized node, in topological order of roots
      {"choose_inplace", choose_inplace},              // outputs that may overwrite an input read at their own index
      {"order_kernels", order_kernels},                // stable topological order, readers before in-place writers
      {"take_inplace_buffers", take_inplace_buffers},  // those outputs take their inputs' buffers; kernels in that order
  };
  *scheduled = graph;
  Scheduling s{graph, *scheduled, {}, {}, {}, {}, {}};
  for (const Stage& st : kStages) st.fn(s);
  return std::move(s.p);
}

namespace {
// Buffer lifetimes in kernel order; throws on an undeclared load or an arena
// buffer read before it is written.
void check_kernels(const Program& p, const char* after, std::vector<int>& first, std::vector<int>& last) {
  auto fail = [after](std::size_t k, const std::string& what) {
    throw Error(std::string("tc: program verifier after ") + after + ": kernel " + std::to_string(k) + ": " + what);
  };
  for (std::size_t k = 0; k < p.kernels.size(); ++k) {
    const Kernel& kn = p.kernels[k];
    auto declared = [&](int b) { return b == kn.out_buf || std::count(kn.reads.begin(), kn.reads.end(), b) > 0; };
    for (const KExpr& e : kn.ex)
      if (e.k == KOp::Load && !declared(e.buf)) fail(k, "loads buffer " + std::to_string(e.buf) + " it does not declare");
    if (kn.kind == Kernel::MatMul && (!declared(kn.a_buf) || !declared(kn.b_buf))) fail(k, "matmul operand not declared");
    if (kn.kind == Kernel::LayerNorm && (!declared(kn.a_buf) || !declared(kn.b_buf) || !declared(kn.do_buf)))
      fail(k, "layer norm operand not declared");
    if (kn.kind == Kernel::Attention) {
      for (int b : {kn.a_buf, kn.b_buf, kn.o_buf, kn.do_buf})
        if (b >= 0 && !declared(b)) fail(k, "attention operand not declared");
      if (kn.a_buf < 0 || (kn.backward && (kn.o_buf < 0 || kn.do_buf < 0))) fail(k, "attention without its operands");
    }
    for (int b : kn.reads) {
      auto bi = static_cast<std::size_t>(b);
      if (p.bufs[bi].kind == BufKind::arena && p.bufs[bi].bytes > 0 && first[bi] < 0)
        fail(k, "reads arena buffer " + std::to_string(b) + " before any kernel writes it");
      last[bi] = static_cast<int>(k);
    }
    auto ob = static_cast<std::size_t>(kn.out_buf);
    if (first[ob] < 0) first[ob] = static_cast<int>(k);
    last[ob] = std::max(last[ob], static_cast<int>(k));
  }
}
}  // namespace

void verify_kernels(const Program& p, const char* after) {
  std::vector<int> first(p.bufs.size(), -1), last(p.bufs.size(), -1);
  check_kernels(p, after, first, last);
}

void verify_program(const Program& p) {
  std::vector<int> first(p.bufs.size(), -1), last(p.bufs.size(), -1);
  check_kernels(p, "plan_memory", first, last);
  for (std::size_t a = 0; a < p.bufs.size(); ++a)
    for (std::size_t b = a + 1; b < p.bufs.size(); ++b) {
      const BufDecl &x = p.bufs[a], &y = p.bufs[b];
      if (x.kind != BufKind::arena || y.kind != BufKind::arena || x.bytes <= 0 || y.bytes <= 0) continue;
      if (first[a] < 0 || first[b] < 0 || last[a] < first[b] || last[b] < first[a]) continue;
      if (x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes)
        throw Error("tc: program verifier: arena buffers " + std::to_string(a) + " and " + std::to_string(b) +
                    " are live together and share bytes");
    }
}

}  // namespace tc::detail
