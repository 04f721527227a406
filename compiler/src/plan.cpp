// The memory planner: arena offsets by liveness, the bytes that scale with
// the batch, and the plan the analyzer extrapolates into "batch N fits".
#include <algorithm>
#include <cmath>

#include "compile.h"
#include "tc/memory.h"

namespace tc::detail {

// Which nodes' sizes scale with the batch dimension: dim 0 of named host
// inputs (from_host with a name), propagated through shape inference.
std::vector<bool> batch_scaled(const CGraph& g, const std::vector<std::string>& names, int64_t* batch_size) {
  std::vector<std::vector<bool>> f(g.nodes.size());
  *batch_size = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const CNode& n = g.nodes[i];
    auto& fl = f[i];
    fl.assign(n.shape.size(), false);
    auto in = [&](std::size_t k) -> const std::vector<bool>& { return f[static_cast<std::size_t>(n.in[k])]; };
    auto in_shape = [&](std::size_t k) -> const Shape& { return g.nodes[static_cast<std::size_t>(n.in[k])].shape; };
    auto bcast_from = [&](std::size_t k) {
      const auto& x = in(k);
      std::size_t lead = fl.size() - std::min(fl.size(), x.size());
      for (std::size_t d = 0; d < x.size() && lead + d < fl.size(); ++d) fl[lead + d] = fl[lead + d] || x[d];
    };
    if (n.is_leaf()) {
      const std::string& name = names[static_cast<std::size_t>(n.input_slot)];
      if (!name.empty() && !n.shape.empty() && n.category == Category::input) {  // host data, not parameters
        fl[0] = true;
        if (*batch_size == 0) *batch_size = n.shape[0];
      }
      continue;
    }
    switch (n.op) {
      case Op::Sum: case Op::Max: {
        const auto& x = in(0);
        std::size_t o = 0;
        for (std::size_t d = 0; d < x.size(); ++d) {
          bool red = std::find(n.attrs.ints.begin(), n.attrs.ints.end(), static_cast<int64_t>(d)) != n.attrs.ints.end();
          if (!red) fl[o++] = x[d];
          else if (n.attrs.flag) ++o;
        }
        break;
      }
      case Op::Permute:
        for (std::size_t d = 0; d < fl.size(); ++d) fl[d] = in(0)[static_cast<std::size_t>(n.attrs.ints[d])];
        break;
      case Op::Reshape: {
        const Shape& s = in_shape(0);
        for (std::size_t j = 0; j < s.size(); ++j) {
          if (!in(0)[j]) continue;
          int64_t before = 1;
          for (std::size_t d = 0; d < j; ++d) before *= s[d];
          int64_t acc = 1;
          for (std::size_t d = 0; d < n.shape.size(); ++d) {
            if (acc == before || (acc <= before && acc * n.shape[d] > before)) {
              fl[d] = true;
              break;
            }
            acc *= n.shape[d];
          }
        }
        break;
      }
      case Op::MatMul: {
        const auto &a = in(0), &b = in(1);
        std::size_t r = fl.size();
        for (std::size_t d = 0; d + 2 < r; ++d) {
          std::size_t la = r - a.size(), lb = r - b.size();
          fl[d] = (d >= la && a[d - la]) || (d >= lb && b[d - lb]);
        }
        fl[r - 2] = a[a.size() - 2];
        fl[r - 1] = b[b.size() - 1];
        break;
      }
      case Op::Gather: {
        auto ax = static_cast<std::size_t>(n.attrs.ints[0]);
        const auto &x = in(0), &ids = in(1);
        std::size_t o = 0;
        for (std::size_t d = 0; d < ax; ++d) fl[o++] = x[d];
        for (bool v : ids) fl[o++] = v;
        for (std::size_t d = ax + 1; d < x.size(); ++d) fl[o++] = x[d];
        break;
      }
      case Op::ScatterAdd: {
        auto ax = static_cast<std::size_t>(n.attrs.ints[0]);
        const auto& x = in(0);
        std::size_t ri = in_shape(1).size();
        for (std::size_t d = 0; d < ax; ++d) fl[d] = x[d];
        for (std::size_t d = ax + 1; d < fl.size(); ++d) fl[d] = x[d + ri - 1];
        break;
      }
      case Op::OneHot:
        for (std::size_t d = 0; d < in(0).size(); ++d) fl[d] = in(0)[d];
        break;
      case Op::Random:
        break;
      case Op::LayerNormGrad:  // [R + 2, D]: the rows scale when x's do
        for (bool v : in(0)) fl[0] = fl[0] || v;
        break;
      case Op::AllReduce:  // packed flat: scales when any input does
        for (std::size_t k = 0; k < n.in.size(); ++k)
          for (bool v : in(k)) fl[0] = fl[0] || v;
        break;
      default:
        for (std::size_t k = 0; k < n.in.size(); ++k)
          if (in_shape(k).size() <= fl.size()) bcast_from(k);
        break;
    }
  }
  std::vector<bool> out(g.nodes.size());
  for (std::size_t i = 0; i < f.size(); ++i)
    for (bool b : f[i]) out[i] = out[i] || b;
  return out;
}

