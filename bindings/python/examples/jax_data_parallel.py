"""Data-parallel training in JAX with psdp's all-reduce inside jit, checked against a single process.

    build/bin/psdp-run -n 2 -- python3 bindings/python/examples/jax_data_parallel.py

Every rank computes the gradient of the MLP of mlp_data.py on its share of each global batch; one jit-compiled
step averages the gradients over the ranks with psdp.jax.all_reduce (threading the ordering token through
every leaf of the gradient) and applies SGD. Rank 0 also trains the same model on the whole batches alone and
prints both loss curves, which must agree (to float64 rounding: the sums run in another order).
Exit status 1 if the curves differ.
"""

import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import mlp_data  # noqa: E402
import psdp  # noqa: E402
import psdp.jax  # noqa: E402


def loss_fn(params, x, y):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = jnp.tanh(h)
    return jnp.mean((h - y) ** 2)


def make_step(comm_key: int | None):
    """One SGD step; with a communicator key, the gradients (and the reported loss) are averaged over it."""

    @jax.jit
    def step(params, x, y, token):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        if comm_key is not None:
            leaves, tree = jax.tree.flatten(grads)
            averaged = []
            for leaf in leaves:
                leaf, token = psdp.jax.all_reduce(leaf, token, comm=comm_key, op=psdp.AVG)
                averaged.append(leaf)
            grads = jax.tree.unflatten(tree, averaged)
            loss, token = psdp.jax.all_reduce(loss, token, comm=comm_key, op=psdp.AVG)
        params = jax.tree.map(lambda p, g: p - mlp_data.LEARNING_RATE * g, params, grads)
        return params, loss, token

    return step


def train(rank: int, size: int, comm_key: int | None) -> list[float]:
    params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in mlp_data.initial_weights()]
    step, token, losses = make_step(comm_key), psdp.jax.token(), []
    for i in range(mlp_data.STEPS):
        x, y = (jnp.asarray(mlp_data.shard(a, rank, size)) for a in mlp_data.batch(i))
        params, loss, token = step(params, x, y, token)
        losses.append(float(loss))
    return losses


def main() -> int:
    with psdp.Communicator.from_env() as comm:
        distributed = train(comm.rank, comm.size, psdp.jax.register(comm))
        ok = True
        if comm.rank == 0:
            single = train(0, 1, None)
            ok = mlp_data.report(f"JAX data-parallel over psdp on {comm.size} ranks", distributed, single, 1e-9)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
