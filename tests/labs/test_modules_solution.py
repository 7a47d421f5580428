"""The modules lab's reference solution against torch's own modules (issue 31, work in
progress: the lab folder grader/labs/modules/ does not exist yet)."""

import copy
import importlib.util
from pathlib import Path

import torch
from torch import nn

SOLUTION = Path(__file__).resolve().parents[2] / "solutions" / "modules" / "modules_inplace.py"


def test_the_reference_solution_does_what_torch_does() -> None:
    spec = importlib.util.spec_from_file_location("modules_inplace", SOLUTION)
    assert spec is not None and spec.loader is not None
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    torch.manual_seed(0)
    for momentum in (0.1, None, 0.3):
        for shape in ((8, 5), (6, 5, 7)):
            bn = nn.BatchNorm1d(5, momentum=momentum).train()
            rm, rv, nbt = torch.zeros(5), torch.ones(5), torch.tensor(0, dtype=torch.long)
            addresses = (rm.data_ptr(), rv.data_ptr())
            for step in range(4):
                x = torch.randn(*shape) * 3 + 1
                bn(x)
                assert m.batchnorm_update_(rm, rv, nbt, x, momentum=momentum) is None
            assert torch.allclose(rm, bn.running_mean, atol=1e-6), (momentum, shape)
            assert torch.allclose(rv, bn.running_var, atol=1e-5), (momentum, shape)
            assert nbt.item() == bn.num_batches_tracked.item() == 4
            assert addresses == (rm.data_ptr(), rv.data_ptr()) and rm._version > 0
    # ("batchnorm ok")
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    other = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    other(torch.randn(5, 3))
    objs = dict(net.state_dict(keep_vars=True))
    ptrs = {k: v.data_ptr() for k, v in objs.items()}
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    sd = {k: v.double() for k, v in other.state_dict().items()}
    assert m.load_state_(net, sd) is net
    for k, v in net.state_dict(keep_vars=True).items():
        assert v is objs[k], k
        assert v.data_ptr() == ptrs[k], k
        assert torch.equal(v.detach(), other.state_dict()[k].to(v.dtype)), k
    net.train(); net(torch.randn(5, 3)).sum().backward(); before = net[0].weight.detach().clone(); opt.step()
    assert not torch.equal(before, net[0].weight.detach())
    ref = copy.deepcopy(net)
    for bad, named in (({**sd, "extra": torch.zeros(1)}, "extra"),
                       ({k: v for k, v in sd.items() if k != "0.bias"}, "0.bias"),
                       ({**sd, "0.weight": torch.zeros(2, 2)}, "0.weight")):
        try:
            m.load_state_(net, bad)
            raise SystemExit("no error")
        except RuntimeError as e:
            assert named in str(e), str(e)
        for (k, a), b in zip(net.state_dict().items(), ref.state_dict().values()):
            assert torch.equal(a, b), k
    # ("load_state ok")
    emb, dec = nn.Embedding(10, 4), nn.Linear(4, 10)
    bias = dec.bias
    assert m.tie_weights_(dec, emb) is dec and dec.weight is emb.weight and dec.bias is bias
    assert len(list(nn.ModuleDict({"e": emb, "d": dec}).parameters())) == 2
    # ("tie ok")
    src = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)); src(torch.randn(6, 3))
    ema = copy.deepcopy(src)
    with torch.no_grad():
        for p in ema.parameters(): p.add_(1.0)
    expected = {k: 0.9 * e.detach() + 0.1 * s.detach() for (k, e), s in zip(ema.named_parameters(), src.parameters())}
    src_before = copy.deepcopy(src.state_dict())
    objs = list(ema.state_dict(keep_vars=True).values())
    assert m.ema_update_model_(ema, src, 0.9) is ema
    for k, e in ema.named_parameters():
        assert torch.allclose(e, expected[k]) and e.grad_fn is None and e.requires_grad, k
    for (k, b), s in zip(ema.named_buffers(), src.buffers()): assert torch.equal(b, s), k
    assert all(a is b for a, b in zip(ema.state_dict(keep_vars=True).values(), objs))
    for k, v in src.state_dict().items(): assert torch.equal(v, src_before[k]), k
    # ("ema ok")
