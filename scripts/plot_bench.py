#!/usr/bin/env python3
"""Draws the plots of `klab report` from its plot-data.json.

Usage: python3 scripts/plot_bench.py PLOT_DATA_JSON OUT_DIR

`klab report` writes plot-data.json (format: bench/README.md, "Report") and runs this script.
The series there are already selected and their values already computed, so nothing here
parses benchmark names or computes figures: it only draws. Each plot names its PNG file.

Exit status: 0 every plot drawn, 2 bad arguments or data, 3 matplotlib is not installed.
"""
import json
import sys
from pathlib import Path

EXIT_BAD_INPUT = 2
EXIT_NO_MATPLOTLIB = 3  # klab report (bench/report_plots.cpp) tells the user to install matplotlib

# Line styles per row role: klab's variants solid, each its own colour and marker (VARIANT_COLORS,
# VARIANT_MARKERS), NPP's calls dashed in black and grays (each its own marker), the copy floor
# dotted.
LINE_STYLE = {
    "copy": {"linestyle": ":", "marker": None, "color": "gray", "linewidth": 2.5},
    "cpu": {"linestyle": "-.", "marker": "^", "color": "saddlebrown"},
    "baseline": {"linestyle": ":", "marker": "x", "color": "gray"},
}
NPP_STYLES = [("black", "s"), ("dimgray", "D"), ("darkgray", "v"), ("silver", "P"), ("gray", "X")]
# matplotlib's "tab20" colours with its two grays (NPP's colours) swapped for two of "tab20b", and 7
# markers: as 7 and 20 share no factor, the first 140 variants each get a pair of their own.
VARIANT_COLORS = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd",
                  "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5",
                  "#393b79", "#637939"]
VARIANT_MARKERS = ["o", "s", "^", "v", "D", "P", "X"]


def npp_index(names):
    # NPP's rows in a fixed order across a plot's panels: npp.gauss first (black), then by name.
    ordered = sorted(set(names), key=lambda name: (name != "npp.gauss", name))
    return {name: i % len(NPP_STYLES) for i, name in enumerate(ordered)}


def npp_style(index):
    color, marker = NPP_STYLES[index]
    return {"linestyle": "--", "marker": marker, "color": color}


def variant_index(plots):
    # Every variant of every plot, in name order: the same variant, the same colour and marker in
    # every panel and every PNG.
    names = set()
    for plot in plots:
        for panel in plot.get("panels", [plot]):
            for item in panel.get("series", []) + panel.get("bars", []):
                if item["role"] not in ("npp", "copy", "cpu", "baseline"):
                    names.add(item["name"])
    return {name: i for i, name in enumerate(sorted(names))}


def variant_style(index):
    return {"linestyle": "-", "marker": VARIANT_MARKERS[index % len(VARIANT_MARKERS)],
            "color": VARIANT_COLORS[index % len(VARIANT_COLORS)]}


def styles_of(series_list, variants):
    # Each series' line style: NPP's from the series a figure draws, the variants' from `variants`.
    npp = npp_index(s["name"] for s in series_list if s["role"] == "npp")

    def style(series):
        if series["role"] == "npp":
            return npp_style(npp[series["name"]])
        if series["name"] in variants:
            return variant_style(variants[series["name"]])
        return LINE_STYLE[series["role"]]
    return style


def legend_beside(fig, axes):
    # One legend for the figure, right of its plots, where it hides no point; each label once.
    handles, labels = [], []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize="small",
               ncol=1 if len(labels) <= 24 else 2, frameon=False)


def label_of(series):
    return "copy floor (baseline.copy)" if series["role"] == "copy" else series["name"]


def title_of(plot, gpu):
    return f"{plot['title']}\n{gpu}"


def plain_log_labels(axis, ticker):
    # Log axes spanning less than a decade label their minor ticks as 6×10^1; write 60.
    formatter = ticker.FuncFormatter(lambda value, _: f"{value:g}")
    axis.set_major_formatter(formatter)
    axis.set_minor_formatter(formatter)


def draw_lines(ax, series_list, style):
    for series in series_list:
        xs = [p["x"] for p in series["points"]]
        ys = [p["us"] for p in series["points"]]
        ax.plot(xs, ys, label=label_of(series), **style(series))


def set_ticks(ax, ticks, ticker, with_values):
    ax.set_xticks([t["x"] for t in ticks])
    if with_values:
        ax.set_xticklabels([f"{t['label']}\n{t['x']:.2f} MP" for t in ticks])
    else:
        ax.set_xticklabels([t["label"] for t in ticks])
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())


