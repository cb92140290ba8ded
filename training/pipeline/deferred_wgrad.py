"""Split a backward pass into input gradients now (B) and Linear weight gradients later (W).

Zero-bubble schedules need B to compute only what the previous stage waits for: the gradient of
the stage's input. Autograd computes input and weight gradients in one pass, and asking
`paddle.grad` for the inputs first and the parameters second walks the whole graph twice (the
second pass needs every activation gradient again), so it saves nothing. Instead, while a piece
runs under `defer_linear_wgrads`, every `nn.Linear` goes through `_DeferredLinear`: its backward
returns dX = dY W^T only and stashes (X, dY) in a `WGradStash`; `WGradStash.apply` later adds
dW = X^T dY and db = sum(dY) into param.grad. Linear layers carry most of a transformer's
FLOPs, so B is about half the backward and W the rest. Other parameters (LayerNorm, embeddings)
still get their gradient in B, from autograd, as before.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

import paddle
import paddle.nn as nn
from paddle.autograd import PyLayer


class WGradStash:
    """(layer, X, dY) triples of one micro-batch's Linear layers, waiting for W."""

    def __init__(self) -> None:
        self.items: list[tuple[nn.Linear, paddle.Tensor, paddle.Tensor]] = []

    def apply(self) -> None:
        """Add every stashed weight (and bias) gradient into param.grad, then drop the stash."""
        with paddle.no_grad():
            for layer, x, dy in self.items:
                x2 = x.reshape([-1, x.shape[-1]])
                dy2 = dy.reshape([-1, dy.shape[-1]])
                _accumulate(layer.weight, paddle.matmul(x2, dy2, transpose_x=True))
                if layer.bias is not None and not layer.bias.stop_gradient:
                    _accumulate(layer.bias, dy2.sum(axis=0))
        self.items.clear()


def _accumulate(param: paddle.Tensor, grad: paddle.Tensor) -> None:
    if param.stop_gradient:
        return
    if param.grad is None:
        param._set_grad_ivar(grad)
    else:
        param.grad.add_(grad)


class _DeferredLinear(PyLayer):
    """y = X W + b whose backward gives dX only; (X, dY) go to the stash for W."""

    @staticmethod
    def forward(ctx, x, layer: nn.Linear, stash: WGradStash):
        ctx.layer, ctx.stash = layer, stash
        ctx.save_for_backward(x)
        return paddle.nn.functional.linear(x, layer.weight, layer.bias)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensor()
        ctx.stash.items.append((ctx.layer, x.detach(), dy.detach()))
        return paddle.matmul(dy, ctx.layer.weight, transpose_y=True)


def linear_layers(blocks: Sequence[nn.Layer]) -> list[nn.Linear]:
    """The exact nn.Linear instances inside `blocks` (subclasses may change forward: left alone)."""
    return [m for b in blocks for m in b.sublayers(include_self=True) if type(m) is nn.Linear]


@contextmanager
def defer_linear_wgrads(layers: Sequence[nn.Linear], stash: WGradStash) -> Iterator[None]:
    """Within the block, `layers` (from `linear_layers`) defer their weight gradients to `stash`.

    The swap is an instance attribute removed on exit, so the layers are unchanged outside."""

    def deferred(layer: nn.Linear):
        def forward(x):
            if x.stop_gradient or layer.weight.stop_gradient:
                # a Linear on raw model inputs: nothing upstream waits for dX, and a PyLayer whose
                # only tensor input needs no gradient would get no backward at all; keep it in B
                return paddle.nn.functional.linear(x, layer.weight, layer.bias)
            return _DeferredLinear.apply(x, layer, stash)
        return forward

    for layer in layers:
        layer.forward = deferred(layer)
    try:
        yield
    finally:
        for layer in layers:
            del layer.forward