void plan_arena(Program& p, const std::vector<bool>& batch_scaled) {
  struct Life {
    int buf;
    int64_t bytes;
    int first, last;
  };
  std::vector<Life> lives;
  std::vector<int> first(p.bufs.size(), -1), last(p.bufs.size(), -1);
  for (std::size_t k = 0; k < p.kernels.size(); ++k) {
    auto kk = static_cast<int>(k);
    int ob = p.kernels[k].out_buf;
    if (first[static_cast<std::size_t>(ob)] < 0) first[static_cast<std::size_t>(ob)] = kk;
    last[static_cast<std::size_t>(ob)] = std::max(last[static_cast<std::size_t>(ob)], kk);
    for (int b : p.kernels[k].reads) last[static_cast<std::size_t>(b)] = std::max(last[static_cast<std::size_t>(b)], kk);
  }
  for (std::size_t b = 0; b < p.bufs.size(); ++b)
    if (p.bufs[b].kind == BufKind::arena && p.bufs[b].bytes > 0 && first[b] >= 0)
      lives.push_back({static_cast<int>(b), (p.bufs[b].bytes + 63) / 64 * 64, first[b], last[b]});
  // Greedy by size: each buffer at the lowest offset free during its lifetime.
  std::sort(lives.begin(), lives.end(), [](const Life& a, const Life& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.buf < b.buf;
  });
  std::vector<std::pair<int64_t, const Life*>> placed;
  int64_t top = 0;
  for (const Life& l : lives) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (auto& [off, o] : placed)
      if (!(o->last < l.first || l.last < o->first)) busy.push_back({off, off + o->bytes});
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (auto& [s, e] : busy) {
      if (at + l.bytes <= s) break;
      at = std::max(at, e);
    }
    p.bufs[static_cast<std::size_t>(l.buf)].offset = at;
    placed.push_back({at, &l});
    top = std::max(top, at + l.bytes);
  }
  p.arena_bytes = top;
  // Batch-scaled arena bytes. Which kernel is the busiest changes with the
  // batch (weight gradients dominate small batches, activations large ones),
  // so the share at today's busiest kernel underestimates the growth. Take
  // the largest batch-scaled live set over all kernels instead: with s its
  // bytes per sample, arena(B) <= arena(B0) + s * (B - B0) for every B > B0,
  // a bound the analyzer can extrapolate safely. The planner's packing
  // overhead (arena size over the largest live set) scales it as well.
  int64_t best_live = 0, max_batch = 0;
  for (std::size_t k = 0; k < p.kernels.size(); ++k) {
    int64_t live = 0, batch = 0;
    for (const Life& l : lives)
      if (l.first <= static_cast<int>(k) && static_cast<int>(k) <= l.last) {
        live += l.bytes;
        int node = p.bufs[static_cast<std::size_t>(l.buf)].node;
        if (node >= 0 && static_cast<std::size_t>(node) < batch_scaled.size() && batch_scaled[static_cast<std::size_t>(node)])
          batch += l.bytes;
      }
    best_live = std::max(best_live, live);
    max_batch = std::max(max_batch, batch);
  }
  double packing = best_live > 0 ? static_cast<double>(top) / static_cast<double>(best_live) : 1.0;
  p.arena_batch_bytes = std::min(top, static_cast<int64_t>(std::ceil(static_cast<double>(max_batch) * packing)));
}

MemoryPlan plan_memory(const CGraph& g, const std::vector<std::string>& input_names,
                       const std::vector<Category>& output_categories, Program& p) {
  MemoryPlan m;
  std::vector<bool> scaled = batch_scaled(g, input_names, &m.batch_size);
  plan_arena(p, scaled);
  // Everything live now, plus outputs and the arena.
  MemoryStats live = memory_stats();
  m.by_category = live.live_by_category;
  m.capacity = live.capacity;
  int64_t batch = 0;
  for (std::size_t s = 0; s < input_names.size(); ++s)
    if (scaled[static_cast<std::size_t>(p.bufs[s].node)]) batch += p.bufs[s].bytes;
  std::vector<bool> counted(p.bufs.size(), false);
  for (std::size_t s = 0; s < output_categories.size(); ++s) {
    int b = p.output_buf[s];
    if (p.inplace_input[s] >= 0 || counted[static_cast<std::size_t>(b)]) continue;
    counted[static_cast<std::size_t>(b)] = true;
    m.by_category[static_cast<std::size_t>(output_categories[s])] += p.bufs[static_cast<std::size_t>(b)].bytes;
    int node = p.bufs[static_cast<std::size_t>(b)].node;
    if (node >= 0 && static_cast<std::size_t>(node) < scaled.size() && scaled[static_cast<std::size_t>(node)]) batch += p.bufs[static_cast<std::size_t>(b)].bytes;
  }
  m.by_category[static_cast<std::size_t>(Category::activation)] += p.arena_bytes;
  batch += p.arena_batch_bytes;
  for (int64_t v : m.by_category) m.peak += v;
  m.batch_bytes = batch;
  return m;
}

}  // namespace tc::detail
