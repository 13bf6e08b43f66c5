"""Every ART check proven both ways (issue #23): on each release as shipped it gives the
verdict recorded in findings/status/, and on a copy of that release with the item's control
applied (repros/controls/) it gives the other answer: every claim fixed with the fix applied
where a claim is reproduced, some claim reproduced with the release's fix undone where every
claim is fixed. A check that says the same on both fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from artbot.records.catalog import Catalog, load_catalog
from artbot.verify.code import CodeStatus, checkable
from tests.helpers.controls import ROOT, check, claim_verdicts, controlled_copy, load_control
from tests.helpers.controls import recorded as recorded_verdicts
from tests.helpers.wheels import ArtWheels

# Every item whose repro defines check_art, artbot's follow-ups included: a new check without
# a control fails here by name.
ITEMS = tuple(f.item for f in checkable(load_catalog(ROOT)))
RELEASES = ("0.5.20", "0.5.21", "0.5.23")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(ROOT)


@pytest.mark.repro
@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("item", ITEMS)
def test_check_gives_the_recorded_verdict_and_flips_on_its_control(
    item: int,
    version: str,
    catalog: Catalog,
    art_wheels: ArtWheels,
    tmp_path: Path,
) -> None:
    release = art_wheels.tree(version)
    shipped = check(catalog, release, item, f"openpipe-art {version}")
    assert shipped.status is not CodeStatus.could_not_run, shipped.detail
    as_shipped = claim_verdicts(shipped)
    recorded = recorded_verdicts(catalog, item, version)
    assert recorded is None or as_shipped == recorded, (f"seed {shipped.seed}", shipped.detail)

    control = load_control(item)
    assert control is not None, f"item {item}: a check but no repros/controls/item{item:02d}.toml"
    kind = "fix" if "reproduced" in as_shipped.values() else "unfix"
    edits = control.edits(kind, version)
    assert edits, f"item {item}: no {kind.upper()} control for {version}"
    controlled = check(
        catalog, controlled_copy(release, tmp_path / kind, edits), item, f"{version} + {kind}"
    )
    assert controlled.status is not CodeStatus.could_not_run, controlled.detail
    got = claim_verdicts(controlled)
    if kind == "fix":
        assert controlled.status is CodeStatus.fixed, (got, controlled.detail)
        assert "reproduced" not in got.values(), got
    else:
        assert "reproduced" in got.values(), (got, controlled.detail)
    assert got != as_shipped


@pytest.mark.repro
@pytest.mark.parametrize(
    ("default", "damped"), [("1e-13", "fixed"), ("1e-8", "fixed"), (None, "fixed")]
)
def test_item6_claims_are_independent(
    default: str | None,
    damped: str,
    catalog: Catalog,
    art_wheels: ArtWheels,
    tmp_path: Path,
) -> None:
    """A reviewer's fix, an eps field, ``eps=params.eps`` in the call and ``value.eps`` in the
    cross-rank guard: the eps is configurable whatever its default, and so a step can be given
    Megatron's 1e-13 whatever the default: the damping claim is fixed too (issue #51: one
    contract, the audit's, which asks for a configurable eps, not a new default; an eps
    hard-coded to 1e-13 fixes the damping only). The guard edit is part of the fix: the
    audit's own fix is "add eps to AdamParams and the cross-rank config guard" (and the
    finding's Expected asks for an eps covered by that guard), so with the guard untouched
    eps-not-configurable stays reproduced (the adversarial control
    item06_half_fix_eps_not_in_the_guard holds that case)."""
    release = art_wheels.tree("0.5.23")
    field = "eps: float" if default is None else f"eps: float = {default}"
    edits = [
        (
            "trainer_rank/_impl.py",
            r"(class AdamParams:\n    learning_rate: float\n)",
            rf"\g<1>    {field}\n",
        ),
        (
            "trainer_rank/*.py",
            r"^([ \t]*)weight_decay=params\.weight_decay,\n",
            r"\g<0>\g<1>eps=params.eps,\n",
        ),
        ("trainer_rank/*.py", r"^([ \t]*)value\.grad_clip_norm,\n", r"\g<0>\g<1>value.eps,\n"),
    ]
    result = check(catalog, controlled_copy(release, tmp_path / "eps", edits), 6, "0.5.23 + eps")
    assert claim_verdicts(result) == {
        "eps-not-configurable": "fixed",
        "eps-damps-tiny-updates": damped,
    }, result.detail
    assert "tells two ranks apart" in result.claims["eps-not-configurable"].detail


@pytest.mark.repro
def test_item6_counterexample_names_the_field_and_try_that_missed(
    catalog: Catalog, art_wheels: ArtWheels, tmp_path: Path
) -> None:
    """An ``eps`` field passed on only while ``weight_decay`` is its default (the red team's
    fake): the counterexample is ``eps`` (not the first field, ``beta1``) under a non-default
    weight decay, and the detail does not say 1e-6 fails (it reaches the optimizer)."""
    edits = [
        (
            "trainer_rank/_impl.py",
            r"(class AdamParams:\n(?:    .*\n)*?    grad_clip_norm: float = 0\.1\n)",
            r"\g<1>    eps: float = 1e-13\n",
        ),
        (
            "trainer_rank/_optimizer.py",
            r"^([ \t]*)weight_decay=params\.weight_decay,\n",
            r"\g<0>\g<1>eps=params.eps if params.weight_decay == 0.1 else 1e-8,\n",
        ),
        (
            "trainer_rank/_optimizer.py",
            r"^([ \t]*)value\.grad_clip_norm,\n",
            r"\g<0>\g<1>value.eps,\n",
        ),
    ]
    release = art_wheels.tree("0.5.23")
    result = check(catalog, controlled_copy(release, tmp_path / "wd", edits), 6, "0.5.23 + wd")
    claim = result.claims["eps-not-configurable"]
    assert claim.verdict.value == "reproduced", claim.detail
    assert claim.domain is not None and claim.domain.counterexample is not None
    given = claim.domain.counterexample.inputs
    assert given["eps"] == 1e-13, given  # the eps tried: Megatron's
    assert given["weight_decay"] != 0.1, given  # the setting the fake's gate misses
    assert "1e-06" not in claim.detail.split("nearest:")[0], claim.detail
    assert "AdamParams.eps set to 1e-13" in claim.detail, claim.detail
