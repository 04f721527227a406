#include "c_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string_view>
#include <vector>

#include "index_affine.h"
#include "tc/error.h"

namespace tc::detail::c_render {
namespace {

// How an op of KOp::Unary or KOp::Binary is written.
enum class Form : uint8_t {
  Call,     // a helper of the prelude: f(a)
  Libm,     // a float function of the C math library, spelled by the dialect
  Typed,    // a helper of the prelude typed by the expression: f<T>(a, b)
  Compare,  // a comparison giving a b8: (uint8_t)(a op b)
};

struct OpRow {
  Op op;
  Form form;
  const char* text;  // the helper, the function or the operator
};

// One row per elementwise op.
constexpr OpRow kOps[] = {
    {Op::Neg, Form::Call, "tc_neg"},
    {Op::Abs, Form::Call, "tc_abs"},
    {Op::Relu, Form::Call, "tc_relu"},
    {Op::Tanh, Form::Libm, "tanh"},
    {Op::Sigmoid, Form::Call, "tc_sigmoid"},
    {Op::Exp, Form::Libm, "exp"},
    {Op::Log, Form::Libm, "log"},
    {Op::Sqrt, Form::Libm, "sqrt"},
    {Op::Rsqrt, Form::Call, "tc_rsqrt"},
    {Op::Not, Form::Call, "tc_not"},
    {Op::Add, Form::Typed, "tc_add"},
    {Op::Sub, Form::Typed, "tc_sub"},
    {Op::Mul, Form::Typed, "tc_mul"},
    {Op::Div, Form::Typed, "tc_div"},
    {Op::Pow, Form::Typed, "tc_pow"},
    {Op::Maximum, Form::Typed, "tc_max"},
    {Op::Minimum, Form::Typed, "tc_min"},
    {Op::Lt, Form::Compare, "<"},
    {Op::Le, Form::Compare, "<="},
    {Op::Gt, Form::Compare, ">"},
    {Op::Ge, Form::Compare, ">="},
    {Op::Eq, Form::Compare, "=="},
    {Op::Ne, Form::Compare, "!="},
};

const OpRow* row_of(Op op) {
  for (const OpRow& r : kOps)
    if (r.op == op) return &r;
  return nullptr;
}

// A NaN or an infinity in the dialect's spelling.
std::string non_finite(double v, const char* nan, const char* inf) {
  if (std::isnan(v)) return nan;
  return v > 0 ? std::string(inf) : "(-" + std::string(inf) + ")";
}

// Prelude text in a dialect's spelling: "@fn" is the helpers' qualifier,
// "@f{name}" a float function of the C math library, "@d{name}" a double one.
std::string in_dialect(const Dialect& d, std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '@') {
      out += text[i];
    } else if (text.compare(i, 3, "@fn") == 0) {
      out += d.fn_qualifier;
      i += 2;
    } else {
      const std::size_t close = text.find('}', i);
      out += d.libm_prefix;
      out += text.substr(i + 3, close - i - 3);
      if (text[i + 1] == 'f') out += d.libm_suffix;
      i = close;
    }
  }
  return out;
}

constexpr std::string_view kRandomHelpers = R"(@fn uint64_t tc_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
@fn double tc_u01(uint64_t s, uint64_t i) { return (double)(tc_mix64(tc_mix64(s) + i) >> 11) * 0x1.0p-53; }
@fn double tc_n01(uint64_t s, uint64_t i) {
  double u1 = tc_u01(s, 2 * i);
  u1 = u1 > 1e-300 ? u1 : 1e-300;
  double u2 = tc_u01(s, 2 * i + 1);
  return @d{sqrt}(-2.0 * @d{log}(u1)) * @d{cos}(6.283185307179586 * u2);
}
@fn float tc_rand(uint64_t s, int64_t i, int kind) { return (float)(kind == 0 ? tc_n01(s, (uint64_t)i) : tc_u01(s, (uint64_t)i)); }
@fn uint64_t tc_seed(int32_t lo, int32_t hi) { return (uint64_t)(uint32_t)lo | ((uint64_t)(uint32_t)hi << 32); }
)";

constexpr std::string_view kOpHelpers = R"(@fn float tc_relu(float a) { return a > 0 ? a : 0.0f; }
@fn float tc_sigmoid(float a) { return 1.0f / (1.0f + @f{exp}(-a)); }
@fn float tc_rsqrt(float a) { return 1.0f / @f{sqrt}(a); }
@fn uint8_t tc_not(uint8_t a) { return !a; }
template <class T> @fn T tc_add(T a, T b) { return (T)(a + b); }
template <class T> @fn T tc_sub(T a, T b) { return (T)(a - b); }
template <class T> @fn T tc_mul(T a, T b) { return (T)(a * b); }
)";

