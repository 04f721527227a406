"""What a program sees of its own interpreter, printed so that a run under tc-profile can be diffed against a plain one
(tests/collect/hook_transparency_test.cpp). One case per run: python hook_transparency.py CASE.

  state   sys.path, sys.meta_path, sys.path_importer_cache, the modules imported, atexit's callbacks, and the module
          `import sitecustomize` returns (the test puts a sitecustomize of its own on PYTHONPATH)
  torch   the modules imported by `import torch`, then three optimizer steps
  fork    two multiprocessing workers by fork(), each with 5 optimizer steps, then 5 in the parent
  spawn   two workers by spawn (each a new interpreter, which loads the hook again), with no torch
  exit    prints, then os._exit(3) with no flush of Python's buffers but its own
  checkpoint  an activation checkpoint around a torch.compile'd block (how often its forward runs), torch.func.grad,
          and torch.autograd.backward's name and signature: the hook's memory count must not change them
  compile torch.compile (backend eager) introspection: torch.compile's own, what it returns for a module, a function
          and as a decorator, Module.compile(), copies and pickles, two training steps
  jax     jax.jit introspection: the type, the attributes, .lower()'s error, a call, the modules imported
  jaxexit jitted calls, then os._exit(0); jaxkill: the same, then SIGTERM to itself
  xla     (torch_xla) what torch.Tensor's reads, copies and printing are, and an XLA tensor read back: the hook must
          leave CPU tensors' methods torch's own
"""
import os
import sys


def state():
    import atexit

    print("path", sys.path)
    print("meta_path", [getattr(f, "__name__", type(f).__name__) for f in sys.meta_path])
    print("path_importer_cache", sorted(k for k in sys.path_importer_cache if isinstance(k, str)))
    print("modules", sorted(sys.modules))
    print("atexit", atexit._ncallbacks())
    try:
        import sitecustomize
    except ImportError as e:
        print("no sitecustomize:", e)
    else:
        print("sitecustomize", sitecustomize.__name__, getattr(sitecustomize, "USER_VALUE", None),
              os.path.basename(os.path.dirname(sitecustomize.__file__)))


def steps(n, seed=0):
    import torch

    torch.manual_seed(seed)
    w = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([w], lr=0.1)
    for _ in range(n):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    return round(float(w.detach().sum()), 6)


def work(i):
    return i, steps(5, i)


def square(i):
    return i, i * i, sys.path, "sitecustomize" in sys.modules


def pool(method):
    import multiprocessing

    if method == "fork":
        import torch  # noqa: F401 (the workers inherit it)
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as p:
        print(method, sorted(p.map(work if method == "fork" else square, range(2))))
    if method == "fork":
        print("parent", steps(5))


