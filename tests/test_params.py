"""The congestion-control parameter declarations, as the native module exposes them."""

from __future__ import annotations

import pytest

from l4slab import _native


def by_name(kind: str) -> dict[str, dict[str, object]]:
    return {p["name"]: dict(p) for p in _native.cc_params(kind)}


def test_dctcp_shift_g_is_an_integer_1_to_16_defaulting_to_4() -> None:
    p = by_name("dctcp")["shift_g"]
    assert p["kind"] == "integer"
    assert (p["min"], p["max"]) == (1, 16)
    assert p["min_exclusive"] is False and p["max_exclusive"] is False
    assert p["default"] == 4
    assert p["example"] == "4"
    assert p["linux"] == "dctcp_shift_g"
    assert "dctcp_shift_g = 4" in str(p["source"])
    assert p["choices"] is None
    assert p["doc"]


def test_every_controller_is_listed_and_its_keys_are_what_a_scenario_accepts() -> None:
    assert [p["name"] for p in _native.cc_params("dctcp")] == ["shift_g", "alpha_on_init", "ect1"]
    assert _native.cc_params("reno") == []
    for kind in _native.cc_names():
        for p in _native.cc_params(kind):
            # The example is accepted by the scenario parser under that key.
            text = (
                'format = 1\nduration = "1s"\n[bottleneck]\nrate = "10Mbit"\n'
                'delay = "5ms"\nbuffer = "50pkt"\n[[flows]]\n'
                f'cc = {{ kind = "{kind}", {p["name"]} = {p["example"]} }}\n'
            )
            _native.validate(text, "t.toml", [])


def test_choices_durations_and_fractions_carry_their_range() -> None:
    prague = by_name("prague")
    assert prague["rtt_scaling"]["choices"] == ["none", "rate", "scalable", "additive"]
    assert prague["rtt_scaling"]["default"] == "rate"
    assert prague["rtt_target"]["default"] == "25ms"
    assert prague["rtt_target"]["min_exclusive"] is False
    beta = by_name("cubic")["beta"]
    assert (beta["min"], beta["max"], beta["min_exclusive"], beta["max_exclusive"]) == (
        0.0,
        1.0,
        True,
        True,
    )
    assert by_name("bbr")["extra_acked_gain"]["zero_allowed"] is True


def test_an_unknown_kind_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown congestion control 'vegas'"):
        _native.cc_params("vegas")


# Queue disciplines: the same declarations type, from l4slab-qdisc.


def qdisc_by_name(kind: str) -> dict[str, dict[str, object]]:
    return {p["name"]: dict(p) for p in _native.qdisc_params(kind)}


def test_every_qdisc_is_listed_and_its_examples_are_what_a_scenario_accepts() -> None:
    assert [p["name"] for p in _native.qdisc_params("codel")] == [
        "limit",
        "target",
        "interval",
        "ecn",
        "ce_threshold",
    ]
    assert [p["name"] for p in _native.qdisc_params("fifo")] == ["head_drop"]
    # Keys that only apply beside another key's value.
    needs = {
        "ce_threshold_selector": 'ce_threshold = "1ms"',
        "min_th": 'l_aqm = "ramp"',
        "range": 'l_aqm = "ramp"',
        "th_len": 'l_aqm = "ramp"',
        "tshift": 'scheduler = "ts_fifo"',
    }
    for kind in _native.qdisc_names():
        params = _native.qdisc_params(kind)
        assert params, kind
        for p in params:
            extra = f", {needs[p['name']]}" if p["name"] in needs else ""
            for key in [p["name"], *p["aliases"]]:
                text = (
                    'format = 1\nduration = "1s"\n[bottleneck]\nrate = "10Mbit"\n'
                    'delay = "5ms"\nbuffer = "50pkt"\n'
                    f'qdisc = {{ kind = "{kind}", {key} = {p["example"]}{extra} }}\n'
                    '[[flows]]\nname = "dns"\n'
                )
                _native.validate(text, "t.toml", [])


def test_qdisc_kinds_carry_tc_ranges_defaults_and_sources() -> None:
    fq = qdisc_by_name("fq_codel")
    assert fq["quantum"]["kind"] == "bytes"
    assert (fq["quantum"]["min"], fq["quantum"]["max"]) == (256, 1 << 20)
    assert fq["quantum"]["default"] == 1514
    assert fq["memory_limit"]["example"] == '"32MiB"'
    assert fq["ce_threshold"]["default"] is None
    assert fq["ce_threshold"]["example"] == '"1ms"'
    assert fq["limit"]["kind"] == "packets" and fq["limit"]["default"] == 10240
    assert "fq_codel_init" in str(fq["limit"]["source"])
    pie = qdisc_by_name("pie")
    assert pie["alpha"]["kind"] == "Hz" and pie["alpha"]["default"] == 0.125
    assert pie["max_burst"]["aliases"] == ["burst"]
    assert pie["tupdate"]["min_exclusive"] is True and pie["target"]["min_exclusive"] is False
    assert qdisc_by_name("fq_pie")["ecn_prob"]["kind"] == "percent"
    dualpi2 = qdisc_by_name("dualpi2")
    assert dualpi2["ecn_mask"]["choices"] == ["l4s_ect", "any_ect"]
    assert dualpi2["memlimit"]["aliases"] == ["memory_limit"]
    assert dualpi2["step_thresh"]["kind"] == "custom"
    assert dualpi2["step_thresh"]["default"] == "1ms"


def test_a_qdisc_parameter_out_of_its_declared_range_is_refused() -> None:
    flows = next(p for p in _native.qdisc_params("fq_codel") if p["name"] == "flows")
    top = flows["max"]
    assert isinstance(top, int)
    text = (
        'format = 1\nduration = "1s"\n[bottleneck]\nrate = "10Mbit"\n'
        'delay = "5ms"\nbuffer = "50pkt"\n'
        f'qdisc = {{ kind = "fq_codel", flows = {top + 1} }}\n[[flows]]\n'
    )
    with pytest.raises(_native.ScenarioError, match=f"must be between 1 and {top}"):
        _native.validate(text, "t.toml", [])


def test_an_unknown_qdisc_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown qdisc 'sfq'"):
        _native.qdisc_params("sfq")
