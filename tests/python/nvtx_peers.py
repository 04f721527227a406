"""NVTX from Python, knowing nothing of tc (tests/collect/nvtx_python_test.cpp).

torch.cuda.nvtx (on a CPU-only machine: it needs no GPU) and the `nvtx`
package, each with its own copy of NVTX, so libtc_nvtx is initialized twice:

  torch:  range_push("torch.outer") [ range_push("torch.inner") ] x3,
          mark("torch.mark"), range("torch.ctx") as a context manager
  nvtx:   annotate("nvtx.annotated", domain="pydomain", color="blue") as a
          decorator, called twice; push_range("nvtx.pushed", domain="pydomain",
          payload=7) / pop_range; mark("nvtx.mark", domain="pydomain")
Prints "done".
"""
import torch
import nvtx

torch.cuda.nvtx.range_push("torch.outer")
for _ in range(3):
    torch.cuda.nvtx.range_push("torch.inner")
    torch.cuda.nvtx.range_pop()
torch.cuda.nvtx.mark("torch.mark")
torch.cuda.nvtx.range_pop()
with torch.cuda.nvtx.range("torch.ctx"):
    pass


@nvtx.annotate("nvtx.annotated", domain="pydomain", color="blue")
def work():
    return sum(range(100))


work()
work()
nvtx.push_range("nvtx.pushed", domain="pydomain", payload=7)
nvtx.pop_range(domain="pydomain")
nvtx.mark("nvtx.mark", domain="pydomain")
print("done")
