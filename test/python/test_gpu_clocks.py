"""The clock sampler the speed summary records power capping with (repro/gpu_clocks.py), and the
summary's record helpers: parsing nvidia-smi's CSV, time windows, a disabled sampler without
nvidia-smi, the summary's clock fields, table columns and the fused kernel's schedule. CPU only:
a shell script stands in for nvidia-smi."""
import datetime as dt
import os
import stat

import pytest

from normfuse.repro import gpu_clocks as gc
from normfuse.repro import summary


def test_parse_line_reads_the_query_and_skips_other_lines():
    s = gc.parse_line("2026/12/03 05:59:07.240, 1365, 665.75, 0x0000000000000004\n")
    assert s == (dt.datetime(2026, 12, 3, 5, 59, 7, 240000), 1365.0, 665.75, gc.SW_POWER_CAP)
    for bad in ("timestamp, clocks.sm, power.draw, clocks_event_reasons.active",
                "2026/12/03 05:59:07.240, [N/A], 66.0, 0x0", "No devices were found", ""):
        assert gc.parse_line(bad) is None


def test_summarize_medians_and_shares():
    t = dt.datetime(2026, 12, 3)
    samples = [(t, 1980.0, 300.0, 0), (t, 1500.0, 690.0, gc.SW_POWER_CAP),
               (t, 1400.0, 695.0, gc.SW_POWER_CAP | 0x1), (t, 1900.0, 500.0, gc.HW_THERMAL)]
    s = gc.summarize(samples)
    assert s["n"] == 4 and s["sm_mhz"] == 1700.0 and s["power_w"] == 595.0
    assert s["capped"] == 0.5 and s["slowed"] == 0.75
    assert gc.summarize([]) == {"n": 0}


def _fake_smi(tmp_path, lines):
    """An executable that prints `lines` (the bitmask per line; timestamps are now) and exits,
    after checking it was asked for the summary's query."""
    body = ["#!/bin/sh", 'case "$*" in *"--query-gpu=timestamp,clocks.sm,power.draw,'
            'clocks_event_reasons.active"*) ;; *) exit 3;; esac']
    for mhz, w, bits in lines:
        body.append(f"echo \"$(date +'%Y/%m/%d %H:%M:%S.%N' | cut -c1-23), {mhz}, {w}, {bits}\"")
    exe = tmp_path / "nvidia-smi"
    exe.write_text("\n".join(body) + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_sampler_collects_a_fake_nvidia_smi(tmp_path):
    exe = _fake_smi(tmp_path, [(1980, 120.5, "0x0"), (1500, 690.0, "0x4"), (1400, 699.0, "0x4")])
    t0 = gc.ClockSampler.now() - dt.timedelta(seconds=1)
    s = gc.ClockSampler(exe=exe)
    with s:
        assert s.enabled
        s._proc.wait(timeout=30)  # the stand-in prints and exits
    w = s.window(t0, gc.ClockSampler.now() + dt.timedelta(seconds=1))
    assert w["n"] == 3 and w["sm_mhz"] == 1500.0 and w["capped"] == pytest.approx(2 / 3)
    assert s.window(t0 - dt.timedelta(days=1), t0) == {"n": 0}


def test_sampler_without_nvidia_smi_is_disabled(tmp_path):
    s = gc.ClockSampler(exe=None)
    s.exe = None
    with s:
        assert not s.enabled
    missing = gc.ClockSampler(exe=os.path.join(str(tmp_path), "no-such-smi"))
    with missing:
        assert not missing.enabled


def test_summary_record_takes_the_cells_window():
    t = dt.datetime(2026, 12, 3)
    s = gc.ClockSampler(exe=None)
    s.samples = [(t + dt.timedelta(seconds=k), 1500.0 + 100 * k, 690.0, 0x4 if k < 3 else 0)
                 for k in range(6)]
    w = s.window(t + dt.timedelta(seconds=1), t + dt.timedelta(seconds=4))
    assert summary._clock_fields(w) == {"sm_mhz": 1750.0, "power_w": 690.0, "capped": 0.5,
                                        "clock_samples": 4}
    assert summary._clock_fields({"n": 0}) == {}


def test_summary_table_shows_clocks_only_when_sampled():
    r = dict(op="rmsnorm_linear", M=262144, K=2048, N=2048, cublas_ms=3.1, norm_ms=0.59,
             fused_ms=3.4, backbone_ms=3.3, fused_over_cublas=1.1, backbone_over_cublas=1.06,
             fused_over_backbone=1.03, hidden_pct=49, lowered=True)
    assert "SM MHz" not in summary.table([r])
    t = summary.table([r, dict(r, sm_mhz=1710.0, capped=0.8, power_w=690.0)])
    assert t.splitlines()[3].endswith("| 1710 | 80 |") and t.splitlines()[2].endswith("| - | - |")


def test_window_waits_for_the_samples_still_in_the_pipe(tmp_path):
    """A window asked for before its last samples were read waits (up to wait_s) for a sample
    taken after its end. The stand-in writes, half a second after it starts, a sample stamped
    5 s back (inside the window) and one stamped 5 s ahead (after it): without the wait the
    window would be empty."""
    stamp = "date -d '{}' +'%Y/%m/%d %H:%M:%S.%N' | cut -c1-23"
    body = ["#!/bin/sh", "sleep 0.5",
            f"echo \"$({stamp.format('5 seconds ago')}), 1500, 690, 0x4\"",
            f"echo \"$({stamp.format('5 seconds')}), 1400, 690, 0x4\"", "exec sleep 5"]
    exe = tmp_path / "nvidia-smi"
    exe.write_text("\n".join(body) + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    with gc.ClockSampler(exe=str(exe), period_ms=200) as s:
        now = s.now()
        w = s.window(now - dt.timedelta(seconds=60), now + dt.timedelta(seconds=1), wait_s=10.0)
    assert w["n"] == 1 and w["sm_mhz"] == 1500.0, w


def test_summary_names_the_fused_kernels_schedule():
    """summary._schedule_of: the hopper-ws schedule of a prepared op's kernel (the summary times
    the plain GEMM on that schedule too), None when the op's kernel is not lowered."""
    from types import SimpleNamespace as NS
    lowered = NS(compile=lambda: NS(lowered=NS(plan=NS(config=NS(schedule="coop2")))))
    assert summary._schedule_of(lowered) == "coop2"
    assert summary._schedule_of(NS(compile=lambda: NS(lowered=None))) is None
    assert summary._schedule_of(NS(compile=lambda: object())) is None
