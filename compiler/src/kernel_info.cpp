// What each kernel of a program computes and costs, and which of the user's
// lines it came from: the rows of the kernels table.
#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "compile.h"

namespace tc::detail {
namespace {

const char* kind_name(Kernel::Kind k) {
  switch (k) {
    case Kernel::Elementwise: return "elementwise";
    case Kernel::Reduce: return "reduce";
    case Kernel::MatMul: return "matmul";
    case Kernel::ScatterAdd: return "scatter";
    case Kernel::Collective: return "collective";
    case Kernel::Attention: return "attention";
    case Kernel::LayerNorm: return "layer_norm";
  }
  return "?";
}

// tc's own sources: a node created there on the user's behalf (a module's
// internals that did not pass the caller's line down) is not the user's line.
bool in_tc_sources(std::string_view file) {
  static const std::string_view own = [] {
    std::string_view f = __FILE__;  // .../compiler/src/kernel_info.cpp
    auto at = f.rfind("/compiler/src/");
    return at == std::string_view::npos ? std::string_view{} : f.substr(0, at + 10);  // .../compiler/
  }();
  return !own.empty() && file.substr(0, own.size()) == own;
}

// The nodes a kernel computes: its root and every node inlined into it (not
// materialized elsewhere), and for an update that absorbed a product, the
// product and what it inlined.
std::vector<int> fused_nodes(const CGraph& g, const Kernel& k) {
  std::vector<int> out, stack{k.root};
  if (k.product >= 0) stack.push_back(k.product);
  std::set<int> seen;
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    if (!seen.insert(i).second) continue;
    const CNode& n = g.nodes[static_cast<std::size_t>(i)];
    if (n.is_leaf()) continue;
    if (i != k.root && i != k.product && n.materialize) continue;  // another kernel's output
    out.push_back(i);
    for (auto it = n.in.rbegin(); it != n.in.rend(); ++it) stack.push_back(*it);
  }
  return out;
}

bool arithmetic(KOp k) { return k == KOp::Unary || k == KOp::Binary || k == KOp::Select; }

}  // namespace

int64_t attention_flops(const Shape& qkv, int64_t heads, bool backward) {
  if (qkv.size() != 3 || heads <= 0) return 0;
  const int64_t B = qkv[0], T = qkv[1], D = qkv[2] / 3;
  // Forward: QK^T and PV (2 T^2 D each over the heads), softmax about 5 per
  // score. Gradient: QK^T again, dV, dP, dQ, dK, softmax and dS about 8 per score.
  const int64_t products = backward ? 5 : 2, per_score = backward ? 8 : 5;
  return B * (products * 2 * T * T * D + per_score * heads * T * T);
}

int64_t layer_norm_flops(int64_t elements, bool backward) { return elements * (backward ? 14 : 8); }

std::vector<KernelInfo> describe_kernels(const CGraph& g, const Program& p) {
  std::vector<KernelInfo> out;
  out.reserve(p.kernels.size());
  for (const Kernel& k : p.kernels) {
    KernelInfo info;
    info.kind = kind_name(k.kind);
    std::vector<int> nodes = fused_nodes(g, k);
    std::map<std::string, int> site_count, own_count, view_count;
    for (int i : nodes) {
      const CNode& n = g.nodes[static_cast<std::size_t>(i)];
      std::string site = std::string(n.where.file_name()) + ":" + std::to_string(n.where.line());
      if (n.op == Op::Fill || is_movement(n.op)) {  // constants and views: no work of their own
        if (!in_tc_sources(n.where.file_name())) ++view_count[site];
        continue;
      }
      info.ops += (info.ops.empty() ? "" : ",") + std::string(op_name(n.op));
      ++(in_tc_sources(n.where.file_name()) ? own_count : site_count)[site];
    }
    if (info.ops.empty()) info.ops = op_name(g.nodes[static_cast<std::size_t>(k.root)].op);
    // A kernel that only moves data (a copy for a permute) is the view's line.
    if (site_count.empty()) site_count = view_count.empty() ? own_count : view_count;
    std::vector<std::pair<std::string, int>> sites(site_count.begin(), site_count.end());
    std::stable_sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [s, n] : sites) info.sites += (info.sites.empty() ? "" : ";") + s;

    auto extent = [](const Shape& s) {
      std::string t;
      for (int64_t d : s) t += (t.empty() ? "" : "x") + std::to_string(d);
      return t;
    };
    int64_t arith = 0;
    for (const KExpr& e : k.ex) arith += arithmetic(e.k);
    if (k.kind == Kernel::LayerNorm) {
      info.kind = k.backward ? "layer_norm_grad" : "layer_norm";
      info.loop = extent(k.loop);
      info.flops = layer_norm_flops(numel(k.loop), k.backward);
    } else if (k.kind == Kernel::Attention) {
      info.kind = k.backward ? "attention_grad" : "attention";
      info.loop = extent(k.loop);
      const int64_t B = k.loop[0], T = k.loop[1], H = k.loop[2], Dh = k.loop[3];
      info.flops = attention_flops({B, T, 3 * H * Dh}, H, k.backward);
    } else if (k.kind == Kernel::MatMul) {
      Shape dims = k.batch;
      dims.insert(dims.end(), {k.M, k.N, k.K});
      info.loop = extent(dims);
      info.flops = 2 * k.M * k.N * k.K * std::max<int64_t>(1, numel(k.batch));
    } else {
      info.loop = extent(k.loop);
      info.flops = numel(k.loop) * (arith + (k.kind == Kernel::Elementwise ? 0 : 1));
    }
    std::set<int> reads(k.reads.begin(), k.reads.end());
    for (int b : reads) info.bytes_read += p.bufs[static_cast<std::size_t>(b)].bytes;
    info.bytes_written = p.bufs[static_cast<std::size_t>(k.out_buf)].bytes;
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace tc::detail