std::string op_expr(const Dialect& d, const Kernel& k, const KExpr& e) {
  const OpRow* r = row_of(e.op);
  const bool unary = r && (r->form == Form::Call || r->form == Form::Libm);
  if (!r || unary != (e.k == KOp::Unary))
    throw Error(std::string("tc: the ") + d.name + " renderer cannot render the expression of op " + op_name(e.op) + " yet");
  const std::string a = expr(d, k, e.a);
  switch (r->form) {
    case Form::Call: return std::string(r->text) + "(" + a + ")";
    case Form::Libm: return d.libm_prefix + std::string(r->text) + d.libm_suffix + "(" + a + ")";
    case Form::Typed: return std::string(r->text) + "<" + ctype(e.dt) + ">(" + a + ", " + expr(d, k, e.b) + ")";
    case Form::Compare: return "(uint8_t)(" + a + " " + r->text + " " + expr(d, k, e.b) + ")";
  }
  return a;
}

}  // namespace

const char* ctype(DType d) {
  return d == DType::f32 ? "float" : d == DType::i32 ? "int32_t" : d == DType::b8 ? "uint8_t" : "?";
}

std::string literal(const Dialect& d, DType dt, double v) {
  char buf[64];
  switch (dt) {
    case DType::f32: {
      float f = static_cast<float>(v);
      if (!std::isfinite(f)) return non_finite(f, d.f32_nan, d.f32_inf);
      std::snprintf(buf, sizeof buf, "%.9gf", static_cast<double>(f));
      std::string s = buf;
      if (s.find_first_of(".e") == std::string::npos) s.insert(s.size() - 1, ".0");
      return "(" + s + ")";
    }
    case DType::i32: return "((int32_t)" + std::to_string(static_cast<int32_t>(v)) + ")";
    case DType::b8: return v != 0 ? "((uint8_t)1)" : "((uint8_t)0)";
  }
  return "0";
}

std::string literal_d(const Dialect& d, double v) {
  if (!std::isfinite(v)) return non_finite(v, d.f64_nan, d.f64_inf);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return "(" + s + ")";
}

std::string size(const SymInt& v) {
  if (!v.symbolic()) return v.c0 < 0 ? "(" + std::to_string(v.c0) + "LL)" : std::to_string(v.c0) + "LL";
  std::string s;
  auto term = [&s](int64_t c, const char* var) {
    if (c == 0) return;
    if (!s.empty()) s += " + ";
    s += c == 1 ? std::string(var) : std::to_string(c) + "LL * " + var;
  };
  term(v.c2, "tc_s * tc_s");
  term(v.c1, "tc_s");
  if (v.c0) s += " + " + std::to_string(v.c0) + "LL";
  return "(" + s + ")";
}

Extent Extent::operator*(const Extent& o) const {
  return fixed() && o.fixed() ? Extent{v * o.v, ""} : Extent{v * o.v, "(" + str() + " * " + o.str() + ")"};
}
Extent ext(const std::shared_ptr<const KernelSyms>& sym, const SymInt KernelSyms::*f, int64_t v) {
  return sym && ((*sym).*f).symbolic() ? Extent{v, size((*sym).*f)} : Extent{v, ""};
}
Extent at(const std::shared_ptr<const KernelSyms>& sym, const std::vector<SymInt> KernelSyms::*f, std::size_t d, int64_t v) {
  return sym && ((*sym).*f)[d].symbolic() ? Extent{v, size(((*sym).*f)[d])} : Extent{v, ""};
}
Extent loop_x(const Kernel& k, std::size_t d) { return at(k.sym, &KernelSyms::loop, d, k.loop[d]); }

std::string real(const Dialect& d, const SymReal& v) {
  if (v.kind == SymReal::constant) return literal_d(d, v.d0);
  std::string poly = "(" + literal_d(d, v.d0) + " + " + literal_d(d, v.d1) + " * (double)tc_s";
  if (v.d2 != 0) poly += " + " + literal_d(d, v.d2) + " * (double)tc_s * (double)tc_s";
  poly += ")";
  return v.kind == SymReal::reciprocal ? "(1.0 / " + poly + ")" : poly;
}

std::string sizes_prologue(const Program& p) {
  if (!p.sym) return "";
  return "  const int64_t* tc_tab = (const int64_t*)b[" + std::to_string(p.sym->table_slot) +
         "];\n  const int64_t tc_s = tc_tab[0];\n  const int64_t* tc_off = tc_tab + 1;\n  (void)tc_s;\n  (void)tc_off;\n";
}

// Whether index expression i of a dynamic program's kernel has only
// constants and loops of fixed extent: index_affine may then fold it (it
// reads values and extents as numbers).
static bool fixed_index(const Kernel& k, int i) {
  const KExpr& e = k.ex[static_cast<std::size_t>(i)];
  switch (e.k) {
    case KOp::IConst:
    case KOp::Chk: return !k.sym->ex_i[static_cast<std::size_t>(i)].symbolic();
    case KOp::Var: return e.i >= 0 && static_cast<std::size_t>(e.i) < k.sym->loop.size() && !k.sym->loop[static_cast<std::size_t>(e.i)].symbolic();
    case KOp::IAdd:
    case KOp::IMul:
    case KOp::IDiv:
    case KOp::IMod: return fixed_index(k, e.a) && fixed_index(k, e.b);
    default: return true;
  }
}

