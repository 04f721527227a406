"""A small torch.compile training loop for tc's memory tests (tests/collect/torch_memory_python_test.cpp).

  python torch_memory.py [--batch 64] [--steps 6]   trains an MLP classifier (torch.compile, backend aot_eager: the
      [--device cuda]                                compiled autograd graph without Inductor's build) with AdamW
  python torch_memory.py --oom-at N                 the same, then one step at batch N with 256 MiB left to map (RLIMIT_AS):
                                                     torch's CPU allocator fails ("can't allocate memory"), the script
                                                     ends with that error
  python torch_memory.py --truth N [N ...]          trains the same model for 3 steps at each batch N (a model of its
                                                     own each) and prints "tensors N BYTES": parameters + gradients +
                                                     AdamW's state + the activations autograd saved for backward,
                                                     counted by torch's own saved-tensor hooks (what tc's hook cannot
                                                     use, as they break torch.func; its count comes from the graph)
"""
import argparse

import torch

FEATURES, HIDDEN, CLASSES = 64, 256, 10


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.GELU(), torch.nn.Linear(HIDDEN, HIDDEN),
                               torch.nn.GELU(), torch.nn.Linear(HIDDEN, CLASSES))


def address_space_limit(extra):
    """Lets this process map `extra` bytes more than it has now (RLIMIT_AS): a larger tensor then fails to allocate."""
    import resource

    with open("/proc/self/status") as f:
        size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (size + extra, size + extra))


def train(batch, steps, saved=None, device="cpu", oom_at=0):
    net = model().to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    step = torch.compile(net, backend="aot_eager")
    g = torch.Generator().manual_seed(1)
    for i in range(steps + (1 if oom_at else 0)):
        if i == steps:  # the step at oom_at, with 256 MiB left to map: torch's CPU allocator fails
            address_space_limit(256 << 20)
            batch = oom_at
        x = torch.randn(batch, FEATURES, generator=g).to(device)
        y = torch.randint(0, CLASSES, (batch,), generator=g).to(device)
        if saved is not None:
            saved.clear()
            with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
                loss = torch.nn.functional.cross_entropy(step(x), y)
        else:
            loss = torch.nn.functional.cross_entropy(step(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    return net, opt


def storage_bytes(tensors, exclude=()):
    seen = {}
    for t in tensors:
        if isinstance(t, torch.Tensor):
            st = t.untyped_storage()
            if st.data_ptr() not in exclude:
                seen[st.data_ptr()] = st.nbytes()
    return seen


def truth(batch):
    saved = []
    net, opt = train(batch, 3, saved)
    params = storage_bytes(net.parameters())
    state = storage_bytes(v for s in opt.state.values() for v in s.values())
    activations = storage_bytes(saved, exclude=params)
    # Each parameter's gradient is its size (zero_grad() has set them to None by now).
    total = 2 * sum(params.values()) + sum(state.values()) + sum(activations.values())
    print("tensors %d %d" % (batch, total), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--truth", type=int, nargs="*")
    p.add_argument("--device", default="cpu", help="cuda: scripts/gpu-check.sh's run of torch.cuda's allocator path")
    p.add_argument("--oom-at", type=int, default=0, help="after the steps, one at this batch with 256 MiB left to map")
    a = p.parse_args()
    if a.truth:
        for b in a.truth:
            truth(b)
        return
    train(a.batch, a.steps, device=a.device, oom_at=a.oom_at)
    print("trained", a.batch, flush=True)


if __name__ == "__main__":
    main()
