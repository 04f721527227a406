"""tc's Python hook (profiler/capture/python/sitecustomize.py) per call: each operation it could touch, timed
plainly and under the hook (PYTHONPATH = the hook's directory, its JAX and PyTorch/XLA logs into a temporary
directory, as tc-profile sets them; no rings: what is measured is the hook's Python, not tc's capture). Prints a
table: microseconds per call, best of 5 runs of --calls calls.

  python3 bench/hook_bench.py --hook-dir build/lib/tc/python --python .tc-test-venv/bin/python \
      --xla-python .tc-test-venv-xla/bin/python      (or: ninja -C build tc-bench-hook)

Rows: torch (CPU tensors, torch alone; a torch.compile'd module's call and an optimizer step with its first compiled
call, TORCH_TRACE set in both runs; a whole training step, past the first steps where the hook counts the tensors
and walks the autograd graph before backward: what every later step costs), jax (a jitted call of the program's own function, an eager jnp op: jax's
own jitted functions pass through the hook too), torch_xla (CPU tensors and XLA tensors once torch_xla is imported).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def per_call_us(fn, calls):
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / calls / 1000)
    return best


def child(case, calls):
    rows = {}
    if case == "jax":
        import jax
        import jax.numpy as jnp

        x = jnp.ones(4)
        f = jax.jit(lambda v: v + 1)
        f(x).block_until_ready()
        jnp.sin(x).block_until_ready()
        rows["jax: jitted call of the program's function"] = per_call_us(lambda: f(x), calls)
        rows["jax: eager jnp.sin (jax's own jitted function)"] = per_call_us(lambda: jnp.sin(x), calls)
        return rows
    import torch

    if case == "torch_train":  # its own process: the first optimizer that steps is the one whose steps the hook marks
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 256), torch.nn.GELU(),
                                  torch.nn.Linear(256, 10))
        compiled = torch.compile(net, backend="aot_eager")
        opt = torch.optim.AdamW(net.parameters())
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

        def train():
            torch.nn.functional.cross_entropy(compiled(x), y).backward()
            opt.step()
            opt.zero_grad()

        for _ in range(5):  # compiled, and past the hook's first 3 graph walks and tensor counts
            train()
        rows["torch: training step of a torch.compile'd MLP (aot_eager, AdamW)"] = per_call_us(train, max(1, calls // 20))
        return rows
    c = torch.ones(())
    v = torch.ones(4)
    rows[case + ": CPU tensor .item()"] = per_call_us(c.item, calls)
    rows[case + ": CPU tensor bool()"] = per_call_us(lambda: bool(c), calls)
    rows[case + ": CPU tensor .to(float64)"] = per_call_us(lambda: v.to(torch.float64), calls)
    rows[case + ": CPU tensor .to(float32) (no copy)"] = per_call_us(lambda: v.to(torch.float32), calls)
    rows[case + ": CPU tensor .tolist()"] = per_call_us(v.tolist, calls)
    rows[case + ": CPU tensor .cpu()"] = per_call_us(v.cpu, calls)
    rows[case + ": CPU tensor format()"] = per_call_us(lambda: format(c, ".3f"), calls)
    if case == "torch":
        model = torch.nn.Linear(4, 1)
        compiled = torch.compile(model, backend="eager")
        opt = torch.optim.SGD(model.parameters(), lr=0.0)
        compiled(v)

        def step():
            compiled(v)
            opt.step()

        rows[case + ": call of a torch.compile'd module (eager)"] = per_call_us(lambda: compiled(v), calls)
        rows[case + ": optimizer step + its first compiled call"] = per_call_us(step, calls)
    if case == "torch_xla":
        import torch_xla

        dev = torch_xla.device()
        d = (torch.ones((), device=dev) * 2)
        torch_xla.sync()
        d.item()
        few = max(1, calls // 20)
        rows[case + ": XLA tensor .item()"] = per_call_us(d.item, few)
        rows[case + ": CPU tensor .to(xla device)"] = per_call_us(lambda: v.to(dev), few)
        x = torch.ones(4, device=dev)
        rows[case + ": XLA tensor .to(float64)"] = per_call_us(lambda: x.to(torch.float64), few)
    return rows


def run(python, case, hook_dir, calls):
    """{row: (plain us, hook us)} for one case."""
    out = {}
    with tempfile.TemporaryDirectory() as logs:
        for hooked in (False, True):
            env = dict(os.environ, JAX_PLATFORMS="cpu", PJRT_DEVICE="CPU")
            env.pop("PYTHONPATH", None)
            if hooked:
                env.update(PYTHONPATH=hook_dir, TC_JAX_LOG_DIR=logs, TC_XLA_LOG_DIR=logs)
            env.update(TORCH_TRACE=os.path.join(logs, "hooked" if hooked else "plain"))  # torch's trace either way
            r = subprocess.run([python, os.path.abspath(__file__), "--child", case, "--calls", str(calls)], env=env,
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("%s --child %s failed:\n%s" % (python, case, r.stderr[-2000:]))
            for row, us in json.loads(r.stdout.strip().splitlines()[-1]).items():
                out.setdefault(row, [None, None])[hooked] = us
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hook-dir", help="the directory of tc's sitecustomize.py (BUILD/lib/tc/python)")
    ap.add_argument("--python", help="an interpreter with torch and jax")
    ap.add_argument("--xla-python", help="an interpreter with torch_xla")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.calls)))
        return
    if not a.hook_dir or not os.path.exists(os.path.join(a.hook_dir, "sitecustomize.py")):
        sys.exit("hook_bench: --hook-dir must hold tc's sitecustomize.py (BUILD/lib/tc/python)")
    rows = {}
    for python, cases in ((a.python, ("torch", "torch_train", "jax")), (a.xla_python, ("torch_xla",))):
        if not python or not os.path.exists(python):
            print("(no interpreter for %s: skipped)" % ", ".join(cases))
            continue
        for case in cases:
            rows.update(run(python, case, os.path.abspath(a.hook_dir), a.calls))
    width = max(len(r) for r in rows) if rows else 10
    print("%-*s  %10s  %10s  %10s" % (width, "us per call", "plain", "hook", "hook-plain"))
    for row, (plain, hooked) in rows.items():
        print("%-*s  %10.3f  %10.3f  %+10.3f" % (width, row, plain, hooked, hooked - plain))


if __name__ == "__main__":
    main()
