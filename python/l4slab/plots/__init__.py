"""Plots of a result, as plain functions: an ``Axes`` in (``ax=``), the same ``Axes`` out.

Every function takes a :class:`~l4slab.results.Results` and an optional ``ax``;
without one it draws into a new figure (a ``matplotlib.figure.Figure``, rendered
with Agg; save it with ``ax.figure.savefig(...)``). Nothing here calls
``plt.show()`` or touches pyplot's global state::

    import matplotlib.pyplot as plt
    import l4slab
    from l4slab import plots

    res = l4slab.load("results/dualpi2-reno")
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4))
    plots.rtt_cdf(res, ax=a)
    plots.queue_delay(res, ax=b)
    fig.savefig("dualpi2.png")

The time-sequence graph needs the packet trace (``packet_trace = true``). The trace
is read as a stream (row group by row group, one flow at a time, reduced as it is
read), so plots of a trace of tens of millions of packets stay within a bounded
amount of memory.

A sweep (``l4slab.sweep.load(DIR)``) has :func:`metric_vs_param` and :func:`heatmap`
(see :mod:`l4slab.plots.sweep`).

A run with home-network apps has :func:`video_player` (a player's buffer, bitrate,
stalls and segment fetches over time) and :func:`page_load_cdf` (page load times of
each browsing flow; see :mod:`l4slab.plots.qoe`).

A run with a Wi-Fi cell (``[wifi]``) has three more: :func:`wifi_airtime`,
:func:`wifi_access_delay` and :func:`wifi_ampdu` (see :mod:`l4slab.plots.wifi`).
"""

from __future__ import annotations

from l4slab.plots._distribution import Distribution
from l4slab.plots._style import COLORS, key_info
from l4slab.plots._trace import (
    TSG_BINS,
    TSG_MAX_EVENTS,
    AckLine,
    FlowTrace,
    NoPacketTraceError,
    Ticks,
    TsgData,
    first_event_time,
    flow_trace,
    has_packet_trace,
    segment_rtt_distributions,
    segment_rtts,
    tsg_data,
)
from l4slab.plots.cdf import (
    cdf_line,
    percentile_markers,
    queue_delay_cdf,
    queue_delay_samples,
    rtt_cdf,
    rtt_samples,
)
from l4slab.plots.qoe import page_load_cdf, page_load_times, segment_fetches, video_player
from l4slab.plots.sweep import heatmap, metric_vs_param
from l4slab.plots.timeseries import aqm_probability, drops_marks, queue_delay, timeseries
from l4slab.plots.tsg import draw_time_sequence, interesting_window, time_sequence
from l4slab.plots.wifi import (
    AC_COLORS,
    AC_NAMES,
    has_wifi,
    wifi_access_delay,
    wifi_airtime,
    wifi_ampdu,
)

__all__ = [
    "AC_COLORS",
    "AC_NAMES",
    "COLORS",
    "TSG_BINS",
    "TSG_MAX_EVENTS",
    "AckLine",
    "Distribution",
    "FlowTrace",
    "NoPacketTraceError",
    "Ticks",
    "TsgData",
    "aqm_probability",
    "cdf_line",
    "draw_time_sequence",
    "drops_marks",
    "first_event_time",
    "flow_trace",
    "has_packet_trace",
    "has_wifi",
    "heatmap",
    "interesting_window",
    "key_info",
    "metric_vs_param",
    "page_load_cdf",
    "page_load_times",
    "percentile_markers",
    "queue_delay",
    "queue_delay_cdf",
    "queue_delay_samples",
    "rtt_cdf",
    "rtt_samples",
    "segment_fetches",
    "segment_rtt_distributions",
    "segment_rtts",
    "time_sequence",
    "timeseries",
    "tsg_data",
    "video_player",
    "wifi_access_delay",
    "wifi_airtime",
    "wifi_ampdu",
]
