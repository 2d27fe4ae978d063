"""What the figures must show: a colour bar on every heat map, weight maps that name input and
output, the sink's 0.99-1 on a log scale of 1 - a, no empty panel, exact zeros drawn as zeros,
and curves that coincide still told apart."""

from empirical.training import figures
from empirical.analysis import constructions_by_name
from empirical.pipeline.commands import construct


def _captured(monkeypatch, module, name="save_png"):
    """Call-through capture of the figures a drawing function saves."""
    figs = []
    monkeypatch.setattr(module, name, lambda fig, *a, **k: figs.append(fig) or b"")
    return figs


def _colorbar_labels(fig) -> list[str]:
    return [ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>"]


def _summary(layers=1, heads=1, L=6, members=1):
    pattern = [[[[1.0 if k == 0 else 0.0 for k in range(L)] for _ in range(L)] for _ in range(heads)]
               for _ in range(layers)]
    head = {"bos_nontrigger_mean": 0.99}
    return {"config": {"kind": "softmax", "layers": layers, "heads": heads},
            "eval": {"sequences": 10, "trigger": 3},
            "patterns": {"mean": [pattern] * members, "std": [pattern] * members},
            "members": [{"seed": m, "layers": [[head] * heads] * layers} for m in range(members)],
            "history": [{"step": s, "bos_nontrigger_mean": [[[0.5 + 0.1 * s]]], "bound_mean": [0.4 + 0.1 * s],
                         "loss": [10.0 ** -s]} for s in range(5)]}


def test_training_heat_maps_have_colour_bars(monkeypatch, tmp_path):
    figs = _captured(monkeypatch, figures)
    figures.pattern_maps([_summary(), _summary()], tmp_path / "p.png")
    figures.head_grid(_summary(2, 2), tmp_path / "g.png")
    maps, grid = figs
    assert len(_colorbar_labels(maps)) == 4 and all("attention weight" in s for s in _colorbar_labels(maps))
    assert len(_colorbar_labels(grid)) == 1 and "attention weight" in _colorbar_labels(grid)[0]


def test_sink_vs_step_shows_one_minus_mass_on_a_log_scale(monkeypatch, tmp_path):
    figs = _captured(monkeypatch, figures)
    figures.sink_vs_step(_summary(), tmp_path / "s.png")
    scales = [ax.get_yscale() for ax in figs[0].axes]
    assert scales == ["linear", "log", "log"] and "1 - BOS mass" in figs[0].axes[1].get_ylabel()


def test_weight_maps_name_input_and_output_and_have_colour_bars(monkeypatch):
    figs = _captured(monkeypatch, constructions_by_name, "png_bytes")
    net, title = constructions_by_name.build("softmax", 6, construct.parse_beta("10"), 1, 1)
    constructions_by_name.weights_png(net, title)
    _, j, patterns, _ = constructions_by_name.example(net, 8, None)
    constructions_by_name.pattern_png(patterns, j, title)
    weights, pattern = figs
    panels = [ax for ax in weights.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 4 and len(_colorbar_labels(weights)) == 4
    assert all("input" in ax.get_xlabel() and "output" in ax.get_ylabel() for ax in panels)
    assert len(_colorbar_labels(pattern)) == 1 and pattern.axes[0].get_xlabel() == "key k"


def test_pattern_values_have_room(monkeypatch):
    """Annotated cells get at least half an inch each, so that values like 4.5e-05 do not overlap."""
    figs = _captured(monkeypatch, constructions_by_name, "png_bytes")
    net, title = constructions_by_name.build("softmax", 6, construct.parse_beta("10"), 1, 1)
    _, j, patterns, _ = constructions_by_name.example(net, 8, None)
    constructions_by_name.pattern_png(patterns, j, title)
    width, _ = figs[0].get_size_inches()
    assert width / 8 >= 0.5


def _cert(measured: bool):
    L = 5
    queries = [{"case": "before", "position": i, "certified": 0.999} for i in range(1, L)]
    m = {"heads": [{"mean": [1.0] * L, "min": [1.0] * L}], "trigger": 3} if measured else None
    return [{"label": "seed 0", "certificate": {"type": "single head", "L": L, "queries": queries}, "measured": m}]


def test_certify_heat_map_is_log_and_has_no_empty_measured_panel():
    from matplotlib.colors import LogNorm

    from empirical.analysis import certificates

    with_measure, without = certificates.heat_map_figure(_cert(True)), certificates.heat_map_figure(_cert(False))
    panels = [[ax for ax in f.axes if ax.get_label() != "<colorbar>"] for f in (with_measure, without)]
    assert [len(p) for p in panels] == [2, 1]  # --no-measure: no empty "measured" panel
    assert all(isinstance(ax.images[0].norm, LogNorm) for p in panels for ax in p)
    assert len(_colorbar_labels(without)) == 1 and "1 - a_i0" in _colorbar_labels(without)[0]


def test_tradeoff_draws_exact_zeros_as_zeros():
    from empirical.pipeline.parts.beyond import tradeoff_plot

    curve = [{"gap": g, "max_error": 10.0 ** -g, "max_bos_mass": 0.0} for g in (2, 8, 16)]
    other = [{"gap": g, "max_error": 10.0 ** -g, "max_bos_mass": 10.0 ** -g} for g in (2, 8, 16)]
    fig = tradeoff_plot({"softpick": {"curve": curve}, "softmax1": {"curve": other}})
    bos = fig.axes[1]
    labels = [line.get_label() for line in bos.lines]
    assert "softpick: exactly 0" in labels and "softpick" in labels
    drawn = [y for line in bos.lines if line.get_label() == "softpick" for y in line.get_ydata()]
    assert drawn == []  # no fake small value stands in for an exact zero ...
    zeros = next(line for line in bos.lines if line.get_label() == "softpick: exactly 0")
    assert list(zeros.get_ydata()) == [0.0, 0.0, 0.0] and bos.get_yscale() == "symlog"  # ... it is drawn at 0
    assert fig.axes[0].get_yscale() == "log"  # no zero error: a plain log axis


def test_coinciding_curves_are_told_apart(monkeypatch, tmp_path):
    from empirical.pipeline.parts import constructions

    records = [{"construction": name, "L": L, "max_abs_error": err, "closed_form_bound": 1e-3}
               for name, err in (("relu", 1e-15), ("relu-stack 2x2", 1e-15), ("softmax beta=10", 1e-3),
                                 ("cancelling beta=10", 1e-3)) for L in (16, 64)]
    figs = _captured(monkeypatch, figures)
    constructions._length_figure(tmp_path, records)
    styles = [(line.get_marker(), line.get_linestyle(), line.get_fillstyle()) for line in figs[0].axes[0].lines]
    assert len(styles) == 5 and len(set(styles)) == len(styles)  # four constructions and the bound


def test_head_maps_fit_their_colour_scale_and_share_it_only_within_a_range(monkeypatch, tmp_path):
    """ReLU weights of ~0.1 on a fixed 0-1 scale looked empty: the scale is fitted to the values,
    one scale for heads whose largest weights are within SHARED_RANGE of each other, else one each."""
    assert figures.colour_scales([[[0.1, 0.0]], [[0.25, 0.0]]]) == 0.25
    assert figures.colour_scales([[[0.01, 0.0]], [[0.3, 0.0]]]) == [0.01, 0.3]
    small = _summary(2, 2)
    small["patterns"]["mean"] = [[[[[0.0, 0.1 * (1 + n + h)]] for h in range(2)] for n in range(2)]]
    figs = _captured(monkeypatch, figures)
    figures.head_grid(small, tmp_path / "g.png")
    tops = [ax.images[0].norm.vmax for ax in figs[0].axes if ax.get_label() != "<colorbar>"]
    assert tops == [0.30000000000000004] * 4 and len(_colorbar_labels(figs[0])) == 1  # 0.1 - 0.3: one scale
    apart = _summary(2, 2)
    apart["patterns"]["mean"] = [[[[[0.0, 0.01]], [[0.0, 0.3]]], [[[0.0, 0.3]], [[0.0, 0.3]]]]]
    figures.head_grid(apart, tmp_path / "g.png")
    tops = [ax.images[0].norm.vmax for ax in figs[1].axes if ax.get_label() != "<colorbar>"]
    assert tops == [0.01, 0.3, 0.3, 0.3] and len(_colorbar_labels(figs[1])) == 4


def test_a_seed_that_stopped_ends_at_its_stop_step(monkeypatch, tmp_path):
    summary = _summary(members=2)
    summary["history"] = [{"step": s, "bos_nontrigger_mean": [[[0.9], [0.95]]], "bound_mean": [0.8, 0.9],
                           "loss": [0.1, 0.1]} for s in range(0, 500, 100)]
    summary["members"] = [{"seed": 0, "steps": 200, "converged": True}, {"seed": 1, "steps": 400, "converged": True}]
    figs = _captured(monkeypatch, figures)
    figures.sink_vs_step(summary, tmp_path / "s.png")
    ends = {line.get_label(): max(line.get_xdata()) for line in figs[0].axes[0].lines if "seed" in line.get_label()}
    assert ends["seed 0 BOS mass (measured)"] == 200 and ends["seed 1 BOS mass (measured)"] == 400
    marks = [line for line in figs[0].axes[0].lines if line.get_marker() == "|"]
    assert sorted(x for line in marks for x in line.get_xdata()) == [200, 400]


def test_tradeoff_curves_differ_in_style_and_no_panel_mixes_a_minimum_with_maxima():
    from empirical.pipeline.parts.beyond import tradeoff_plot

    same = [{"gap": g, "max_error": 10.0 ** -g, "max_bos_mass": 10.0 ** -g} for g in (2, 8, 16)]
    fig = tradeoff_plot({"softmax1": {"curve": same}, "sink_logit": {"curve": same}, "gated": {"curve": same}})
    for ax in fig.axes[:2]:
        heads = [line for line in ax.lines if line.get_label() in ("softmax1", "sink_logit", "gated")]
        assert len({(line.get_marker(), line.get_linestyle(), line.get_markersize()) for line in heads}) == 3
    assert not any("min" in line.get_label() for line in fig.axes[1].lines)  # the maxima's panel
    assert "min" in fig.axes[2].get_ylabel()  # softmax's minimum has its own


def test_functional_sinks_axis_has_no_empty_negative_range(monkeypatch, tmp_path):
    from empirical.pipeline.parts import functional_sinks

    rows = [{"layer": 0, "head": h, "seed": 0, "bos_mass": 0.5 + 0.1 * h, "removed_increase": 0.2 * h,
             "value_zeroed_increase": 0.001} for h in range(3)]
    figs = _captured(monkeypatch, figures)
    functional_sinks.figure(tmp_path, {("softmax", 2, 2): {"rows": rows}})
    assert figs[0].axes[0].get_ylim()[0] == 0.0
    rows[0]["value_zeroed_increase"] = -0.01  # a real negative increase keeps its range
    functional_sinks.figure(tmp_path, {("softmax", 2, 2): {"rows": rows}})
    assert figs[1].axes[0].get_ylim()[0] < -0.01


def test_t1_seeds_with_the_same_values_stay_visible(monkeypatch, tmp_path):
    from empirical.pipeline.parts import t1_end_to_end

    bounds = {"all_applies": False, "pre_applies": False}
    results = [{"label": f"seed {k}", "measured": {"per_example_bound_min": {}},
                "certificate": {"t1": {"bounds": bounds},
                                "queries": [{"case": "before", "position": i, "certified": 0.999} for i in (1, 2)]}}
               for k in range(3)]
    figs = _captured(monkeypatch, figures)
    t1_end_to_end.draw(results, tmp_path / "t.png")
    seeds = [line for line in figs[0].axes[0].lines if line.get_label().endswith("certified")]
    assert len({line.get_marker() for line in seeds}) == 3
    assert len({tuple(line.get_xdata()) for line in seeds}) == 3  # shifted apart, not on top of each other
