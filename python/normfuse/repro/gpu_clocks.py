"""The GPU's SM clock, power draw and clock-event reasons while something is timed, sampled by
`nvidia-smi` in the background.

Why the benchmarks record this: on the H200 the blog's M = 262144 cells run at the board's
power limit (700 W). There the driver's software power cap lowers the SM clock (1.2-1.97 GHz,
seen every 250 ms during the pre-norm summary, 2026-12-03, `bench/results/2026-12-03/
session16/`), so a kernel's time follows its energy per tile and the board's temperature, not
only its cycles: the same cuBLAS call measured 3.155 and 3.403 ms in one process minutes apart.
The summary records, per cell, the median SM clock and power and the share of samples with the
power cap active while the cell was timed, so that a table read later says which cells were
capped; `bench/power_probe.py` runs each kernel alone for seconds and reports its steady clock,
power and energy per call. (nvidia-smi's samples arrive tens of milliseconds apart and its power
figure is averaged: too coarse to tell apart the 0.1-second quantities of one cell.)

    with ClockSampler() as s:          # no nvidia-smi (CI, a CPU): s.enabled is False
        t0 = s.now(); work(); t1 = s.now()
        s.window(t0, t1)               # {"sm_mhz": ..., "power_w": ..., "capped": 0..1, "n": ...}
"""
from __future__ import annotations

import datetime as _dt
import shutil
import statistics
import subprocess
import threading

QUERY = ("timestamp", "clocks.sm", "power.draw", "clocks_event_reasons.active")
# clocks_event_reasons bits (nvml's nvmlClocksEventReason*): the ones that slow the SM clock
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80
SLOWDOWN = SW_POWER_CAP | HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | HW_POWER_BRAKE


def parse_line(line: str):
    """(datetime, sm MHz, power W, reasons bitmask) of one CSV line of `QUERY` (noheader,
    nounits), or None for a line that is not one (a header, '[N/A]', an error text)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(QUERY):
        return None
    try:
        ts = _dt.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f")
        return ts, float(parts[1]), float(parts[2]), int(parts[3], 16)
    except ValueError:
        return None


def summarize(samples) -> dict:
    """Median SM clock (MHz), median power (W), the share of samples under the power cap and the
    share under any slowdown (power or thermal), and the sample count; {"n": 0} for none."""
    if not samples:
        return {"n": 0}
    return {"n": len(samples),
            "sm_mhz": statistics.median(s[1] for s in samples),
            "power_w": statistics.median(s[2] for s in samples),
            "capped": sum(1 for s in samples if s[3] & SW_POWER_CAP) / len(samples),
            "slowed": sum(1 for s in samples if s[3] & SLOWDOWN) / len(samples)}


class ClockSampler:
    """nvidia-smi's samples of one GPU every `period_ms`, kept with their timestamps (the
    machine's local time, as `now()`). A context manager; disabled (windows return {"n": 0})
    where nvidia-smi is missing or fails, so callers need no second path."""

    def __init__(self, period_ms: int = 25, device: int = 0, exe: str | None = None):
        self.period_ms = int(period_ms)
        self.device = device
        self.exe = exe if exe is not None else shutil.which("nvidia-smi")
        self.samples: list = []
        self._lock = threading.Lock()
        self._proc = None
        self._thread = None

    @property
    def enabled(self) -> bool:
        return self._proc is not None

    @staticmethod
    def now():
        return _dt.datetime.now()

    def _device_arg(self) -> str:
        try:  # CUDA_VISIBLE_DEVICES renumbers devices; the UUID names the same board for both
            import torch
            uuid = str(torch.cuda.get_device_properties(self.device).uuid)
            return uuid if uuid.startswith("GPU-") else "GPU-" + uuid
        except Exception:  # noqa: BLE001 - no torch / no CUDA / an old torch: the index
            return str(self.device)

    def start(self) -> "ClockSampler":
        if self.exe is None or self._proc is not None:
            return self
        cmd = [self.exe, "-i", self._device_arg(), "--query-gpu=" + ",".join(QUERY),
               "--format=csv,noheader,nounits", f"-lms={self.period_ms}"]
        try:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          text=True, bufsize=1)
        except OSError:
            self._proc = None
            return self
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def _read(self):
        for line in self._proc.stdout:
            s = parse_line(line)
            if s is not None:
                with self._lock:
                    self.samples.append(s)

    def stop(self):
        """End the sampling (the samples stay); the sampler is then disabled."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._thread.join(timeout=5)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._proc = None

    def window(self, t0, t1, wait_s: float | None = None) -> dict:
        """`summarize` of the samples taken between t0 and t1 (`now()` values). While sampling,
        first waits (up to `wait_s`, default 4 periods and at least 0.1 s) for a sample taken
        after t1, so that the window's last samples, still in the pipe, are in."""
        import time
        if self._proc is not None:
            limit = time.monotonic() + (max(0.1, 4 * self.period_ms / 1000)
                                        if wait_s is None else wait_s)
            while time.monotonic() < limit:
                with self._lock:
                    if self.samples and self.samples[-1][0] > t1:
                        break
                time.sleep(self.period_ms / 4000)
        with self._lock:
            picked = [s for s in self.samples if t0 <= s[0] <= t1]
        return summarize(picked)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
