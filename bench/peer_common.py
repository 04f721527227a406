"""What tc-bench-compiler's Python peers (jax_peer.py, torch_peer.py) share:
their command line, and the timing of the training step with the RESULT line
the harness reads."""
import argparse
import statistics
import time


def arguments(description):
    """The peers' common options (--model, --steps, --seq); a peer adds its own."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", choices=["mlp", "transformer"], required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seq", type=int, default=64, help="Transformer sequence length")
    return ap


def time_steps(step, steps, wait=lambda loss: loss):
    """Times step() (which returns the loss): its first call (first_ms, waited for
    by reading the loss), then `steps` calls, each until wait(loss) returns (the
    median, largest and mean: step_ms, step_max_ms, step_mean_ms), and prints
    them with the first and last loss as one RESULT line."""
    t0 = time.perf_counter()
    loss_first = float(step())
    first_ms = (time.perf_counter() - t0) * 1e3
    times = []
    loss = loss_first
    for _ in range(steps):
        t = time.perf_counter()
        loss = wait(step())
        times.append((time.perf_counter() - t) * 1e3)
    print(f"RESULT first_ms={first_ms:.3f} step_ms={statistics.median(times):.4f} "
          f"step_max_ms={max(times):.4f} step_mean_ms={statistics.mean(times):.4f} "
          f"loss_first={loss_first:.6f} loss_last={float(loss):.6f}")
