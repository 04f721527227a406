"""A small text classifier trained with jax.jit on Debian's fortunes.

The same corpus, categories and tokens as torch_compile_classifier.py (and
samples/text_classifier.cpp); it falls into the traps tc diagnoses, each
with the flag that fixes it:

  dynamic padding    every batch is padded to its own longest quote, so the
                     sequence length changes from batch to batch and jax.jit
                     traces and compiles the step again for each new length;
                     --pad-to 128 pads every batch to one length, or
                     --buckets 32,64,128 pads to the next bucket.
  short last batch   --examples not a multiple of --batch-size leaves a short
                     last batch (a new batch size: one more compilation);
                     --drop-last drops it.
  float(loss)        reading the loss each step waits for the step's
                     computation (JAX dispatches asynchronously);
                     --no-float keeps the losses on the device and reads the
                     last one after the loop.

Run it under tc:  tc-profile -o run.tcdb -- python jax_classifier.py
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import fortunes  # noqa: E402  (this folder)
from fortunes import VOCAB  # noqa: E402


def init_params(classes, dim, seed):
    r = np.random.default_rng(seed)
    return {
        "embed": jnp.asarray(r.normal(0, 0.1, (VOCAB, dim)), jnp.float32),
        "hidden": jnp.asarray(r.normal(0, 1 / np.sqrt(dim), (dim, dim)), jnp.float32),
        "out": jnp.asarray(r.normal(0, 1 / np.sqrt(dim), (dim, classes)), jnp.float32),
    }


def loss_fn(params, token_ids, targets):
    keep = (token_ids != 0)[..., None].astype(jnp.float32)
    x = jax.nn.relu(params["embed"][token_ids] @ params["hidden"])
    pooled = (x * keep).sum(1) / jnp.maximum(keep.sum(1), 1.0)
    logits = pooled @ params["out"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), targets[:, None], axis=1))


@jax.jit
def train_step(params, token_ids, targets):
    loss, grads = jax.value_and_grad(loss_fn)(params, token_ids, targets)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fortunes.add_arguments(p)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--no-float", action="store_true", help="do not read the loss each step; read the last one after the loop")
    a = p.parse_args()
    categories, seqs, labels = fortunes.load(a)

    params = init_params(len(categories), a.dim, a.seed)
    losses = []
    for rows, targets in fortunes.batches(a, seqs, labels, a.epochs):
        params, loss = train_step(params, np.asarray(rows, np.int32), np.asarray(targets, np.int32))
        if a.no_float:
            losses.append(loss)
        else:
            losses.append(float(loss))  # waits for the step: a forced evaluation each step
    fortunes.report(a, len(losses), len(seqs), float(losses[-1]) if losses else float("nan"))


if __name__ == "__main__":
    main()
