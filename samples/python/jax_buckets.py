"""jax.jit with bucketed lengths that repeat: a script whose truth is known.

Each batch's token_ids is padded to a bucket, 32, 64 or 128, in a fixed order
with repeats (32: 4 steps, 64: 5, 128: 2; 11 steps), and the last batch is short
(4 rows instead of 8). Each new shape compiles train_step once; a repeat is a
cache hit. Prints the truth as one JSON line.

  tc-profile -o run.tcdb -- python jax_buckets.py
"""
import jax
import jax.numpy as jnp

from bucket_truth import LENGTHS, print_truth, rows

# LENGTHS: token_ids' padded length per step; rows(i): the rows of step i's batch (bucket_truth.py).
STEPS = len(LENGTHS)


@jax.jit
def train_step(params, token_ids, targets):
    def loss_of(p):
        logits = p["embed"][token_ids].mean(axis=1) @ p["out"]
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(targets.shape[0]), targets])

    loss, grads = jax.value_and_grad(loss_of)(params)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss


def main():
    key = jax.random.PRNGKey(0)
    params = {"embed": jax.random.normal(key, (100, 16)), "out": jax.random.normal(key, (16, 4))}
    loss = None
    for i, n in enumerate(LENGTHS):
        key, k1, k2 = jax.random.split(key, 3)
        r = rows(i)
        params, loss = train_step(params, jax.random.randint(k1, (r, n), 1, 100), jax.random.randint(k2, (r,), 0, 4))
    loss.block_until_ready()
    print_truth(STEPS)


if __name__ == "__main__":
    main()
