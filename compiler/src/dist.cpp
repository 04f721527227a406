// tc::dist (tc/dist.h): data-parallel collectives over MPI, through
// libtc_mpi.so (compiler/src/dist/mpi_shim.c), which this file dlopen()s only
// when the launcher says the world has more than one rank.
#include "tc/dist.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include "buffer.h"
#include "collective.h"
#include "events.h"
#include "ir.h"
#include "tc/error.h"
#include "tc/trace/launcher.h"

namespace tc::dist {
namespace {

using namespace tc::detail;

struct Mpi {
  int (*init)(int*, int*) = nullptr;
  int (*finalize)() = nullptr;
  void (*abort)(int) = nullptr;
  int (*allreduce_sum_f32)(float*, int64_t) = nullptr;
  int (*bcast_f32)(float*, int64_t, int) = nullptr;
  int (*barrier)() = nullptr;
  int (*clock_offset)(int, int64_t*, int64_t*) = nullptr;
  const char* (*error)() = nullptr;
};

struct World {
  bool initialized = false;
  int rank = 0;
  int size = 1;
  Mpi mpi;
  bool mpi_on = false;
  int64_t seq = 0;  // collectives so far on this rank
};

World& world() {
  static World w;
  return w;
}
std::mutex g_mu;

std::string host_name() {
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? host : "";
}

// libtc_mpi.so: TC_MPI_LIBRARY, else beside the program (PREFIX/lib for
// PREFIX/bin/PROGRAM, as installed and in the build tree), else beside libtc.
std::string shim_path() {
  if (const char* p = std::getenv("TC_MPI_LIBRARY"); p && *p) return p;
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto lib = exe.parent_path().parent_path() / "lib" / "libtc_mpi.so";
    if (std::filesystem::exists(lib, ec)) return lib.string();
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&shim_path), &info) && info.dli_fname) {
    auto lib = std::filesystem::path(info.dli_fname).parent_path() / "libtc_mpi.so";
    if (std::filesystem::exists(lib, ec)) return lib.string();
  }
  return "libtc_mpi.so";  // the loader's search path
}

template <class F>
void sym(void* h, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(h, name));
  if (f == nullptr) throw Error(std::string("tc::dist::init: ") + name + " is missing from libtc_mpi.so; reinstall tc");
}

void check(int rc, const char* what) {
  if (rc != 0) {
    World& w = world();
    throw Error(std::string("tc::dist::") + what + " failed on rank " + std::to_string(w.rank) + ": " + (w.mpi.error ? w.mpi.error() : "MPI error"));
  }
}

// At exit (on_exit: it sees the status). A clean exit finalizes MPI, which
// waits for every rank to finalize too. A rank that exits with a non-zero
// status aborts the job instead: the others may be waiting for it in a
// collective it will never join, and it would wait for them in MPI_Finalize,
// so the job would hang for good (seen when one rank's build failed).
void finalize_at_exit(int status, void*) {
  World& w = world();
  if (!w.mpi_on) return;
  if (status != 0 && w.mpi.abort) {
    std::fprintf(stderr, "tc::dist: rank %d of %d exits with status %d; aborting the job (MPI_Abort) so that no rank waits for it\n", w.rank, w.size,
                 status);
    std::fflush(stderr);
    w.mpi.abort(status);
  }
  if (w.mpi.finalize) w.mpi.finalize();
}

}  // namespace

void init(std::source_location where) {
  std::lock_guard lock(g_mu);
  World& w = world();
  if (w.initialized) return;
  const trace::launcher::Place place = trace::launcher::place(trace::launcher::from_environment);
  const int size = place.size;
  int64_t offset = 0, error = 0;
  if (size > 1) {
    const std::string path = shim_path();
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
      throw Error("tc::dist::init: the launcher started " + std::to_string(size) + " ranks but " + path +
                  " does not load (" + dlerror() + "); install Open MPI (apt-get install openmpi-bin) or set TC_MPI_LIBRARY");
    }
    sym(h, "tc_mpi_init", w.mpi.init);
    sym(h, "tc_mpi_finalize", w.mpi.finalize);
    sym(h, "tc_mpi_abort", w.mpi.abort);
    sym(h, "tc_mpi_allreduce_sum_f32", w.mpi.allreduce_sum_f32);
    sym(h, "tc_mpi_bcast_f32", w.mpi.bcast_f32);
    sym(h, "tc_mpi_barrier", w.mpi.barrier);
    sym(h, "tc_mpi_clock_offset", w.mpi.clock_offset);
    sym(h, "tc_mpi_error", w.mpi.error);
    check(w.mpi.init(&w.rank, &w.size), "init");
    w.mpi_on = true;
    ::on_exit(finalize_at_exit, nullptr);
    check(w.mpi.clock_offset(8, &offset, &error), "init (clock offset)");
  }
  w.initialized = true;
  events::on_rank(w.rank, w.size, host_name(), place.job, offset, error);
  (void)where;
}

int rank() { return world().rank; }
int world_size() { return world().size; }

