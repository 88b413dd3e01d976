"""The clock sampler the speed summary records power capping with (repro/gpu_clocks.py): parsing
nvidia-smi's CSV, windows per timed quantity, a disabled sampler without nvidia-smi, the
summary's record fields and table columns. CPU only: a shell script stands in for nvidia-smi."""
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
    w = gc.Windows(s)
    assert w.timed("a", lambda: 7) == 7 and w.result() == {}
    missing = gc.ClockSampler(exe=os.path.join(str(tmp_path), "no-such-smi"))
    with missing:
        assert not missing.enabled


class _Sampler(gc.ClockSampler):
    """Enabled, with a clock that ticks one second per `now()` and samples placed by hand."""

    def __init__(self):
        super().__init__(exe=None)
        self.t = dt.datetime(2026, 12, 3)

    @property
    def enabled(self):
        return True

    def now(self):
        self.t += dt.timedelta(seconds=1)
        return self.t


def test_summary_times_each_quantity_in_its_own_window(monkeypatch):
    s = _Sampler()
    base = s.t
    # windows open at 1 s and close at 2 s (cublas, round 1), 3-4 s (fused), 5-6 s, 7-8 s
    for sec, mhz, bits in ((1.5, 1900, 0x0), (3.5, 1500, 0x4), (5.5, 1800, 0x4), (7.5, 1400, 0x4),
                           (9.5, 1000, 0x4)):
        s.samples.append((base + dt.timedelta(seconds=sec), float(mhz), 600.0, bits))
    monkeypatch.setattr(summary, "_bench", lambda fn: fn())
    w = gc.Windows(s)
    ms = summary._timed({"cublas": lambda: 1.0, "rmsnorm_linear": lambda: 2.0}, 2, w)
    assert ms == {"cublas": 1.0, "rmsnorm_linear": 2.0}
    clocks = w.result()
    assert clocks["cublas"]["sm_mhz"] == 1850.0 and clocks["cublas"]["capped"] == 0.5
    assert clocks["rmsnorm_linear"]["sm_mhz"] == 1450.0 and clocks["rmsnorm_linear"]["capped"] == 1
    rec = summary._clock_fields(clocks, {"cublas": "cublas", "fused": "rmsnorm_linear",
                                         "backbone": "backbone"})
    assert rec == {"cublas_sm_mhz": 1850.0, "cublas_capped": 0.5, "cublas_power_w": 600.0,
                   "fused_sm_mhz": 1450.0, "fused_capped": 1.0, "fused_power_w": 600.0}


def test_summary_table_shows_clocks_only_when_sampled():
    r = dict(op="rmsnorm_linear", M=262144, K=2048, N=2048, cublas_ms=3.1, norm_ms=0.59,
             fused_ms=3.4, backbone_ms=3.3, fused_over_cublas=1.1, backbone_over_cublas=1.06,
             fused_over_backbone=1.03, hidden_pct=49, lowered=True)
    assert "SM MHz" not in summary.table([r])
    t = summary.table([r, dict(r, cublas_sm_mhz=1710.0, fused_sm_mhz=1620.0, cublas_capped=0.8,
                               fused_capped=1.0)])
    assert "| 1710 / 1620 | 80 / 100 |" in t and t.splitlines()[2].endswith("| - | - |")