std::string expr(const Dialect& d, const Kernel& k, int i) {
  const KExpr& e = k.ex[static_cast<std::size_t>(i)];
  auto a = [&] { return expr(d, k, e.a); };
  auto b = [&] { return expr(d, k, e.b); };
  if ((e.k == KOp::IAdd || e.k == KOp::IMul || e.k == KOp::IDiv || e.k == KOp::IMod) && (!k.sym || fixed_index(k, i))) {
    if (auto f = index_affine::affine(k, i, [&d](const Kernel& kk, int ii) { return expr(d, kk, ii); })) return f->str();
  }
  switch (e.k) {
    case KOp::Var: return "i" + std::to_string(e.i);
    case KOp::IConst:
      if (k.sym && k.sym->ex_i[static_cast<std::size_t>(i)].symbolic()) return size(k.sym->ex_i[static_cast<std::size_t>(i)]);
      return e.i < 0 ? "(" + std::to_string(e.i) + "LL)" : std::to_string(e.i) + "LL";
    case KOp::IAdd: return "(" + a() + " + " + b() + ")";
    case KOp::IMul: return "(" + a() + " * " + b() + ")";
    case KOp::IDiv: return "(" + a() + " / " + b() + ")";
    case KOp::IMod: return "(" + a() + " % " + b() + ")";
    case KOp::ILt: return "(" + a() + " < " + b() + ")";
    case KOp::IEq: return "((int64_t)" + a() + " == " + b() + ")";
    case KOp::FConst:
      if (k.sym && k.sym->ex_f[static_cast<std::size_t>(i)].kind != SymReal::constant)
        return "((" + std::string(ctype(e.dt)) + ")" + real(d, k.sym->ex_f[static_cast<std::size_t>(i)]) + ")";
      return literal(d, e.dt, e.f);
    case KOp::Load: return "p" + std::to_string(e.buf) + "[" + a() + "]";
    case KOp::Chk: {
      std::string n = k.sym ? size(k.sym->ex_i[static_cast<std::size_t>(i)]) : std::to_string(e.i) + "LL";
      return "tc_chk((int64_t)" + a() + ", " + n + ", err)";
    }
    case KOp::Seq: return "((void)" + a() + ", " + b() + ")";
    case KOp::Acc: return "((" + std::string(ctype(e.dt)) + ")acc)";
    case KOp::Cast: return "tc_cv<" + std::string(ctype(e.dt)) + ">((double)" + a() + ")";
    case KOp::Select: return "(" + a() + " ? " + b() + " : " + expr(d, k, e.c) + ")";
    case KOp::Arange:
      return "tc_cv<" + std::string(ctype(e.dt)) + ">(" + literal_d(d, e.f) + " + (double)" + a() + " * " + literal_d(d, e.f2) + ")";
    case KOp::Rand: {
      std::string seed = e.b >= 0 ? "tc_seed(" + b() + ", " + expr(d, k, e.c) + ")" : std::to_string(static_cast<uint64_t>(e.i)) + "ULL";
      return "tc_rand(" + seed + ", " + a() + ", " + std::to_string(static_cast<int>(e.f)) + ")";
    }
    case KOp::Unary:
    case KOp::Binary: return op_expr(d, k, e);
  }
  throw Error(std::string("tc: internal: the ") + d.name + " renderer met an unknown expression kind");
}

std::string ptr(const Dialect& d, const Program& p, int b) {
  const BufDecl& bd = p.bufs[static_cast<std::size_t>(b)];
  const std::string t = ctype(bd.dtype);
  std::ostringstream os;
  if (bd.kind == BufKind::input) os << "(" << t << "*)b[" << bd.slot << "]";
  else if (bd.kind == BufKind::output) os << "(" << t << "*)b[" << p.num_inputs + bd.slot << "]";
  else if (p.sym) os << "(" << t << "*)((char*)b[" << p.num_inputs + p.num_outputs << "] + tc_off[" << b << "])";
  else os << "(" << t << "*)((char*)b[" << p.num_inputs + p.num_outputs << "] + " << bd.offset << d.arena_suffix << ")";
  return os.str();
}

std::string random_helpers(const Dialect& d) { return in_dialect(d, kRandomHelpers); }
std::string op_helpers(const Dialect& d) { return in_dialect(d, kOpHelpers); }

void declare(const Dialect& d, std::ostream& os, const Program& p, const Kernel& k) {
  std::vector<int> bufs = k.reads;
  bufs.push_back(k.out_buf);
  std::sort(bufs.begin(), bufs.end());
  bufs.erase(std::unique(bufs.begin(), bufs.end()), bufs.end());
  for (int b : bufs)
    os << "  " << ctype(p.bufs[static_cast<std::size_t>(b)].dtype) << "* " << d.restrict_kw << " p" << b << " = " << ptr(d, p, b)
       << ";\n";
}

}  // namespace tc::detail::c_render