def compile_case():
    import copy
    import inspect
    import pickle

    import torch

    torch.manual_seed(0)
    tc = torch.compile
    print("compile", tc.__name__, tc.__module__, tc.__qualname__, tc.__doc__ == torch._dynamo.optimize.__doc__, inspect.signature(tc))
    m = torch.nn.Linear(4, 2)
    c = torch.compile(m, backend="eager")
    print("module", type(c).__name__, isinstance(c, torch.nn.Module), c._orig_mod is m, type(c.forward).__name__, sorted(vars(c)))
    print("copy", type(copy.deepcopy(c)).__name__, type(copy.deepcopy(c).forward).__name__)
    try:
        print("pickle", type(pickle.loads(pickle.dumps(c))).__name__)
    except Exception as e:
        print("pickle", type(e).__name__)

    def double(x, scale=2):
        return x * scale

    f = torch.compile(double, backend="eager")
    print("function", f.__name__, f.__qualname__, inspect.signature(f), inspect.unwrap(f) is double, f.__wrapped__ is double,
          sorted(k for k in vars(f) if k != "__wrapped__"))

    @torch.compile(backend="eager")
    def inc(x):
        return x + 1

    print("decorator", inc.__name__, inspect.unwrap(inc).__name__, inc(torch.ones(2)).tolist(), f(torch.ones(2)).tolist())
    m.compile(backend="eager")
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for n in (3, 5):
        loss = c(torch.ones(n, 4)).sum() + m(torch.ones(n, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("steps", round(loss.item(), 4), torch.compile is tc)


def jax_case():
    import jax
    import jax.numpy as jnp

    def f(x, y):
        """f's doc"""
        return x * y + 1

    j = jax.jit(f)
    print("type", type(j), type(j).__module__, type(j).__qualname__)
    print("attrs", sorted(a for a in dir(j) if not a.startswith("__") or a in ("__wrapped__", "__doc__", "__name__")))
    print("name", j.__name__, j.__doc__, j.__wrapped__ is f, j._fun is f)
    try:
        j.lower()
    except Exception as e:
        print("lower", type(e).__name__, e)
    d = jax.jit(static_argnums=1)(f)
    print("decorated", type(d), d(jnp.float32(2), 3))
    print("call", j(jnp.float32(2), jnp.float32(3)), j.lower(jnp.float32(2), jnp.float32(3)).as_text().count("multiply"))
    print("jit", jax.jit.__module__, jax.jit.__name__, jax.jit is jax._src.api.jit)
    print("modules", sorted(m for m in sys.modules if not m.startswith(("jax", "jaxlib", "ml_dtypes", "numpy"))))


def xla_case():
    import torch
    import torch_xla

    reads = ("item", "__bool__", "__float__", "__int__", "to", "tolist", "cpu", "numpy")
    print("reads", [(name, type(getattr(torch.Tensor, name)).__name__) for name in reads])
    print("from C", [getattr(torch.Tensor, name) is getattr(torch._C.TensorBase, name) for name in reads])
    printing = ("__repr__", "__format__")
    print("printing from torch", [os.path.basename(getattr(torch.Tensor, name).__code__.co_filename) for name in printing])
    x = (torch.ones(3).to(torch_xla.device()) * 2).sum()
    print("xla", x.item(), bool(x > 1), float(x), int(x))
    v = torch.arange(3.0).to(torch_xla.device()) * 2
    print("host", v.tolist(), v.cpu().sum().item() * 0)


def jax_steps_then(end):
    import jax
    import jax.numpy as jnp

    step = jax.jit(lambda x: x * 2 + 1)
    x = jnp.ones(3)
    for _ in range(5):
        x = step(x)
    print("steps", 5, float(x.sum()), flush=True)
    if end == "exit":
        os._exit(0)
    import signal

    os.kill(os.getpid(), signal.SIGTERM)


def checkpoint_case():
    """What the hook's memory count must leave alone: a non-reentrant activation checkpoint (its saved tensors unpack
    by running the forward again: reading them would), torch.func's transforms (they refuse saved-tensor hooks), and
    torch.autograd.backward as the program sees it."""
    import inspect

    import torch
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 8))
    c = torch.compile(m, backend="aot_eager")
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    forwards = [0]

    def block(x):
        forwards[0] += 1
        return c(x)

    for _ in range(3):
        checkpoint(block, torch.randn(4, 8, requires_grad=True), use_reentrant=False).sum().backward()
        opt.step()
        opt.zero_grad()
    print("checkpointed forwards", forwards[0])
    g = torch.func.grad(lambda x: (x.sin() * x).sum())(torch.ones(3))
    print("func.grad", [round(v, 4) for v in g.tolist()])
    b = torch.autograd.backward
    print("backward", b.__name__, b.__module__, inspect.signature(b), b.__doc__ is not None)


def main():
    case = sys.argv[1]
    if case == "state":
        state()
    elif case == "torch":
        import torch  # noqa: F401

        print("modules", sorted(sys.modules))
        print("steps", steps(3))
    elif case in ("fork", "spawn"):
        pool(case)
    elif case == "exit":
        print("before exit", flush=True)
        sys.stderr.write("unflushed stderr is written as it goes\n")
        os._exit(3)
    elif case == "compile":
        compile_case()
    elif case == "checkpoint":
        checkpoint_case()
    elif case == "jax":
        jax_case()
    elif case == "xla":
        xla_case()
    elif case in ("jaxexit", "jaxkill"):
        jax_steps_then(case[3:])
    else:
        sys.exit("unknown case " + case)


if __name__ == "__main__":
    main()