def time_vs_resolution(plt, ticker, plot, gpu, variants):
    fig, ax = plt.subplots(figsize=(9, 6))
    draw_lines(ax, plot["series"], styles_of(plot["series"], variants))
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_labels(ax.yaxis, ticker)
    set_ticks(ax, plot["x_ticks"], ticker, with_values=True)
    ax.set_xlabel("image size (megapixels, log scale)")
    ax.set_ylabel("median time per launch (µs, log scale)")
    ax.set_title(title_of(plot, gpu))
    ax.grid(True, which="major", alpha=0.3)
    legend_beside(fig, [ax])
    return fig


def time_vs_mask(plt, ticker, plot, gpu, variants):
    panels = plot["panels"]
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 6), squeeze=False)
    style = styles_of([s for panel in panels for s in panel["series"]], variants)
    for ax, panel in zip(axes[0], panels):
        draw_lines(ax, panel["series"], style)
        ax.set_yscale("log")
        plain_log_labels(ax.yaxis, ticker)
        set_ticks(ax, plot["x_ticks"], ticker, with_values=False)
        ax.set_xlabel("mask size (k × k)")
        ax.set_ylabel("median time per launch (µs, log scale)")
        ax.set_title(panel["title"])
        ax.grid(True, which="major", alpha=0.3)
    legend_beside(fig, axes[0])
    fig.suptitle(title_of(plot, gpu))
    return fig


def bar_colors(panels, variants):
    # Each variant's colour of the lines; NPP's calls in grays, hatched.
    colors = {name: VARIANT_COLORS[i % len(VARIANT_COLORS)] for name, i in variants.items()}
    npp = npp_index(b["name"] for panel in panels for b in panel["bars"] if b["role"] == "npp")
    colors.update({name: NPP_STYLES[i][0] for name, i in npp.items()})
    return colors


def bandwidth(plt, ticker, plot, gpu, variants):
    del ticker  # same signature as the other drawers
    panels = plot["panels"]
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 6), squeeze=False)
    colors = bar_colors(panels, variants)
    for ax, panel in zip(axes[0], panels):
        bars = panel["bars"]
        drawn = ax.bar(range(len(bars)), [b["gb_per_s"] for b in bars], color=[colors.get(b["name"], "gray") for b in bars])
        for rectangle, bar in zip(drawn, bars):
            if bar["role"] == "npp":
                rectangle.set_hatch("//")
                rectangle.set_edgecolor("white")  # the hatch's colour, visible on black
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([b["name"] for b in bars], rotation=40, ha="right")
        floor = panel.get("copy_floor_gb_per_s")
        if floor is not None:
            ax.axhline(floor, color="gray", linestyle="--", label=f"copy floor ({floor:.0f} GB/s)")
            ax.legend(fontsize="small")
        ax.set_ylabel("achieved bandwidth (GB/s)\n(bytes read + written) / median time")
        ax.set_title(panel["title"])
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title_of(plot, gpu))
    return fig


DRAWERS = {"time_vs_resolution": time_vs_resolution, "time_vs_mask": time_vs_mask, "bandwidth": bandwidth}


def main(argv):
    if len(argv) != 3:
        print("usage: python3 scripts/plot_bench.py PLOT_DATA_JSON OUT_DIR", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except ImportError as error:
        print(f"plot_bench.py: matplotlib is not installed for {sys.executable} ({error}); "
              "install it with: pip install matplotlib (or apt install python3-matplotlib)", file=sys.stderr)
        return EXIT_NO_MATPLOTLIB
    try:
        data = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        plots = data["plots"]
        gpu = data["gpu"]
        variants = variant_index(plots)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        print(f"plot_bench.py: cannot read {argv[1]}: {error!r}", file=sys.stderr)
        return EXIT_BAD_INPUT
    out_dir = Path(argv[2])
    status = 0
    for plot in plots:
        drawer = DRAWERS.get(plot.get("kind"))
        if drawer is None:
            print(f"plot_bench.py: unknown plot kind {plot.get('kind')!r}, skipped", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        fig = drawer(plt, ticker, plot, gpu, variants)
        fig.tight_layout()
        # A temporary file renamed into place: klab report links only complete PNGs.
        target = out_dir / plot["file"]
        temporary = out_dir / f".{plot['file']}.tmp"
        fig.savefig(temporary, format="png", dpi=120, bbox_inches="tight")  # the legend beside the plots too
        plt.close(fig)
        temporary.replace(target)
        print(f"plot_bench.py: drew {plot['file']}")  # klab report may draw in a folder it renames from
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
