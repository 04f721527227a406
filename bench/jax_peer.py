"""JAX peer of tc-bench-compiler: the same models, shapes and optimizer,
one jit-compiled training step, timed the same way (first step, then the
median of --steps steps). Prints one RESULT line for the harness.

Run by tc-bench-compiler with a Python that has jax (a benchmark peer only;
tc does not depend on Python).
"""
import jax
import jax.numpy as jnp
import numpy as np

import peer_common

MLP_BATCH, MLP_IN, MLP_HIDDEN, CLASSES = 128, 784, 512, 10
TF_BATCH, TF_SEQ, TF_DIM, TF_HEADS, TF_FF = 16, 64, 128, 4, 512
LR = 0.01


def linear(key, n_in, n_out):
    bound = 1.0 / np.sqrt(n_in)
    kw, kb = jax.random.split(key)
    return {"w": jax.random.uniform(kw, (n_in, n_out), jnp.float32, -bound, bound),
            "b": jax.random.uniform(kb, (n_out,), jnp.float32, -bound, bound)}


def apply_linear(p, x):
    return x @ p["w"] + p["b"]


def cross_entropy(logits, y):
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=-1))


def layer_norm(p, x, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + eps) * p["g"] + p["b"]


def mlp_model(key):
    k = jax.random.split(key, 3)
    params = [linear(k[0], MLP_IN, MLP_HIDDEN), linear(k[1], MLP_HIDDEN, MLP_HIDDEN),
              linear(k[2], MLP_HIDDEN, CLASSES)]

    def loss_fn(params, x, y):
        h = jax.nn.relu(apply_linear(params[0], x))
        h = jax.nn.relu(apply_linear(params[1], h))
        return cross_entropy(apply_linear(params[2], h), y)

    rng = np.random.default_rng(7)
    x = jnp.asarray(rng.standard_normal((MLP_BATCH, MLP_IN), dtype=np.float32))
    y = jnp.asarray(rng.integers(0, CLASSES, MLP_BATCH, dtype=np.int32))
    return params, loss_fn, x, y


def transformer_model(key):
    k = jax.random.split(key, 7)
    ln = lambda: {"g": jnp.ones((TF_DIM,), jnp.float32), "b": jnp.zeros((TF_DIM,), jnp.float32)}
    params = {"q": linear(k[0], TF_DIM, TF_DIM), "k": linear(k[1], TF_DIM, TF_DIM),
              "v": linear(k[2], TF_DIM, TF_DIM), "o": linear(k[3], TF_DIM, TF_DIM),
              "ff1": linear(k[4], TF_DIM, TF_FF), "ff2": linear(k[5], TF_FF, TF_DIM),
              "n1": ln(), "n2": ln(), "head": linear(k[6], TF_DIM, CLASSES)}
    dh = TF_DIM // TF_HEADS

    def loss_fn(p, x, y):
        b, t, d = x.shape

        def split(z):
            return z.reshape(b, t, TF_HEADS, dh).transpose(0, 2, 1, 3)

        q, kk, v = (split(apply_linear(p[n], x)) for n in ("q", "k", "v"))
        s = (q @ kk.transpose(0, 1, 3, 2)) * (1.0 / np.sqrt(dh))
        ctx = jax.nn.softmax(s, axis=-1) @ v
        ctx = ctx.transpose(0, 2, 1, 3).reshape(b, t, d)
        h = layer_norm(p["n1"], x + apply_linear(p["o"], ctx))
        f = apply_linear(p["ff2"], jax.nn.relu(apply_linear(p["ff1"], h)))
        h = layer_norm(p["n2"], h + f)
        return cross_entropy(apply_linear(p["head"], jnp.mean(h, axis=1)), y)

    rng = np.random.default_rng(7)
    x = jnp.asarray(rng.standard_normal((TF_BATCH, TF_SEQ, TF_DIM), dtype=np.float32))
    y = jnp.asarray(rng.integers(0, CLASSES, TF_BATCH, dtype=np.int32))
    return params, loss_fn, x, y


def main():
    a = peer_common.arguments(__doc__).parse_args()
    globals()["TF_SEQ"] = a.seq  # read by transformer_model
    params, loss_fn, x, y = (mlp_model if a.model == "mlp" else transformer_model)(jax.random.PRNGKey(1))

    @jax.jit
    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), loss

    state = {"params": params}

    def run():
        state["params"], loss = step(state["params"], x, y)
        return loss

    peer_common.time_steps(run, a.steps, wait=lambda loss: loss.block_until_ready())


if __name__ == "__main__":
    main()