namespace {

// Runs the pending values of `ts` as one graph (trigger "collective").
void realize_all(const std::vector<Tensor>& ts, const std::source_location& where) {
  std::vector<Node*> outs;
  for (const Tensor& t : ts) {
    if (!t.defined()) throw Error("tc::dist: an empty tensor handle among the tensors");
    if (t.dtype() != DType::f32) throw Error("tc::dist: only f32 tensors travel; " + t.name() + " is " + dtype_name(t.dtype()));
    if (!t.is_materialized()) outs.push_back(t.node().get());
  }
  if (!outs.empty()) run_graph(cut(outs), Trigger::collective, where);
}

int64_t total_numel(const std::vector<Tensor>& ts) {
  int64_t n = 0;
  for (const Tensor& t : ts) n += t.numel();
  return n;
}

void pack(const std::vector<Tensor>& ts, std::vector<float>& buf) {
  buf.resize(static_cast<size_t>(total_numel(ts)));
  size_t at = 0;
  for (const Tensor& t : ts) {
    t.node()->data->copy_to_host(buf.data() + at, static_cast<size_t>(t.numel()) * sizeof(float));
    at += static_cast<size_t>(t.numel());
  }
}

// Copies buf back, tensor by tensor, into the buffers `dst` gives for each.
template <class Dst>
void unpack(const std::vector<Tensor>& ts, const std::vector<float>& buf, Dst&& dst) {
  size_t at = 0;
  for (const Tensor& t : ts) {
    dst(t)->copy_from_host(buf.data() + at, static_cast<size_t>(t.numel()) * sizeof(float));
    at += static_cast<size_t>(t.numel());
  }
}

}  // namespace

std::vector<Tensor> all_reduce_mean(const std::vector<Tensor>& tensors, std::source_location where) {
  std::vector<NodePtr> ins;
  int64_t total = 0;
  for (const Tensor& t : tensors) {
    if (!t.defined()) throw Error("tc::dist: an empty tensor handle among the tensors");
    if (t.dtype() != DType::f32) throw Error("tc::dist: only f32 tensors travel; " + t.name() + " is " + dtype_name(t.dtype()));
    ins.push_back(t.node());
    total += t.numel();
  }
  if (ins.empty()) return {};
  bool pending = false;
  for (const Tensor& t : tensors) pending = pending || !t.is_materialized();
  if (!pending) {
    // No graph to be part of (e.g. a loss read after mark_step()): it runs
    // now, with the arithmetic of the graph's collective.
    std::vector<float> buf;
    pack(tensors, buf);
    all_reduce_mean_inplace(buf.data(), total, static_cast<int64_t>(tensors.size()), where);
    std::vector<Tensor> out;
    out.reserve(tensors.size());
    unpack(tensors, buf, [&](const Tensor& t) {
      const Node& n = *t.node();
      auto b = allocate(n.numel() * static_cast<int64_t>(sizeof(float)), n.category);
      NodePtr leaf = make_data_node(b, n.dtype, n.shape, where, n.name);
      leaf->category = n.category;
      out.push_back(wrap(std::move(leaf)));
      return b;
    });
    return out;
  }
  // One collective node, the tensors packed flat; each result a view of it.
  NodePtr packed = make_node(Op::AllReduce, DType::f32, {total}, std::move(ins), {}, where);
  packed->category = tensors.front().category();
  const Tensor all = wrap(packed);  // eager mode: the collective runs here, once
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    const int64_t n = t.numel();
    Attrs range;
    range.ints = {0, at, at + n};
    NodePtr part = make_node(Op::Slice, DType::f32, {n}, {packed}, range, where);
    part->category = t.category();
    NodePtr view = make_node(Op::Reshape, DType::f32, t.shape(), {part}, {}, where);
    view->name = t.name();
    view->category = t.category();
    out.push_back(wrap(std::move(view)));
    at += n;
  }
  return out;
}

void broadcast(const std::vector<Tensor>& tensors, std::source_location where) {
  World& w = world();
  realize_all(tensors, where);
  std::vector<float> buf;
  pack(tensors, buf);
  const uint64_t start = events::ticks();
  const int64_t seq = ++w.seq;
  if (w.mpi_on) check(w.mpi.bcast_f32(buf.data(), static_cast<int64_t>(buf.size()), 0), "broadcast");
  events::on_collective(start, seq, "broadcast", static_cast<int64_t>(buf.size() * sizeof(float)), static_cast<int64_t>(tensors.size()), where);
  if (w.mpi_on && w.rank != 0) unpack(tensors, buf, [](const Tensor& t) { return t.node()->data; });
}

void barrier(std::source_location where) {
  World& w = world();
  const uint64_t start = events::ticks();
  const int64_t seq = ++w.seq;
  if (w.mpi_on) check(w.mpi.barrier(), "barrier");
  events::on_collective(start, seq, "barrier", 0, 0, where);
}

}  // namespace tc::dist

// The one place an all-reduce happens, for the eager executor and compiled code (collective.h).
namespace tc::detail {

void all_reduce_mean_inplace(float* data, int64_t n, int64_t tensors, const std::source_location& where) {
  tc::dist::World& w = tc::dist::world();
  const uint64_t start = events::ticks();
  const int64_t seq = ++w.seq;
  if (w.mpi_on) {
    tc::dist::check(w.mpi.allreduce_sum_f32(data, n), "all_reduce_mean");
    const float scale = 1.0f / static_cast<float>(w.size);
    for (int64_t i = 0; i < n; ++i) data[i] *= scale;
  }
  events::on_collective(start, seq, "all_reduce_mean", n * static_cast<int64_t>(sizeof(float)), tensors, where);
}

}  // namespace tc::detail
