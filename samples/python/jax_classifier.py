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
import os
import random
import sys

import jax
import jax.numpy as jnp
import numpy as np

from fortunes import FORTUNES, VOCAB, read_fortunes, tokenize  # noqa: E402  (this folder)


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
    p.add_argument("--data-dir", default=FORTUNES)
    p.add_argument("--categories", default="definitions,people,politics,zippy")
    p.add_argument("--examples", type=int, default=0, help="train on the first N shuffled quotes (0: all)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--pad-to", type=int, default=0, help="pad every batch to this length (the fix for dynamic padding)")
    p.add_argument("--buckets", default="", help="pad each batch to the next of these lengths, e.g. 32,64,128")
    p.add_argument("--drop-last", action="store_true", help="drop the short last batch")
    p.add_argument("--no-float", action="store_true", help="do not read the loss each step; read the last one after the loop")
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--print-shapes", action="store_true", help="print each step's batch size and padded length")
    a = p.parse_args()

    categories = [c for c in a.categories.split(",") if c]
    data = []
    for label, cat in enumerate(categories):
        path = os.path.join(a.data_dir, cat)
        try:
            data += [(q, label) for q in read_fortunes(path)]
        except OSError as e:
            sys.exit(f"cannot read {path} ({e.strerror}; install Debian's `fortunes` package, or pass --data-dir)")
    random.Random(a.seed).shuffle(data)
    if a.examples:
        data = data[: a.examples]
    seqs = [tokenize(q, a.max_length) for q, _ in data]
    labels = [l for _, l in data]
    buckets = sorted(int(b) for b in a.buckets.split(",") if b)

    def padded_length(longest):
        if a.pad_to:
            return a.pad_to
        for b in buckets:
            if longest <= b:
                return b
        return longest  # dynamic padding: the batch's longest quote

    params = init_params(len(categories), a.dim, a.seed)
    losses = []
    shapes = []
    step = 0
    for epoch in range(a.epochs):
        for start in range(0, len(seqs), a.batch_size):
            rows = seqs[start : start + a.batch_size]
            if a.drop_last and len(rows) < a.batch_size:
                break
            length = padded_length(max(len(s) for s in rows))
            token_ids = np.zeros((len(rows), length), np.int32)
            for i, s in enumerate(rows):
                token_ids[i, : min(len(s), length)] = s[:length]
            targets = np.asarray(labels[start : start + len(rows)], np.int32)
            shapes.append(f"{len(rows)}x{length}")
            params, loss = train_step(params, token_ids, targets)
            if a.no_float:
                losses.append(loss)
            else:
                losses.append(float(loss))  # waits for the step: a forced evaluation each step
            step += 1
    last = float(losses[-1]) if losses else float("nan")
    if a.print_shapes:
        print("shapes:", " ".join(shapes))
    print(f"{step} steps, {len(seqs)} examples, batch {a.batch_size}, last loss {last:.4f}")


if __name__ == "__main__":
    main()
