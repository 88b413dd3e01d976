"""Where a model benchmark configuration spends its time: torch.profiler over a few calls.

    python -m normfuse.repro.profile_models --out DIR gpt2:stock gpt2:normfuse+compile \
        llama:liger llama:normfuse+liger [--mode prefill|train|both] [--calls 3] [--host-profile]

For each model:configuration of `normfuse.repro.models` (a compiled configuration is compiled
by its warm-up calls and profiles as Inductor's kernels and the custom ops it calls), the wall time
per call (synchronized), the host time per call (perf_counter around the call, no sync) and the
device kernels by total time (top 25, `profile_<model>_<config>_<mode>.txt`), the timeline of
synchronized calls (`timeline_gaps`: where the device waited inside a call, each gap with its
kernel's launch call where the profiler links them; `host_calls`: the host's calls inside those
calls by own time, a synchronization among them; `launch_calls`: each kernel's launch call by
its duration), plus
`profile.json` with the per-call figures and each kernel's total; `--host-profile` adds the
host's Python by function (cProfile over 20 unsynchronized calls after the warm-up, top 40 by
own time and by cumulative time: `host_<model>_<config>_<mode>.txt`). Used to find why a
configuration is slower than the one it should beat (2026-12-01: GPT-2 and BERT through
normfuse, Llama normfuse+Liger).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time

__all__ = ["configuration_call", "host_and_wall", "profile_one", "kernels_of", "cprofile_stats",
           "host_profile", "timeline_gaps", "gap_line", "host_calls", "launch_calls", "main"]


def kernels_of(fn) -> tuple[float, list]:
    """One call of `fn` under torch.profiler (CUDA activity only, synchronized): (the recorded
    kernels' device time summed, in ms; the key averages by device time, largest first)."""
    import torch
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    evs = sorted(prof.key_averages(), key=lambda e: -e.device_time_total)
    return sum(e.device_time_total for e in evs) / 1e3, evs


@contextlib.contextmanager
def configuration_call(model: str, config: str, mode: str):
    """The call of one prefill forward (no grad) or one train step of `model`:`config` of
    `normfuse.repro.models`, built in Liger's scope (in force while the caller runs it) and
    compiled where the configuration is (by the caller's first calls). The model, Dynamo's
    caches and the CUDA cache are released on exit."""
    import torch

    from . import models as M
    spec = M.SPECS[model]
    cfg = M._config(config)
    device, dtype = "cuda", torch.bfloat16
    sd, ids, R = M.make_state(spec, device, dtype)
    scope = M.liger_scope(spec.family) if cfg.liger else contextlib.nullcontext()
    with scope:
        m = M.build_configuration(spec, cfg, sd, device, dtype, {})
        params = [p for p in m.parameters() if p.requires_grad]
        if mode == "prefill":
            m.eval()
        else:
            m.train()
        f = M.compile_for(m, cfg) if cfg.compiled else m
        if mode == "prefill":
            def call():
                with torch.no_grad():
                    return M._forward(f, ids)
        else:
            def call():
                return M._step(f, ids, R, params)
        try:
            yield call
        finally:
            f = m = params = None  # released before the cache is emptied
            if cfg.compiled:
                import torch._dynamo
                torch._dynamo.reset()
            torch.cuda.empty_cache()


def host_and_wall(call, calls: int, warm: int = 3) -> tuple[float, float]:
    """(host s, wall s) per call after `warm` calls: host from perf_counter around `calls`
    calls without a sync, wall until the GPU finished them."""
    import torch
    for _ in range(warm):
        call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    host = (time.perf_counter() - t0) / calls
    torch.cuda.synchronize()
    return host, (time.perf_counter() - t0) / calls


def cprofile_stats(call, calls: int, orders=(("tottime", 40), ("cumulative", 40))) -> dict:
    """cProfile over `calls` unsynchronized calls of `call` (synchronized before and after): {sort
    order: pstats' listing of its top n} per (order, n) in `orders`."""
    import cProfile
    import io
    import pstats

    import torch
    torch.cuda.synchronize()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        call()
    prof.disable()
    torch.cuda.synchronize()
    out = {}
    for order, n in orders:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats(order).print_stats(n)
        out[order] = buf.getvalue()
    return out


def host_profile(call, path: str, calls: int = 20) -> None:
    """The host's Python by function over `calls` unsynchronized calls (after host_and_wall's
    warm-up; `cprofile_stats`), top 40 by own and by cumulative time, into `path`."""
    stats = cprofile_stats(call, calls)
    with open(path, "w") as f:
        f.write(f"cProfile over {calls} calls (no sync between them)\n\n" + stats["tottime"]
                + stats["cumulative"])


def profile_one(model: str, config: str, mode: str, calls: int, out: str, log=print,
                host_prof: bool = False) -> dict:
    from torch.profiler import ProfilerActivity, profile
    import torch

    from torch.profiler import record_function

    with configuration_call(model, config, mode) as call:
        host, wall = host_and_wall(call, calls)
        if host_prof:
            host_profile(call, os.path.join(
                out, f"host_{model}_{config.replace('+', '-')}_{mode}.txt"))
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                call()
            torch.cuda.synchronize()
        # one call at a time, synchronized around each (as the model benchmark times them): where
        # the device waits inside a call
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as tprof:
            for _ in range(calls):
                with record_function(TIMELINE_MARK):
                    call()
                torch.cuda.synchronize()
        events = tprof.events()
        timeline = timeline_gaps(events)
        if timeline:
            timeline["host_calls"] = host_calls(events)
            timeline["launch_calls"] = launch_calls(events)
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)
    name = f"profile_{model}_{config.replace('+', '-')}_{mode}.txt"
    with open(os.path.join(out, name), "w") as f:
        f.write(f"{model} {config} {mode}: wall {wall * 1e3:.3f} ms/call, host "
                f"{host * 1e3:.3f} ms/call (no sync)\n\n{table}\n")
    kernels = []
    for e in prof.key_averages():
        dev = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if dev:
            kernels.append({"name": e.key[:120], "device_us": round(dev / calls, 1),
                            "count": e.count // calls})
    kernels.sort(key=lambda k: -k["device_us"])
    from torch.autograd import DeviceType
    # device time of the kernels themselves (not of the ops that launched them): the GPU's busy
    # time per call; wall - busy is time the device waited for the host
    busy = sum(e.device_time_total for e in prof.events()
               if e.device_type == DeviceType.CUDA) / calls
    rec = {"model": model, "config": config, "mode": mode, "wall_ms": round(wall * 1e3, 3),
           "host_ms": round(host * 1e3, 3), "device_busy_ms": round(busy / 1e3, 3),
           "kernels": kernels[:40], "timeline": timeline}
    log(f"[profile] {model} {config} {mode}: wall {rec['wall_ms']} ms, host {rec['host_ms']} ms, "
        f"device busy {rec['device_busy_ms']} ms; "
        + "; ".join(f"{k['name'][:40]} {k['device_us']} us x{k['count']}" for k in kernels[:6]))
    if timeline:
        log(f"[profile] {model} {config} {mode} timeline (median of {len(timeline['calls'])} "
            f"synchronized calls): span {timeline['span_us']} us = lead {timeline['lead_us']} + "
            f"busy {timeline['busy_us']} + idle {timeline['idle_us']} us in "
            f"{timeline['gaps']} gaps; largest before: "
            + "; ".join(f"{g['before'][:40]} {g['us']} us" for g in timeline["largest"][:5]))
    with open(os.path.join(out, name), "a") as f:
        f.write("\ntimeline of one synchronized call:\n" + json.dumps(timeline, indent=1) + "\n")
    return rec


TIMELINE_MARK = "normfuse.profile.call"


def host_calls(events, top: int = 15) -> list[dict]:
    """The host's calls inside the `TIMELINE_MARK` ranges (each one synchronized call) by their
    own time: [{"name", "self_us" (per call window), "count" (per window)}], largest first.
    Only what ran inside a window counts, so the harness's synchronizations between calls do
    not, while a synchronization inside a call (cudaStreamSynchronize, a blocking copy) does."""
    from torch.autograd import DeviceType
    marks = [(e.time_range.start, e.time_range.end) for e in events
             if e.name == TIMELINE_MARK and e.device_type == DeviceType.CPU]
    if not marks:
        return []
    own: dict = {}
    for e in events:
        if e.device_type != DeviceType.CPU or e.name == TIMELINE_MARK:
            continue
        s, t = e.time_range.start, e.time_range.end
        if any(lo <= s and t <= hi for lo, hi in marks):
            us, n = own.get(e.name, (0.0, 0))
            own[e.name] = (us + e.self_cpu_time_total, n + 1)
    k = len(marks)
    rows = [{"name": name[:120], "self_us": round(us / k, 1), "count": round(n / k, 2)}
            for name, (us, n) in own.items()]
    return sorted(rows, key=lambda r: -r["self_us"])[:top]


def _launch_index(events) -> dict:
    """{correlation id: (start, end)} of the host's CUDA runtime / driver calls (the profiler
    gives a kernel its launch call's correlation id as FunctionEvent.id; other host events, whose
    ids are torch's own, are left out by name)."""
    from torch.autograd import DeviceType
    launches = {}
    for e in events:
        cid = getattr(e, "id", None)
        if cid and e.device_type == DeviceType.CPU and e.name.startswith("cu"):
            launches.setdefault(cid, (e.time_range.start, e.time_range.end))
    return launches


def launch_calls(events, top: int = 15) -> list[dict]:
    """Each kernel's launch call inside the `TIMELINE_MARK` ranges, by kernel name: [{"name",
    "call_us" (the launch call's duration on the host, median), "start_after_call_us" (from
    the call's return to the kernel's start, median), "count" (per window)}], the longest calls
    first. A launch call far longer than the others' is the driver's time, not the caller's."""
    from torch.autograd import DeviceType
    marks = [(e.time_range.start, e.time_range.end) for e in events
             if e.name == TIMELINE_MARK and e.device_type == DeviceType.CPU]
    if not marks:
        return []
    launches = _launch_index(events)
    per: dict = {}
    for e in events:
        if e.device_type != DeviceType.CUDA or getattr(e, "is_user_annotation", False):
            continue
        call = launches.get(getattr(e, "id", None))
        if call is None or not any(lo <= call[0] <= hi for lo, hi in marks):
            continue
        durs, waits = per.setdefault(e.name, ([], []))
        durs.append(call[1] - call[0])
        waits.append(e.time_range.start - call[1])
    k = len(marks)
    rows = [{"name": name[:120], "call_us": round(statistics.median(d), 1),
             "start_after_call_us": round(statistics.median(w), 1),
             "count": round(len(d) / k, 2)} for name, (d, w) in per.items()]
    return sorted(rows, key=lambda r: -r["call_us"])[:top]


def timeline_gaps(events, min_gap_us: float = 2.0) -> dict:
    """The device's timeline inside each profiled call window (a `TIMELINE_MARK` range on the
    host, the call synchronized after it): lead = from the call's start on the host to its first
    kernel, busy = the kernels' union, idle = the gaps between them (the device waited for the
    host or for a launch), and the largest gaps by the kernel that ended them. Figures are the
    median over the calls; the gaps listed are the first call's.

    Where the profiler links a kernel to its launch call on the host (the CUDA runtime / driver
    call with the kernel's correlation id, e.g. cuLaunchKernelEx), a gap also says which side
    waited: `launch_after_idle_us`, when that call began counted from the device going idle
    (about the gap: the host was late; well below it: the launch itself or the device took the
    time), `launch_call_us`, how long the call ran, and `start_after_call_us`, from the call's
    return to the kernel's start. Likewise `first_launch_us`: when the call's first launch left
    the host, from the call's start."""
    from torch.autograd import DeviceType
    marks = sorted((e for e in events if e.name == TIMELINE_MARK
                    and e.device_type == DeviceType.CPU), key=lambda e: e.time_range.start)
    # kernels and copies, not the GPU-side copies of user annotations (the mark itself, Dynamo's
    # "Torch-Compiled Region" ...), which span the kernels they enclose (session 7's first
    # timelines counted them: lead 0, busy = span)
    kern = sorted(((e.time_range.start, e.time_range.end, e.name, getattr(e, "id", None))
                   for e in events
                   if e.device_type == DeviceType.CUDA and e.name != TIMELINE_MARK
                   and not getattr(e, "is_user_annotation", False)), key=lambda k: k[0])
    launches = _launch_index(events)
    calls = []
    for i, m in enumerate(marks):
        lo = m.time_range.start
        hi = marks[i + 1].time_range.start if i + 1 < len(marks) else float("inf")
        ks = [k for k in kern if lo <= k[0] < hi]
        if not ks:
            continue
        busy = idle = 0.0
        gaps = []
        end = ks[0][0]
        for s, e, n, cid in ks:
            if s > end:
                if s - end >= min_gap_us:
                    gap = {"before": n[:100], "us": round(s - end, 1)}
                    call = launches.get(cid) if cid else None
                    if call is not None:
                        gap.update(launch_after_idle_us=round(call[0] - end, 1),
                                   launch_call_us=round(call[1] - call[0], 1),
                                   start_after_call_us=round(s - call[1], 1))
                    gaps.append(gap)
                idle += s - end
            busy += max(0.0, e - max(s, end))
            end = max(end, e)
        first = launches.get(ks[0][3]) if ks[0][3] else None
        calls.append({"lead_us": round(ks[0][0] - lo, 1), "busy_us": round(busy, 1),
                      "idle_us": round(idle, 1), "span_us": round(end - lo, 1),
                      "host_us": round(m.time_range.end - lo, 1), "gaps": len(gaps),
                      "kernels": len(ks),
                      "first_launch_us": None if first is None else round(first[0] - lo, 1),
                      "largest": sorted(gaps, key=lambda g: -g["us"])[:12]})
    if not calls:
        return {}

    def med(key):
        return statistics.median_high(c[key] for c in calls)
    firsts = [c["first_launch_us"] for c in calls if c["first_launch_us"] is not None]
    return {"span_us": med("span_us"), "lead_us": med("lead_us"), "busy_us": med("busy_us"),
            "idle_us": med("idle_us"), "host_us": med("host_us"), "gaps": med("gaps"),
            "kernels": med("kernels"),
            "first_launch_us": statistics.median_high(firsts) if firsts else None,
            "largest": calls[0]["largest"],
            "calls": [{k: c[k] for k in ("span_us", "lead_us", "busy_us", "idle_us", "host_us")}
                      for c in calls]}


def gap_line(g: dict) -> str:
    """One listed gap of `timeline_gaps` in words (with its launch call's timing where known)."""
    text = f"{g['us']:8.1f} us  before {g['before'][:90]}"
    if "launch_call_us" in g:
        text += (f" (its launch call began {g['launch_after_idle_us']} us after the device went "
                 f"idle, ran {g['launch_call_us']} us; the kernel started "
                 f"{g['start_after_call_us']} us after it returned)")
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", help="model:configuration")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=("prefill", "train", "both"), default="prefill")
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--host-profile", action="store_true",
                    help="also the host's Python by function (cProfile; host_*.txt)")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    recs = []
    for pair in a.pairs:
        model, config = pair.split(":", 1)
        for mode in (("prefill", "train") if a.mode == "both" else (a.mode,)):
            try:
                recs.append(profile_one(model, config, mode, a.calls, a.out,
                                        host_prof=a.host_profile))
            except Exception as e:  # noqa: BLE001 - one failure must not lose the others
                recs.append({"model": model, "config": config, "mode": mode,
                             "error": f"{type(e).__name__}: {e}"})
                print(f"[profile] {pair} {mode}: {type(e).__name__}: {e}")
            with open(os.path.join(a.out, "profile.json"), "w") as f:
                json.dump(recs, f, indent=1)
    with open(os.path.join(a.out, "profile.json"), "w") as f:
        json.dump(recs, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
