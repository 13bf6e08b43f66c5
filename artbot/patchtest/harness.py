"""The import harness ART's regression tests run under, wherever artbot runs them: the
``conftest.py`` written beside a patched tree's test (:mod:`.regress`) and the one artbot's own
suite copies beside the exported tests (tests/fixtures/export/harness_conftest.py) both call
:func:`install`, so there is one harness. ``import art.x`` loads the single file ``art/x.py`` of
the tree in ``$ARTBOT_ART_PACKAGE`` with artbot's import isolation, as ``artbot verify`` does
(ART's dependencies are not installed where artbot runs).

Every ART module is imported whole (:mod:`artbot.verify.whole`, as the checks import them; on
Python 3.11 a file's ``type X = ...`` statements run as assignments, so item 6's test steps
``TrainerRank.optim_step`` of ``trainer_rank/_impl.py`` as ART defines it): ``art.unsloth.train``
runs every statement of ``unsloth/train.py``, with Unsloth's training stack (peft, trl,
datasets, nest_asyncio, which it calls at import) stood in for where not installed, so a fix
through a same-file helper resolves as in ART's checkout (follow-up 401: ``_calculate_logprobs``
calling a helper of its file).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE_VARIABLE = "ARTBOT_ART_PACKAGE"
SIBLINGS_VARIABLE = "ARTBOT_ART_SIBLINGS"
CONFTEST = "from artbot.patchtest.harness import install\n\ninstall()\n"


def install() -> None:
    """Make ``import art....`` load the tree in ``$ARTBOT_ART_PACKAGE`` (for this process)."""
    from ..verify.isolation import ArtModules
    from ..verify.tree import distribution_packages
    from ..verify.whole import Whole

    package = Path(os.environ[PACKAGE_VARIABLE])
    # The packages shipped beside art/ (0.5.21's art_inference, which preprocessing/ imports),
    # as artbot verify loads them: named by the caller (a confined run sees no dist-info), else
    # found beside the tree.
    named = os.environ.get(SIBLINGS_VARIABLE)
    siblings = (
        tuple(n for n in named.split(",") if n)
        if named is not None
        else distribution_packages(package, src_layout=package.parent.name == "src")
    )
    modules = ArtModules(package, siblings=siblings)
    modules.__enter__()
    sys.meta_path.insert(0, Whole(modules))  # ART's files whole, boundary packages stood in for
