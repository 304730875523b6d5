"""The recipes of PyTorch's "Automatic Mixed Precision examples" page, run through torch.amp on DEVICE
(fp16 autocast) on fixed seeded data, for tests/test_parity_recipes.cpp to replay with amp::GradScaler
and amp::CustomFwd/CustomBwd (on CUDA: tests/test_parity_recipes_cuda.cpp). The data are drawn on the
CPU whatever the device, so both devices replay the same numbers:

  accumulation   4 micro-batches per effective batch, step/update once per effective batch
  penalty        a gradient-norm penalty from autograd.grad(scaler.scale(loss)), unscaled by hand
  multiple       two models, two losses, two optimizers, one scaler; an inf injected into model 1
  custom         custom_fwd(cast_inputs=float32)/custom_bwd row norms, and a mixed-dtype matmul

Usage: python amp_recipes_trace.py OUT.json [cpu|cuda]   (default cpu)
"""
import json

import torch
import torch.nn.functional as F

import trace_args

# The device is needed before the classes below are defined (custom_fwd/custom_bwd take it).
OUT, DEV = trace_args.parse() if __name__ == "__main__" else (None, "cpu")
HALF = torch.float16


def t2j(t):
    t = t.detach().to(torch.float64)
    return {"shape": list(t.shape), "data": t.flatten().tolist()}


def mlp(p, x):
    return F.linear(torch.tanh(F.linear(x, p[0], p[1])), p[2], p[3])


def make_mlp(i, h, o):
    return [torch.randn(h, i) / i**0.5, torch.randn(h) * 0.1, torch.randn(o, h) / h**0.5, torch.randn(o) * 0.1]


def leaves(p):
    return [t.detach().clone().to(DEV).requires_grad_(True) for t in p]


def accumulation():
    cfg = {"micro": 4, "micro_batch": 8, "batches": 10, "lr": 0.05, "init_scale": 2.0**24, "growth_interval": 2}
    init = make_mlp(8, 16, 4)
    n = cfg["micro"] * cfg["micro_batch"] * cfg["batches"]
    x, y = torch.randn(n, 8), torch.randn(n, 4)
    xd, yd = x.to(DEV), y.to(DEV)
    p = leaves(init)
    opt = torch.optim.SGD(p, lr=cfg["lr"], foreach=False)
    scaler = torch.amp.GradScaler(DEV, init_scale=cfg["init_scale"], growth_interval=cfg["growth_interval"])
    trace, mb = [], cfg["micro_batch"]
    for b in range(cfg["batches"]):
        opt.zero_grad()
        for m in range(cfg["micro"]):
            k = (b * cfg["micro"] + m) * mb
            with torch.autocast(DEV, dtype=HALF):
                loss = F.mse_loss(mlp(p, xd[k:k + mb]), yd[k:k + mb]) / cfg["micro"]
            scaler.scale(loss).backward()
        before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        trace.append({"stepped": scaler.get_scale() >= before, "scale": scaler.get_scale(),
                      "growth_tracker": int(scaler.state_dict()["_growth_tracker"])})
    return {"config": cfg, "init": [t2j(t) for t in init], "x": t2j(x), "y": t2j(y), "trace": trace,
            "final": [t2j(t) for t in p]}


def penalty():
    cfg = {"steps": 6, "lr": 0.02, "init_scale": 2.0**16}
    init = make_mlp(8, 16, 4)
    x, y = torch.randn(32, 8), torch.randn(32, 4)
    xd, yd = x.to(DEV), y.to(DEV)
    p = leaves(init)
    opt = torch.optim.SGD(p, lr=cfg["lr"], foreach=False)
    scaler = torch.amp.GradScaler(DEV, init_scale=cfg["init_scale"])
    trace = []
    for _ in range(cfg["steps"]):
        opt.zero_grad()
        with torch.autocast(DEV, dtype=HALF):
            loss = F.mse_loss(mlp(p, xd), yd)
        scaled = torch.autograd.grad(outputs=scaler.scale(loss), inputs=p, create_graph=True)
        inv_scale = 1.0 / scaler.get_scale()
        grads = [g * inv_scale for g in scaled]
        with torch.autocast(DEV, dtype=HALF):
            pen = torch.zeros((), dtype=loss.dtype, device=DEV)
            for g in grads:
                pen = pen + g.pow(2).sum()
            pen = pen.sqrt()
            loss = loss + pen
        scaler.scale(loss).backward()
        before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        trace.append({"penalty": pen.item(), "scale": scaler.get_scale(), "stepped": scaler.get_scale() >= before})
    return {"config": cfg, "init": [t2j(t) for t in init], "x": t2j(x), "y": t2j(y), "trace": trace,
            "final": [t2j(t) for t in p]}


