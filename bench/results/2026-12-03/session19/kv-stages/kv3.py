import torch, json, os
from triton.testing import do_bench
from normfuse.ops.flash_norm_attention_bwd import BwdConfig, flash_norm_attention_bwd
from normfuse.ops.flash_norm_attention import prepare_flash_norm_attention
from normfuse.repro.bench_attention_bwd import make_inputs
from normfuse.reference_attention import default_qk_scale
from normfuse.ops.common import host_offsets
out = {}
for H, act in ((2, "gelu_tanh"), (3, "gelu_tanh"), (4, "softmax"), (3, "softmax")):
    x, k, v, off, dout, lens = make_inputs(768, 128, H, H, 128, 1024)
    host_offsets(off)
    scale = default_qk_scale(act, 128)
    ps = prepare_flash_norm_attention(x, k, v, off, activation=act, qk_scale=scale, save=True, check_offsets=False)
    ps.launch()
    args = (dout, x, k, v, off, ps.out, ps.mean, ps.rstd, ps.rrms)
    kw = dict(activation=act, qk_scale=scale, g=ps.g, lse=ps.lse, check_offsets=False)
    c2, c3 = BwdConfig(), BwdConfig(kv_num_stages=3)
    ref = flash_norm_attention_bwd(*args, config=c2, **kw)
    same = []
    for i in range(6):
        got = flash_norm_attention_bwd(*args, config=c3, **kw)
        same.append(all(torch.equal(a, b) for a, b in zip(ref[:3], got[:3])))
    t2 = do_bench(lambda: flash_norm_attention_bwd(*args, config=c2, **kw), warmup=5, rep=40)
    t3 = do_bench(lambda: flash_norm_attention_bwd(*args, config=c3, **kw), warmup=5, rep=40)
    t2b = do_bench(lambda: flash_norm_attention_bwd(*args, config=c2, **kw), warmup=5, rep=40)
    out[f"{act} H={H}"] = dict(bitwise_equal_to_2_stages=same, ms_2=t2, ms_3=t3, ms_2_again=t2b)
    print(act, H, same, round(t2, 3), round(t3, 3), round(t2b, 3), flush=True)
json.dump(out, open(os.path.join(os.environ["OUT"], "kv3.json"), "w"), indent=1)
