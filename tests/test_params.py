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