def multiple():
    cfg = {"steps": 6, "lr": 0.01, "init_scale": 1024.0, "inject_at": 2}
    init0 = [torch.randn(4, 8) / 8**0.5, torch.randn(4) * 0.1]
    init1 = [torch.randn(4, 8) / 8**0.5, torch.randn(4) * 0.1]
    x, y = torch.randn(cfg["steps"], 16, 8), torch.randn(cfg["steps"], 16, 4)
    xd, yd = x.to(DEV), y.to(DEV)
    m0, m1 = leaves(init0), leaves(init1)
    opt0 = torch.optim.SGD(m0, lr=cfg["lr"], foreach=False)  # LibTorch's single-tensor loop
    opt1 = torch.optim.SGD(m1, lr=cfg["lr"], foreach=False)
    scaler = torch.amp.GradScaler(DEV, init_scale=cfg["init_scale"])
    trace = []
    for s in range(cfg["steps"]):
        opt0.zero_grad()
        opt1.zero_grad()
        with torch.autocast(DEV, dtype=HALF):
            out0, out1 = F.linear(xd[s], *m0), F.linear(xd[s], *m1)
            loss0 = F.mse_loss(2 * out0 + 3 * out1, yd[s])
            loss1 = F.mse_loss(3 * out0 - 5 * out1, yd[s])
        scaler.scale(loss0).backward(retain_graph=True)
        scaler.scale(loss1).backward()
        if s == cfg["inject_at"]:
            m1[0].grad.view(-1)[0] = float("inf")
        scaler.unscale_(opt0)
        w0, w1 = m0[0].detach().clone(), m1[0].detach().clone()
        scaler.step(opt0)
        scaler.step(opt1)
        scaler.update()
        trace.append({"stepped0": not torch.equal(w0, m0[0]), "stepped1": not torch.equal(w1, m1[0]),
                      "scale": scaler.get_scale()})
    return {"config": cfg, "init0": [t2j(t) for t in init0], "init1": [t2j(t) for t in init1], "x": t2j(x),
            "y": t2j(y), "trace": trace, "final0": [t2j(t) for t in m0], "final1": [t2j(t) for t in m1]}


class RowNorm(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type=DEV, cast_inputs=torch.float32)
    def forward(ctx, h):
        n = (h * h).sum(dim=1).sqrt()
        ctx.save_for_backward(h, n)
        return n

    @staticmethod
    @torch.amp.custom_bwd(device_type=DEV)
    def backward(ctx, grad):
        h, n = ctx.saved_tensors
        return grad.unsqueeze(1) * h / n.unsqueeze(1)


class MatMul(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type=DEV)
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a.mm(b)

    @staticmethod
    @torch.amp.custom_bwd(device_type=DEV)
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad.mm(b.t()), a.t().mm(grad)


def custom():
    x, w = torch.randn(16, 8), torch.randn(8, 32) * 40.0
    out = {"x": t2j(x), "w": t2j(w)}
    xd, wd = x.to(DEV), w.to(DEV)
    for name, fn in [("row_norm", lambda h, leaf: RowNorm.apply(h)),
                     ("matmul", lambda h, leaf: MatMul.apply(torch.tanh(h[:, :8]), leaf[:, :8]))]:
        leaf = wd.clone().requires_grad_(True)
        with torch.autocast(DEV, dtype=HALF):
            value = fn(xd.mm(leaf), leaf)
        value.sum().backward()
        out[name] = {"value": t2j(value), "dtype": str(value.dtype), "grad": t2j(leaf.grad)}
    return out


def main():
    torch.manual_seed(0)
    doc = {"torch": torch.__version__, "device": DEV, "accumulation": accumulation(), "penalty": penalty(),
           "multiple": multiple(), "custom": custom()}
    with open(OUT, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()
