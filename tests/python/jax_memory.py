"""A small JAX training loop for tc's memory tests (tests/collect/jax_memory_python_test.cpp).

  python jax_memory.py [--batch 16] [--steps 5]     trains an MLP with a jitted step (params, x, y) -> (params, loss)
                                                     and prints "xla_peak BATCH BYTES": XLA's own memory_analysis()
                                                     of the step it ran (argument + output + temp - alias)
  python jax_memory.py --analyse-at N               prints "xla_peak N BYTES" for the same step compiled at batch N,
                                                     without running it

  python jax_memory.py --oom-at N                   the training, then one step at batch N with 256 MiB left to map
                                                     (RLIMIT_AS): XLA's RESOURCE_EXHAUSTED ends the script

The last batch is short (--examples not a multiple of --batch): a second batch size.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

FEATURES, HIDDEN, CLASSES = 256, 512, 10


def loss_fn(params, x, y):
    hidden = jax.nn.relu(jnp.dot(x, params["w1"]) + params["b1"])
    log_p = jax.nn.log_softmax(jnp.dot(hidden, params["w2"]))
    return -jnp.mean(log_p[jnp.arange(y.shape[0]), y])


@jax.jit
def train_step(params, x, y):
    value, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {k: params[k] - 0.05 * grads[k] for k in params}, value


def init():
    r = np.random.default_rng(0)
    return {"w1": jnp.asarray(r.normal(0, 0.05, (FEATURES, HIDDEN)), jnp.float32), "b1": jnp.zeros((HIDDEN,), jnp.float32),
            "w2": jnp.asarray(r.normal(0, 0.05, (HIDDEN, CLASSES)), jnp.float32)}


def xla_peak(params, batch):
    m = train_step.lower(params, jax.ShapeDtypeStruct((batch, FEATURES), jnp.float32),
                         jax.ShapeDtypeStruct((batch,), jnp.int32)).compile().memory_analysis()
    return m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--examples", type=int, default=84)
    p.add_argument("--analyse-at", type=int, default=0)
    p.add_argument("--oom-at", type=int, default=0)
    a = p.parse_args()
    params = init()
    if a.analyse_at:
        print("xla_peak", a.analyse_at, xla_peak(params, a.analyse_at))
        return
    r = np.random.default_rng(1)
    x = r.normal(0, 1, (a.examples, FEATURES)).astype(np.float32)
    y = r.integers(0, CLASSES, a.examples).astype(np.int32)
    for i in range(0, a.examples, a.batch):
        params, loss = train_step(params, x[i:i + a.batch], y[i:i + a.batch])
    loss.block_until_ready()
    print("xla_peak", a.batch, xla_peak(params, a.batch), flush=True)
    if a.oom_at:  # one step at batch N with 256 MiB more to map (RLIMIT_AS): XLA's RESOURCE_EXHAUSTED ends the script
        import resource

        big, labels = r.standard_normal((a.oom_at, FEATURES), dtype=np.float32), np.zeros(a.oom_at, np.int32)
        with open("/proc/self/status") as f:
            size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (size + (256 << 20), size + (256 << 20)))
        train_step(params, big, labels)[1].block_until_ready()


if __name__ == "__main__":
    main()
